package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reaper"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

const (
	debit  = ledger.Debit
	credit = ledger.Credit
	refund = ledger.Refund
)

func TestSettle(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name      string
		reference string
		age       time.Duration // of the record; default 20 minutes
		// setup brings the transfer into the state under test.
		setup func(t *testing.T, e *env, f fixture)
		want  reaper.Outcome
		// final is the settled transfer; nil: the transfer must be
		// left exactly as it was.
		final *settled
		// check runs further checks after the settle.
		check func(t *testing.T, e *env, f fixture)
	}{
		{
			name:      "infrastructure failure after the debit: resumed under the next attempt",
			reference: "LedgerUnavailable",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1, debit) },
		},
		{
			name:      "debit and credit: completed",
			reference: "TransferFenced",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
			},
			want:  reaper.OutcomeCompleted,
			final: &settled{status: reservation.StatusCompleted},
		},
		{
			name:      "nothing posted, execution failed: resumed",
			reference: failRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1) },
		},
		{
			name:      "refused credit refunded, outcome not stored: failed reversed with the refusal",
			reference: "States.Runtime",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.refundFor(t, f, "AccountClosed")
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "AccountClosed", reversed: true},
		},
		{
			name:      "execution succeeded without storing its outcome",
			reference: succeedRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
			},
			want:  reaper.OutcomeCompleted,
			final: &settled{status: reservation.StatusCompleted},
		},
		{
			name:      "execution succeeded, nothing posted: resumed",
			reference: succeedRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1) },
		},
		{
			name:      "reserved record whose execution failed before marking it: resumed",
			reference: "DynamoDB.InternalServerError",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1) },
		},
		{
			name:      "aborted by an operator after the debit: refunded",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.abort(t, arn)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: reaper.CodeAborted, reversed: true},
		},
		{
			// The stop came too late: the money has moved, and the
			// transfer completes.
			name:      "aborted by an operator after the credit: completed",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
				e.abort(t, arn)
			},
			want:  reaper.OutcomeCompleted,
			final: &settled{status: reservation.StatusCompleted},
		},
		{
			name:      "debit refused, then aborted before the workflow stored it: failed with the refusal",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.voidDebit(t, f, "InsufficientFunds")
				e.abort(t, arn)
			},
			want:  reaper.OutcomeFailed,
			final: &settled{status: reservation.StatusFailed, code: "InsufficientFunds"},
		},
		{
			name:      "credit refused and refunded, then aborted before the workflow stored it: failed with the refusal",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.refundFor(t, f, "CurrencyMismatch")
				e.abort(t, arn)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "CurrencyMismatch", reversed: true},
		},
		{
			name:      "credit refused and refunded, past the completion window: failed with the refusal",
			reference: "DynamoDB.InternalServerError",
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.refundFor(t, f, "AccountClosed")
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "AccountClosed", reversed: true},
		},
		{
			name:      "debit refused, past the completion window: failed with the refusal",
			reference: "DynamoDB.InternalServerError",
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.voidDebit(t, f, "AccountClosed")
			},
			want:  reaper.OutcomeFailed,
			final: &settled{status: reservation.StatusFailed, code: "AccountClosed"},
		},
		{
			name:      "aborted without a cause after the debit: resumed",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				arn := e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.stop(t, arn)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1, debit) },
		},
		{
			name:      "past the completion window, debit only: refunded, failed TimedOut",
			reference: "LedgerUnavailable",
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut, reversed: true},
		},
		{
			name:      "past the completion window, debit and credit: completed",
			reference: "LedgerUnavailable",
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
			},
			want:  reaper.OutcomeCompleted,
			final: &settled{status: reservation.StatusCompleted},
		},
		{
			name:      "already completed: untouched",
			reference: succeedRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit, credit)
				e.markTerminal(t, f, reservation.StatusCompleted, `{"status":"COMPLETED"}`)
			},
			want: reaper.OutcomeAlreadySettled,
		},
		{
			name:      "already failed: untouched",
			reference: "InsufficientFunds",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.markTerminal(t, f, reservation.StatusFailed, `{"status":"FAILED"}`)
			},
			want: reaper.OutcomeAlreadySettled,
		},
		{
			name:      "execution running: untouched",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			want: reaper.OutcomeRunning,
		},
		{
			name:      "reserved with a running execution: untouched",
			reference: runRef,
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.runExecution(t, f)
			},
			want: reaper.OutcomeRunning,
		},
		{
			name:      "reserved without execution, young: started",
			reference: runRef,
			age:       30 * time.Minute,
			want:      reaper.OutcomeStarted,
			check: func(t *testing.T, e *env, f fixture) {
				out, err := e.describe(t, f)
				if err != nil || out == nil {
					t.Fatalf("DescribeExecution = %v, %v; want the started execution", out, err)
				}
				want, err := transfer.NewWorkflowInput(f.rec)
				if err != nil {
					t.Fatal(err)
				}
				if got := aws.ToString(out.Input); got != string(want) {
					t.Errorf("execution input = %s; want the orchestrator's %s", got, want)
				}
				if out.Status != sfntypes.ExecutionStatusRunning {
					t.Errorf("execution status = %s; want RUNNING", out.Status)
				}
				if rec := e.record(t, f); rec.Status != reservation.StatusReserved || rec.Pending != "RESERVED" {
					t.Errorf("record = %s (pending %q); want RESERVED, left to the workflow", rec.Status, rec.Pending)
				}
			},
		},
		{
			name:      "reserved without execution, past the completion window: failed TimedOut",
			reference: runRef,
			age:       2 * time.Hour,
			want:      reaper.OutcomeFailed,
			final:     &settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut},
			check: func(t *testing.T, e *env, f fixture) {
				if st := e.executionStatus(t, f); st != "" {
					t.Errorf("execution is %s; want none started", st)
				}
			},
		},
		{
			name:      "in progress without execution, past the completion window: refunded",
			reference: runRef,
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut, reversed: true},
		},
		{
			name:      "in progress, execution lost: resumed from the record",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.markInProgress(t, f)
				e.post(t, f, debit)
			},
			want:  reaper.OutcomeResumed,
			check: func(t *testing.T, e *env, f fixture) { e.checkResumed(t, f, 1, debit) },
		},
		{
			// DescribeExecution is eventually consistent: an execution that
			// has just begun may not be visible yet.
			name:      "in progress, execution not visible yet: left alone",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.markInProgressAt(t, f, time.Now().Add(-10*time.Second))
				e.post(t, f, debit)
			},
			want: reaper.OutcomeRunning,
			check: func(t *testing.T, e *env, f fixture) {
				if st := e.executionStatus(t, f); st != "" {
					t.Errorf("execution is %s; want none started", st)
				}
			},
		},
		{
			name:      "fenced by a reaper that stopped: resumed",
			reference: "TransferFenced",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.markReconciling(t, f)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "TransferFenced", reversed: true},
		},
		{
			name:      "fenced and refunded by a reaper that stopped: resumed",
			reference: "TransferFenced",
			setup: func(t *testing.T, e *env, f fixture) {
				e.closeExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.markReconciling(t, f)
				e.post(t, f, refund)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "TransferFenced", reversed: true},
		},
		{
			name:      "fenced while the execution still runs",
			reference: runRef,
			setup: func(t *testing.T, e *env, f fixture) {
				e.runExecution(t, f)
				e.markInProgress(t, f)
				e.post(t, f, debit)
				e.markReconciling(t, f)
			},
			want:  reaper.OutcomeReversed,
			final: &settled{status: reservation.StatusFailed, code: "TransferFenced", reversed: true},
		},
		{
			name:      "fenced reserved record without execution",
			reference: runRef,
			age:       2 * time.Hour,
			setup: func(t *testing.T, e *env, f fixture) {
				e.markReconciling(t, f)
			},
			want:  reaper.OutcomeFailed,
			final: &settled{status: reservation.StatusFailed, code: "TransferFenced"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			age := tc.age
			if age == 0 {
				age = 20 * time.Minute
			}
			f := e.newTransfer(t, tc.reference, age)
			if tc.setup != nil {
				tc.setup(t, e, f)
			}
			before := e.state(t, f)

			got, err := e.newReaper(t, nil, nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
			if err != nil {
				t.Fatalf("Settle: %v", err)
			}
			if got != tc.want {
				t.Errorf("Settle = %s; want %s", got, tc.want)
			}
			switch {
			case tc.final != nil:
				e.checkSettled(t, f, *tc.final)
			case tc.check == nil:
				e.checkUnchanged(t, f, before)
			}
			if tc.check != nil {
				tc.check(t, e, f)
			}

			// Settling again changes nothing.
			again := e.state(t, f)
			if _, err := e.newReaper(t, nil, nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID); err != nil {
				t.Fatalf("second Settle: %v", err)
			}
			e.checkUnchanged(t, f, again)
		})
	}
}

