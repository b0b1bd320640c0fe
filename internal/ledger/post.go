package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// Positions of the items in a leg's transaction; CancellationReasons are
// read by these indexes.
const (
	idxFence   = iota // ConditionCheck: the idempotency record allows the leg
	idxEntry          // Put: the leg's entry, if it does not exist yet
	idxAccount        // Update: the account's balance and version
	// CREDIT and REFUND only.
	idxDebit     // ConditionCheck: the transfer's matching DEBIT entry exists
	idxExclusive // ConditionCheck: CREDIT: no REFUND entry; REFUND: no CREDIT entry
	// CREDIT only.
	idxRelease // Update: the source no longer holds the debited amount
)

// Cancellation reason codes of TransactWriteItems.
const (
	codeNone                   = "None"
	codeConditionalCheckFailed = "ConditionalCheckFailed"
)

// plan is one leg's transaction, on the account at version.
type plan struct {
	leg     Leg
	version int64
	entry   entryItem
	items   []types.TransactWriteItem
}

// Post posts one leg: it reads the account's version (a strongly
// consistent GetItem), then sends one TransactWriteItems:
//
//   - the idempotency record {pk: RecordKey} has resourceId = TransferID,
//     the leg's accounts, amount and currency (RecordAttributes), the
//     leg's Attempt as its current attempt, for a leg with an Owner the
//     scope Owner, and status IN_PROGRESS (IN_PROGRESS or RECONCILING for
//     a REFUND, which the reaper drives after fencing the record);
//   - the entry (account, transfer, leg) is put if it does not exist, its
//     Sequence the version read plus one;
//   - the account's balance moves by the signed amount and its version by
//     one, if its version is the one read, it exists, is OPEN, is in the leg's currency, for a DEBIT
//     with an Owner belongs to Owner and, for a DEBIT, holds at least the
//     amount;
//   - the amount held for debits in flight follows (Account.Held): a
//     DEBIT holds its amount on the source, its CREDIT or its REFUND
//     releases it. A CREDIT is refused (ErrBalanceLimit) unless the
//     destination could still take back all it holds (its ceiling,
//     balance + held, stays at most math.MaxInt64); a REFUND only gives
//     back what was held, so it is never refused for the limit;
//   - CREDIT: the source's matching DEBIT entry exists and its REFUND entry
//     does not; REFUND: the source's matching DEBIT entry exists and the
//     destination's CREDIT entry does not. So a credit never exists without
//     its debit, and credit and refund exclude each other.
//
// A leg whose entry already exists returns the stored entry with Replayed
// set, whatever else changed since: the leg committed once and moves
// nothing again. A leg whose slot holds a void marker (Void) returns a
// *VoidedError: an attempt of it was rejected for good. A leg that lost
// the race for the account's version to another leg of the account is
// sent again at the new version after a jittered pause (up to
// maxVersionTries transactions while ctx leaves versionRetryReserve, then
// ErrUnavailable). Otherwise a failed condition is reported as the
// matching sentinel (see errors.go) and nothing is written. Errors are
// wrapped as "<leg> <transferId>: ...".
func (l *Ledger) Post(ctx context.Context, leg Leg) (Entry, error) {
	e, err := l.post(ctx, leg)
	if err != nil {
		return Entry{}, fmt.Errorf("%s %s: %w", leg.Kind.verb(), leg.TransferID, err)
	}
	return e, nil
}

func (l *Ledger) post(ctx context.Context, leg Leg) (Entry, error) {
	if err := leg.Validate(); err != nil {
		return Entry{}, err
	}
	version, err := l.accountVersion(ctx, leg.AccountID)
	if err != nil {
		return Entry{}, err
	}
	for try := 1; ; try++ {
		p, err := l.plan(leg, version)
		if err != nil {
			return Entry{}, err
		}
		_, err = l.api.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: p.items})
		if err == nil {
			e, err := p.entry.entry()
			if err != nil {
				// The entry was built here from a validated leg and a
				// clock; it always parses.
				return Entry{}, unavailable(err)
			}
			return e, nil
		}
		e, err := l.resolve(ctx, p, err)
		var moved *versionMovedError
		if !errors.As(err, &moved) || try == maxVersionTries || !timeLeft(ctx) {
			return e, err
		}
		// Another leg of the account committed first: take the next
		// place (the version the cancellation reason returned) after a
		// jittered pause that grows with each lost race, so that legs
		// contending for one account spread out instead of all trying
		// again at once.
		version = moved.current
		if err := pause(ctx, try); err != nil {
			return Entry{}, unavailable(err)
		}
	}
}

