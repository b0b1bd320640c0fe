package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxTxItems is how many items a DoTx function may stage: DynamoDB's 100
// actions per TransactWriteItems, less the settlement. The transaction
// is also bound by DynamoDB's other limits (4 MB in all, one action per
// item, the idempotency record's included). It is also how many
// conditions an acquisition may require (Operation.Require), the record
// being the hundredth action.
const MaxTxItems = 99

// Errors of DoTx and SettleWith.
var (
	// ErrNotTransactional reports a DoTx on an Idempotency whose
	// Config.Store is not a TransactionalPersistence.
	ErrNotTransactional = errors.New("idempotency store cannot commit a transaction")
	// ErrTxItem reports a transaction that DynamoDB cancelled because of
	// one of the staged items: nothing of it was written. The error is a
	// *TxItemError naming the item.
	ErrTxItem = errors.New("idempotency transaction cancelled by a staged item")
	// ErrTxTooLarge reports more than MaxTxItems staged items, or
	// conditions required of an acquisition: nothing of them was
	// written.
	ErrTxTooLarge = errors.New("idempotency transaction has too many items")
	// ErrNoLease reports a Tx without a lease: idempotency is disabled.
	ErrNoLease = errors.New("idempotency transaction has no lease")
)

// TxItemError reports the staged item that made DynamoDB cancel a
// transaction, the first in the order staged that failed: nothing of the
// transaction was written. It matches ErrTxItem with errors.Is, and wraps
// the *types.TransactionCanceledException.
type TxItemError struct {
	// Index is the item's position in the order staged (Tx.Add), from 0.
	Index int
	// Code is the cancellation reason's code: "ConditionalCheckFailed",
	// "TransactionConflict", "ThrottlingError"...
	Code string
	// Message is the reason's message, when DynamoDB gave one.
	Message string
	// Item is the item as it was, when the staged item asked for it
	// (ReturnValuesOnConditionCheckFailure = ALL_OLD) and it exists.
	Item map[string]types.AttributeValue
	// Err is the SDK's error.
	Err error
}

func (e *TxItemError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v: item %d: %s: %s", ErrTxItem, e.Index, e.Code, e.Message)
	}
	return fmt.Sprintf("%v: item %d: %s", ErrTxItem, e.Index, e.Code)
}

// Unwrap makes the error match ErrTxItem and the SDK's error.
func (e *TxItemError) Unwrap() []error { return []error{ErrTxItem, e.Err} }

// ConditionFailed reports whether the item's condition did not hold
// (Code is ConditionalCheckFailed).
func (e *TxItemError) ConditionFailed() bool { return e.Code == codeConditionalCheckFailed }

// TransactionalPersistence is a Persistence that commits a call's
// settlement together with other writes, in one transaction: what DoTx
// needs. DynamoDBPersistence implements it.
type TransactionalPersistence interface {
	Persistence
	// SettleWith stores the outcome of the call that holds lease, as
	// Settle does, and writes items, in one transaction: all of it or
	// none. When the lease no longer holds the record nothing is written
	// and it fails with ErrFenced; when a staged item fails, with a
	// *TxItemError. Without items it is Settle.
	SettleWith(ctx context.Context, lease Lease, o Outcome, items []types.TransactWriteItem) error
	// Commit writes items in one transaction without any record (DoTx
	// when idempotency is disabled): a failed item is a *TxItemError.
	Commit(ctx context.Context, items []types.TransactWriteItem) error
	// Fence is an item that, added to a transaction, lets it commit only
	// while lease holds the record.
	Fence(lease Lease) (types.TransactWriteItem, error)
}

