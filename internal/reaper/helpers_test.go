package reaper_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// testTimeout bounds every test's calls; nothing waits for long intervals,
// so reaching it means a hang.
const testTimeout = time.Minute

// References that steer the test state machine (the transfer request's
// reference field): runRef calls a function that holds the execution
// RUNNING until it is stopped or times out (an hour at time scale 1),
// succeedRef succeeds, failRef fails without an error name. Any other
// reference fails the execution with the reference as its error name. The
// execution of a resumed attempt (attempt > 0) always holds, so a test
// sees the resumed run RUNNING.
const (
	runRef     = "run"
	succeedRef = "succeed"
	failRef    = "fail"
)

// testMachine is a stand-in for the transfer workflow whose outcome the
// request's reference chooses; the tests move the record and post the legs
// themselves, as the workflow would have.
const testMachine = `{
  "StartAt": "Route",
  "TimeoutSeconds": 3600,
  "States": {
    "Route": {
      "Type": "Choice",
      "Choices": [
        {"Variable": "$.attempt", "NumericGreaterThan": 0, "Next": "Hold"},
        {"Variable": "$.request.reference", "StringEquals": "run", "Next": "Hold"},
        {"Variable": "$.request.reference", "StringEquals": "succeed", "Next": "Done"},
        {"Variable": "$.request.reference", "StringEquals": "fail", "Next": "FailBare"}
      ],
      "Default": "FailNamed"
    },
    "Hold": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "hold", "Payload.$": "$"},
      "TimeoutSeconds": 7200,
      "Next": "Done"
    },
    "Done": {"Type": "Succeed"},
    "FailBare": {"Type": "Fail"},
    "FailNamed": {"Type": "Fail", "ErrorPath": "$.request.reference", "Cause": "failed by the test state machine"}
  }
}`

// Amounts of every test transfer.
const (
	openingBalance = 1000
	amount         = 100
	currency       = "EUR"
)

// env is DynamoDB Local tables, a ledger on them, and a local Step
// Functions endpoint with the test state machine.
type env struct {
	db         *dynamodb.Client
	tables     ddbtest.TableNames
	ledger     *ledger.Ledger
	srv        *sfnlocal.Server
	sfn        *sfn.Client
	machineARN string
	events     *publisher
}

