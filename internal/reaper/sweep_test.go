package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// TestSweep sweeps a table holding transfers in every state: only the
// stuck ones are settled, and the total of the balances is what the
// accounts were opened with.
func TestSweep(t *testing.T) {
	e := newEnv(t, envOptions{})
	type sweptTransfer struct {
		name      string
		reference string
		age       time.Duration
		setup     func(t *testing.T, e *env, f fixture)
		final     *settled // nil: untouched
		started   bool     // its execution was started by the sweep
		resumed   bool     // resumed under attempt 1 by the sweep
	}
	transfers := []sweptTransfer{
		{
			name: "stuck after the debit", reference: "LedgerUnavailable", age: 20 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			resumed: true,
		},
		{
			name: "stuck after the credit", reference: "TransferFenced", age: 30 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
			},
			final: &settled{status: reservation.StatusCompleted},
		},
		{
			name: "reserved, never started, past the completion window", reference: runRef, age: 2 * time.Hour,
			final: &settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut},
		},
		{
			name: "reserved, never started", reference: runRef, age: 30 * time.Minute,
			started: true,
		},
		{
			name: "old, still running", reference: runRef, age: 40 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.runExecution(t, f)
				e.markInProgress(t, f)
			},
		},
		{
			name: "failed but young", reference: failRef, age: time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
		},
		{
			name: "old and completed", reference: succeedRef, age: 3 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
				e.markTerminal(t, f, reservation.StatusCompleted, `{"status":"COMPLETED"}`)
			},
		},
		{
			name: "fenced by a reaper that stopped", reference: "TransferFenced", age: 25 * time.Minute,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.markReconciling(t, f)
			},
			final: &settled{status: reservation.StatusFailed, code: "TransferFenced", reversed: true},
		},
	}
	fixtures := make([]fixture, len(transfers))
	before := make([]state, len(transfers))
	for i, tr := range transfers {
		fixtures[i] = e.newTransfer(t, tr.reference, tr.age)
		if tr.setup != nil {
			tr.setup(t, e, fixtures[i])
		}
		before[i] = e.state(t, fixtures[i])
	}

	r := e.newReaper(t, nil, nil)
	res, err := r.Sweep(testContext(t))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	wantOutcomes := map[reaper.Outcome]int{
		reaper.OutcomeResumed:   1,
		reaper.OutcomeReversed:  1,
		reaper.OutcomeCompleted: 1,
		reaper.OutcomeFailed:    1,
		reaper.OutcomeStarted:   1,
		reaper.OutcomeRunning:   1,
	}
	if res.Found != 6 || res.Errors != 0 || res.Remaining != 0 || !maps.Equal(res.Outcomes, wantOutcomes) {
		t.Errorf("Sweep = %+v; want 6 found, outcomes %v, no errors, none remaining", res, wantOutcomes)
	}

	var total, young int64
	for i, tr := range transfers {
		f := fixtures[i]
		t.Run(tr.name, func(t *testing.T) {
			switch {
			case tr.final != nil:
				e.checkSettled(t, f, *tr.final)
			case tr.resumed:
				e.checkResumed(t, f, 1, debit)
			case tr.started:
				if rec := e.record(t, f); rec.Status != reservation.StatusReserved {
					t.Errorf("record = %s; want RESERVED", rec.Status)
				}
				if st := e.executionStatus(t, f); st != "RUNNING" {
					t.Errorf("execution = %q; want RUNNING", st)
				}
			default:
				e.checkUnchanged(t, f, before[i])
			}
		})
		total += e.balance(t, f.src) + e.balance(t, f.dst)
		if tr.name == "failed but young" || tr.resumed {
			young += amount // its debit is still out, for its workflow or a later sweep
		}
	}
	if want := int64(len(transfers))*openingBalance - young; total != want {
		t.Errorf("total of the balances = %d; want %d", total, want)
	}

	// A second sweep finds only the transfers whose executions run (the
	// resumed one is not due again before StuckAfter).
	res, err = r.Sweep(testContext(t))
	if err != nil {
		t.Fatalf("second Sweep: %v", err)
	}
	if want := map[reaper.Outcome]int{reaper.OutcomeRunning: 2}; res.Found != 2 || !maps.Equal(res.Outcomes, want) {
		t.Errorf("second Sweep = %+v; want 2 found, outcomes %v", res, want)
	}
}