// SettleWith is one TransactWriteItems: the settlement, an Update of the
// record conditioned on the lease (FenceCondition), at index 0, then
// items. When DynamoDB cancels it, the reasons say why: the settlement's
// condition (ErrFenced), or the first staged item that failed (a
// *TxItemError naming its index among items and its code). Without items
// it is Settle, one UpdateItem. The client must implement TransactAPI.
// The SDK gives the call a ClientRequestToken, so that its own retries of
// a transaction that did commit are answered with success, not with a
// cancellation by the fence.
func (p *DynamoDBPersistence) SettleWith(ctx context.Context, lease Lease, o Outcome, items []types.TransactWriteItem) error {
	if p.err != nil {
		return p.err
	}
	if len(items) == 0 {
		return p.Settle(ctx, lease, o)
	}
	if len(items) > MaxTxItems {
		return fmt.Errorf("settle %s: %d items: %w (at most %d)", lease.RecordKey, len(items), ErrTxTooLarge, MaxTxItems)
	}
	tw, ok := p.client.(TransactAPI)
	if !ok {
		return fmt.Errorf("settle %s: the client (%T) has no TransactWriteItems: %w", lease.RecordKey, p.client, ErrNotTransactional)
	}
	update, err := p.settlement(lease, o)
	if err != nil {
		return err
	}
	expr, err := expression.NewBuilder().WithCondition(p.FenceCondition(lease)).WithUpdate(update).Build()
	if err != nil {
		return fmt.Errorf("settle %s: %w", lease.RecordKey, err)
	}
	all := make([]types.TransactWriteItem, 0, 1+len(items))
	all = append(all, types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(p.table),
		Key:                       p.key(lease.RecordKey),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}})
	all = append(all, items...)
	_, err = tw.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: all})
	if err == nil {
		return nil
	}
	return txError(fmt.Sprintf("settle %s (lease %d)", lease.RecordKey, lease.Count), err, len(all), true)
}

// Commit is one TransactWriteItems of items, with no record. Without
// items it does nothing.
func (p *DynamoDBPersistence) Commit(ctx context.Context, items []types.TransactWriteItem) error {
	if p.err != nil {
		return p.err
	}
	if len(items) == 0 {
		return nil
	}
	if len(items) > MaxTxItems {
		return fmt.Errorf("commit: %d items: %w (at most %d)", len(items), ErrTxTooLarge, MaxTxItems)
	}
	tw, ok := p.client.(TransactAPI)
	if !ok {
		return fmt.Errorf("commit: the client (%T) has no TransactWriteItems: %w", p.client, ErrNotTransactional)
	}
	_, err := tw.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	return txError("commit", err, len(items), false)
}

// txError explains a failed TransactWriteItems of n items: settled, the
// settlement is at index 0 and the staged items follow it.
func txError(op string, err error, n int, settled bool) error {
	reasons, rerr := cancellationReasons(err, n)
	if rerr != nil {
		return fmt.Errorf("%s: %w", op, rerr)
	}
	first := 0
	if settled {
		first = 1
		switch c := reasonCode(reasons[0]); c {
		case codeNone:
		case codeConditionalCheckFailed:
			return fmt.Errorf("%s: %w", op, ErrFenced)
		default:
			return fmt.Errorf("%s: the settlement: %s: %w", op, c, err)
		}
	}
	for i := first; i < n; i++ {
		if c := reasonCode(reasons[i]); c != codeNone {
			return &TxItemError{Index: i - first, Code: c, Message: aws.ToString(reasons[i].Message), Item: reasons[i].Item, Err: err}
		}
	}
	return fmt.Errorf("%s: transaction cancelled without a reason: %w", op, err)
}

// Tx collects the writes of a DoTx function, which DoTx commits together
// with the call's settlement. It is safe for concurrent use while the
// function runs; items staged after it returned are refused.
type Tx struct {
	store    TransactionalPersistence
	mu       sync.Mutex
	lease    Lease
	leased   bool
	items    []types.TransactWriteItem
	err      error
	sealed   bool
	onCancel func(*TxItemError) error
}

// Add stages items, to be committed with the settlement in the order
// added. More than MaxTxItems in all fails with ErrTxTooLarge, and then
// nothing staged is ever committed: the call fails and its key is
// released.
func (tx *Tx) Add(items ...types.TransactWriteItem) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	switch {
	case tx.sealed:
		return errors.New("idempotency: Tx.Add after the function returned")
	case tx.err != nil:
		return tx.err
	case len(tx.items)+len(items) > MaxTxItems:
		tx.err = fmt.Errorf("idempotency: %d items: %w (at most %d)", len(tx.items)+len(items), ErrTxTooLarge, MaxTxItems)
		return tx.err
	}
	tx.items = append(tx.items, items...)
	return nil
}

