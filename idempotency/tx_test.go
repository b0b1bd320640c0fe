package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// move is a transfer between two accounts, under an idempotency key.
type move struct {
	Key    string `json:"key"`
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

type moved struct {
	Run int64 `json:"run"`
}

// ledger is a DoTx world: an idempotency table, a table of accounts, a
// client that counts its calls, a fake clock, and a function that
// stages a transfer and counts its runs.
type ledger struct {
	t        *testing.T
	client   *dynamodb.Client
	calls    *atomic.Int64
	store    *idempotency.DynamoDBPersistence
	table    string
	accounts string
	clock    *idemtest.Clock
	runs     atomic.Int64
	// during, when set, runs inside the function's run-th run, after it
	// staged the transfer.
	during func(ctx context.Context, m move, tx *idempotency.Tx, run int64)
	// fail, when set, is the function's error.
	fail error
	// onCancel, when set, is the Tx's OnCancel.
	onCancel func(*idempotency.TxItemError) error
}

func newLedger(t *testing.T, balances map[string]int) *ledger {
	t.Helper()
	client, calls := counted(t)
	return newLedgerOn(t, client, calls, balances)
}

// newLedgerOn is newLedger on client, whose calls are counted in calls.
func newLedgerOn(t *testing.T, client *dynamodb.Client, calls *atomic.Int64, balances map[string]int) *ledger {
	t.Helper()
	table := idemtest.Table(t, client)
	l := &ledger{
		t: t, client: client, calls: calls, table: table,
		store: idempotency.NewDynamoDBPersistence(client, table),
		accounts: idemtest.TableFrom(t, client, &dynamodb.CreateTableInput{
			TableName:            aws.String("accounts"),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("account"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("account"), KeyType: types.KeyTypeHash}},
		}),
		clock: idemtest.NewClock(idemtest.Now()),
	}
	for account, b := range balances {
		l.setBalance(account, b)
	}
	return l
}

func (l *ledger) setBalance(account string, b int) {
	l.t.Helper()
	if _, err := l.client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(l.accounts),
		Item: map[string]types.AttributeValue{
			"account": &types.AttributeValueMemberS{Value: account},
			"balance": &types.AttributeValueMemberN{Value: strconv.Itoa(b)},
		},
	}); err != nil {
		l.t.Fatal(err)
	}
}

// wantBalances checks the accounts, reading without counting.
func (l *ledger) wantBalances(want map[string]int) {
	l.t.Helper()
	reader := idemtest.Client(l.t)
	for account, b := range want {
		out, err := reader.GetItem(context.Background(), &dynamodb.GetItemInput{
			TableName: aws.String(l.accounts), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
		})
		if err != nil {
			l.t.Fatal(err)
		}
		if got := scalar(out.Item["balance"]); got != strconv.Itoa(b) {
			l.t.Errorf("balance of %s = %s, want %d", account, got, b)
		}
	}
}

// transfer is the two updates that move m.Amount: the debit conditioned
// on the funds, the credit on the account existing.
func (l *ledger) transfer(m move) []types.TransactWriteItem {
	l.t.Helper()
	update := func(account string, delta int, cond expression.ConditionBuilder) types.TransactWriteItem {
		expr, err := expression.NewBuilder().
			WithUpdate(expression.Set(expression.Name("balance"), expression.Name("balance").Plus(expression.Value(delta)))).
			WithCondition(cond).Build()
		if err != nil {
			l.t.Fatal(err)
		}
		return types.TransactWriteItem{Update: &types.Update{
			TableName:                           aws.String(l.accounts),
			Key:                                 map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: account}},
			UpdateExpression:                    expr.Update(),
			ConditionExpression:                 expr.Condition(),
			ExpressionAttributeNames:            expr.Names(),
			ExpressionAttributeValues:           expr.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}}
	}
	return []types.TransactWriteItem{
		update(m.From, -m.Amount, expression.Name("balance").GreaterThanEqual(expression.Value(m.Amount))),
		update(m.To, m.Amount, expression.AttributeExists(expression.Name("account"))),
	}
}

func (l *ledger) idem(cfg idempotency.Config) *idempotency.Idempotency {
	l.t.Helper()
	if cfg.Store == nil {
		cfg.Store = l.store
	}
	cfg.Clock, cfg.Retention, cfg.Lease = l.clock.Now, time.Hour, time.Minute
	return newIdem(l.t, cfg)
}