// maxVersionTries bounds the transactions one Post sends while other legs
// of the same account keep committing first, and versionRetryReserve is
// the time it keeps before its context's deadline: then it reports
// ErrUnavailable and the caller retries later, rather than have the
// deadline cut a transaction short (its outcome unknown to the caller).
const (
	maxVersionTries       = 40
	versionRetryReserve   = 2 * time.Second
	maxVersionPauseMillis = 64
)

// timeLeft reports whether ctx leaves time for another try.
func timeLeft(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > versionRetryReserve
}

// pause waits before the next try after the n-th lost race: a random time
// up to 2^n ms, at most maxVersionPauseMillis ("full jitter").
func pause(ctx context.Context, n int) error {
	d := time.Duration(rand.IntN(min(1<<n, maxVersionPauseMillis))+1) * time.Millisecond
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// accountVersion reads the account's version with a strongly consistent
// read: the leg's entry takes the next one (Entry.Sequence). A missing
// account reads as 0; its leg's transaction then reports why.
func (l *Ledger) accountVersion(ctx context.Context, accountID string) (int64, error) {
	proj, err := expression.NewBuilder().WithProjection(expression.NamesList(expression.Name(attrVersion))).Build()
	if err != nil {
		return 0, fmt.Errorf("build version projection: %w", err)
	}
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(l.ledger),
		Key:                      key(accountPK(accountID), accountSK),
		ProjectionExpression:     proj.Projection(),
		ExpressionAttributeNames: proj.Names(),
		ConsistentRead:           aws.Bool(true),
	})
	if err != nil {
		return 0, unavailable(fmt.Errorf("read the version of account %s: %w", accountID, err))
	}
	var it struct {
		Version int64 `dynamodbav:"version"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return 0, unavailable(fmt.Errorf("decode the version of account %s: %w", accountID, err))
	}
	return it.Version, nil
}

func (l *Ledger) plan(leg Leg, version int64) (plan, error) {
	p := plan{leg: leg, version: version, entry: newEntryItem(leg, l.now(), version)}

	fence, err := l.fenceCheck(leg)
	if err != nil {
		return plan{}, err
	}
	put, err := l.entryPut(p.entry)
	if err != nil {
		return plan{}, err
	}
	update, err := l.accountUpdate(leg, version)
	if err != nil {
		return plan{}, err
	}
	p.items = []types.TransactWriteItem{idxFence: fence, idxEntry: put, idxAccount: update}

	if leg.Kind == Debit {
		return p, nil
	}
	debit, err := l.debitCheck(leg)
	if err != nil {
		return plan{}, err
	}
	// The entry that excludes this leg: a credit is impossible once the
	// debit was refunded, a refund once the destination was credited.
	excl := key(accountPK(leg.source()), entrySK(leg.TransferID, Refund))
	if leg.Kind == Refund {
		excl = key(accountPK(leg.destination()), entrySK(leg.TransferID, Credit))
	}
	absent, err := l.absentCheck(excl)
	if err != nil {
		return plan{}, err
	}
	p.items = append(p.items, debit, absent)
	if leg.Kind == Credit {
		release, err := l.releaseUpdate(leg)
		if err != nil {
			return plan{}, err
		}
		p.items = append(p.items, release)
	}
	return p, nil
}

// fenceCheck: the idempotency record allows this leg of this transfer,
// and the transfer is the leg's: same accounts, amount and currency (see
// RecordAttributes) and, for a leg with an Owner, the same caller scope.
func (l *Ledger) fenceCheck(leg Leg) (types.TransactWriteItem, error) {
	status := expression.Name(reservation.AttrStatus)
	inProgress := expression.Value(string(reservation.StatusInProgress))
	allowed := status.In(inProgress)
	if leg.Kind == Refund {
		allowed = status.In(inProgress, expression.Value(string(reservation.StatusReconciling)))
	}
	cond := allowed.And(
		reservation.AttemptIs(leg.Attempt),
		expression.Name(reservation.AttrResourceID).Equal(expression.Value(leg.TransferID)),
		expression.Name(RecordAttrSource).Equal(expression.Value(leg.source())),
		expression.Name(RecordAttrDestination).Equal(expression.Value(leg.destination())),
		expression.Name(RecordAttrAmount).Equal(expression.Value(leg.Amount)),
		expression.Name(RecordAttrCurrency).Equal(expression.Value(leg.Currency)),
	)
	if scope := leg.Owner + leg.Caller; scope != "" {
		// At most one of them is set (Validate).
		cond = cond.And(expression.Name(reservation.AttrScope).Equal(expression.Value(scope)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build fence condition: %w", err)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(l.idempotency),
		Key:                       reservation.KeyOf(leg.RecordKey),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		// The old record only words the error (its status); the decision
		// is made from the reason's code.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// entryPut puts the entry unless it exists; when it does, ALL_OLD returns
// the stored entry in the cancellation reason.
func (l *Ledger) entryPut(it entryItem) (types.TransactWriteItem, error) {
	item, err := attributevalue.MarshalMap(it)
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("marshal entry: %w", err)
	}
	expr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(attrPK))).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build entry condition: %w", err)
	}
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                           aws.String(l.ledger),
		Item:                                item,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// accountUpdate moves the balance and the version, if the version is
// still version (the entry's Sequence is the next); ALL_OLD returns the
// account as it was when the condition failed, from which the business
// error is decided.
func (l *Ledger) accountUpdate(leg Leg, version int64) (types.TransactWriteItem, error) {
	cond := expression.AttributeExists(expression.Name(attrPK)).And(
		expression.Name(attrCurrency).Equal(expression.Value(leg.Currency)),
		expression.Name(attrVersion).Equal(expression.Value(version)))
	if leg.Kind != Refund {
		// A refund returns money to where it came from, so closing an
		// account never strands a transfer's debit in flight.
		cond = cond.And(expression.Name(attrStatus).Equal(expression.Value(string(AccountOpen))))
	}
	if leg.Owner != "" {
		cond = cond.And(expression.Name(attrOwner).Equal(expression.Value(leg.Owner)))
	}
	update := expression.Add(expression.Name(attrBalance), expression.Value(leg.signed())).
		Add(expression.Name(attrVersion), expression.Value(1))
	switch leg.Kind {
	case Debit:
		cond = cond.And(expression.Name(attrBalance).GreaterThanEqual(expression.Value(leg.Amount)))
		// The ceiling (balance + held) does not move: the amount leaves
		// the balance and is held until its credit or refund.
		update = update.Add(expression.Name(attrHeld), expression.Value(leg.Amount))
	case Credit:
		// DynamoDB numbers hold 38 digits; the ledger reads balances as
		// int64, so no account may ever need more than math.MaxInt64,
		// even once every debit it has in flight comes back.
		cond = cond.And(expression.Name(attrCeiling).LessThanEqual(expression.Value(int64(math.MaxInt64) - leg.Amount)))
		update = update.Add(expression.Name(attrCeiling), expression.Value(leg.Amount))
	case Refund:
		// The refund takes back what its debit held: balance + held, at
		// most math.MaxInt64 by the credits' condition, does not move.
		update = update.Add(expression.Name(attrHeld), expression.Value(-leg.Amount))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(update).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build account update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                           aws.String(l.ledger),
		Key:                                 key(accountPK(leg.AccountID), accountSK),
		UpdateExpression:                    expr.Update(),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// releaseUpdate: a CREDIT makes its debit final, so the source no longer
// holds the amount: its held amount and its ceiling go down by it. The
// balance and version do not move.
func (l *Ledger) releaseUpdate(leg Leg) (types.TransactWriteItem, error) {
	update := expression.Add(expression.Name(attrHeld), expression.Value(-leg.Amount)).
		Add(expression.Name(attrCeiling), expression.Value(-leg.Amount))
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name(attrPK))).
		WithUpdate(update).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build release update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(l.ledger),
		Key:                       key(accountPK(leg.source()), accountSK),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// debitCheck: the transfer's DEBIT entry exists, is no void marker, and
// matches the leg (same amount, currency and destination), so a credit or refund can never move
// more than was debited.
func (l *Ledger) debitCheck(leg Leg) (types.TransactWriteItem, error) {
	cond := expression.AttributeExists(expression.Name(attrPK)).And(
		expression.AttributeNotExists(expression.Name(attrVoided)),
		expression.Name(attrAmount).Equal(expression.Value(-leg.Amount)),
		expression.Name(attrCurrency).Equal(expression.Value(leg.Currency)),
		expression.Name(attrCounter).Equal(expression.Value(leg.destination())),
	)
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build debit condition: %w", err)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                           aws.String(l.ledger),
		Key:                                 key(accountPK(leg.source()), entrySK(leg.TransferID, Debit)),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

// absentCheck: the item does not exist.
func (l *Ledger) absentCheck(k map[string]types.AttributeValue) (types.TransactWriteItem, error) {
	expr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(attrPK))).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build absence condition: %w", err)
	}
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                aws.String(l.ledger),
		Key:                      k,
		ConditionExpression:      expr.Condition(),
		ExpressionAttributeNames: expr.Names(),
	}}, nil
}

// resolve decides the outcome of a failed transaction from its
// cancellation reasons, read by index.
//
// DynamoDB Local (3.3.1) returns, like DynamoDB, one reason per item, a
// reason for every failed condition, and the ALL_OLD item of a failed Put,
// Update or ConditionCheck in the reason (an empty item when none exists).
// Where an Item is absent anyway, the entry is read back with a strongly
// consistent GetItem.
func (l *Ledger) resolve(ctx context.Context, p plan, err error) (Entry, error) {
	reasons, rerr := cancellationReasons(err, len(p.items))
	if rerr != nil {
		return Entry{}, rerr
	}

	// The entry exists: the leg committed before. Report it, whatever the
	// other reasons say (the record may have moved on, the balance may no
	// longer cover the amount).
	if reasonCode(reasons[idxEntry]) == codeConditionalCheckFailed {
		return l.stored(ctx, p.entry.PK, p.entry.SK, reasons[idxEntry].Item)
	}

	if uerr := undecided(reasons, err); uerr != nil {
		return Entry{}, uerr
	}

	cause := p.conditionFailure(reasons)
	if cause == nil {
		return Entry{}, unavailable(fmt.Errorf("transaction cancelled without a failed condition: %w", err))
	}
	var moved *versionMovedError
	if errors.As(cause, &moved) {
		// Post sends the leg again at the new version; an entry that
		// exists then fails that transaction's entry condition.
		return Entry{}, cause
	}

	// DynamoDB reports a reason per item but does not promise to evaluate
	// every condition once one has failed, so "None" on the entry does not
	// prove it is absent. A leg committed if and only if its entry exists:
	// confirm with a strongly consistent read before reporting a failure
	// for a leg that may in fact have committed (a retried debit whose
	// first attempt drained the balance, say). Failures only: the success
	// path stays one read and one transaction.
	e, found, rerr := l.getEntry(ctx, p.entry.PK, p.entry.SK)
	switch {
	case rerr != nil:
		return Entry{}, rerr
	case found:
		e.Replayed = true
		return e, nil
	}
	return Entry{}, cause
}

// cancellationReasons are the reasons of a cancelled transaction of n
// items, one per item; anything else is reported as ErrUnavailable.
func cancellationReasons(err error, n int) ([]types.CancellationReason, error) {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return nil, unavailable(err)
	}
	if len(tce.CancellationReasons) != n {
		return nil, unavailable(fmt.Errorf("%d cancellation reasons for %d transaction items: %w", len(tce.CancellationReasons), n, err))
	}
	return tce.CancellationReasons, nil
}

// undecided reports, as ErrUnavailable, a cancellation that a condition
// did not decide: TransactionConflict, ThrottlingError,
// ProvisionedThroughputExceeded, ValidationError, ... The caller retries.
func undecided(reasons []types.CancellationReason, err error) error {
	for i, r := range reasons {
		switch c := reasonCode(r); c {
		case codeNone, codeConditionalCheckFailed:
		default:
			return unavailable(fmt.Errorf("transaction item %d: %s: %w", i, c, err))
		}
	}
	return nil
}

// stored returns what the leg's slot (pk, sk) holds, taken from the
// cancellation reason's ALL_OLD item or read when the reason carries none:
// the committed entry with Replayed set, or a *VoidedError for a void
// marker.
func (l *Ledger) stored(ctx context.Context, pk, sk string, item map[string]types.AttributeValue) (Entry, error) {
	var (
		e   Entry
		err error
	)
	if len(item) > 0 {
		e, err = decodeEntry(item)
	} else {
		var found bool
		e, found, err = l.getEntry(ctx, pk, sk)
		if err == nil && !found {
			err = unavailable(errors.New("entry reported as existing is not found"))
		}
	}
	if err != nil {
		return Entry{}, err
	}
	e.Replayed = true
	return e, nil
}

// conditionFailure maps the failed conditions to a domain error, the most
// fundamental first: the fence, then the transfer's other entries, then the
// account. nil means no condition failed.
func (p plan) conditionFailure(reasons []types.CancellationReason) error {
	failed := func(i int) bool {
		return i < len(reasons) && reasonCode(reasons[i]) == codeConditionalCheckFailed
	}
	switch {
	case failed(idxFence):
		return fenceError(p.leg, reasons[idxFence].Item)
	case failed(idxDebit):
		return debitError(p.leg, reasons[idxDebit].Item)
	case failed(idxExclusive):
		if p.leg.Kind == Credit {
			return ErrAlreadyRefunded
		}
		return ErrAlreadyCredited
	case failed(idxAccount):
		return accountError(p.leg, p.version, reasons[idxAccount].Item)
	case failed(idxRelease):
		// The ledger never deletes an account, so the source of a debit
		// is always there to release.
		return unavailable(fmt.Errorf("account %s: the debited source is missing", p.leg.source()))
	}
	return nil
}

func fenceError(leg Leg, item map[string]types.AttributeValue) error {
	if len(item) == 0 {
		return fmt.Errorf("%w: idempotency record not found", ErrFenced)
	}
	var rec struct {
		reservation.Record
		Source      string `dynamodbav:"sourceAccountId"`
		Destination string `dynamodbav:"destinationAccountId"`
		Amount      int64  `dynamodbav:"amount"`
		Currency    string `dynamodbav:"currency"`
	}
	if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
		return fmt.Errorf("%w: idempotency record unreadable: %v", ErrFenced, err)
	}
	switch {
	case rec.ResourceID != leg.TransferID:
		return fmt.Errorf("%w: idempotency record belongs to another transfer", ErrFenced)
	case rec.Source != leg.source() || rec.Destination != leg.destination() ||
		rec.Amount != leg.Amount || rec.Currency != leg.Currency:
		return fmt.Errorf("%w: the leg's accounts, amount or currency are not the transfer's", ErrFenced)
	case leg.Owner != "" && rec.Scope != leg.Owner:
		return fmt.Errorf("%w: the leg's owner is not the transfer's caller", ErrFenced)
	case leg.Caller != "" && rec.Scope != leg.Caller:
		return fmt.Errorf("%w: the leg's caller is not the transfer's", ErrFenced)
	}
	return fmt.Errorf("%w: idempotency record is %s", ErrFenced, rec.Status)
}

func debitError(leg Leg, item map[string]types.AttributeValue) error {
	sentinel := ErrDebitMissing
	if leg.Kind == Refund {
		sentinel = ErrNothingToRefund
	}
	if len(item) == 0 {
		return fmt.Errorf("%w: account %s has no debit for the transfer", sentinel, leg.source())
	}
	var it entryItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return unavailable(fmt.Errorf("decode debit entry: %w", err))
	}
	return fmt.Errorf("%w: the debit is %d %s to %s, the %s is %d %s to %s", sentinel,
		-it.Amount, it.Currency, it.CounterpartyAccountID,
		leg.Kind.verb(), leg.Amount, leg.Currency, leg.destination())
}

// accountError decides why the account update's condition failed from the
// account as it was (ALL_OLD). For a credit with a Caller, a refusal on an
// account that is not the caller's is ErrDestinationUnavailable.
func accountError(leg Leg, version int64, item map[string]types.AttributeValue) error {
	err := ruleError(leg, version, item)
	if leg.Caller == "" || !IsBusiness(err) {
		return err
	}
	var it accountItem
	if len(item) > 0 {
		if derr := attributevalue.UnmarshalMap(item, &it); derr != nil {
			return unavailable(fmt.Errorf("decode account %s: %w", leg.AccountID, derr))
		}
	}
	if it.Owner == leg.Caller {
		return err
	}
	// The rule stays in the message, for the logs; the chain holds only
	// ErrDestinationUnavailable.
	return fmt.Errorf("account %s: %w (%s)", leg.AccountID, ErrDestinationUnavailable, err.Error())
}

// ruleError is the business rule the account (ALL_OLD) breaks, or a
// *versionMovedError when it breaks none but another leg moved its
// version since it was read.
func ruleError(leg Leg, version int64, item map[string]types.AttributeValue) error {
	if len(item) == 0 {
		if leg.Owner != "" {
			// Whether another caller's account exists is not the
			// caller's to learn.
			return fmt.Errorf("account %s: %w", leg.AccountID, ErrForbidden)
		}
		return fmt.Errorf("account %s: %w", leg.AccountID, ErrAccountNotFound)
	}
	var it accountItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return unavailable(fmt.Errorf("decode account %s: %w", leg.AccountID, err))
	}
	switch {
	case leg.Owner != "" && it.Owner != leg.Owner:
		// First: nothing else of another caller's account is told.
		return fmt.Errorf("account %s: %w", leg.AccountID, ErrForbidden)
	case it.Currency != leg.Currency:
		return fmt.Errorf("account %s: %w: the account holds %s, the transfer is in %s",
			leg.AccountID, ErrCurrencyMismatch, it.Currency, leg.Currency)
	case it.Status != string(AccountOpen) && leg.Kind != Refund:
		return fmt.Errorf("account %s: %w", leg.AccountID, ErrAccountClosed)
	case leg.Kind == Debit && it.Balance < leg.Amount:
		return fmt.Errorf("account %s: %w", leg.AccountID, ErrInsufficientFunds)
	case leg.Kind == Credit && it.Ceiling > math.MaxInt64-leg.Amount:
		return fmt.Errorf("account %s: %w: it holds %d, and %d in flight may come back to it", leg.AccountID, ErrBalanceLimit, it.Balance, it.Held)
	case it.Version != version:
		return unavailable(&versionMovedError{account: leg.AccountID, read: version, current: it.Version})
	}
	return unavailable(fmt.Errorf("account %s: update condition failed on an account that allows the posting", leg.AccountID))
}

// versionMovedError: the account's version moved between the read and the
// leg's transaction (another leg of the account committed in between).
// Post tries again at the current version.
type versionMovedError struct {
	account       string
	read, current int64
}

func (e *versionMovedError) Error() string {
	return fmt.Sprintf("account %s: version %d read, %d now: another leg committed first", e.account, e.read, e.current)
}

func reasonCode(r types.CancellationReason) string {
	if c := aws.ToString(r.Code); c != "" {
		return c
	}
	return codeNone
}