// Len is how many items are staged.
func (tx *Tx) Len() int {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return len(tx.items)
}

// Lease is the lease the call holds, and false when idempotency is
// disabled.
func (tx *Tx) Lease() (Lease, bool) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.lease, tx.leased
}

// Fence is the store's Fence for the call's lease, for a transaction the
// function commits itself: it commits only while the call holds its key.
// Without a lease (idempotency disabled) it fails with ErrNoLease.
func (tx *Tx) Fence() (types.TransactWriteItem, error) {
	lease, ok := tx.Lease()
	if !ok {
		return types.TransactWriteItem{}, ErrNoLease
	}
	return tx.store.Fence(lease)
}

// OnCancel sets the error DoTx answers when a staged item makes DynamoDB
// cancel the transaction: f gets the *TxItemError and returns the
// caller's error. When that is a *PermanentError (Permanent), it is
// stored as the call's outcome and replayed, as a permanent error of the
// function is; any other releases the key, so that a retry runs the
// function again. Without OnCancel, or when f returns nil, the answer is
// the *TxItemError, and the key is released.
func (tx *Tx) OnCancel(f func(*TxItemError) error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.onCancel = f
}

// seal ends staging and returns the items, or the error that forbids
// committing them.
func (tx *Tx) seal() ([]types.TransactWriteItem, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.sealed = true
	return tx.items, tx.err
}

// answer is the error a cancelled transaction answers with.
func (tx *Tx) answer(err error) error {
	tx.mu.Lock()
	f := tx.onCancel
	tx.mu.Unlock()
	var ie *TxItemError
	if f == nil || !errors.As(err, &ie) {
		return err
	}
	if mapped := f(ie); mapped != nil {
		return mapped
	}
	return err
}

// txStore is the store of one DoTx call: Do runs on it, and its Settle of
// a completed call commits the staged items with the settlement.
type txStore struct {
	TransactionalPersistence
	tx *Tx
}

// newTxStore is the store of a DoTx call of tx on ts: a Preconditioner
// when ts is one, so that Do finds it as it would ts.
func newTxStore(ts TransactionalPersistence, tx *Tx) Persistence {
	s := &txStore{TransactionalPersistence: ts, tx: tx}
	if p, ok := ts.(Preconditioner); ok {
		return &txRequiringStore{txStore: s, pre: p}
	}
	return s
}

// hold keeps the lease of e, when acquired, as the Tx's.
func (s *txStore) hold(e Entry, acquired bool, err error) (Entry, bool, error) {
	if err == nil && acquired {
		s.tx.mu.Lock()
		s.tx.lease, s.tx.leased = e.Lease(), true
		s.tx.mu.Unlock()
	}
	return e, acquired, err
}

func (s *txStore) Acquire(ctx context.Context, in AcquireInput) (Entry, bool, error) {
	return s.hold(s.TransactionalPersistence.Acquire(ctx, in))
}

// TakeOver passes a take-over to the store, when it is a Taker, and
// keeps the lease it gives as Acquire does.
func (s *txStore) TakeOver(ctx context.Context, in AcquireInput, held Lease) (Entry, bool, error) {
	t, ok := s.TransactionalPersistence.(Taker)
	if !ok {
		return Entry{}, false, ErrTakeOverUnsupported
	}
	return s.hold(t.TakeOver(ctx, in, held))
}

// txRequiringStore is the txStore of a store that is a Preconditioner:
// its acquisitions with conditions keep their lease as Acquire does.
type txRequiringStore struct {
	*txStore
	pre Preconditioner
}

func (s *txRequiringStore) AcquireRequiring(ctx context.Context, in AcquireInput, require []types.ConditionCheck) (Entry, bool, error) {
	return s.hold(s.pre.AcquireRequiring(ctx, in, require))
}

