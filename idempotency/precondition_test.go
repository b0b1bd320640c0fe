package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// The operations of the DynamoDB API, as an opLog names them.
const (
	opTransact = "TransactWriteItems"
	opGet      = "GetItem"
	opUpdate   = "UpdateItem"
)

// opLog names the requests a client sends to DynamoDB, each attempt of a
// call that the SDK retries included.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

// option adds the log to a client's options.
func (l *opLog) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("opLog",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				l.mu.Lock()
				l.ops = append(l.ops, middleware.GetOperationName(ctx))
				l.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// take returns the requests logged since the last take.
func (l *opLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ops := l.ops
	l.ops = nil
	return ops
}

// logged is a ledger on an idemtest.CountingClient whose requests are
// also named in a log, with the accounts A (alice's) and B (bob's).
func logged(t *testing.T) (*ledger, *opLog) {
	t.Helper()
	log := &opLog{}
	client, calls := idemtest.CountingClient(t, log.option)
	l := newLedgerOn(t, client, calls, nil)
	l.open("A", "alice", 100)
	l.open("B", "bob", 0)
	log.take()
	return l, log
}

// open stores account, owned by owner, with balance.
func (l *ledger) open(account, owner string, balance int) {
	l.t.Helper()
	if _, err := l.client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(l.accounts),
		Item: map[string]types.AttributeValue{
			"account": &types.AttributeValueMemberS{Value: account},
			"owner":   &types.AttributeValueMemberS{Value: owner},
			"balance": &types.AttributeValueMemberN{Value: fmt.Sprint(balance)},
		},
	}); err != nil {
		l.t.Fatal(err)
	}
}