type envOptions struct {
	// timeScale scales the test machine's durations (sfnlocal.Config):
	// at 0.0002 the machine times out after 0.72 s, before its Hold
	// state's 1.44 s.
	timeScale float64
}

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	db := ddbtest.Client(t)
	tables := ddbtest.Tables(t, db)
	l, err := ledger.New(db, ledger.Config{LedgerTable: tables["LedgerTable"], IdempotencyTable: tables["IdempotencyTable"]})
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	events := &publisher{}
	srv := sfnlocal.New(sfnlocal.Config{
		Publisher: events,
		Lambda:    holdLambda{},
		TimeScale: opts.timeScale,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err := srv.AddStateMachine(sfnlocal.StateMachine{Name: "Transfer", Definition: []byte(testMachine)}); err != nil {
		t.Fatalf("add state machine: %v", err)
	}
	endpoint, err := srv.Listen("")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close the Step Functions endpoint: %v", err)
		}
	})
	return &env{
		db:     db,
		tables: tables,
		ledger: l,
		srv:    srv,
		sfn: sfn.New(sfn.Options{
			BaseEndpoint: aws.String(endpoint),
			Region:       sfnlocal.DefaultRegion,
			Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		}),
		machineARN: srv.StateMachineARN("Transfer"),
		events:     events,
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// config is the reaper configuration of the env's tables and machine.
func (e *env) config() reaper.Config {
	return reaper.Config{
		IdempotencyTable: e.tables["IdempotencyTable"],
		LedgerTable:      e.tables["LedgerTable"],
		StateMachineARN:  e.machineARN,
	}
}

// newReaper returns a reaper on the env with the real ledger, or with l
// when given; edit adjusts its configuration.
func (e *env) newReaper(t *testing.T, l reaper.Ledger, edit func(*reaper.Config)) *reaper.Reaper {
	t.Helper()
	cfg := e.config()
	if edit != nil {
		edit(&cfg)
	}
	if l == nil {
		l = e.ledger
	}
	r, err := reaper.New(cfg, e.db, e.sfn, l, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatalf("reaper.New: %v", err)
	}
	return r
}

// fixture is one transfer: its accounts, request and record.
type fixture struct {
	src, dst string
	req      transfer.Request
	rec      reservation.Record
}

// newTransfer opens a source (openingBalance) and a destination (0) and
// reserves the transfer's key as the orchestrator does, createdAt age ago.
func (e *env) newTransfer(t *testing.T, reference string, age time.Duration) fixture {
	t.Helper()
	ctx := testContext(t)
	f := fixture{src: ledgertest.ID("src"), dst: ledgertest.ID("dst")}
	for _, a := range []struct {
		id      string
		balance int64
	}{{f.src, openingBalance}, {f.dst, 0}} {
		if created, err := e.ledger.OpenAccount(ctx, a.id, callerScope, currency, a.balance); err != nil || !created {
			t.Fatalf("OpenAccount(%s) = %v, %v", a.id, created, err)
		}
	}
	f.req = transfer.Request{SourceAccountID: f.src, DestinationAccountID: f.dst, Amount: amount, Currency: currency, Reference: reference}
	f.rec = e.reserve(t, f.req.Canonical(), age)
	return f
}

// callerScope is the scope of the transfers' caller, the accounts' owner.
const callerScope = "caller"

// reserve reserves a fresh key for request, createdAt age ago, with the
// transfer's payload in the record as the orchestrator stores it (none
// when request is not a transfer).
func (e *env) reserve(t *testing.T, request []byte, age time.Duration) reservation.Record {
	t.Helper()
	store := reservation.NewStore(e.db, e.tables["IdempotencyTable"],
		reservation.WithClock(func() time.Time { return time.Now().Add(-age) }))
	var attrs map[string]types.AttributeValue
	var req transfer.Request
	if json.Unmarshal(request, &req) == nil {
		attrs = ledger.RecordAttributes(req.SourceAccountID, req.DestinationAccountID, req.Amount, req.Currency)
	}
	rec, created, err := store.Reserve(testContext(t), reservation.Reservation{
		Scope:       callerScope,
		Key:         ledgertest.ID("key"),
		Fingerprint: idempotency.Fingerprint(request),
		ResourceID:  ledgertest.ID("tr"),
		Request:     request,
		Attributes:  attrs,
	})
	if err != nil || !created {
		t.Fatalf("Reserve = %v, %v; want a new record", created, err)
	}
	return rec
}

// start starts the transfer's execution as the orchestrator does.
func (e *env) start(t *testing.T, f fixture) string {
	t.Helper()
	input, err := transfer.NewWorkflowInput(f.rec)
	if err != nil {
		t.Fatalf("NewWorkflowInput: %v", err)
	}
	out, err := e.sfn.StartExecution(testContext(t), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(e.machineARN),
		Name:            aws.String(f.rec.ResourceID),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		t.Fatalf("StartExecution(%s): %v", f.rec.ResourceID, err)
	}
	return aws.ToString(out.ExecutionArn)
}

// closeExecution starts the transfer's execution and waits until it has
// closed; it returns the execution ARN.
func (e *env) closeExecution(t *testing.T, f fixture) string {
	t.Helper()
	arn := e.start(t, f)
	info, err := e.srv.Wait(testContext(t), arn)
	if err != nil {
		t.Fatalf("wait for %s: %v", arn, err)
	}
	if info.Status == sfnlocal.StatusRunning {
		t.Fatalf("execution %s still running", arn)
	}
	return arn
}

// runExecution starts the transfer's execution (reference runRef) and
// checks that it is running.
func (e *env) runExecution(t *testing.T, f fixture) string {
	t.Helper()
	arn := e.start(t, f)
	if st := e.executionStatus(t, f); st != sfntypes.ExecutionStatusRunning {
		t.Fatalf("execution %s is %s; want RUNNING", arn, st)
	}
	return arn
}

// stop aborts the transfer's running execution without a cause, as
// anything but an operator would, and waits until it closed.
func (e *env) stop(t *testing.T, arn string) { e.stopWith(t, arn, nil) }

// abort stops the execution as an operator does: with a cause.
func (e *env) abort(t *testing.T, arn string) {
	e.stopWith(t, arn, aws.String("ops@example.com: the customer cancelled the payment"))
}

func (e *env) stopWith(t *testing.T, arn string, cause *string) {
	t.Helper()
	if _, err := e.sfn.StopExecution(testContext(t), &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Cause: cause}); err != nil {
		t.Fatalf("StopExecution(%s): %v", arn, err)
	}
	if _, err := e.srv.Wait(testContext(t), arn); err != nil {
		t.Fatalf("wait for %s: %v", arn, err)
	}
}