func (s *txRequiringStore) TakeOverRequiring(ctx context.Context, in AcquireInput, held Lease, require []types.ConditionCheck) (Entry, bool, error) {
	return s.hold(s.pre.TakeOverRequiring(ctx, in, held, require))
}

func (s *txStore) Settle(ctx context.Context, lease Lease, o Outcome) error {
	items, err := s.tx.seal()
	if o.Status != EntryCompleted {
		// The function failed: none of its writes is committed.
		return s.TransactionalPersistence.Settle(ctx, lease, o)
	}
	if err == nil {
		err = s.SettleWith(ctx, lease, o, items)
	}
	if err == nil || errors.Is(err, ErrFenced) {
		return err
	}
	// Nothing was written (a cancelled transaction, too many items), or
	// whether it was is not known (an answer lost): either way a release
	// or a settle under the lease is safe, as it applies only while the
	// record is IN_PROGRESS under the lease, never once the transaction
	// committed.
	answer := s.tx.answer(err)
	var perm *PermanentError
	if errors.As(answer, &perm) {
		failed := Outcome{Status: EntryFailed, Failure: answer.Error(), ExpiresAt: o.ExpiresAt}
		if serr := s.TransactionalPersistence.Settle(ctx, lease, failed); serr != nil {
			return errors.Join(answer, serr)
		}
		return answer
	}
	if rerr := s.Release(ctx, lease); rerr != nil {
		return errors.Join(answer, rerr)
	}
	return answer
}

// DoTx is Do for a function whose writes are DynamoDB items: fn stages
// them in tx (Tx.Add) instead of writing them, and when it succeeds they
// are committed together with the settlement of its output, in one
// TransactWriteItems whose settlement is conditioned on the call's lease.
// The writes and the outcome are thus stored at once or not at all: a
// new key costs two calls (the acquisition and the transaction), a
// duplicate one, as with Do, and no crash leaves the writes done and the
// key unsettled. A cancelled transaction costs a third call, the release
// or the settlement of the failure. Everything else is Do's: keys,
// payloads, replays, the cache, leases and takeovers, Permanent errors,
// the conditions of op.Require (checked in the acquisition, before fn
// runs).
//
// When the lease no longer holds the record (another call took the key
// over after the lease expired), nothing is written and DoTx fails with
// ErrFenced. When a staged item makes DynamoDB cancel the transaction (a
// condition of the caller's that does not hold, a conflict), nothing is
// written and DoTx fails with a *TxItemError naming it, or the error
// Tx.OnCancel makes of it; the key is released, or the error stored when
// it is a *PermanentError. When fn fails, nothing it staged is written.
// At most MaxTxItems may be staged.
//
// The Idempotency's store must be a TransactionalPersistence (a
// *DynamoDBPersistence), else DoTx fails with ErrNotTransactional
// without running fn. When idempotency is disabled, fn runs directly and
// its items are committed alone (TransactionalPersistence.Commit).
func DoTx[In, Out any](ctx context.Context, i *Idempotency, op Operation[In], in In, fn func(ctx context.Context, in In, tx *Tx) (Out, error)) (Result[Out], error) {
	ts, ok := i.store.(TransactionalPersistence)
	if !ok {
		return Result[Out]{}, fmt.Errorf("idempotency: DoTx on a %T: %w", i.store, ErrNotTransactional)
	}
	tx := &Tx{store: ts}
	if i.Disabled() {
		out, err := fn(ctx, in, tx)
		items, serr := tx.seal()
		switch {
		case err != nil:
			return Result[Out]{Output: out}, err
		case serr != nil:
			return Result[Out]{Output: out}, serr
		}
		if cerr := ts.Commit(ctx, items); cerr != nil {
			return Result[Out]{Output: out}, tx.answer(fmt.Errorf("idempotency: %w", cerr))
		}
		return Result[Out]{Output: out}, nil
	}
	// Do runs on a copy of i whose store commits tx with the settlement:
	// the copy shares i's cache and settings, and lives for this call.
	call := *i
	call.store = newTxStore(ts, tx)
	return Do(ctx, &call, op, in, func(ctx context.Context, in In) (Out, error) {
		return fn(ctx, in, tx)
	})
}