func (l *ledger) fn(ctx context.Context, m move, tx *idempotency.Tx) (moved, error) {
	n := l.runs.Add(1)
	if err := tx.Add(l.transfer(m)...); err != nil {
		return moved{}, err
	}
	if l.onCancel != nil {
		tx.OnCancel(l.onCancel)
	}
	if l.during != nil {
		l.during(ctx, m, tx, n)
	}
	if l.fail != nil {
		return moved{}, l.fail
	}
	return moved{Run: n}, nil
}

var moveOp = idempotency.Operation[move]{Scope: "alice", KeyFunc: func(m move) (string, error) { return m.Key, nil }}

// do runs one DoTx and reports the DynamoDB calls it cost.
func (l *ledger) do(ctx context.Context, i *idempotency.Idempotency, m move) (idempotency.Result[moved], int, error) {
	l.t.Helper()
	before := l.calls.Load()
	res, err := idempotency.DoTx(ctx, i, moveOp, m, l.fn)
	return res, int(l.calls.Load() - before), err
}

func (l *ledger) wantCalls(got, want int) {
	l.t.Helper()
	if got != want {
		l.t.Errorf("DynamoDB calls = %d, want %d", got, want)
	}
}

func (l *ledger) wantRuns(want int64) {
	l.t.Helper()
	if got := l.runs.Load(); got != want {
		l.t.Errorf("function runs = %d, want %d", got, want)
	}
}

func (l *ledger) record(key string) idempotency.Entry {
	l.t.Helper()
	e, err := idempotency.NewDynamoDBPersistence(idemtest.Client(l.t), l.table).Get(context.Background(), "alice", key)
	if err != nil {
		l.t.Fatalf("record of %s: %v", key, err)
	}
	return e
}

var m1 = move{Key: "k1", From: "A", To: "B", Amount: 30}

func (l *ledger) wantRecord(key string, status idempotency.EntryStatus, count int64) idempotency.Entry {
	l.t.Helper()
	e := l.record(key)
	if e.Status != status || e.LeaseCount != count {
		l.t.Errorf("record = %s lease %d, want %s lease %d", e.Status, e.LeaseCount, status, count)
	}
	return e
}

func wantMoved(t *testing.T, res idempotency.Result[moved], err error, run int64, replayed bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("DoTx: %v", err)
	}
	if res.Output.Run != run || res.Replayed != replayed {
		t.Errorf("DoTx = %+v, want run %d replayed %v", res, run, replayed)
	}
}

// A new key costs two calls, the acquisition and one transaction of the
// writes and the settlement; a duplicate one; Do with the same write
// made inside the function three.
func TestDoTxCalls(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, l *ledger)
	}{
		{"new key", func(t *testing.T, l *ledger) {
			res, calls, err := l.do(t.Context(), l.idem(idempotency.Config{}), m1)
			wantMoved(t, res, err, 1, false)
			l.wantCalls(calls, 2)
			l.wantBalances(map[string]int{"A": 70, "B": 30})
			if e := l.wantRecord("k1", idempotency.EntryCompleted, 1); string(e.Output) != `{"run":1}` {
				t.Errorf("stored output %s", e.Output)
			}
		}},
		{"duplicate", func(t *testing.T, l *ledger) {
			i := l.idem(idempotency.Config{})
			l.do(t.Context(), i, m1)
			res, calls, err := l.do(t.Context(), i, m1)
			wantMoved(t, res, err, 1, true)
			l.wantCalls(calls, 1)
			l.wantRuns(1)
			l.wantBalances(map[string]int{"A": 70, "B": 30})
		}},
		{"cached duplicate", func(t *testing.T, l *ledger) {
			i := l.idem(idempotency.Config{CacheSize: 8})
			l.do(t.Context(), i, m1)
			res, calls, err := l.do(t.Context(), i, m1)
			wantMoved(t, res, err, 1, true)
			l.wantCalls(calls, 0)
			l.wantBalances(map[string]int{"A": 70, "B": 30})
		}},
		{"nothing staged", func(t *testing.T, l *ledger) {
			before := l.calls.Load()
			res, err := idempotency.DoTx(t.Context(), l.idem(idempotency.Config{}), moveOp, m1, func(context.Context, move, *idempotency.Tx) (moved, error) {
				return moved{Run: 7}, nil
			})
			wantMoved(t, res, err, 7, false)
			l.wantCalls(int(l.calls.Load()-before), 2)
			l.wantRecord("k1", idempotency.EntryCompleted, 1)
			l.wantBalances(map[string]int{"A": 100, "B": 0})
		}},
		{"Do with the write in the function", func(t *testing.T, l *ledger) {
			before := l.calls.Load()
			res, err := idempotency.Do(t.Context(), l.idem(idempotency.Config{}), moveOp, m1, func(ctx context.Context, m move) (moved, error) {
				_, err := l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: l.transfer(m)})
				return moved{Run: 1}, err
			})
			wantMoved(t, res, err, 1, false)
			l.wantCalls(int(l.calls.Load()-before), 3)
			l.wantBalances(map[string]int{"A": 70, "B": 30})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newLedger(t, map[string]int{"A": 100, "B": 0}))
		})
	}
}