// ownedBy is the condition that account exists and belongs to owner;
// when it fails, DynamoDB returns the account as it is.
func (l *ledger) ownedBy(account, owner string) types.ConditionCheck {
	l.t.Helper()
	expr, err := expression.NewBuilder().WithCondition(expression.Name("owner").Equal(expression.Value(owner))).Build()
	if err != nil {
		l.t.Fatal(err)
	}
	return types.ConditionCheck{
		TableName:                           aws.String(l.accounts),
		Key:                                 map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// ownerOf is the owner of an account item, "" for no item.
func ownerOf(item map[string]types.AttributeValue) string {
	if v, ok := item["owner"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// owns is an Operation.Require: owner owns each of accounts.
func (l *ledger) owns(owner string, accounts ...string) func(context.Context, order) ([]types.ConditionCheck, error) {
	return func(context.Context, order) ([]types.ConditionCheck, error) {
		var checks []types.ConditionCheck
		for _, a := range accounts {
			checks = append(checks, l.ownedBy(a, owner))
		}
		return checks, nil
	}
}

// requireCase is the world of one case of TestDoRequire: what its before
// may set up.
type requireCase struct {
	t *testing.T
	l *ledger
	// quiet is a store on the ledger's table whose requests are neither
	// counted nor logged.
	quiet *idempotency.DynamoDBPersistence
	in    order
	op    idempotency.Operation[order]
	cfg   idempotency.Config
}

// do runs Do for in on the quiet store, its function failing with err.
func (c *requireCase) do(in order, err error) {
	c.t.Helper()
	i := c.l.idem(idempotency.Config{Store: c.quiet})
	if _, derr := idempotency.Do(c.t.Context(), i, op("alice"), in, func(_ context.Context, o order) (receipt, error) {
		return receipt{Amount: o.Amount}, err
	}); !errors.Is(derr, err) {
		c.t.Fatalf("Do = %v, want %v", derr, err)
	}
}

// hold acquires the key for the case's input, through the quiet store,
// with a lease of d.
func (c *requireCase) hold(d time.Duration) idempotency.Entry {
	c.t.Helper()
	payload, err := json.Marshal(c.in)
	if err != nil {
		c.t.Fatal(err)
	}
	now := c.l.clock.Now()
	e, acquired, err := c.quiet.Acquire(c.t.Context(), idempotency.AcquireInput{
		Scope: "alice", Key: c.in.Key, Fingerprint: idempotency.Fingerprint(payload),
		Now: now, LeaseUntil: now.Add(d), ExpiresAt: now.Add(time.Hour),
	})
	if err != nil || !acquired {
		c.t.Fatalf("Acquire = %v, %v", acquired, err)
	}
	return e
}

// TestDoRequire: Do with Operation.Require on DynamoDB Local. The
// conditions go in one TransactWriteItems with the acquisition, whose
// committed record is then read (a transaction returns none); a key that
// is not free is answered by its record, whatever the conditions say;
// only a key that could be taken is refused for a failed condition, after
// a consistent read of the record, and then nothing is stored. A
// take-over and a re-acquisition after Wait check the conditions too;
// Require is called once per call.
func TestDoRequire(t *testing.T) {
	errFn := errors.New("the function failed")
	tests := []struct {
		name   string
		before func(c *requireCase)
		// owns are the accounts alice must own.
		owns    []string
		wantOps []string
		// wantCalls is the event's StoreCalls: calls of the store's
		// methods, of which AcquireRequiring and TakeOverRequiring are
		// one each, their GetItem included.
		wantCalls int
		// wantErr is what Do fails with; with a *PreconditionError, the
		// condition's index and the owner of the account it returned ("" for
		// no item).
		wantErr       error
		wantIndex     int
		wantItemOwner string
		wantRan       bool
		wantReplayed  bool
		wantOutcome   idempotency.CallOutcome
		// wantStatus and wantCount are the record's afterwards; "" for none.
		wantStatus idempotency.EntryStatus
		wantCount  int64
	}{
		{name: "the conditions hold: acquired, run and settled", owns: []string{"A"},
			wantOps: []string{opTransact, opGet, opUpdate}, wantCalls: 2, wantRan: true,
			wantOutcome: idempotency.OutcomeCompleted, wantStatus: idempotency.EntryCompleted, wantCount: 1},
		{name: "a condition fails: nothing stored", owns: []string{"A", "B"},
			wantOps: []string{opTransact, opGet}, wantCalls: 1, wantErr: idempotency.ErrPreconditionFailed, wantIndex: 1, wantItemOwner: "bob",
			wantOutcome: idempotency.OutcomePreconditionFailed},
		{name: "the checked item is missing", owns: []string{"Z"},
			wantOps: []string{opTransact, opGet}, wantCalls: 1, wantErr: idempotency.ErrPreconditionFailed, wantIndex: 0,
			wantOutcome: idempotency.OutcomePreconditionFailed},
		{name: "no conditions: a plain acquisition", owns: nil,
			wantOps: []string{opUpdate, opUpdate}, wantCalls: 2, wantRan: true,
			wantOutcome: idempotency.OutcomeCompleted, wantStatus: idempotency.EntryCompleted, wantCount: 1},
		{name: "a settled key is replayed, whatever the conditions say", owns: []string{"B"},
			before:  func(c *requireCase) { c.do(c.in, nil) },
			wantOps: []string{opTransact}, wantCalls: 1, wantReplayed: true,
			wantOutcome: idempotency.OutcomeReplayed, wantStatus: idempotency.EntryCompleted, wantCount: 1},
		{name: "a key in progress is in progress, whatever the conditions say", owns: []string{"B"},
			before:  func(c *requireCase) { c.hold(time.Minute) },
			wantOps: []string{opTransact}, wantCalls: 1, wantErr: idempotency.ErrInProgress,
			wantOutcome: idempotency.OutcomeInProgress, wantStatus: idempotency.EntryInProgress, wantCount: 1},
		{name: "a key used with another payload is refused as such", owns: []string{"B"},
			before:  func(c *requireCase) { c.do(order{c.in.Key, c.in.Amount + 1}, nil) },
			wantOps: []string{opTransact}, wantCalls: 1, wantErr: idempotency.ErrKeyReused,
			wantOutcome: idempotency.OutcomeKeyReused, wantStatus: idempotency.EntryCompleted, wantCount: 1},
		{name: "a released key is acquired again when the conditions hold", owns: []string{"A"},
			before:  func(c *requireCase) { c.do(c.in, errFn) },
			wantOps: []string{opTransact, opGet, opUpdate}, wantCalls: 2, wantRan: true,
			wantOutcome: idempotency.OutcomeCompleted, wantStatus: idempotency.EntryCompleted, wantCount: 2},
		{name: "a released key stays released when a condition fails", owns: []string{"B"},
			before:  func(c *requireCase) { c.do(c.in, errFn) },
			wantOps: []string{opTransact, opGet}, wantCalls: 1, wantErr: idempotency.ErrPreconditionFailed, wantIndex: 0, wantItemOwner: "bob",
			wantOutcome: idempotency.OutcomePreconditionFailed, wantStatus: idempotency.EntryReleased, wantCount: 1},
		{name: "a take-over checks the conditions", owns: []string{"B"},
			before: func(c *requireCase) {
				c.hold(time.Minute)
				c.op.TakeOver = func(context.Context, order, idempotency.Lease) (bool, error) { return true, nil }
			},
			wantOps: []string{opTransact, opTransact, opGet}, wantCalls: 2, wantErr: idempotency.ErrPreconditionFailed, wantIndex: 0, wantItemOwner: "bob",
			wantOutcome: idempotency.OutcomePreconditionFailed, wantStatus: idempotency.EntryInProgress, wantCount: 1},
		{name: "a take-over whose conditions hold takes the key", owns: []string{"A"},
			before: func(c *requireCase) {
				c.hold(time.Minute)
				c.op.TakeOver = func(context.Context, order, idempotency.Lease) (bool, error) { return true, nil }
			},
			wantOps: []string{opTransact, opTransact, opGet, opUpdate}, wantCalls: 3, wantRan: true,
			wantOutcome: idempotency.OutcomeCompleted, wantStatus: idempotency.EntryCompleted, wantCount: 2},
		{name: "an acquisition after Wait checks the conditions", owns: []string{"B"},
			before: func(c *requireCase) {
				held := c.hold(time.Minute)
				c.op.Wait = time.Second
				// The holder releases the key while the call waits.
				c.cfg.Sleep = func(ctx context.Context, d time.Duration) error {
					c.l.clock.Advance(d)
					return c.quiet.Release(ctx, held.Lease())
				}
			},
			wantOps: []string{opTransact, opGet, opTransact, opGet}, wantCalls: 3, wantErr: idempotency.ErrPreconditionFailed, wantIndex: 0, wantItemOwner: "bob",
			wantOutcome: idempotency.OutcomePreconditionFailed, wantStatus: idempotency.EntryReleased, wantCount: 1},
	}
	l, log := logged(t)
	quiet := idempotency.NewDynamoDBPersistence(idemtest.Client(t), l.table)
	for n, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l.t = t
			c := &requireCase{t: t, l: l, quiet: quiet, in: order{Key: fmt.Sprintf("require-%d", n), Amount: 5}, op: op("alice")}
			var requires atomic.Int64
			owns := l.owns("alice", tt.owns...)
			c.op.Require = func(ctx context.Context, in order) ([]types.ConditionCheck, error) {
				requires.Add(1)
				return owns(ctx, in)
			}
			if tt.before != nil {
				tt.before(c)
			}
			var ev idempotency.Event
			c.cfg.Observer = idempotency.ObserverFunc(func(_ context.Context, e idempotency.Event) { ev = e })
			i := l.idem(c.cfg)
			log.take()
			calls := l.calls.Load()
			ran := false
			res, err := idempotency.Do(t.Context(), i, c.op, c.in, func(_ context.Context, o order) (receipt, error) {
				ran = true
				return receipt{Amount: o.Amount}, nil
			})

			if ops := log.take(); !slices.Equal(ops, tt.wantOps) {
				t.Errorf("requests %v, want %v", ops, tt.wantOps)
			}
			if n := l.calls.Load() - calls; n != int64(len(tt.wantOps)) {
				t.Errorf("%d requests counted, want %d", n, len(tt.wantOps))
			}
			if ev.StoreCalls != tt.wantCalls || ev.Outcome != tt.wantOutcome {
				t.Errorf("event: %d store calls, outcome %s; want %d, %s", ev.StoreCalls, ev.Outcome, tt.wantCalls, tt.wantOutcome)
			}
			if n := requires.Load(); n != 1 {
				t.Errorf("Require called %d times, want once", n)
			}
			if ran != tt.wantRan || res.Replayed != tt.wantReplayed {
				t.Errorf("ran %v, replayed %v; want %v, %v", ran, res.Replayed, tt.wantRan, tt.wantReplayed)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Do: %v", err)
			case tt.wantErr == nil && res.Output.Amount != c.in.Amount:
				t.Errorf("Do = %+v, want the amount %d", res.Output, c.in.Amount)
			case !errors.Is(err, tt.wantErr):
				t.Errorf("Do = %v, want %v", err, tt.wantErr)
			}
			var pe *idempotency.PreconditionError
			switch isPre := errors.As(err, &pe); {
			case isPre != errors.Is(tt.wantErr, idempotency.ErrPreconditionFailed):
				t.Errorf("Do = %v: a *PreconditionError %v, want %v", err, isPre, !isPre)
			case isPre && (pe.Index != tt.wantIndex || ownerOf(pe.Item) != tt.wantItemOwner):
				t.Errorf("*PreconditionError for condition %d, item %v; want condition %d, owned by %q", pe.Index, pe.Item, tt.wantIndex, tt.wantItemOwner)
			}

			e, err := quiet.Get(t.Context(), "alice", c.in.Key)
			switch {
			case tt.wantStatus == "" && !errors.Is(err, idempotency.ErrNotFound):
				t.Errorf("a refused call stored %+v (%v)", e, err)
			case tt.wantStatus != "" && (err != nil || e.Status != tt.wantStatus || e.LeaseCount != tt.wantCount):
				t.Errorf("record %s lease %d (%v), want %s lease %d", e.Status, e.LeaseCount, err, tt.wantStatus, tt.wantCount)
			}
		})
	}
}

// TestRequireRefusedBeforeTheStore: a call whose conditions cannot be
// sent is refused before any request, and its function never runs.
func TestRequireRefusedBeforeTheStore(t *testing.T) {
	errNoAccount := errors.New("no such account")
	tests := []struct {
		name string
		// store, when set, is the Idempotency's store instead of the ledger's.
		store   func(l *ledger) idempotency.Persistence
		require func(l *ledger) func(context.Context, order) ([]types.ConditionCheck, error)
		tx      bool
		wantErr error
	}{
		{name: "a store that is not a Preconditioner",
			store: func(*ledger) idempotency.Persistence { return idemtest.NewMemoryStore() },
			require: func(l *ledger) func(context.Context, order) ([]types.ConditionCheck, error) {
				return l.owns("alice", "A")
			},
			wantErr: idempotency.ErrPreconditionsUnsupported},
		{name: "DoTx on a store that is not a Preconditioner", tx: true,
			store: func(l *ledger) idempotency.Persistence {
				return struct {
					idempotency.TransactionalPersistence
				}{l.store}
			},
			require: func(l *ledger) func(context.Context, order) ([]types.ConditionCheck, error) {
				return l.owns("alice", "A")
			},
			wantErr: idempotency.ErrPreconditionsUnsupported},
		{name: "Require fails",
			require: func(*ledger) func(context.Context, order) ([]types.ConditionCheck, error) {
				return func(context.Context, order) ([]types.ConditionCheck, error) { return nil, errNoAccount }
			},
			wantErr: errNoAccount},
		{name: "DoTx, Require fails", tx: true,
			require: func(*ledger) func(context.Context, order) ([]types.ConditionCheck, error) {
				return func(context.Context, order) ([]types.ConditionCheck, error) { return nil, errNoAccount }
			},
			wantErr: errNoAccount},
		{name: "too many conditions",
			require: func(l *ledger) func(context.Context, order) ([]types.ConditionCheck, error) {
				return func(context.Context, order) ([]types.ConditionCheck, error) {
					return slices.Repeat([]types.ConditionCheck{l.ownedBy("A", "alice")}, idempotency.MaxTxItems+1), nil
				}
			},
			wantErr: idempotency.ErrTxTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, log := logged(t)
			mem := idemtest.NewMemoryStore()
			cfg := idempotency.Config{}
			if tt.store != nil {
				cfg.Store = tt.store(l)
				if m, ok := cfg.Store.(*idemtest.MemoryStore); ok {
					mem = m
				}
			}
			var ev idempotency.Event
			cfg.Observer = idempotency.ObserverFunc(func(_ context.Context, e idempotency.Event) { ev = e })
			i := l.idem(cfg)
			o := op("alice")
			o.Require = tt.require(l)
			ran := false
			var err error
			in := order{Key: "k1", Amount: 5}
			if tt.tx {
				_, err = idempotency.DoTx(t.Context(), i, o, in, func(context.Context, order, *idempotency.Tx) (receipt, error) {
					ran = true
					return receipt{}, nil
				})
			} else {
				_, err = idempotency.Do(t.Context(), i, o, in, func(context.Context, order) (receipt, error) {
					ran = true
					return receipt{}, nil
				})
			}
			if !errors.Is(err, tt.wantErr) || ran {
				t.Errorf("Do = %v, ran %v; want %v, not run", err, ran, tt.wantErr)
			}
			if ops := log.take(); len(ops) != 0 || mem.TotalCalls() != 0 {
				t.Errorf("requests %v and %d calls of the memory store, want none", ops, mem.TotalCalls())
			}
			if ev.Outcome != idempotency.OutcomeInvalid || ev.StoreCalls != 0 {
				t.Errorf("event %s with %d store calls, want %s with none", ev.Outcome, ev.StoreCalls, idempotency.OutcomeInvalid)
			}
		})
	}
}

