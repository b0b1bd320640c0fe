//go:build integration

package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// The stack's shape.
const (
	// seed seeds the injector; no scenario arms a probabilistic fault, so
	// it only fixes the draws of the workflow's jitter source.
	seed = 20261122
	// faultTimeScale makes the workflow's retry waits and task timeouts a
	// fiftieth of the definition's for the fault scenarios, which run one
	// transfer at a time: a leg's 30 s timeout is 0.6 s (several times what
	// a leg takes under -race), Lambda's one-minute asynchronous retry
	// wait 1.2 s.
	faultTimeScale = 0.02
	// loadTimeScale is the scale for many concurrent transfers: a leg's
	// timeout is 3 s, as in the chaos test, well above what a leg takes
	// when 30 run at once on two cores under -race.
	loadTimeScale = 0.1
	// caller is the API caller of every scenario.
	caller = "scenarios"
	// waitBudget bounds every wait for a state; reaching it fails the
	// test, it is never what a test measures.
	waitBudget = 60 * time.Second
	// restBudget bounds bringing the stack to rest.
	restBudget = 90 * time.Second
	// poll is how often a wait looks again.
	poll = 20 * time.Millisecond
	// reaperFunction, debitFunction, ... are the functions' names in the
	// local stack (the template's logical IDs).
	reaperFunction = chaos.ReaperFunction
	debitFunction  = "DebitFunction"
	creditFunction = "CreditFunction"
)

// envLog sets the level ("debug", "info", ...) of the stack's log on
// stderr; unset, only the capture the assertions read is kept.
const envLog = "SCENARIOS_LOG"

// errorLevel is the level of the log records a healthy run never has.
const errorLevel = slog.LevelError

// crash is the error type of a leg that fails in a way the workflow neither
// retries nor catches: the execution fails and the reaper settles the
// transfer.
const crash = "Injected.Crash"

// errInjected is an SDK failure the SDK's retryer does not retry, so each
// call consumes the fault once.
var errInjected = errors.New("injected failure")

// suite is the stack the scenarios share; each scenario scopes its faults
// to its own accounts, so they never touch another scenario's transfers.
type suite struct {
	h    *chaos.Harness
	in   *fault.Injector
	logs *logCapture
}

// startSuite starts a stack whose workflow runs at timeScale.
func startSuite(t *testing.T, timeScale float64) *suite {
	t.Helper()
	return startSuiteWith(t, chaos.Options{TimeScale: timeScale})
}

// startSuiteWith starts a stack with opts, and the suite's faults and log.
func startSuiteWith(t *testing.T, opts chaos.Options) *suite {
	t.Helper()
	logs := newLogCapture(os.Getenv(envLog))
	in := fault.New(seed)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	opts.Faults, opts.Logger = in, slog.New(logs)
	h, err := chaos.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("close the stack: %v", err)
		}
	})
	return &suite{h: h, in: in, logs: logs}
}

// scenario is one scenario's view of the suite: its currency (so that
// conservation is checked per scenario), accounts and transfers.
type scenario struct {
	*suite
	t         *testing.T
	ctx       context.Context
	currency  string
	accounts  map[string]bool
	transfers map[string]string // transfer id -> idempotency key
	// failedBefore is how many failed invocations the stack had recorded
	// when the scenario began.
	failedBefore int
}

// begin starts a scenario: nothing armed, its own currency.
func (s *suite) begin(t *testing.T, currency string) *scenario {
	t.Helper()
	s.in.Reset()
	return &scenario{suite: s, t: t, ctx: t.Context(), currency: currency,
		accounts: map[string]bool{}, transfers: map[string]string{}, failedBefore: len(s.h.Stack.FailedInvocations())}
}

// open opens an account of the scenarios' caller in the scenario's
// currency.
func (sc *scenario) open(id string, balance int64) string {
	sc.t.Helper()
	if err := sc.h.OpenAccount(sc.ctx, id, caller, sc.currency, balance); err != nil {
		sc.t.Fatal(err)
	}
	sc.accounts[id] = true
	return id
}

// request is a transfer of amount in the scenario's currency.
func (sc *scenario) request(from, to string, amount int64) transfer.Request {
	return transfer.Request{SourceAccountID: from, DestinationAccountID: to, Amount: amount, Currency: sc.currency}
}