// A process that acquired the key and staged the transfer dies before
// committing: a retry waits for the lease, takes the key over, and moves
// the money once; the dead process's commit, should it come back, is
// fenced and writes nothing.
func TestDoTxCrashBeforeCommit(t *testing.T) {
	l := newLedger(t, map[string]int{"A": 100, "B": 0})
	i := l.idem(idempotency.Config{})
	ctx := t.Context()
	now := l.clock.Now()
	dead, acquired, err := l.store.Acquire(ctx, idempotency.AcquireInput{
		Scope: "alice", Key: m1.Key, Fingerprint: idempotency.Fingerprint([]byte(`{"key":"k1","from":"A","to":"B","amount":30}`)),
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	})
	if err != nil || !acquired {
		t.Fatalf("Acquire = %v, %v", acquired, err)
	}
	staged := l.transfer(m1)

	_, calls, err := l.do(ctx, i, m1)
	var ip *idempotency.InProgressError
	if !errors.As(err, &ip) || ip.RetryAfter != time.Minute {
		t.Fatalf("retry under the dead lease = %v, want an *InProgressError for a minute", err)
	}
	l.wantCalls(calls, 1)
	l.wantRuns(0)

	l.clock.Advance(time.Minute)
	res, calls, err := l.do(ctx, i, m1)
	wantMoved(t, res, err, 1, false)
	l.wantCalls(calls, 2)
	l.wantRecord("k1", idempotency.EntryCompleted, 2)
	l.wantBalances(map[string]int{"A": 70, "B": 30})

	o := idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`{"run":0}`), ExpiresAt: now.Add(time.Hour)}
	if err := l.store.SettleWith(ctx, dead.Lease(), o, staged); !errors.Is(err, idempotency.ErrFenced) {
		t.Errorf("the dead lease's commit = %v, want ErrFenced", err)
	}
	l.wantBalances(map[string]int{"A": 70, "B": 30})
	if e := l.wantRecord("k1", idempotency.EntryCompleted, 2); string(e.Output) != `{"run":1}` {
		t.Errorf("stored output %s, want the retry's", e.Output)
	}
	res, calls, err = l.do(ctx, i, m1)
	wantMoved(t, res, err, 1, true)
	l.wantCalls(calls, 1)
}

// A call that outlives its lease while another takes the key over and
// moves the money commits nothing: not its staged transfer, not a
// transaction of its own with the fence.
func TestDoTxZombie(t *testing.T) {
	l := newLedger(t, map[string]int{"A": 100, "B": 0})
	i := l.idem(idempotency.Config{})
	notes := notesTable(t, l.client)
	var ownErr error
	l.during = func(ctx context.Context, m move, tx *idempotency.Tx, run int64) {
		if run != 1 {
			return
		}
		lease, ok := tx.Lease()
		if !ok || lease.Count != 1 {
			t.Errorf("Tx.Lease = %+v, %v, want lease 1", lease, ok)
		}
		l.clock.Advance(time.Minute)
		res, _, err := l.do(ctx, i, m)
		wantMoved(t, res, err, 2, false)
		fence, err := tx.Fence()
		if err != nil {
			t.Fatal(err)
		}
		_, ownErr = l.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{fence, putNote(notes, "zombie")},
		})
	}
	_, calls, err := l.do(t.Context(), i, m1)
	if !errors.Is(err, idempotency.ErrFenced) {
		t.Fatalf("the zombie's DoTx = %v, want ErrFenced", err)
	}
	// Its acquisition and its transaction, the other call's two, and the
	// transaction of its own.
	l.wantCalls(calls, 5)
	var tce *types.TransactionCanceledException
	if !errors.As(ownErr, &tce) || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
		t.Errorf("the zombie's own transaction = %v, want it cancelled by the fence", ownErr)
	}
	if noteExists(t, l.client, notes, "zombie") {
		t.Error("the zombie's own write was committed")
	}
	l.wantBalances(map[string]int{"A": 70, "B": 30})
	if e := l.wantRecord("k1", idempotency.EntryCompleted, 2); string(e.Output) != `{"run":2}` {
		t.Errorf("stored output %s, want the takeover's", e.Output)
	}
}