// TestRequireNotOnACachedReplay: a replay from the cache neither calls
// Require nor makes a request.
func TestRequireNotOnACachedReplay(t *testing.T) {
	l, log := logged(t)
	var requires atomic.Int64
	o := op("alice")
	owns := l.owns("alice", "A")
	o.Require = func(ctx context.Context, in order) ([]types.ConditionCheck, error) {
		requires.Add(1)
		return owns(ctx, in)
	}
	i := l.idem(idempotency.Config{CacheSize: 8})
	runs := 0
	fn := func(_ context.Context, o order) (receipt, error) {
		runs++
		return receipt{Amount: o.Amount}, nil
	}
	if _, err := idempotency.Do(t.Context(), i, o, order{Key: "k1", Amount: 5}, fn); err != nil {
		t.Fatal(err)
	}
	log.take()
	res, err := idempotency.Do(t.Context(), i, o, order{Key: "k1", Amount: 5}, fn)
	if err != nil || !res.FromCache || runs != 1 {
		t.Fatalf("Do = %+v, %v after %d runs; want a replay from the cache", res, err, runs)
	}
	if ops, n := log.take(), requires.Load(); len(ops) != 0 || n != 1 {
		t.Errorf("the cached replay made the requests %v, Require called %d times in all; want none, once", ops, n)
	}
}