// TestSweepLimit: a sweep settles at most SweepLimit records, RECONCILING
// ones first, then the oldest, and counts those left.
func TestSweepLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	stuck := func(t *testing.T, age time.Duration, fence bool) fixture {
		t.Helper()
		f := e.newTransfer(t, failRef, age)
		e.closeExecution(t, f)
		e.markInProgress(t, f)
		if fence {
			e.markReconciling(t, f)
		}
		return f
	}
	fenced := stuck(t, 20*time.Minute, true)
	newer := stuck(t, 25*time.Minute, false)
	older := stuck(t, 30*time.Minute, false)
	r := e.newReaper(t, nil, func(c *reaper.Config) { c.SweepLimit = 2 })

	steps := []struct {
		found, remaining int
		settledNow       []fixture
	}{
		{2, 1, []fixture{fenced, older}},
		{1, 0, []fixture{newer}},
		{0, 0, nil},
	}
	for i, step := range steps {
		res, err := r.Sweep(testContext(t))
		if err != nil {
			t.Fatalf("sweep %d: %v", i+1, err)
		}
		if res.Found != step.found || res.Remaining != step.remaining || res.RemainingAtLeast ||
			res.Outcomes[reaper.OutcomeFailed]+res.Outcomes[reaper.OutcomeResumed] != step.found {
			t.Errorf("sweep %d = %+v; want %d found and failed or resumed, %d remaining", i+1, res, step.found, step.remaining)
		}
		for _, f := range step.settledNow {
			if f.rec.Key == fenced.rec.Key {
				e.checkSettled(t, f, settled{status: reservation.StatusFailed, code: "TransferFenced"})
				continue
			}
			e.checkResumed(t, f, 1)
		}
	}
}

// TestSweepContinuesPastFailure: a transfer that cannot be settled does
// not stop the others; the sweep reports it.
func TestSweepContinuesPastFailure(t *testing.T) {
	e := newEnv(t, envOptions{})
	var good []fixture
	for _, age := range []time.Duration{20 * time.Minute, 40 * time.Minute} {
		f := e.newTransfer(t, "LedgerUnavailable", age)
		e.closeExecution(t, f)
		e.markInProgress(t, f)
		e.post(t, f, debit)
		good = append(good, f)
	}
	corrupt := fixture{rec: e.reserve(t, []byte("{not json"), 30*time.Minute)}

	res, err := e.newReaper(t, nil, nil).Sweep(testContext(t))
	if err == nil || !errors.Is(err, transfer.ErrCorruptRecord) || !strings.Contains(err.Error(), corrupt.rec.ResourceID) {
		t.Errorf("Sweep error = %v; want the corrupt record %s", err, corrupt.rec.ResourceID)
	}
	if res.Found != 3 || res.Errors != 1 || res.Outcomes[reaper.OutcomeResumed] != 2 {
		t.Errorf("Sweep = %+v; want 3 found, 1 error, 2 resumed", res)
	}
	for _, f := range good {
		e.checkResumed(t, f, 1, debit)
	}
	if rec := e.record(t, corrupt); rec.Status != reservation.StatusReserved || rec.Pending != "RESERVED" {
		t.Errorf("corrupt record = %s (pending %q); want it left RESERVED", rec.Status, rec.Pending)
	}
	if st := e.executionStatus(t, corrupt); st != "" {
		t.Errorf("corrupt record's execution = %s; want none", st)
	}
}

// refusingLedger refuses to post the legs of some transfers, as a ledger
// that keeps refusing a refund does.
type refusingLedger struct {
	reaper.Ledger
	refuse map[string]bool
}

func (l refusingLedger) Post(ctx context.Context, leg ledger.Leg) (ledger.Entry, error) {
	if l.refuse[leg.TransferID] {
		return ledger.Entry{}, fmt.Errorf("refund %s: %w", leg.TransferID, ledger.ErrCurrencyMismatch)
	}
	return l.Ledger.Post(ctx, leg)
}