// A staged item whose condition fails cancels the transaction: nothing
// is written, the error names the item, and the key is released, or the
// error stored when OnCancel makes it permanent.
func TestDoTxItemFails(t *testing.T) {
	for _, c := range []struct {
		name     string
		balances map[string]int
		onCancel func(*idempotency.TxItemError) error
		// index is the failed item's; want is the error DoTx answers.
		index  int
		want   error
		status idempotency.EntryStatus
	}{
		{"insufficient funds", map[string]int{"A": 10, "B": 0}, nil, 0, idempotency.ErrTxItem, idempotency.EntryReleased},
		{"no such account", map[string]int{"A": 100}, nil, 1, idempotency.ErrTxItem, idempotency.EntryReleased},
		{"mapped", map[string]int{"A": 10, "B": 0}, func(*idempotency.TxItemError) error { return errRefused }, 0, errRefused, idempotency.EntryReleased},
		{"mapped to nil", map[string]int{"A": 10, "B": 0}, func(*idempotency.TxItemError) error { return nil }, 0, idempotency.ErrTxItem, idempotency.EntryReleased},
		{"mapped permanent", map[string]int{"A": 10, "B": 0}, func(e *idempotency.TxItemError) error {
			if e.ConditionFailed() && e.Index == 0 {
				return idempotency.Permanent(errRefused)
			}
			return e
		}, 0, errRefused, idempotency.EntryFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLedger(t, c.balances)
			l.onCancel = c.onCancel
			var seen *idempotency.TxItemError
			if c.onCancel != nil {
				l.onCancel = func(e *idempotency.TxItemError) error { seen = e; return c.onCancel(e) }
			}
			i := l.idem(idempotency.Config{})
			_, calls, err := l.do(t.Context(), i, m1)
			if !errors.Is(err, c.want) {
				t.Fatalf("DoTx = %v, want %v", err, c.want)
			}
			var ie *idempotency.TxItemError
			if errors.As(err, &ie) {
				seen = ie
			}
			if seen == nil || seen.Index != c.index || seen.Code != "ConditionalCheckFailed" || !seen.ConditionFailed() {
				t.Errorf("the failed item = %+v, want item %d, ConditionalCheckFailed", seen, c.index)
			}
			if c.index == 0 && scalar(seen.Item["balance"]) != "10" {
				t.Errorf("the failed item's old value = %v, want the balance of 10", seen.Item)
			}
			var tce *types.TransactionCanceledException
			if c.want == idempotency.ErrTxItem && !errors.As(err, &tce) {
				t.Errorf("the error does not wrap the TransactionCanceledException")
			}
			// The acquisition, the transaction, the release or settlement.
			l.wantCalls(calls, 3)
			l.wantBalances(c.balances)
			e := l.wantRecord("k1", c.status, 1)
			if len(e.Output) != 0 {
				t.Errorf("an output was stored: %s", e.Output)
			}
			if c.status == idempotency.EntryFailed {
				_, calls, err := l.do(t.Context(), i, m1)
				var sf *idempotency.StoredFailureError
				if !errors.As(err, &sf) || sf.Message != errRefused.Error() {
					t.Errorf("duplicate = %v, want the stored failure", err)
				}
				l.wantCalls(calls, 1)
				l.wantRuns(1)
				return
			}
			// The key is free again: with the funds there, a retry runs
			// and moves the money once.
			l.setBalance("A", 100)
			l.setBalance("B", 0)
			res, calls, err := l.do(t.Context(), i, m1)
			wantMoved(t, res, err, 2, false)
			l.wantCalls(calls, 2)
			l.wantBalances(map[string]int{"A": 70, "B": 30})
			l.wantRecord("k1", idempotency.EntryCompleted, 2)
		})
	}
}

// When the function fails, nothing it staged is written.
func TestDoTxFunctionFails(t *testing.T) {
	for _, c := range []struct {
		name   string
		fail   error
		status idempotency.EntryStatus
	}{
		{"transient", errTransient, idempotency.EntryReleased},
		{"permanent", idempotency.Permanent(errRefused), idempotency.EntryFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLedger(t, map[string]int{"A": 100, "B": 0})
			l.fail = c.fail
			_, calls, err := l.do(t.Context(), l.idem(idempotency.Config{}), m1)
			if !errors.Is(err, c.fail) {
				t.Fatalf("DoTx = %v, want %v", err, c.fail)
			}
			l.wantCalls(calls, 2)
			l.wantRecord("k1", c.status, 1)
			l.wantBalances(map[string]int{"A": 100, "B": 0})
		})
	}
}