func TestSettleUnknownRecord(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := e.newTransfer(t, failRef, 20*time.Minute)
	e.closeExecution(t, f)
	e.markInProgress(t, f)
	e.post(t, f, debit)
	before := e.state(t, f)
	r := e.newReaper(t, nil, nil)

	tests := []struct {
		name                  string
		recordKey, transferID string
	}{
		{"no record", "caller#missing", f.rec.ResourceID},
		{"key now used by another transfer", f.rec.Key, "tr-other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Settle(testContext(t), tc.recordKey, tc.transferID)
			if err != nil || got != reaper.OutcomeNotFound {
				t.Errorf("Settle = %s, %v; want %s, nil", got, err, reaper.OutcomeNotFound)
			}
			e.checkUnchanged(t, f, before)
		})
	}
}

// TestFenceStopsLateLegs posts a late leg at the moment the reaper reads
// the ledger, right after its fence: the leg must be refused.
func TestFenceStopsLateLegs(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name   string
		posted []ledger.Kind
		late   ledger.Kind
		want   reaper.Outcome
		final  settled
	}{
		{"late debit", nil, debit, reaper.OutcomeFailed,
			settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut}},
		{"late credit", []ledger.Kind{debit}, credit, reaper.OutcomeReversed,
			settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut, reversed: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Past its completion window: the reaper settles it.
			f := e.newTransfer(t, "TransferFenced", 2*time.Hour)
			e.closeExecution(t, f)
			e.markInProgress(t, f)
			e.post(t, f, tc.posted...)

			var lateErr error
			var calls atomic.Int32
			l := &wrappedLedger{Ledger: e.ledger, beforeEntries: func(ctx context.Context) error {
				if calls.Add(1) == 1 {
					_, lateErr = e.ledger.Post(ctx, f.leg(tc.late))
				}
				return nil
			}}
			got, err := e.newReaper(t, l, nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
			if err != nil || got != tc.want {
				t.Fatalf("Settle = %s, %v; want %s, nil", got, err, tc.want)
			}
			if calls.Load() == 0 {
				t.Fatal("the ledger was never read")
			}
			if !errors.Is(lateErr, ledger.ErrFenced) {
				t.Errorf("late %s after the fence = %v; want ErrFenced", tc.late, lateErr)
			}
			e.checkSettled(t, f, tc.final)

			// And after the outcome is stored.
			if _, err := e.ledger.Post(testContext(t), f.leg(tc.late)); !errors.Is(err, ledger.ErrFenced) {
				t.Errorf("late %s after settling = %v; want ErrFenced", tc.late, err)
			}
		})
	}
}

