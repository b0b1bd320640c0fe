package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// One stack for the package's tests, started with the probe.
var (
	probe *Probe
	st    *stack.Stack
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	probe = NewProbe()
	var err error
	// The workflow at a tenth of real time, as the other end-to-end
	// tests run it: a busy machine does not time the legs out.
	st, err = stack.Start(ctx, probe.Options(stack.Options{TimeScale: 0.1}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start the local stack:", err)
		return 1
	}
	defer st.Close(ctx)
	return m.Run()
}

const opening = 1 << 40

// seed opens n pairs of the default caller and returns them with their
// opening balances, for the invariant check.
func seed(t *testing.T, n int) ([]Pair, map[string]chaos.Opening) {
	t.Helper()
	pairs, err := SeedPairs(context.Background(), st, n, DefaultCaller, opening)
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]chaos.Opening{}
	for _, p := range pairs {
		open[p.Source] = chaos.Opening{Currency: DefaultCurrency, Balance: opening}
		open[p.Destination] = chaos.Opening{Currency: DefaultCurrency, Balance: opening}
	}
	return pairs, open
}

// db is a client of the stack's DynamoDB without the probe's middleware.
func db() *dynamodb.Client {
	return dynamodb.NewFromConfig(st.AWS, func(o *dynamodb.Options) { o.APIOptions = nil })
}

// check reads both tables and fails the test on any broken invariant
// (money conserved over the given accounts, every record terminal, every
// answer agreeing with the ledger, no orphan entry).
func check(t *testing.T, open map[string]chaos.Opening) {
	t.Helper()
	rep, err := chaos.Check(context.Background(), db(), st.Tables["LedgerTable"], st.Tables["IdempotencyTable"], open)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("invariant broken: %s", v)
	}
}