// post posts req under key and returns the exchange; it fails the test on
// a transport error.
func (sc *scenario) post(key string, req transfer.Request) chaos.Exchange {
	sc.t.Helper()
	e := sc.h.Client.PostTransfer(sc.ctx, caller, key, req.Canonical())
	if e.Err != "" {
		sc.t.Fatalf("POST /transfers key %s: %s", key, e.Err)
	}
	if e.TransferID != "" {
		sc.transfers[e.TransferID] = key
	}
	return e
}

// accept posts a new transfer and returns its id; the answer must be 202.
func (sc *scenario) accept(key string, req transfer.Request) string {
	sc.t.Helper()
	e := sc.post(key, req)
	if e.Status != http.StatusAccepted || e.TransferID == "" {
		sc.t.Fatalf("POST key %s: %s, want 202 with a transfer", key, e)
	}
	return e.TransferID
}

// record reads the key's idempotency record with a consistent read;
// found is false when there is none.
func (sc *scenario) record(key string) (rec reservation.Record, found bool) {
	sc.t.Helper()
	out, err := sc.h.DB.GetItem(sc.ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(sc.h.IdempotencyTable),
		Key:            map[string]ddbtypes.AttributeValue{reservation.AttrKey: &ddbtypes.AttributeValueMemberS{Value: chaos.RecordKey(caller, key)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		sc.t.Fatalf("read the record of key %s: %v", key, err)
	}
	if len(out.Item) == 0 {
		return reservation.Record{}, false
	}
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		sc.t.Fatalf("decode the record of key %s: %v", key, err)
	}
	if rec.ResourceID != "" {
		sc.transfers[rec.ResourceID] = key
	}
	return rec, true
}

// waitFor polls cond until it holds; it fails the test with what when the
// wait budget runs out.
func (sc *scenario) waitFor(what string, cond func() bool) {
	sc.t.Helper()
	deadline := time.Now().Add(waitBudget)
	for !cond() {
		if time.Now().After(deadline) {
			sc.t.Fatalf("gave up after %v waiting for %s", waitBudget, what)
		}
		select {
		case <-sc.ctx.Done():
			sc.t.Fatalf("waiting for %s: %v", what, sc.ctx.Err())
		case <-time.After(poll):
		}
	}
}

// waitStatus waits until the key's record has one of the statuses.
func (sc *scenario) waitStatus(key string, statuses ...reservation.Status) reservation.Record {
	sc.t.Helper()
	var rec reservation.Record
	sc.waitFor(fmt.Sprintf("the record of key %s to be %v", key, statuses), func() bool {
		var found bool
		rec, found = sc.record(key)
		return found && slices.Contains(statuses, rec.Status)
	})
	return rec
}

// waitSettled waits until the key's record is COMPLETED or FAILED.
func (sc *scenario) waitSettled(key string) reservation.Record {
	sc.t.Helper()
	return sc.waitStatus(key, reservation.StatusCompleted, reservation.StatusFailed)
}

// waitExecution waits until the transfer's execution is closed and
// returns it.
func (sc *scenario) waitExecution(transferID string) *sfn.DescribeExecutionOutput {
	sc.t.Helper()
	var out *sfn.DescribeExecutionOutput
	sc.waitFor("the execution of "+transferID+" to close", func() bool {
		var err error
		out, err = sc.h.SFN.DescribeExecution(sc.ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(sc.h.ExecutionARN(transferID))})
		var missing *sfntypes.ExecutionDoesNotExist
		if err != nil && !errors.As(err, &missing) {
			sc.t.Fatalf("describe the execution of %s: %v", transferID, err)
		}
		return err == nil && out.Status != sfntypes.ExecutionStatusRunning
	})
	return out
}

// waitCount waits until the injector has fired the named fault at least n
// times.
func (sc *scenario) waitCount(name string, n int) {
	sc.t.Helper()
	sc.waitFor(fmt.Sprintf("fault %s to fire %d times", name, n), func() bool { return sc.in.Counts()[name] >= n })
}

// drain waits until no event delivery or asynchronous invocation is in
// flight.
func (sc *scenario) drain() {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(sc.ctx, waitBudget)
	defer cancel()
	if err := sc.h.Stack.Drain(ctx); err != nil {
		sc.t.Fatal(err)
	}
}

// rest disarms the faults and brings the stack to rest: no execution
// running, events and asynchronous invocations delivered, the sweep run
// until every record is terminal.
func (sc *scenario) rest() chaos.QuiesceReport {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(sc.ctx, restBudget)
	defer cancel()
	rep, err := sc.h.Quiesce(ctx)
	if err != nil {
		for _, rec := range rep.Pending {
			sc.t.Logf("left %s: transfer %s\n%s", rec.Status, rec.ResourceID, sc.history(nil, rec.ResourceID))
		}
		sc.t.Fatalf("bring the stack to rest: %v (running: %v)", err, rep.Running)
	}
	return rep
}

