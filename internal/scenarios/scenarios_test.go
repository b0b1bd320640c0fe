//go:build integration

package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// TestFaultScenarios runs each scenario on one shared stack, one after the
// other: every scenario arms its faults on its own accounts, waits for its
// outcome, brings the stack to rest and checks the invariants and its
// expected outcome. The TTL scenario deletes the settled records of the
// others, so it runs last.
func TestFaultScenarios(t *testing.T) {
	s := startSuite(t, faultTimeScale)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"stale debit after a rejection", staleDebitAfterRejection},
		{"debit committed, then its invocation timed out", debitTimedOutAfterCommit},
		{"execution stopped while a credit is still running", executionStoppedDuringCredit},
		{"credit fails permanently", creditFailsPermanently},
		{"credit committed, MarkCompleted failed", markCompletedFailed},
		{"lost status event", lostStatusEvent},
		{"duplicated status event", duplicatedStatusEvent},
		{"reaper stops between fence and refund", reaperStopsAfterFence},
		{"TTL deletes only settled records", ttlDeletesOnlySettled},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// releaser closes a Detach fault's Release once, and at the end of the
// test at the latest, so no late invocation is left waiting.
func releaser(t *testing.T) (release chan struct{}, closeIt func()) {
	release = make(chan struct{})
	var once sync.Once
	closeIt = func() { once.Do(func() { close(release) }) }
	t.Cleanup(closeIt)
	return release, closeIt
}

// lateOutcome waits for a detached invocation's outcome.
func (sc *scenario) lateOutcome(late <-chan fault.LateOutcome) fault.LateOutcome {
	sc.t.Helper()
	select {
	case o := <-late:
		return o
	case <-time.After(waitBudget):
		sc.t.Fatalf("the released invocation did not finish within %v", waitBudget)
	case <-sc.ctx.Done():
		sc.t.Fatal(sc.ctx.Err())
	}
	return fault.LateOutcome{}
}

// committedEntry reports whether a leg function's result is a posted
// entry (not a rejection).
func committedEntry(result []byte) bool {
	var r struct {
		Leg      string          `json:"leg"`
		Rejected json.RawMessage `json:"rejected"`
	}
	return json.Unmarshal(result, &r) == nil && r.Leg != "" && r.Rejected == nil
}

// staleDebitAfterRejection proves that a debit attempt Step Functions gave
// up on (it saw Lambda.ServiceException while the attempt went on) cannot
// commit once a later attempt was rejected and the transfer stored as
// FAILED, even after money arrived that would cover it: the rejection's
// void marker holds the DEBIT slot (ledger.Void), and the record is no
// longer IN_PROGRESS.
func staleDebitAfterRejection(t *testing.T, s *suite) {
	sc := s.begin(t, "EUR")
	src, dst, funder := sc.open("s01.src", 100), sc.open("s01.dst", 0), sc.open("s01.funder", 1000)
	release, closeRelease := releaser(t)
	late := make(chan fault.LateOutcome, 1)
	sc.in.Lambda(fault.LambdaFault{Function: debitFunction, Kind: fault.Detach, Times: 1, Release: release, Done: late, Match: fromSource(src)})

	req := sc.request(src, dst, 500)
	tid := sc.accept("s01-stale", req)
	if rec := sc.waitSettled("s01-stale"); rec.Status != reservation.StatusFailed {
		t.Fatalf("transfer %s settled %s before the stale attempt ran, want FAILED (attempt 2 finds no funds)\n%s", tid, rec.Status, sc.history(nil, tid))
	}
	if n := sc.in.Counts()[fault.CountLambdaDetach]; n != 1 {
		t.Fatalf("debit attempts detached: %d, want 1", n)
	}

	// The money arrives, then the stale attempt runs.
	fund := sc.request(funder, src, 1000)
	sc.accept("s01-fund", fund)
	if rec := sc.waitSettled("s01-fund"); rec.Status != reservation.StatusCompleted {
		t.Fatalf("funding transfer %s, want COMPLETED", rec.Status)
	}
	closeRelease()
	if o := sc.lateOutcome(late); o.Err == nil && committedEntry(o.Result) {
		t.Errorf("the stale debit attempt committed: %s", o.Result)
	} else {
		t.Logf("stale debit attempt answered %s (error %v)", o.Result, o.Err)
	}

	sc.rest()
	snap := sc.check()
	sc.expect(snap, "s01-stale", req, outcome{status: reservation.StatusFailed, code: "InsufficientFunds", legs: legs{Voided: 1},
		replay: http.StatusUnprocessableEntity, replayCode: "insufficient_funds"})
	sc.expect(snap, "s01-fund", fund, completed)
}