// At most MaxTxItems are staged, and all of them commit; past that,
// nothing does.
func TestDoTxItemLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"MaxTxItems", idempotency.MaxTxItems, true},
		{"one more", idempotency.MaxTxItems + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLedger(t, nil)
			notes := notesTable(t, l.client)
			var addErr error
			_, err := idempotency.DoTx(t.Context(), l.idem(idempotency.Config{}), moveOp, m1, func(_ context.Context, _ move, tx *idempotency.Tx) (moved, error) {
				for n := range c.n {
					if err := tx.Add(putNote(notes, fmt.Sprint(n))); err != nil && addErr == nil {
						addErr = err
					}
				}
				return moved{}, nil // the function ignores Add's error
			})
			if c.ok {
				if err != nil || addErr != nil {
					t.Fatalf("DoTx = %v, Add = %v", err, addErr)
				}
				for n := range c.n {
					if !noteExists(t, l.client, notes, fmt.Sprint(n)) {
						t.Fatalf("item %d was not written", n)
					}
				}
				l.wantRecord("k1", idempotency.EntryCompleted, 1)
				return
			}
			if !errors.Is(addErr, idempotency.ErrTxTooLarge) || !errors.Is(err, idempotency.ErrTxTooLarge) {
				t.Fatalf("Add = %v, DoTx = %v, want ErrTxTooLarge", addErr, err)
			}
			if noteExists(t, l.client, notes, "0") {
				t.Error("a staged item was written")
			}
			l.wantRecord("k1", idempotency.EntryReleased, 1)
		})
	}
}

// A staged item on the idempotency record itself (here the call's own
// fence) is refused, as a transaction holds one action per item: the
// service answers a ValidationException, DynamoDB Local cancels the
// transaction. Either way nothing is written and the key is released.
func TestDoTxItemOnTheRecord(t *testing.T) {
	l := newLedger(t, map[string]int{"A": 100, "B": 0})
	_, err := idempotency.DoTx(t.Context(), l.idem(idempotency.Config{}), moveOp, m1, func(_ context.Context, m move, tx *idempotency.Tx) (moved, error) {
		lease, _ := tx.Lease()
		fence, err := tx.Fence()
		if err != nil {
			return moved{}, err
		}
		if lease.RecordKey != idempotency.RecordKey("alice", m.Key) {
			t.Errorf("lease of %s", lease.RecordKey)
		}
		return moved{}, tx.Add(append(l.transfer(m), fence)...)
	})
	if err == nil || errors.Is(err, idempotency.ErrFenced) {
		t.Fatalf("DoTx = %v, want DynamoDB's refusal", err)
	}
	l.wantBalances(map[string]int{"A": 100, "B": 0})
	l.wantRecord("k1", idempotency.EntryReleased, 1)
}

func TestDoTxNeedsATransactionalStore(t *testing.T) {
	runs := 0
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore()})
	_, err := idempotency.DoTx(t.Context(), i, moveOp, m1, func(context.Context, move, *idempotency.Tx) (moved, error) {
		runs++
		return moved{}, nil
	})
	if !errors.Is(err, idempotency.ErrNotTransactional) || runs != 0 {
		t.Errorf("DoTx on a memory store = %v after %d runs, want ErrNotTransactional", err, runs)
	}
}

// Disabled, the function runs every time and its items are committed
// alone, with no record and no lease.
func TestDoTxDisabled(t *testing.T) {
	l := newLedger(t, map[string]int{"A": 100, "B": 0})
	i := l.idem(idempotency.Config{Disabled: true})
	l.during = func(_ context.Context, _ move, tx *idempotency.Tx, _ int64) {
		if _, ok := tx.Lease(); ok {
			t.Error("a lease while disabled")
		}
		if _, err := tx.Fence(); !errors.Is(err, idempotency.ErrNoLease) {
			t.Errorf("Tx.Fence = %v, want ErrNoLease", err)
		}
	}
	for run := range 2 {
		res, calls, err := l.do(t.Context(), i, m1)
		wantMoved(t, res, err, int64(run+1), false)
		l.wantCalls(calls, 1)
	}
	l.wantBalances(map[string]int{"A": 40, "B": 60})
	if _, err := l.store.Get(t.Context(), "alice", "k1"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Errorf("Get = %v, want no record", err)
	}
	_, _, err := l.do(t.Context(), i, move{Key: "k2", From: "A", To: "B", Amount: 1000})
	var ie *idempotency.TxItemError
	if !errors.As(err, &ie) || ie.Index != 0 || !ie.ConditionFailed() {
		t.Errorf("an overdraft = %v, want a *TxItemError on item 0", err)
	}
	l.wantBalances(map[string]int{"A": 40, "B": 60})
}