// newFailedInvocations returns the failed invocations recorded since the
// scenario began.
func (sc *scenario) newFailedInvocations() []stack.FailedInvocation {
	return sc.h.Stack.FailedInvocations()[sc.failedBefore:]
}

// snapshot reads both tables.
func (sc *scenario) snapshot() *chaos.Snapshot {
	sc.t.Helper()
	s, err := chaos.ReadSnapshot(sc.ctx, sc.h.DB, sc.h.LedgerTable, sc.h.IdempotencyTable)
	if err != nil {
		sc.t.Fatal(err)
	}
	return s
}

// check checks the invariants (chaos.Check) and fails the test on every
// violation that concerns the scenario: its accounts, its transfers, or
// the conservation of its currency. It returns the snapshot it read.
func (sc *scenario) check() *chaos.Snapshot {
	sc.t.Helper()
	rep, snap, err := sc.h.Check(sc.ctx)
	if err != nil {
		sc.t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if !sc.concerns(v) {
			sc.t.Logf("violation outside this scenario: %s", v)
			continue
		}
		sc.t.Errorf("invariant broken: %s", v)
		if v.TransferID != "" {
			sc.t.Logf("history of %s:\n%s", v.TransferID, sc.history(snap, v.TransferID))
		}
	}
	return snap
}

func (sc *scenario) concerns(v chaos.Violation) bool {
	_, mine := sc.transfers[v.TransferID]
	return sc.accounts[v.AccountID] || mine ||
		(v.Invariant == chaos.Conservation && v.AccountID == "" && strings.HasPrefix(v.Message, sc.currency+" "))
}

// legs counts a transfer's postings by leg, and its voided slots.
type legs struct {
	Debit, Credit, Refund, Voided int
}

func (l legs) String() string {
	return fmt.Sprintf("DEBIT=%d CREDIT=%d REFUND=%d voided=%d", l.Debit, l.Credit, l.Refund, l.Voided)
}

func legsOf(snap *chaos.Snapshot, transferID string) legs {
	var l legs
	for _, e := range snap.Entries(transferID) {
		switch {
		case e.Voided:
			l.Voided++
		case e.Leg == ledger.Debit:
			l.Debit++
		case e.Leg == ledger.Credit:
			l.Credit++
		case e.Leg == ledger.Refund:
			l.Refund++
		}
	}
	return l
}

// executions returns the transfer's executions, one per attempt (named
// by the transfer id and the attempt), whatever their status.
func (sc *scenario) executions(transferID string) []sfntypes.ExecutionListItem {
	sc.t.Helper()
	var out []sfntypes.ExecutionListItem
	pages := sfn.NewListExecutionsPaginator(sc.h.SFN, &sfn.ListExecutionsInput{StateMachineArn: aws.String(sc.h.StateMachine), MaxResults: 1000})
	for pages.HasMorePages() {
		page, err := pages.NextPage(sc.ctx)
		if err != nil {
			sc.t.Fatalf("list executions: %v", err)
		}
		for _, e := range page.Executions {
			if transfer.TransferIDOf(aws.ToString(e.Name)) == transferID {
				out = append(out, e)
			}
		}
	}
	return out
}

// outcome is what a transfer must end as.
type outcome struct {
	status   reservation.Status
	code     string // the failure code; "" for COMPLETED
	reversed bool
	legs     legs
	// replay is the HTTP status a replay of the request gets, replayCode
	// its problem code.
	replay     int
	replayCode string
	// attempts is the number of executions the transfer took (1 unless
	// a dead execution was resumed); 0 means 1, anyAttempts any number.
	attempts int
}

// anyAttempts: the transfer may have taken any number of executions (the
// faults decide how many died; a crash loses those it ran).
const anyAttempts = -1

// resumed is o after n executions: n-1 of them died and were resumed.
func (o outcome) resumed(n int) outcome { o.attempts = n; return o }

// completed is a transfer that moved the money once.
var completed = outcome{status: reservation.StatusCompleted, legs: legs{Debit: 1, Credit: 1}, replay: http.StatusOK}

// reversed is a transfer whose debit was refunded for code; the replay is
// replayCode.
func reversed(code, replayCode string) outcome {
	return outcome{status: reservation.StatusFailed, code: code, reversed: true, legs: legs{Debit: 1, Refund: 1},
		replay: http.StatusUnprocessableEntity, replayCode: replayCode}
}

