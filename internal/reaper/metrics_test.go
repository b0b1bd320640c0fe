package reaper_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/metrics"
	"github.com/exactlyonce/transfers/internal/metrics/emftest"
	"github.com/exactlyonce/transfers/internal/reaper"
)

// lockedBuffer collects log lines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// A sweep publishes, as EMF documents in its log, the RECONCILING records
// it found, the transfers it settled, and for each settlement its outcome
// and whether it refunded the debit. Every log line about a transfer names
// it and its record key (a hash), never the raw key.
func TestSweepPublishesMetrics(t *testing.T) {
	e := newEnv(t, envOptions{})
	fenced := e.newTransfer(t, "TransferFenced", 25*time.Minute)
	e.closeExecution(t, fenced)
	e.markInProgress(t, fenced)
	e.post(t, fenced, debit)
	e.markReconciling(t, fenced)
	credited := e.newTransfer(t, "TransferFenced", 30*time.Minute)
	e.closeExecution(t, credited)
	e.markInProgress(t, credited)
	e.post(t, credited, debit, credit)

	logs := &lockedBuffer{}
	r, err := reaper.New(e.config(), e.db, e.sfn, e.ledger, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Sweep(testContext(t))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if res.Found != 2 || res.Reconciling != 1 {
		t.Errorf("Sweep = %+v; want 2 found, 1 reconciling", res)
	}

	docs, err := emftest.Docs(logs.Bytes())
	if err != nil {
		t.Fatalf("EMF: %v", err)
	}
	reaperDims := map[string]string{"Service": metrics.ServiceReaper}
	for _, c := range []struct {
		name string
		dims map[string]string
		want float64
	}{
		{metrics.Reconciling, reaperDims, 1},
		{metrics.Swept, reaperDims, 2},
		{metrics.Reaped, map[string]string{"Service": metrics.ServiceReaper, "Outcome": string(reaper.OutcomeReversed)}, 1},
		{metrics.Reaped, map[string]string{"Service": metrics.ServiceReaper, "Outcome": string(reaper.OutcomeCompleted)}, 1},
		{metrics.Refunded, reaperDims, 1},
	} {
		if got, found := emftest.Sum(docs, c.name, c.dims); !found || got != c.want {
			t.Errorf("%s%v = %v (found %v); want %v", c.name, c.dims, got, found, c.want)
		}
	}

	keys := map[string]string{fenced.rec.ResourceID: fenced.rec.Key, credited.rec.ResourceID: credited.rec.Key}
	for _, line := range strings.Split(strings.TrimSpace(string(logs.Bytes())), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		id, ok := rec["transferId"].(string)
		if !ok {
			continue
		}
		if rec["recordKey"] != keys[id] {
			t.Errorf("line %s: recordKey %v, want %s", line, rec["recordKey"], keys[id])
		}
	}
}

// A settle publishes TimeToSettle, from the record's createdAt to the
// write that settled the money, only when that write is the reaper's: the
// refund it posts (reversed), or FAILED stored when no money moved
// (failed). A transfer it finds completed or already refunded was settled
// by the leg that committed the credit or the refund, which published it;
// a settle of a settled transfer publishes nothing.
func TestSettlePublishesTimeToSettle(t *testing.T) {
	// One Outcome dimension for both metrics of a settled transfer.
	for o, m := range map[reaper.Outcome]string{
		reaper.OutcomeCompleted: metrics.OutcomeCompleted, reaper.OutcomeFailed: metrics.OutcomeFailed, reaper.OutcomeReversed: metrics.OutcomeReversed,
	} {
		if string(o) != m {
			t.Errorf("Reaped names Outcome %q, TimeToSettle %q", o, m)
		}
	}
	e := newEnv(t, envOptions{})
	cases := []struct {
		name      string
		reference string
		age       time.Duration
		setup     func(t *testing.T, e *env, f fixture)
		outcome   reaper.Outcome
		// want is the Outcome of the one TimeToSettle; "" means none.
		want string
	}{
		{name: "aborted after the debit: the reaper's refund", reference: runRef, age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.abort(t, arn)
			},
			outcome: reaper.OutcomeReversed, want: metrics.OutcomeReversed},
		{name: "past the completion window, debit only: the reaper's refund", reference: "LedgerUnavailable", age: 2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			outcome: reaper.OutcomeReversed, want: metrics.OutcomeReversed},
		{name: "past the completion window, nothing posted: failed", reference: runRef, age: 2 * time.Hour,
			outcome: reaper.OutcomeFailed, want: metrics.OutcomeFailed},
		{name: "aborted before the debit: failed", reference: runRef, age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.abort(t, arn)
			},
			outcome: reaper.OutcomeFailed, want: metrics.OutcomeFailed},
		{name: "debit refused, then aborted: the debit published", reference: runRef, age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.voidDebit(t, f, "InsufficientFunds")
				e.abort(t, arn)
			},
			outcome: reaper.OutcomeFailed},
		{name: "debit and credit found: the credit published", reference: "TransferFenced", age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
			},
			outcome: reaper.OutcomeCompleted},
		{name: "refund found: the refund published", reference: "States.Runtime", age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				leg := f.leg(ledger.Refund)
				leg.Reason, leg.Detail = "AccountClosed", "Account "+f.dst+" is closed."
				if _, err := e.ledger.Post(testContext(t), leg); err != nil {
					t.Fatal(err)
				}
			},
			outcome: reaper.OutcomeReversed},
		{name: "infrastructure failure after the debit: resumed, not settled", reference: "LedgerUnavailable", age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			outcome: reaper.OutcomeResumed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := e.newTransfer(t, c.reference, c.age)
			if c.setup != nil {
				c.setup(t, e, f)
			}
			logs := &lockedBuffer{}
			r, err := reaper.New(e.config(), e.db, e.sfn, e.ledger, slog.New(slog.NewJSONHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			created, err := time.Parse(time.RFC3339Nano, f.rec.CreatedAt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
			if err != nil || got != c.outcome {
				t.Fatalf("Settle = %s, %v; want %s", got, err, c.outcome)
			}
			// The event again: the transfer is settled, nothing more.
			if c.want != "" {
				if again, err := r.Settle(testContext(t), f.rec.Key, f.rec.ResourceID); err != nil || again != reaper.OutcomeAlreadySettled {
					t.Fatalf("Settle again = %s, %v; want %s", again, err, reaper.OutcomeAlreadySettled)
				}
			}
			elapsed := time.Since(created)

			settled, err := emftest.With(logs.Bytes(), metrics.TimeToSettle)
			if err != nil {
				t.Fatalf("EMF: %v", err)
			}
			if c.want == "" {
				if len(settled) != 0 {
					t.Fatalf("published TimeToSettle %+v, want none", settled)
				}
				return
			}
			if len(settled) != 1 {
				t.Fatalf("published TimeToSettle %d times (%+v), want once", len(settled), settled)
			}
			d := settled[0]
			if d.Dimensions["Outcome"] != c.want || len(d.Dimensions) != 1 || d.Units[metrics.TimeToSettle] != metrics.Milliseconds {
				t.Errorf("dimensions %v units %v, want Outcome=%s alone, in Milliseconds", d.Dimensions, d.Units, c.want)
			}
			lo := float64(start.Sub(created)) / float64(time.Millisecond)
			hi := float64(elapsed) / float64(time.Millisecond)
			if ms := d.Values[metrics.TimeToSettle]; ms < lo || ms > hi {
				t.Errorf("TimeToSettle = %v ms, want between %v and %v (from createdAt %s)", ms, lo, hi, f.rec.CreatedAt)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(logs.Bytes())), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				if _, ok := rec[metrics.TimeToSettle]; ok && (rec["transferId"] != f.rec.ResourceID || rec["settledBy"] != metrics.ServiceReaper) {
					t.Errorf("line %s: want transferId %s and settledBy reaper", line, f.rec.ResourceID)
				}
			}
		})
	}
}