// balance reads an account's balance.
func balance(t *testing.T, id string) int64 {
	t.Helper()
	led, err := ledger.New(db(), ledger.Config{LedgerTable: st.Tables["LedgerTable"], IdempotencyTable: st.Tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	a, err := led.Account(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a.Balance
}

// countCompleted counts the COMPLETED records.
func countCompleted(t *testing.T) int {
	t.Helper()
	snap, err := chaos.ReadSnapshot(context.Background(), db(), st.Tables["LedgerTable"], st.Tables["IdempotencyTable"])
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range snap.Records {
		if r.Status == reservation.StatusCompleted {
			n++
		}
	}
	return n
}

func TestRunCompletesEveryTransfer(t *testing.T) {
	tests := []struct {
		name           string
		clients, pairs int
		count, warmup  int
	}{
		{name: "one client", clients: 1, pairs: 1, count: 4, warmup: 1},
		{name: "four clients on two pairs", clients: 4, pairs: 2, count: 12, warmup: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pairs, open := seed(t, tt.pairs)
			before := countCompleted(t)
			res, err := probe.Run(context.Background(), st, Config{Clients: tt.clients, Count: tt.count, Warmup: tt.warmup, Pairs: pairs, Amount: 7})
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != tt.count || len(res.Latencies) != tt.count || len(res.Accept) != tt.count {
				t.Fatalf("completed %d, %d latencies, %d accept times; want %d of each", res.Completed, len(res.Latencies), len(res.Accept), tt.count)
			}
			for i, l := range res.Latencies {
				if l <= 0 || res.Accept[i] <= 0 || res.Accept[i] > l {
					t.Errorf("transfer %d: accepted after %s, settled after %s", i, res.Accept[i], l)
				}
			}
			if res.Elapsed <= 0 || res.PerSecond <= 0 || res.Clients != tt.clients {
				t.Errorf("elapsed %s, %.1f/s, %d clients", res.Elapsed, res.PerSecond, res.Clients)
			}
			check(t, open)
			total := tt.count + tt.clients*tt.warmup
			if got := countCompleted(t) - before; got != total {
				t.Errorf("%d more COMPLETED records, want %d (measured and warm-up)", got, total)
			}
			// Every transfer moved 7 from a source to its destination.
			var moved int64
			for _, p := range pairs {
				moved += opening - balance(t, p.Source)
			}
			if moved != int64(7*total) {
				t.Errorf("%d moved, want %d", moved, 7*total)
			}
		})
	}
}

func TestRunReportsATransferThatDoesNotComplete(t *testing.T) {
	pairs, _ := seed(t, 1)
	poor, err := SeedPairs(context.Background(), st, 1, DefaultCaller, 10)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "source cannot pay: it ends FAILED", cfg: Config{Count: 1, Pairs: poor, Amount: 11}, wantErr: "ended FAILED"},
		{name: "not the caller's accounts", cfg: Config{Count: 1, Pairs: pairs, Caller: "mallory"}, wantErr: "answered 403"},
		{name: "no pairs", cfg: Config{Count: 1}, wantErr: "no account pairs"},
		{name: "no end", cfg: Config{Pairs: pairs}, wantErr: "Duration or a Count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := probe.Run(context.Background(), st, tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunStopsAtItsDuration(t *testing.T) {
	pairs, open := seed(t, 2)
	res, err := probe.Run(context.Background(), st, Config{Clients: 2, Duration: 300 * time.Millisecond, Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed == 0 {
		t.Fatal("no transfer completed")
	}
	// Transfers start until the duration; the last ones then finish.
	if res.Elapsed < 300*time.Millisecond || res.Elapsed > 300*time.Millisecond+2*slices.Max(res.Latencies)+time.Second {
		t.Errorf("elapsed %s for a 300ms run whose slowest transfer took %s", res.Elapsed, slices.Max(res.Latencies))
	}
	check(t, open)
}

// opSummary is an operation as the tests compare it.
type opSummary struct{ by, kind string }

func summarize(m Mix) []opSummary {
	out := make([]opSummary, len(m.Ops))
	for i, o := range m.Ops {
		out[i] = opSummary{o.By, o.Kind()}
	}
	return out
}

func TestCaptureRecordsTheTransfersOperationsInOrder(t *testing.T) {
	pairs, _ := seed(t, 1)
	mix, err := probe.Capture(context.Background(), st, CaptureConfig{Pair: pairs[0], Amount: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("captured:\n%s", mix)
	want := []opSummary{
		// The reservation; the owner is checked beside it (a read of the
		// account, not the transfer's, when the container does not
		// remember it) and by the debit.
		{"OrchestratorFunction", "PutItem"},
		{ByWorkflow, "UpdateItem"},   // MarkInProgress
		{"DebitFunction", "GetItem"}, // the source's version: the entry's sequence
		{"DebitFunction", "TransactWriteItems(ConditionCheck, Put, Update)"},
		{"CreditFunction", "GetItem"},
		{"CreditFunction", "TransactWriteItems(ConditionCheck, Put, Update, ConditionCheck, ConditionCheck, Update)"}, // its last Update releases the source's held amount
		{ByWorkflow, "UpdateItem"}, // MarkCompleted
	}
	if got := summarize(mix); !slices.Equal(got, want) {
		t.Fatalf("captured\n%v\nwant\n%v", got, want)
	}
	if mix.TransferID == "" || mix.RecordKey != recordKeyOf(DefaultCaller, mix.Key) || mix.Pair != pairs[0] {
		t.Errorf("mix identifiers: transfer %q, record %q (key %q), pair %v", mix.TransferID, mix.RecordKey, mix.Key, mix.Pair)
	}
	for i, o := range mix.Ops {
		read := o.Operation == "GetItem" && strings.Contains(string(o.Body), `"version"`)
		if !read && !strings.Contains(string(o.Body), mix.RecordKey) {
			t.Errorf("operation %d does not name the record: %s", i+1, o.Body)
		}
	}
	// The workflow's updates: the first takes the record IN_PROGRESS, the
	// last makes it COMPLETED.
	first, last := mix.Ops[1].Body, mix.Ops[6].Body
	if _, _, terminal := terminalUpdate(first); terminal || !strings.Contains(string(first), `"IN_PROGRESS"`) {
		t.Errorf("first workflow update is not MarkInProgress: %s", first)
	}
	if key, status, ok := terminalUpdate(last); !ok || key != mix.RecordKey || status != reservation.StatusCompleted {
		t.Errorf("last workflow update: %q %q %v, want %s COMPLETED", key, status, ok, mix.RecordKey)
	}
	if got := mix.Kinds(); got["UpdateItem"] != 2 || got["GetItem"] != 2 || len(got) != 5 {
		t.Errorf("kinds %v", got)
	}
}

func TestReplayIssuesTheMixWithoutConditionFailures(t *testing.T) {
	pairs, open := seed(t, 3)
	mix, err := probe.Capture(context.Background(), st, CaptureConfig{Pair: pairs[0], Amount: 5})
	if err != nil {
		t.Fatal(err)
	}
	before := countCompleted(t)
	const passes = 9
	rep, err := Replay(context.Background(), st, mix, ReplayConfig{Clients: 3, Count: passes, Warmup: 1, Pairs: pairs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Transfers != passes || len(rep.Latencies) != passes || rep.PerSecond <= 0 {
		t.Fatalf("%d passes, %d latencies, %.1f/s; want %d", rep.Transfers, len(rep.Latencies), rep.PerSecond, passes)
	}
	if rep.OpsPerTransfer != len(mix.Ops) || rep.Issued != passes*len(mix.Ops) {
		t.Errorf("%d ops per transfer, %d issued; want %d and %d", rep.OpsPerTransfer, rep.Issued, len(mix.Ops), passes*len(mix.Ops))
	}
	if rep.ConditionFailures != 0 || len(rep.Failures) != 0 {
		t.Errorf("%d condition failures, failures %v; want none", rep.ConditionFailures, rep.Failures)
	}
	// Every pass settled a new record, as the workflow would have, and
	// moved the amount once: the invariants hold over the replayed
	// transfers too.
	if got := countCompleted(t) - before; got != passes+3 {
		t.Errorf("%d more COMPLETED records, want %d", got, passes+3)
	}
	check(t, open)
	var moved int64
	for _, p := range pairs {
		moved += opening - balance(t, p.Source)
	}
	// The capture's transfer, the warm-up passes and the measured ones.
	if want := int64(5 * (1 + 3 + passes)); moved != want {
		t.Errorf("%d moved, want %d", moved, want)
	}
}

func TestReplayCountsConditionFailures(t *testing.T) {
	pairs, _ := seed(t, 1)
	mix, err := probe.Capture(context.Background(), st, CaptureConfig{Pair: pairs[0]})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		spoil func(*Mix)
		// wantPerPass is how many operations of each pass must fail.
		wantPerPass int
	}{
		{
			// The captured record key, not a new one: the reservation
			// finds the key taken, and the rest of the pass finds the
			// record COMPLETED, not what each step expects. The reads
			// of the accounts' versions have no condition.
			name:        "record key not rewritten",
			spoil:       func(m *Mix) { m.RecordKey = "not-in-any-request" },
			wantPerPass: len(mix.Ops) - mix.Kinds()["GetItem"],
		},
		{
			// A new record, but the captured transfer id: the legs'
			// entries exist already.
			name:        "transfer id not rewritten",
			spoil:       func(m *Mix) { m.TransferID = "not-in-any-request" },
			wantPerPass: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mix
			tt.spoil(&m)
			rep, err := Replay(context.Background(), st, m, ReplayConfig{Count: 2})
			if err != nil {
				t.Fatal(err)
			}
			if rep.ConditionFailures != 2*tt.wantPerPass {
				t.Errorf("%d condition failures (%v), want %d", rep.ConditionFailures, rep.Failures, 2*tt.wantPerPass)
			}
		})
	}
}

func TestCompareAddsUpItsRounds(t *testing.T) {
	pairs, open := seed(t, 2)
	mix, err := probe.Capture(context.Background(), st, CaptureConfig{Pair: pairs[0]})
	if err != nil {
		t.Fatal(err)
	}
	c, err := probe.Compare(context.Background(), st, mix, CompareConfig{Config: Config{Clients: 2, Count: 3, Pairs: pairs}, Rounds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.E2E.Completed != 6 || len(c.E2E.Latencies) != 6 || c.Replay.Transfers != 6 || c.Replay.Issued != 6*len(mix.Ops) {
		t.Fatalf("e2e %d completed (%d latencies), replay %d transfers (%d ops); want 6, 6 and %d ops",
			c.E2E.Completed, len(c.E2E.Latencies), c.Replay.Transfers, c.Replay.Issued, 6*len(mix.Ops))
	}
	if c.Replay.ConditionFailures != 0 || len(c.Replay.Failures) != 0 {
		t.Errorf("replay failures %v", c.Replay.Failures)
	}
	if want := c.E2E.PerSecond / c.Replay.PerSecond; c.Ratio != want || c.Ratio <= 0 {
		t.Errorf("ratio %v, want %v", c.Ratio, want)
	}
	check(t, open)

	if _, err := probe.Compare(context.Background(), st, mix, CompareConfig{Config: Config{Pairs: pairs}}); err == nil {
		t.Error("a comparison without Duration or Count ran")
	}
}