// executionStatus is the status of the transfer's execution; "" when it
// does not exist.
func (e *env) executionStatus(t *testing.T, f fixture) sfntypes.ExecutionStatus {
	t.Helper()
	out, err := e.describe(t, f)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		return ""
	}
	return out.Status
}

func (e *env) describe(t *testing.T, f fixture) (*sfn.DescribeExecutionOutput, error) {
	t.Helper()
	out, err := e.sfn.DescribeExecution(testContext(t), &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(e.executionARN(f)),
	})
	var missing *sfntypes.ExecutionDoesNotExist
	if errors.As(err, &missing) {
		return nil, nil
	}
	return out, err
}

func (e *env) executionARN(f fixture) string { return e.attemptARN(f, 0) }

// attemptARN is the ARN of the execution of the transfer's attempt.
func (e *env) attemptARN(f fixture, attempt int64) string {
	return "arn:aws:states:" + sfnlocal.DefaultRegion + ":" + sfnlocal.DefaultAccountID + ":execution:Transfer:" +
		transfer.ExecutionName(f.rec.ResourceID, attempt)
}

// checkResumed checks that the transfer was resumed under attempt: the
// record is RESERVED under it, in the Pending index, and that attempt's
// execution runs with the input the orchestrator would build from the
// record; the ledger holds entries; and a leg of the earlier attempt can
// commit nothing.
func (e *env) checkResumed(t *testing.T, f fixture, attempt int64, entries ...ledger.Kind) {
	t.Helper()
	rec := e.record(t, f)
	if rec.Attempt != attempt || rec.Status != reservation.StatusReserved || rec.Pending != "RESERVED" || rec.ExecutionArn != "" {
		t.Fatalf("record = attempt %d %s (pending %q, execution %q); want attempt %d RESERVED in the Pending index",
			rec.Attempt, rec.Status, rec.Pending, rec.ExecutionArn, attempt)
	}
	out, err := e.sfn.DescribeExecution(testContext(t), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(e.attemptARN(f, attempt))})
	if err != nil {
		t.Fatalf("DescribeExecution of attempt %d: %v", attempt, err)
	}
	want, err := transfer.NewWorkflowInput(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Input); got != string(want) {
		t.Errorf("resumed execution input = %s; want the orchestrator's %s", got, want)
	}
	if out.Status != sfntypes.ExecutionStatusRunning {
		t.Errorf("resumed execution is %s; want RUNNING", out.Status)
	}
	if got := e.entries(t, f); !reflect.DeepEqual(got, entries) {
		t.Errorf("entries = %v; want %v", got, entries)
	}
	stale := f.leg(ledger.Credit)
	stale.Attempt = attempt - 1
	if _, err := e.ledger.Post(testContext(t), stale); !errors.Is(err, ledger.ErrFenced) {
		t.Errorf("credit of attempt %d after the resume = %v; want ErrFenced", attempt-1, err)
	}
}