// TestSweepDoesNotStarve: fenced records that keep failing to settle do
// not hold the sweep's whole budget: younger stuck records of other
// statuses are settled in the same sweep, the failing ones are deferred
// with backoff, and after AttentionAfter failures flagged for an operator.
func TestSweepDoesNotStarve(t *testing.T) {
	e := newEnv(t, envOptions{})
	refuse := map[string]bool{}
	var failing []fixture
	for _, age := range []time.Duration{50 * time.Minute, 45 * time.Minute, 40 * time.Minute} {
		f := e.newTransfer(t, "TransferFenced", age)
		e.closeExecution(t, f)
		e.markInProgress(t, f)
		e.post(t, f, debit)
		e.markReconciling(t, f)
		refuse[f.rec.ResourceID] = true
		failing = append(failing, f)
	}
	behind := e.newTransfer(t, failRef, 20*time.Minute)
	e.closeExecution(t, behind)
	e.markInProgress(t, behind)
	e.post(t, behind, debit, credit)

	now := time.Now()
	clock := func() time.Time { return now }
	r := e.newReaper(t, refusingLedger{e.ledger, refuse}, func(c *reaper.Config) {
		c.SweepLimit = 3
		c.AttentionAfter = 2
		c.Now = clock
	})

	// RECONCILING, IN_PROGRESS and RESERVED get one of the three places
	// each; RESERVED leaves its place to RECONCILING.
	res, err := r.Sweep(testContext(t))
	if err == nil || res.Found != 3 || res.Errors != 2 || res.Outcomes[reaper.OutcomeCompleted] != 1 {
		t.Fatalf("first sweep = %+v, %v; want the stuck IN_PROGRESS transfer completed and two fenced failures", res, err)
	}
	e.checkSettled(t, behind, settled{status: reservation.StatusCompleted})

	// The failed records wait; the next sweep at the same time takes the
	// one not tried yet.
	res, _ = r.Sweep(testContext(t))
	if res.Found != 1 || res.Errors != 1 {
		t.Errorf("second sweep = %+v; want the fenced record not tried yet", res)
	}
	res, _ = r.Sweep(testContext(t))
	if res.Found != 0 {
		t.Errorf("third sweep = %+v; want every failing record deferred", res)
	}

	// Past the backoff each fails a second time and is flagged.
	now = now.Add(2 * reaper.DefaultStuckAfter)
	res, _ = r.Sweep(testContext(t))
	if res.Found != 3 || res.NeedsAttention != 3 {
		t.Errorf("sweep past the backoff = %+v; want 3 found, 3 needing attention", res)
	}
	for _, f := range failing {
		raw := e.rawRecord(t, f)
		if raw["needsAttention"] != true || raw["status"] != "RECONCILING" {
			t.Errorf("record %s: needsAttention %v, status %v; want true, RECONCILING", f.rec.ResourceID, raw["needsAttention"], raw["status"])
		}
	}
}

// TestSweepReachesDueRecordsBehindDeferredOnes: a sweep reads only records
// that are due, so however many deferred records of one status are older,
// a newer stuck record of that status is settled by the next sweep. (A
// sweep that read the index in creation order and filtered deferred
// records out gave up after a page cap, and never reached it.)
func TestSweepReachesDueRecordsBehindDeferredOnes(t *testing.T) {
	e := newEnv(t, envOptions{})
	const deferred = 120
	for range deferred {
		e.reserve(t, []byte("{not json"), 50*time.Minute)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	res, err := e.newReaper(t, nil, func(c *reaper.Config) { c.SweepLimit = 1000; c.Now = clock }).Sweep(testContext(t))
	if err == nil || res.Errors != deferred {
		t.Fatalf("deferring sweep = %+v, %v; want %d failures", res, err, deferred)
	}

	due := e.newTransfer(t, runRef, 20*time.Minute) // RESERVED, never started
	r := e.newReaper(t, nil, func(c *reaper.Config) { c.SweepLimit = 3; c.Now = clock })
	res, err = r.Sweep(testContext(t))
	if err != nil || res.Found != 1 || res.Outcomes[reaper.OutcomeStarted] != 1 {
		t.Fatalf("sweep = %+v, %v; want the due record found and started, no deferred record read", res, err)
	}
	if st := e.executionStatus(t, due); st != sfntypes.ExecutionStatusRunning {
		t.Errorf("execution of the due record = %q; want RUNNING", st)
	}
}