// TestRequireNotWhenDisabled: with idempotency disabled, fn runs
// directly: Require is not called, and no request is made.
func TestRequireNotWhenDisabled(t *testing.T) {
	l, log := logged(t)
	var requires atomic.Int64
	o := op("alice")
	o.Require = func(context.Context, order) ([]types.ConditionCheck, error) {
		requires.Add(1)
		return []types.ConditionCheck{l.ownedBy("B", "alice")}, nil
	}
	i := l.idem(idempotency.Config{Disabled: true})
	res, err := idempotency.Do(t.Context(), i, o, order{Key: "k1", Amount: 5}, func(_ context.Context, o order) (receipt, error) {
		return receipt{Amount: o.Amount}, nil
	})
	if err != nil || res.Output.Amount != 5 {
		t.Fatalf("Do = %+v, %v; want the function run", res, err)
	}
	if ops, n := log.take(), requires.Load(); len(ops) != 0 || n != 0 {
		t.Errorf("requests %v, Require called %d times; want none, never", ops, n)
	}
}

// TestAcquireRequiringRefuses: the store refuses, before any request, what
// it cannot send; without conditions it acquires as Acquire does.
func TestAcquireRequiringRefuses(t *testing.T) {
	l, log := logged(t)
	now := l.clock.Now()
	in := idempotency.AcquireInput{Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	noTransact := idempotency.NewDynamoDBPersistence(struct{ idempotency.PersistenceAPI }{l.client}, l.table)
	tooMany := slices.Repeat([]types.ConditionCheck{l.ownedBy("A", "alice")}, idempotency.MaxTxItems+1)
	one := []types.ConditionCheck{l.ownedBy("A", "alice")}
	held := idempotency.Lease{RecordKey: idempotency.RecordKey("alice", "k1"), ID: "someone", Count: 1}
	tests := []struct {
		name    string
		call    func() (idempotency.Entry, bool, error)
		wantErr error
	}{
		{"acquire, too many conditions", func() (idempotency.Entry, bool, error) {
			return l.store.AcquireRequiring(t.Context(), in, tooMany)
		}, idempotency.ErrTxTooLarge},
		{"take over, too many conditions", func() (idempotency.Entry, bool, error) {
			return l.store.TakeOverRequiring(t.Context(), in, held, tooMany)
		}, idempotency.ErrTxTooLarge},
		{"acquire, a client without TransactWriteItems", func() (idempotency.Entry, bool, error) {
			return noTransact.AcquireRequiring(t.Context(), in, one)
		}, idempotency.ErrNotTransactional},
		{"take over, a client without TransactWriteItems", func() (idempotency.Entry, bool, error) {
			return noTransact.TakeOverRequiring(t.Context(), in, held, one)
		}, idempotency.ErrNotTransactional},
		{"a key that fails ValidateKey", func() (idempotency.Entry, bool, error) {
			bad := in
			bad.Key = ""
			return l.store.AcquireRequiring(t.Context(), bad, one)
		}, idempotency.ErrKeyMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log.take()
			e, acquired, err := tt.call()
			if !errors.Is(err, tt.wantErr) || acquired {
				t.Errorf("= %+v, %v, %v; want %v", e, acquired, err, tt.wantErr)
			}
			if ops := log.take(); len(ops) != 0 {
				t.Errorf("requests %v, want none", ops)
			}
		})
	}
	t.Run("no conditions", func(t *testing.T) {
		log.take()
		e, acquired, err := l.store.AcquireRequiring(t.Context(), in, nil)
		if err != nil || !acquired || e.LeaseCount != 1 {
			t.Fatalf("= %+v, %v, %v; want acquired", e, acquired, err)
		}
		if ops := log.take(); !slices.Equal(ops, []string{opUpdate}) {
			t.Errorf("requests %v, want one UpdateItem", ops)
		}
	})
}