// debitTimedOutAfterCommit proves that a debit whose invocation commits
// and then reports Sandbox.Timedout is retried into a replay of the stored
// entry, not a second debit: exactly one DEBIT, the transfer COMPLETED.
func debitTimedOutAfterCommit(t *testing.T, s *suite) {
	sc := s.begin(t, "USD")
	src, dst := sc.open("s02.src", 1000), sc.open("s02.dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: debitFunction, Kind: fault.LoseResponse, Error: "Sandbox.Timedout", Times: 1, Match: fromSource(src)})

	req := sc.request(src, dst, 250)
	sc.accept("s02-timedout", req)
	sc.waitSettled("s02-timedout")
	if n := sc.in.Counts()[fault.CountLambdaLoseResponse]; n != 1 {
		t.Errorf("debit responses lost: %d, want 1", n)
	}

	sc.rest()
	sc.expect(sc.check(), "s02-timedout", req, completed)
}

// executionStoppedDuringCredit proves that once an operator has aborted
// an execution (StopExecution with a cause) while its credit attempt is
// still running, the reaper fences the record and refunds the debit, and
// the late credit that then tries to commit is refused: no CREDIT,
// exactly one REFUND, FAILED reversed with the code Aborted.
//
// The machine's TimeoutSeconds (TIMED_OUT) cannot close the execution
// here: the Retry budgets are sized below its 1800 s. Even the longest
// path (MarkInProgress, Debit, Credit caught into Refund, MarkFailed, each
// on its last attempt, every Lambda attempt running to its 30 s
// TimeoutSeconds and every backoff at its cap) takes about 1,625 s, and
// TimeScale scales all of these alike; a credit that keeps hanging fails
// the execution with States.Timeout instead. The operator's StopExecution
// (ABORTED, with a cause) closes the execution while the credit runs.
func executionStoppedDuringCredit(t *testing.T, s *suite) {
	sc := s.begin(t, "GBP")
	src, dst := sc.open("s03.src", 1000), sc.open("s03.dst", 0)
	release, closeRelease := releaser(t)
	late := make(chan fault.LateOutcome, 1)
	// Attempt 1 of the credit goes on in the background until released;
	// every later attempt hangs until its task timeout, so the execution
	// is still in its Credit state when it is stopped.
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Detach, Times: 1, Release: release, Done: late, Match: fromSource(src)})
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Match: fromSource(src)})

	req := sc.request(src, dst, 300)
	tid := sc.accept("s03-stopped", req)
	sc.waitCount(fault.CountLambdaDetach, 1)
	if _, err := sc.h.SFN.StopExecution(sc.ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(sc.h.ExecutionARN(tid)),
		Error: aws.String("Aborted"), Cause: aws.String("ops@example.com: the payer withdrew the payment")}); err != nil {
		t.Fatalf("stop the execution of %s: %v", tid, err)
	}
	if exec := sc.waitExecution(tid); exec.Status != sfntypes.ExecutionStatusAborted {
		t.Fatalf("execution %s, want ABORTED\n%s", exec.Status, sc.history(nil, tid))
	}
	if rec := sc.waitSettled("s03-stopped"); rec.Status != reservation.StatusFailed {
		t.Fatalf("record %s after the execution was stopped, want FAILED (refunded)\n%s", rec.Status, sc.history(nil, tid))
	}

	closeRelease()
	if o := sc.lateOutcome(late); o.Err == nil {
		t.Errorf("the late credit succeeded after the transfer was refunded: %s", o.Result)
	} else {
		t.Logf("late credit refused: %v", o.Err)
	}

	sc.rest()
	sc.expect(sc.check(), "s03-stopped", req, reversed("Aborted", "transfer_failed"))
}

// creditFailsPermanently proves the workflow's own reversal: a credit to
// an account that does not exist is refunded, the transfer FAILED with
// reversed = true, and its replay is 422 destination_unavailable (an
// account that does not exist is not the caller's).
func creditFailsPermanently(t *testing.T, s *suite) {
	sc := s.begin(t, "CHF")
	src := sc.open("s04.src", 1000)

	req := sc.request(src, "s04.nobody", 400)
	sc.accept("s04-nobody", req)
	sc.waitSettled("s04-nobody")

	sc.rest()
	sc.expect(sc.check(), "s04-nobody", req, reversed("DestinationUnavailable", "destination_unavailable"))
}