// markInProgress moves the record RESERVED -> IN_PROGRESS as the
// workflow's MarkInProgress does.
func (e *env) markInProgress(t *testing.T, f fixture) {
	t.Helper()
	e.update(t, f, expression.Name("status").Equal(expression.Value("RESERVED")),
		expression.Set(expression.Name("status"), expression.Value("IN_PROGRESS")).
			Set(expression.Name("pending"), expression.Value("IN_PROGRESS")).
			Set(expression.Name("executionArn"), expression.Value(e.executionARN(f))))
}

// markInProgressAt is markInProgress with the updatedAt MarkInProgress
// stores.
func (e *env) markInProgressAt(t *testing.T, f fixture, at time.Time) {
	t.Helper()
	e.update(t, f, expression.Name("status").Equal(expression.Value("RESERVED")),
		expression.Set(expression.Name("status"), expression.Value("IN_PROGRESS")).
			Set(expression.Name("pending"), expression.Value("IN_PROGRESS")).
			Set(expression.Name("executionArn"), expression.Value(e.executionARN(f))).
			Set(expression.Name("updatedAt"), expression.Value(at.UTC().Format(reservation.TimeFormat))))
}

// markReconciling fences the record as a reaper does before it reads the
// ledger: what a reaper that stopped right after its fence leaves behind.
func (e *env) markReconciling(t *testing.T, f fixture) {
	t.Helper()
	e.update(t, f, expression.Name("status").In(expression.Value("RESERVED"), expression.Value("IN_PROGRESS")),
		expression.Set(expression.Name("status"), expression.Value("RECONCILING")).
			Set(expression.Name("pending"), expression.Value("RECONCILING")))
}

// markTerminal stores a final status and response as the workflow's
// MarkCompleted / MarkFailed do.
func (e *env) markTerminal(t *testing.T, f fixture, status reservation.Status, response string) {
	t.Helper()
	e.update(t, f, expression.Name("status").Equal(expression.Value("IN_PROGRESS")),
		expression.Set(expression.Name("status"), expression.Value(string(status))).
			Set(expression.Name("response"), expression.Value(response)).
			Remove(expression.Name("pending")))
}

func (e *env) update(t *testing.T, f fixture, cond expression.ConditionBuilder, upd expression.UpdateBuilder) {
	t.Helper()
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		t.Fatalf("build update: %v", err)
	}
	if _, err := e.db.UpdateItem(testContext(t), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.tables["IdempotencyTable"]),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: f.rec.Key}},
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}); err != nil {
		t.Fatalf("update record %s: %v", f.rec.Key, err)
	}
}

// leg is the transfer's leg of kind.
func (f fixture) leg(kind ledger.Kind) ledger.Leg {
	l := ledger.Leg{
		Kind: kind, TransferID: f.rec.ResourceID, RecordKey: f.rec.Key,
		AccountID: f.src, CounterpartyAccountID: f.dst, Amount: amount, Currency: currency,
	}
	if kind == ledger.Credit {
		l.AccountID, l.CounterpartyAccountID = f.dst, f.src
	}
	return l
}

// post posts the transfer's legs, failing the test on any error.
func (e *env) post(t *testing.T, f fixture, kinds ...ledger.Kind) {
	t.Helper()
	for _, k := range kinds {
		if _, err := e.ledger.Post(testContext(t), f.leg(k)); err != nil {
			t.Fatalf("post %s of %s: %v", k, f.rec.ResourceID, err)
		}
	}
}

// voidDebit makes a business refusal of the transfer's debit final, as the
// debit worker does (ledger.Void), with reason as its code.
func (e *env) voidDebit(t *testing.T, f fixture, reason string) {
	t.Helper()
	if _, err := e.ledger.Void(testContext(t), f.leg(ledger.Debit), reason, "Refused: "+reason+"."); err != nil {
		t.Fatalf("void the debit of %s: %v", f.rec.ResourceID, err)
	}
}