// errStopped stands for a reaper that stopped (crash, timeout) at a given
// point.
var errStopped = errors.New("reaper stopped")

func TestResumeAfterStop(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		name string
		// stopping is the ledger of the reaper that stops.
		stopping func(e *env) reaper.Ledger
		// entries are the transfer's entries once it stopped.
		entries []ledger.Kind
	}{
		{
			name: "after the fence",
			stopping: func(e *env) reaper.Ledger {
				return &wrappedLedger{Ledger: e.ledger, beforeEntries: func(context.Context) error { return errStopped }}
			},
			entries: []ledger.Kind{debit},
		},
		{
			name: "after the refund",
			stopping: func(e *env) reaper.Ledger {
				return &wrappedLedger{Ledger: e.ledger, afterPost: func(_ context.Context, _ ledger.Leg, err error) error {
					return errors.Join(err, errStopped)
				}}
			},
			entries: []ledger.Kind{debit, refund},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := e.newTransfer(t, "LedgerUnavailable", 2*time.Hour)
			e.closeExecution(t, f)
			e.markInProgress(t, f)
			e.post(t, f, debit)

			_, err := e.newReaper(t, tc.stopping(e), nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
			if !errors.Is(err, errStopped) {
				t.Fatalf("Settle = %v; want the stop", err)
			}
			if rec := e.record(t, f); rec.Status != reservation.StatusReconciling || rec.Pending != "RECONCILING" {
				t.Fatalf("record after the stop = %s (pending %q); want RECONCILING in the Pending index", rec.Status, rec.Pending)
			}
			if got := fmt.Sprint(e.entries(t, f)); got != fmt.Sprint(tc.entries) {
				t.Fatalf("entries after the stop = %s; want %s", got, fmt.Sprint(tc.entries))
			}

			got, err := e.newReaper(t, nil, nil).Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
			if err != nil || got != reaper.OutcomeReversed {
				t.Fatalf("resumed Settle = %s, %v; want %s, nil", got, err, reaper.OutcomeReversed)
			}
			e.checkSettled(t, f, settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut, reversed: true})
		})
	}
}