// markCompletedFailed proves that a transfer whose credit committed is
// completed, not reversed, when the workflow cannot store the outcome:
// MarkCompleted fails until its Retry is spent, the execution fails, and
// the reaper marks the record COMPLETED from the ledger (DEBIT + CREDIT).
func markCompletedFailed(t *testing.T, s *suite) {
	const attempts = 1 + 8 // MarkCompleted's Retry: MaxAttempts 8
	sc := s.begin(t, "JPY")
	src, dst := sc.open("s05.src", 1000), sc.open("s05.dst", 0)
	sc.in.Integration(fault.IntegrationFault{Operation: "UpdateItem", When: fault.Before, Times: attempts, Match: func(body []byte) bool {
		return bytes.Contains(body, []byte("COMPLETED")) && bytes.Contains(body, []byte(src))
	}})

	req := sc.request(src, dst, 600)
	tid := sc.accept("s05-unstored", req)
	exec := sc.waitExecution(tid)
	if exec.Status != sfntypes.ExecutionStatusFailed || aws.ToString(exec.Error) != "DynamoDB.AmazonDynamoDBException" {
		t.Errorf("execution %s with error %q, want FAILED with DynamoDB.AmazonDynamoDBException", exec.Status, aws.ToString(exec.Error))
	}
	rec := sc.waitSettled("s05-unstored")
	if n := sc.in.Counts()[fault.CountIntegrationBefore]; n != attempts {
		t.Errorf("MarkCompleted attempts failed: %d, want %d", n, attempts)
	}
	if rec.ExpiresAt <= 0 {
		t.Errorf("the reaper settled the record without an expiry (expiresAt %d)", rec.ExpiresAt)
	}

	sc.rest()
	sc.expect(sc.check(), "s05-unstored", req, completed)
}