// record reads the transfer's record, strongly consistent.
func (e *env) record(t *testing.T, f fixture) reservation.Record {
	t.Helper()
	rec, err := reservation.NewStore(e.db, e.tables["IdempotencyTable"]).GetByRecordKey(testContext(t), f.rec.Key)
	if err != nil {
		t.Fatalf("read record %s: %v", f.rec.Key, err)
	}
	return rec
}

// rawRecord is the record's item as stored, every attribute.
func (e *env) rawRecord(t *testing.T, f fixture) map[string]any {
	t.Helper()
	out, err := e.db.GetItem(testContext(t), &dynamodb.GetItemInput{
		TableName:      aws.String(e.tables["IdempotencyTable"]),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: f.rec.Key}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("get record %s: %v", f.rec.Key, err)
	}
	var m map[string]any
	if err := attributevalue.UnmarshalMap(out.Item, &m); err != nil {
		t.Fatalf("decode record %s: %v", f.rec.Key, err)
	}
	return m
}

// entries are the kinds of the transfer's ledger entries.
func (e *env) entries(t *testing.T, f fixture) []ledger.Kind {
	t.Helper()
	m, err := e.ledger.TransferEntries(testContext(t), f.rec.ResourceID, f.src, f.dst)
	if err != nil {
		t.Fatalf("TransferEntries(%s): %v", f.rec.ResourceID, err)
	}
	var kinds []ledger.Kind
	for _, k := range ledger.Kinds {
		if _, ok := m[k]; ok {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func (e *env) balance(t *testing.T, account string) int64 {
	t.Helper()
	a, err := e.ledger.Account(testContext(t), account)
	if err != nil {
		t.Fatalf("Account(%s): %v", account, err)
	}
	return a.Balance
}

// state is everything a settle may change for one transfer.
type state struct {
	Record    map[string]any
	Entries   []ledger.Kind
	Balances  [2]int64
	Execution sfntypes.ExecutionStatus
}

func (e *env) state(t *testing.T, f fixture) state {
	t.Helper()
	return state{
		Record:    e.rawRecord(t, f),
		Entries:   e.entries(t, f),
		Balances:  [2]int64{e.balance(t, f.src), e.balance(t, f.dst)},
		Execution: e.executionStatus(t, f),
	}
}

// checkUnchanged fails the test when the transfer's state differs from
// before.
func (e *env) checkUnchanged(t *testing.T, f fixture, before state) {
	t.Helper()
	if after := e.state(t, f); !reflect.DeepEqual(before, after) {
		t.Errorf("transfer %s changed:\nbefore %+v\nafter  %+v", f.rec.ResourceID, before, after)
	}
}

// settled describes a terminal transfer.
type settled struct {
	status   reservation.Status
	code     string // failure code; "" for COMPLETED
	reversed bool
}

// checkSettled checks the record is terminal as want, out of the Pending
// index, with a response the orchestrator reads back; and that the
// balances and entries match the outcome.
func (e *env) checkSettled(t *testing.T, f fixture, want settled) {
	t.Helper()
	rec := e.record(t, f)
	if rec.Status != want.status {
		t.Fatalf("record status = %s; want %s", rec.Status, want.status)
	}
	if rec.Pending != "" {
		t.Errorf("record still in the Pending index (pending = %q)", rec.Pending)
	}
	got, err := transfer.FromRecord(rec)
	if err != nil {
		t.Fatalf("FromRecord: %v", err)
	}
	wantTransfer := transfer.Transfer{
		TransferID:           f.rec.ResourceID,
		Status:               string(want.status),
		SourceAccountID:      f.src,
		DestinationAccountID: f.dst,
		Amount:               amount,
		Currency:             currency,
		Reference:            f.req.Reference,
		CreatedAt:            f.rec.CreatedAt,
		SettledAt:            got.SettledAt,
	}
	if want.status == reservation.StatusFailed {
		wantTransfer.Failure = &transfer.Failure{Code: want.code, Reversed: want.reversed}
		if got.Failure != nil {
			wantTransfer.Failure.Detail = got.Failure.Detail
		}
	}
	if !reflect.DeepEqual(got, wantTransfer) {
		t.Errorf("stored transfer =\n%+v (failure %+v)\nwant\n%+v (failure %+v)", got, got.Failure, wantTransfer, wantTransfer.Failure)
	}
	if got.Failure != nil && got.Failure.Detail == "" {
		t.Errorf("failure without a detail")
	}
	if _, err := time.Parse(time.RFC3339, got.SettledAt); err != nil {
		t.Errorf("settledAt %q: %v", got.SettledAt, err)
	}

	wantEntries, wantBalances := []ledger.Kind(nil), [2]int64{openingBalance, 0}
	switch {
	case want.status == reservation.StatusCompleted:
		wantEntries, wantBalances = []ledger.Kind{ledger.Debit, ledger.Credit}, [2]int64{openingBalance - amount, amount}
	case want.reversed:
		wantEntries = []ledger.Kind{ledger.Debit, ledger.Refund}
	}
	if got := e.entries(t, f); !reflect.DeepEqual(got, wantEntries) {
		t.Errorf("entries = %v; want %v", got, wantEntries)
	}
	if got := [2]int64{e.balance(t, f.src), e.balance(t, f.dst)}; got != wantBalances {
		t.Errorf("balances (source, destination) = %v; want %v", got, wantBalances)
	}
}

// holdLambda is the function the test machine's Hold state calls: it
// returns only when its execution is stopped or times out.
type holdLambda struct{}

func (holdLambda) InvokeFunction(ctx context.Context, _ string, _ []byte) ([]byte, *sfnlocal.FunctionError, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// publisher records the status change events of the local endpoint.
type publisher struct {
	mu     sync.Mutex
	events []json.RawMessage
}

func (p *publisher) Publish(_ context.Context, event []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, append(json.RawMessage(nil), event...))
	return nil
}

// closed is the status change event of the execution's close; the
// endpoint publishes it before srv.Wait returns.
func (p *publisher) closed(t *testing.T, executionARN string) json.RawMessage {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range p.events {
		var e struct {
			Detail struct {
				ExecutionArn string `json:"executionArn"`
				Status       string `json:"status"`
			} `json:"detail"`
		}
		if err := json.Unmarshal(ev, &e); err != nil {
			t.Fatalf("decode event: %v", err)
		}
		if e.Detail.ExecutionArn == executionARN && e.Detail.Status != sfnlocal.StatusRunning {
			return ev
		}
	}
	t.Fatalf("no close event for %s", executionARN)
	return nil
}

// wrappedLedger is the real ledger with hooks run before its calls, to
// act at a precise point of a settle: right after the fence (the ledger
// read) or around the refund.
type wrappedLedger struct {
	*ledger.Ledger
	beforeEntries func(ctx context.Context) error
	afterPost     func(ctx context.Context, leg ledger.Leg, err error) error
}

func (w *wrappedLedger) TransferEntries(ctx context.Context, transferID, source, destination string) (map[ledger.Kind]ledger.Entry, error) {
	if w.beforeEntries != nil {
		if err := w.beforeEntries(ctx); err != nil {
			return nil, err
		}
	}
	return w.Ledger.TransferEntries(ctx, transferID, source, destination)
}

func (w *wrappedLedger) Post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error) {
	e, err := w.Ledger.Post(ctx, leg)
	if w.afterPost != nil {
		err = w.afterPost(ctx, leg, err)
	}
	return e, err
}

// refundFor posts the transfer's REFUND as the workflow does when the
// ledger refused its credit for code.
func (e *env) refundFor(t *testing.T, f fixture, code string) {
	t.Helper()
	leg := f.leg(ledger.Refund)
	leg.Reason, leg.Detail = code, "The credit to account "+f.dst+" was refused ("+code+")."
	if _, err := e.ledger.Post(testContext(t), leg); err != nil {
		t.Fatal(err)
	}
}