// TestAcquireRequiringCancellations: how a cancelled transaction is
// answered, by its reasons, injected in place of the request. A reason
// other than a failed condition decides nothing: an error that wraps the
// SDK's, without a read of the record. A failed condition with None on
// the record, which DynamoDB may give without evaluating the record's
// condition, is settled by a consistent read: a record that is not free
// answers; a free one, or none, makes it a *PreconditionError. A
// take-over whose own condition failed on no record is ErrNotFound.
func TestAcquireRequiringCancellations(t *testing.T) {
	const (
		none   = "None"
		failed = "ConditionalCheckFailed"
	)
	bob := map[string]types.AttributeValue{"owner": &types.AttributeValueMemberS{Value: "bob"}}
	reasons := func(codes ...string) []types.CancellationReason {
		var rs []types.CancellationReason
		for _, c := range codes {
			r := types.CancellationReason{Code: aws.String(c)}
			if c == failed {
				r.Item = bob
			}
			rs = append(rs, r)
		}
		return rs
	}
	tests := []struct {
		name    string
		reasons []types.CancellationReason
		// held: another call holds the key; takeOver: the write is a
		// take-over from that call.
		held, takeOver bool
		// wantErr is the error; nil with wantRecord: the record answers.
		wantErr    error
		wantRecord bool
		wantOps    []string
	}{
		{name: "a conflict on a condition", reasons: reasons(none, "TransactionConflict"),
			wantErr: &types.TransactionCanceledException{}, wantOps: []string{opTransact}},
		{name: "the record throttled", reasons: reasons("ThrottlingError", none),
			wantErr: &types.TransactionCanceledException{}, wantOps: []string{opTransact}},
		{name: "a failed condition and a conflict", reasons: reasons(none, failed, "TransactionConflict"),
			wantErr: &types.TransactionCanceledException{}, wantOps: []string{opTransact}},
		{name: "no reason", reasons: reasons(none, none),
			wantErr: &types.TransactionCanceledException{}, wantOps: []string{opTransact}},
		{name: "reasons that do not match the items", reasons: reasons(none),
			wantErr: &types.TransactionCanceledException{}, wantOps: []string{opTransact}},
		{name: "a failed condition, no record", reasons: reasons(none, failed),
			wantErr: idempotency.ErrPreconditionFailed, wantOps: []string{opTransact, opGet}},
		{name: "a failed condition, the record held", reasons: reasons(none, failed), held: true,
			wantRecord: true, wantOps: []string{opTransact, opGet}},
		{name: "the record's condition failed, its item not returned", reasons: []types.CancellationReason{{Code: aws.String(failed)}, {Code: aws.String(none)}}, held: true,
			wantRecord: true, wantOps: []string{opTransact, opGet}},
		{name: "a take-over, a failed condition, the record still held", reasons: reasons(none, failed), held: true, takeOver: true,
			wantErr: idempotency.ErrPreconditionFailed, wantOps: []string{opTransact, opGet}},
		{name: "a take-over, a failed condition, no record", reasons: reasons(none, failed), takeOver: true,
			wantErr: idempotency.ErrPreconditionFailed, wantOps: []string{opTransact, opGet}},
		{name: "a take-over, the record's condition failed on no record", reasons: []types.CancellationReason{{Code: aws.String(failed)}, {Code: aws.String(none)}}, takeOver: true,
			wantErr: idempotency.ErrNotFound, wantOps: []string{opTransact, opGet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &opLog{}
			cancelled := &types.TransactionCanceledException{Message: aws.String("injected"), CancellationReasons: tt.reasons}
			client := idemtest.Client(t, log.option, func(o *dynamodb.Options) {
				o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
					return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("cancel",
						func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
							if middleware.GetOperationName(ctx) == opTransact {
								return middleware.FinalizeOutput{}, middleware.Metadata{}, cancelled
							}
							return next.HandleFinalize(ctx, in)
						}), middleware.After)
				})
			})
			l := newLedgerOn(t, client, &atomic.Int64{}, nil)
			now := l.clock.Now()
			in := idempotency.AcquireInput{Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			var holder idempotency.Entry
			if tt.held {
				var err error
				if holder, _, err = l.store.Acquire(t.Context(), in); err != nil {
					t.Fatal(err)
				}
			}
			checks := slices.Repeat([]types.ConditionCheck{l.ownedBy("A", "alice")}, len(tt.reasons)-1)
			if len(checks) == 0 {
				checks = []types.ConditionCheck{l.ownedBy("A", "alice")}
			}
			log.take()
			var (
				e        idempotency.Entry
				acquired bool
				err      error
			)
			if tt.takeOver {
				e, acquired, err = l.store.TakeOverRequiring(t.Context(), in, holder.Lease(), checks)
			} else {
				e, acquired, err = l.store.AcquireRequiring(t.Context(), in, checks)
			}
			if ops := log.take(); !slices.Equal(ops, tt.wantOps) {
				t.Errorf("requests %v, want %v", ops, tt.wantOps)
			}
			if acquired {
				t.Fatalf("= %+v, acquired", e)
			}
			if tt.wantRecord {
				if err != nil || e.LeaseID != holder.LeaseID {
					t.Errorf("= %+v, %v; want the holder's record", e, err)
				}
				return
			}
			var tce *types.TransactionCanceledException
			var pe *idempotency.PreconditionError
			switch {
			case errors.As(tt.wantErr, &tce):
				if !errors.As(err, &tce) || errors.Is(err, idempotency.ErrPreconditionFailed) {
					t.Errorf("= %v; want an error wrapping the cancellation, no *PreconditionError", err)
				}
			case !errors.Is(err, tt.wantErr):
				t.Errorf("= %v, want %v", err, tt.wantErr)
			case errors.As(err, &pe) && (pe.Index != 0 || ownerOf(pe.Item) != "bob"):
				t.Errorf("*PreconditionError for condition %d, item %v; want condition 0, bob's", pe.Index, pe.Item)
			}
		})
	}
}