// expect checks a settled transfer against want: its record and stored
// answer, its ledger entries in snap, its single execution, and a replay
// of its request.
func (sc *scenario) expect(snap *chaos.Snapshot, key string, req transfer.Request, want outcome) {
	sc.t.Helper()
	rec, found := sc.record(key)
	if !found {
		sc.t.Errorf("key %s: no record", key)
		return
	}
	tid := rec.ResourceID
	bad := false
	fail := func(format string, args ...any) {
		sc.t.Helper()
		bad = true
		sc.t.Errorf("transfer %s (key %s): %s", tid, key, fmt.Sprintf(format, args...))
	}
	if rec.Status != want.status {
		fail("record is %s, want %s", rec.Status, want.status)
	}
	var t transfer.Transfer
	if err := json.Unmarshal([]byte(rec.Response), &t); err != nil {
		fail("stored answer %q: %v", rec.Response, err)
	}
	switch {
	case want.code == "" && t.Failure != nil:
		fail("stored failure %+v, want none", *t.Failure)
	case want.code != "" && t.Failure == nil:
		fail("no stored failure, want %s", want.code)
	case want.code != "" && (t.Failure.Code != want.code || t.Failure.Reversed != want.reversed):
		fail("stored failure %s reversed=%t, want %s reversed=%t", t.Failure.Code, t.Failure.Reversed, want.code, want.reversed)
	}
	if got := legsOf(snap, tid); got != want.legs {
		fail("ledger has %s, want %s", got, want.legs)
	}
	if n, attempts := len(sc.executions(tid)), max(want.attempts, 1); n != attempts && want.attempts != anyAttempts {
		fail("%d executions, want %d", n, attempts)
	}
	wantSettled := metrics.OutcomeCompleted
	switch {
	case want.status == reservation.StatusFailed && want.reversed:
		wantSettled = metrics.OutcomeReversed
	case want.status == reservation.StatusFailed:
		wantSettled = metrics.OutcomeFailed
	}
	if got := sc.logs.timeToSettle(tid); len(got) != 1 || got[0] != wantSettled {
		fail("published TimeToSettle with outcomes %v, want once with %s", got, wantSettled)
	}
	e := sc.post(key, req)
	if e.Status != want.replay || e.Code != want.replayCode || !e.Replayed || e.TransferID != tid {
		fail("replay answered %s; want %d %s replayed, transfer %s", e, want.replay, want.replayCode, tid)
	}
	if bad {
		sc.t.Logf("history of %s:\n%s", tid, sc.history(snap, tid))
	}
}

// history is everything known of a transfer, for a failure message: its
// record, its ledger entries, its execution history and the logs that
// name it.
func (sc *scenario) history(snap *chaos.Snapshot, transferID string) string {
	ctx := context.WithoutCancel(sc.ctx)
	var b strings.Builder
	if snap == nil {
		var err error
		if snap, err = chaos.ReadSnapshot(ctx, sc.h.DB, sc.h.LedgerTable, sc.h.IdempotencyTable); err != nil {
			fmt.Fprintf(&b, "  (snapshot: %v)\n", err)
		}
	}
	if snap != nil {
		if rec, ok := snap.RecordOf(transferID); ok {
			fmt.Fprintf(&b, "  record %s: %s created %s updated %s expiresAt %d\n    request %s\n    response %s\n",
				rec.Key, rec.Status, rec.CreatedAt, rec.UpdatedAt, rec.ExpiresAt, rec.Request, rec.Response)
		} else {
			b.WriteString("  no record\n")
		}
		for _, e := range snap.Entries(transferID) {
			fmt.Fprintf(&b, "  entry %s\n", e)
		}
	}
	lines, err := sc.h.History(ctx, transferID)
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	if err != nil {
		fmt.Fprintf(&b, "  (history: %v)\n", err)
	}
	for _, l := range sc.logs.about(transferID) {
		fmt.Fprintf(&b, "  log %s\n", l)
	}
	return b.String()
}

// Matchers that scope a fault to the transfers of one source account. The
// scenarios' account ids are unique and none is a prefix of another.

// fromSource matches a leg task whose source account is account.
func fromSource(account string) func([]byte) bool {
	needle := []byte(`"sourceAccountId":"` + account + `"`)
	return func(payload []byte) bool { return bytes.Contains(payload, needle) }
}