// lostStatusEvent proves that a failed execution whose status change
// event is lost leaves the transfer pending, with its debit held, until
// the sweep, and that the sweep then resumes it: it completes.
func lostStatusEvent(t *testing.T, s *suite) {
	sc := s.begin(t, "SEK")
	src, dst := sc.open("s06.src", 1000), sc.open("s06.dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Fail, Error: crash, Times: 1, Match: fromSource(src)})
	sc.in.Event(fault.EventFault{Kind: fault.Drop, Times: 1, Match: statusEvent(string(sfntypes.ExecutionStatusFailed), src)})

	req := sc.request(src, dst, 700)
	tid := sc.accept("s06-lost", req)
	if exec := sc.waitExecution(tid); exec.Status != sfntypes.ExecutionStatusFailed {
		t.Fatalf("execution %s, want FAILED", exec.Status)
	}
	sc.drain()
	if n := sc.in.Counts()[fault.CountEventDrop]; n != 1 {
		t.Fatalf("events dropped: %d, want 1", n)
	}
	// Nothing is in flight and the event is gone: only a sweep can settle
	// the transfer now.
	rec, _ := sc.record("s06-lost")
	if rec.Status != reservation.StatusInProgress {
		t.Errorf("record %s before any sweep, want IN_PROGRESS", rec.Status)
	}
	if got, want := legsOf(sc.snapshot(), tid), (legs{Debit: 1}); got != want {
		t.Errorf("before any sweep the ledger has %s, want %s", got, want)
	}

	rep := sc.rest()
	if rep.Sweeps == 0 {
		t.Errorf("settled without a sweep")
	}
	sc.expect(sc.check(), "s06-lost", req, completed.resumed(2))
}

// duplicatedStatusEvent proves that a status change event delivered twice
// resumes the transfer once: two executions, the transfer completed, no
// reaper error and nothing sent to a failure destination.
func duplicatedStatusEvent(t *testing.T, s *suite) {
	sc := s.begin(t, "NOK")
	src, dst := sc.open("s07.src", 1000), sc.open("s07.dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Fail, Error: crash, Times: 1, Match: fromSource(src)})
	sc.in.Event(fault.EventFault{Kind: fault.Duplicate, Times: 1, Match: statusEvent(string(sfntypes.ExecutionStatusFailed), src)})

	req := sc.request(src, dst, 800)
	tid := sc.accept("s07-twice", req)
	sc.waitSettled("s07-twice")
	sc.drain()
	if n := sc.in.Counts()[fault.CountEventDuplicate]; n != 1 {
		t.Errorf("events duplicated: %d, want 1", n)
	}

	sc.rest()
	if n := len(sc.logs.reaperLines(tid, "execution closed", 0)); n != 2 {
		t.Errorf("the reaper took the status change %d times, want 2", n)
	}
	if n := len(sc.logs.reaperLines(tid, "transfer resumed under a new attempt", 0)); n != 1 {
		t.Errorf("the reaper resumed the transfer %d times, want 1", n)
	}
	for _, l := range sc.logs.reaperLines(tid, "", errorLevel) {
		t.Errorf("reaper error: %s", l)
	}
	for _, f := range sc.newFailedInvocations() {
		t.Errorf("failed invocation: %s of %s after %d attempts: %v", f.Kind, f.Function, f.Attempts, f.Err)
	}
	sc.expect(sc.check(), "s07-twice", req, completed.resumed(2))
}

// reaperStopsAfterFence proves that a reaper that fenced the record of an
// aborted transfer and then failed to post the refund (its
// TransactWriteItems never reached DynamoDB) leaves the transfer
// RECONCILING, and that Lambda's retry of the invocation finishes it:
// exactly one REFUND, FAILED reversed.
func reaperStopsAfterFence(t *testing.T, s *suite) {
	// The reaper tries a transient ledger failure 4 times (reaper.retry)
	// before it returns the error; the injected error is not one the SDK
	// retries, so each try meets the fault once.
	const reaperTries = 4
	sc := s.begin(t, "DKK")
	src, dst := sc.open("s08.src", 1000), sc.open("s08.dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Match: fromSource(src)})
	sc.in.SDK(fault.SDKFault{Service: "DynamoDB", Operation: "TransactWriteItems", When: fault.Before, Times: reaperTries,
		Err: errInjected, Match: refundPut(src)})

	req := sc.request(src, dst, 900)
	tid := sc.accept("s08-crash", req)
	sc.waitCount(fault.CountLambdaHang, 1)
	if _, err := sc.h.SFN.StopExecution(sc.ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(sc.h.ExecutionARN(tid)),
		Cause: aws.String("ops@example.com: reversed on request")}); err != nil {
		t.Fatalf("stop the execution of %s: %v", tid, err)
	}
	sc.waitSettled("s08-crash")
	sc.drain()
	if n := sc.in.Counts()[fault.CountSDKBefore]; n != reaperTries {
		t.Errorf("refund writes failed: %d, want %d", n, reaperTries)
	}
	if len(sc.logs.reaperLines(tid, "settle failed", errorLevel)) == 0 {
		t.Errorf("the reaper never failed after the fence\n%s", sc.history(nil, tid))
	}

	sc.rest()
	for _, f := range sc.newFailedInvocations() {
		t.Errorf("failed invocation: %s of %s after %d attempts: %v", f.Kind, f.Function, f.Attempts, f.Err)
	}
	sc.expect(sc.check(), "s08-crash", req, reversed("Aborted", "transfer_failed"))
}

// TestContention runs the contention scenario on a stack of its own,
// whose task timeouts leave room for 30 transfers running at once.
func TestContention(t *testing.T) {
	s := startSuite(t, loadTimeScale)
	t.Run("contention on one destination", func(t *testing.T) { contentionOnOneDestination(t, s) })
}

// contentionOnOneDestination proves that transaction conflicts on a busy
// account are retried, not turned into reversals: 30 concurrent transfers
// from 30 sources into one destination all complete.
func contentionOnOneDestination(t *testing.T, s *suite) {
	const sources = 30
	sc := s.begin(t, "PLN")
	dst := sc.open("s09.dst", 0)
	reqs := make([]transfer.Request, sources)
	for i := range reqs {
		reqs[i] = sc.request(sc.open(fmt.Sprintf("s09.src.%02d", i), 1000), dst, 100)
	}
	key := func(i int) string { return fmt.Sprintf("s09-busy-%02d", i) }

	answers := make([]int, sources)
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() {
			e := sc.h.Client.PostTransfer(sc.ctx, caller, key(i), reqs[i].Canonical())
			answers[i] = e.Status
		})
	}
	wg.Wait()
	for i, status := range answers {
		if status != http.StatusAccepted {
			t.Fatalf("POST key %s: %d, want 202", key(i), status)
		}
	}
	for i := range reqs {
		sc.waitSettled(key(i))
	}

	sc.rest()
	snap := sc.check()
	for i := range reqs {
		sc.expect(snap, key(i), reqs[i], completed)
	}
}