// newTokenOnRetry makes the SDK's retries of a TransactWriteItems carry
// another ClientRequestToken than the first attempt's, so that DynamoDB
// runs them again instead of answering a retry of a committed transaction
// with success.
func newTokenOnRetry(o *dynamodb.Options) {
	var attempts atomic.Int64
	o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("newTokenOnRetry",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) != opTransact || attempts.Add(1) == 1 {
					return next.HandleFinalize(ctx, in)
				}
				req := in.Request.(*smithyhttp.Request)
				body, err := io.ReadAll(req.GetStream())
				if err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				var fields map[string]any
				if err := json.Unmarshal(body, &fields); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				fields["ClientRequestToken"] = fmt.Sprintf("retry-%d", attempts.Load())
				if body, err = json.Marshal(fields); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				if req, err = req.SetStream(bytes.NewReader(body)); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				req.ContentLength = int64(len(body))
				in.Request = req
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	})
}

// TestAcquireRequiringAnswerLost: an acquisition whose transaction
// committed but whose answer was lost, retried by the SDK, holds the
// record it wrote, and its call runs the function: whether DynamoDB
// answers the retry by its ClientRequestToken with success (then the
// record is read), or runs it again and cancels it (then the record under
// the call's own lease comes back from the cancellation).
func TestAcquireRequiringAnswerLost(t *testing.T) {
	tests := []struct {
		name    string
		opts    []func(*dynamodb.Options)
		wantOps []string
	}{
		{"the retry answered by its token", nil, []string{opTransact, opTransact, opGet}},
		{"the retry cancelled", []func(*dynamodb.Options){newTokenOnRetry}, []string{opTransact, opTransact}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &opLog{}
			client, attempts := idemtest.LoseFirstReply(t, opTransact, append(tt.opts, log.option)...)
			l := newLedgerOn(t, client, &atomic.Int64{}, nil)
			l.open("A", "alice", 100)
			now := l.clock.Now()
			log.take()
			e, acquired, err := l.store.AcquireRequiring(t.Context(), idempotency.AcquireInput{
				Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
			}, []types.ConditionCheck{l.ownedBy("A", "alice")})
			if n := attempts.Load(); n != 2 {
				t.Fatalf("%d TransactWriteItems attempts, want 2 (the first answer lost)", n)
			}
			if ops := log.take(); !slices.Equal(ops, tt.wantOps) {
				t.Errorf("requests %v, want %v", ops, tt.wantOps)
			}
			if err != nil || !acquired || e.LeaseCount != 1 || e.Status != idempotency.EntryInProgress {
				t.Fatalf("AcquireRequiring = %+v, %v, %v; want the record acquired under lease 1", e, acquired, err)
			}
			if err := l.store.Settle(t.Context(), e.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`1`), ExpiresAt: now.Add(time.Hour)}); err != nil {
				t.Fatalf("Settle under the answered lease: %v", err)
			}

			// Through Do, the call runs its function instead of failing as
			// in progress.
			attempts.Store(0)
			o := op("alice")
			o.Require = l.owns("alice", "A")
			runs := 0
			res, err := idempotency.Do(t.Context(), l.idem(idempotency.Config{}), o, order{Key: "k2", Amount: 5}, func(_ context.Context, o order) (receipt, error) {
				runs++
				return receipt{Amount: o.Amount}, nil
			})
			if err != nil || res.Output.Amount != 5 || runs != 1 || attempts.Load() != 2 {
				t.Fatalf("Do = %+v, %v after %d runs and %d attempts; want the function run once", res, err, runs, attempts.Load())
			}
			l.wantRecord("k2", idempotency.EntryCompleted, 1)
		})
	}
}