// TestConcurrentReapers runs several reapers on the same transfer past its
// completion window at once, each settling it twice: the debit is
// refunded exactly once.
func TestConcurrentReapers(t *testing.T) {
	e := newEnv(t, envOptions{})
	const reapers = 4
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			f := e.newTransfer(t, "LedgerUnavailable", 2*time.Hour)
			e.closeExecution(t, f)
			e.markInProgress(t, f)
			e.post(t, f, debit)

			outcomes := e.settleConcurrently(t, f, reapers)
			// Only one reaper can store the outcome; the others find it.
			if outcomes[reaper.OutcomeReversed] != 1 || outcomes[reaper.OutcomeAlreadySettled] != 2*reapers-1 {
				t.Errorf("outcomes = %v; want one %s, the rest %s", outcomes, reaper.OutcomeReversed, reaper.OutcomeAlreadySettled)
			}
			// One refund: the source is back at exactly its opening
			// balance.
			e.checkSettled(t, f, settled{status: reservation.StatusFailed, code: reaper.CodeTimedOut, reversed: true})
		})
	}
}

// TestConcurrentResumes runs several reapers on the same dead execution
// at once, each settling it twice: the transfer is resumed exactly once,
// under attempt 1, with one execution of that attempt.
func TestConcurrentResumes(t *testing.T) {
	e := newEnv(t, envOptions{})
	const reapers = 4
	f := e.newTransfer(t, "LedgerUnavailable", 20*time.Minute)
	e.closeExecution(t, f)
	e.markInProgress(t, f)
	e.post(t, f, debit)

	outcomes := e.settleConcurrently(t, f, reapers)
	// One moves the record to attempt 1. The others find that attempt's
	// execution running, or, reading the record between the move and the
	// start, start it themselves: the same name and input, which Step
	// Functions answers with the one running execution.
	if outcomes[reaper.OutcomeResumed] != 1 || outcomes[reaper.OutcomeRunning]+outcomes[reaper.OutcomeStarted] != 2*reapers-1 {
		t.Errorf("outcomes = %v; want one %s, the rest %s or %s", outcomes, reaper.OutcomeResumed, reaper.OutcomeRunning, reaper.OutcomeStarted)
	}
	e.checkResumed(t, f, 1, debit)
	out, err := e.sfn.ListExecutions(testContext(t), &sfn.ListExecutionsInput{StateMachineArn: aws.String(e.machineARN)})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	for _, x := range out.Executions {
		if transfer.TransferIDOf(aws.ToString(x.Name)) == f.rec.ResourceID {
			runs++
		}
	}
	if runs != 2 {
		t.Errorf("%d executions of the transfer; want 2, the dead one and attempt 1's", runs)
	}
}

// settleConcurrently runs reapers reapers on f's transfer at once, each
// settling it twice, and counts their outcomes; an error fails the test.
func (e *env) settleConcurrently(t *testing.T, f fixture, reapers int) map[reaper.Outcome]int {
	t.Helper()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[reaper.Outcome]int{}
		errs     []error
	)
	start := make(chan struct{})
	for range reapers {
		r := e.newReaper(t, nil, nil)
		wg.Go(func() {
			<-start
			for range 2 {
				got, err := r.Settle(t.Context(), f.rec.Key, f.rec.ResourceID)
				mu.Lock()
				outcomes[got]++
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("Settle: %v", err)
	}
	return outcomes
}

// startingSFN is the real Step Functions client; after the first
// DescribeExecution it runs meanwhile, as if the orchestrator or the
// workflow acted between the reaper's look and its next step.
type startingSFN struct {
	reaper.StepFunctionsAPI
	once      sync.Once
	meanwhile func()
}

func (s *startingSFN) DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, optFns ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error) {
	out, err := s.StepFunctionsAPI.DescribeExecution(ctx, in, optFns...)
	s.once.Do(s.meanwhile)
	return out, err
}

// TestSettleWorkflowStartsMeanwhile: an old RESERVED record has no
// execution when the reaper looks, but the client's retry starts it and
// the workflow marks the record IN_PROGRESS before the reaper's fence. The
// fence must fail on the changed record and the reaper leave the running
// workflow alone.
func TestSettleWorkflowStartsMeanwhile(t *testing.T) {
	e := newEnv(t, envOptions{})
	f := e.newTransfer(t, runRef, 2*time.Hour)
	client := &startingSFN{StepFunctionsAPI: e.sfn, meanwhile: func() {
		e.runExecution(t, f)
		e.markInProgress(t, f)
	}}
	r, err := reaper.New(e.config(), e.db, client, e.ledger, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Settle(testContext(t), f.rec.Key, f.rec.ResourceID)
	if err != nil || got != reaper.OutcomeRunning {
		t.Fatalf("Settle = %s, %v; want %s, nil", got, err, reaper.OutcomeRunning)
	}
	if rec := e.record(t, f); rec.Status != reservation.StatusInProgress || rec.Pending != "IN_PROGRESS" {
		t.Errorf("record = %s (pending %q); want IN_PROGRESS, left to the workflow", rec.Status, rec.Pending)
	}
	if st := e.executionStatus(t, f); st != sfntypes.ExecutionStatusRunning {
		t.Errorf("execution = %s; want RUNNING", st)
	}
}