// statusEvent matches the status change event of an execution that
// reached status and whose input moves money from account.
func statusEvent(status, account string) func([]byte) bool {
	return func(event []byte) bool {
		var e struct {
			Detail struct {
				Status string `json:"status"`
				Input  string `json:"input"`
			} `json:"detail"`
		}
		if json.Unmarshal(event, &e) != nil || e.Detail.Status != status {
			return false
		}
		var in transfer.WorkflowInput
		if json.Unmarshal([]byte(e.Detail.Input), &in) != nil {
			return false
		}
		var req transfer.Request
		return json.Unmarshal(in.Request, &req) == nil && req.SourceAccountID == account
	}
}

// refundPut matches a TransactWriteItems that posts the REFUND entry on
// account (the refund of a transfer from account).
func refundPut(account string) func(any) bool {
	pk := "ACCOUNT#" + account
	return func(input any) bool {
		in, ok := input.(*dynamodb.TransactWriteItemsInput)
		if !ok {
			return false
		}
		for _, item := range in.TransactItems {
			if item.Put == nil {
				continue
			}
			p, _ := item.Put.Item["pk"].(*ddbtypes.AttributeValueMemberS)
			s, _ := item.Put.Item["sk"].(*ddbtypes.AttributeValueMemberS)
			if p != nil && s != nil && p.Value == pk && strings.HasSuffix(s.Value, "#"+string(ledger.Refund)) {
				return true
			}
		}
		return false
	}
}

// logCapture keeps the stack's log records (Info and above) for the
// assertions and the histories, and passes them on to stderr at the level
// envLog names.
type logCapture struct {
	shared *logStore
	attrs  []slog.Attr
	next   slog.Handler // nil: nothing on stderr
}

type logStore struct {
	mu    sync.Mutex
	lines []logLine
}

// logLine is one log record, its attributes flattened to strings.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (l logLine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", l.Level, l.Msg)
	for _, k := range slices.Sorted(maps.Keys(l.Attrs)) {
		fmt.Fprintf(&b, " %s=%q", k, l.Attrs[k])
	}
	return b.String()
}

func newLogCapture(level string) *logCapture {
	c := &logCapture{shared: &logStore{}}
	if level != "" {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(level)); err != nil {
			lvl = slog.LevelInfo
		}
		c.next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})
	}
	return c
}

func (c *logCapture) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || (c.next != nil && c.next.Enabled(ctx, l))
}

func (c *logCapture) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelInfo {
		line := logLine{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
		for _, a := range c.attrs {
			line.Attrs[a.Key] = a.Value.String()
		}
		r.Attrs(func(a slog.Attr) bool {
			line.Attrs[a.Key] = a.Value.String()
			return true
		})
		c.shared.mu.Lock()
		c.shared.lines = append(c.shared.lines, line)
		c.shared.mu.Unlock()
	}
	if c.next != nil && c.next.Enabled(ctx, r.Level) {
		return c.next.Handle(ctx, r)
	}
	return nil
}

func (c *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.attrs = append(slices.Clip(c.attrs), as...)
	if c.next != nil {
		n.next = c.next.WithAttrs(as)
	}
	return &n
}

func (c *logCapture) WithGroup(name string) slog.Handler {
	n := *c
	if c.next != nil {
		n.next = c.next.WithGroup(name)
	}
	return &n
}

// lines returns the captured records that match.
func (c *logCapture) lines(match func(logLine) bool) []logLine {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	var out []logLine
	for _, l := range c.shared.lines {
		if match(l) {
			out = append(out, l)
		}
	}
	return out
}

// about returns the records that name the transfer.
func (c *logCapture) about(transferID string) []logLine {
	return c.lines(func(l logLine) bool { return l.Attrs["transferId"] == transferID })
}

// timeToSettle returns the Outcome of each TimeToSettle published for
// the transfer.
func (c *logCapture) timeToSettle(transferID string) []string {
	var out []string
	for _, l := range c.about(transferID) {
		if _, ok := l.Attrs[metrics.TimeToSettle]; ok {
			out = append(out, l.Attrs["Outcome"])
		}
	}
	return out
}

// reaperLines returns the reaper's records about the transfer with the
// message msg at level or above.
func (c *logCapture) reaperLines(transferID, msg string, level slog.Level) []logLine {
	return c.lines(func(l logLine) bool {
		return l.Attrs["function"] == reaperFunction && l.Attrs["transferId"] == transferID && l.Level >= level &&
			(msg == "" || l.Msg == msg)
	})
}