// TestDoTxRequire: DoTx checks the conditions in the acquisition: when
// one fails, the function does not run, nothing is stored and none of
// its writes is committed; when they hold, its writes are committed with
// the settlement under the lease of that acquisition.
func TestDoTxRequire(t *testing.T) {
	tests := []struct {
		name         string
		caller       string
		wantErr      error
		wantOps      []string
		wantRuns     int64
		wantBalances map[string]int
	}{
		{"the caller owns the source: moved", "alice", nil,
			[]string{opTransact, opGet, opTransact}, 1, map[string]int{"A": 70, "B": 30}},
		{"another's account: nothing moved, nothing stored", "mallory", idempotency.ErrPreconditionFailed,
			[]string{opTransact, opGet}, 0, map[string]int{"A": 100, "B": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, log := logged(t)
			o := moveOp
			o.Require = func(_ context.Context, m move) ([]types.ConditionCheck, error) {
				return []types.ConditionCheck{l.ownedBy(m.From, tt.caller)}, nil
			}
			res, err := idempotency.DoTx(t.Context(), l.idem(idempotency.Config{}), o, m1, l.fn)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("DoTx = %+v, %v; want %v", res, err, tt.wantErr)
			}
			if ops := log.take(); !slices.Equal(ops, tt.wantOps) {
				t.Errorf("requests %v, want %v", ops, tt.wantOps)
			}
			l.wantRuns(tt.wantRuns)
			l.wantBalances(tt.wantBalances)
			if tt.wantErr == nil {
				l.wantRecord(m1.Key, idempotency.EntryCompleted, 1)
				return
			}
			var pe *idempotency.PreconditionError
			if !errors.As(err, &pe) || pe.Index != 0 || ownerOf(pe.Item) != "alice" {
				t.Errorf("DoTx = %v, want a *PreconditionError for condition 0 with account A", err)
			}
			if e, err := l.store.Get(t.Context(), "alice", m1.Key); !errors.Is(err, idempotency.ErrNotFound) {
				t.Errorf("a refused call stored %+v (%v)", e, err)
			}
		})
	}
}
