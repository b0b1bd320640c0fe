//go:build integration

package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// crashWindow is the completion window of the crash scenarios' stack
// (CompleteWithinSeconds): long enough for a restart, short enough that a
// stack kept down longer lets it pass.
const crashWindow = 20 * time.Second

// TestCrash kills the whole local stack (every execution and invocation
// in flight is lost, as with kill -9) between a transfer's debit and its
// credit, and starts it again on the same DynamoDB tables.
func TestCrash(t *testing.T) {
	s := startRestartableSuite(t, chaos.Options{TimeScale: faultTimeScale,
		Parameters: map[string]string{"CompleteWithinSeconds": fmt.Sprint(int(crashWindow / time.Second))}})
	for _, c := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"killed between debit and credit, restarted: completed", killedBetweenDebitAndCredit},
		{"down past the completion window: refunded, TimedOut", downPastTheWindow},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// crashDuringCredit accepts a transfer whose credit hangs, waits until the
// debit committed and the credit is running, then crashes the stack and
// keeps it down for down before starting it again.
func (sc *scenario) crashDuringCredit(key string, down time.Duration) {
	sc.t.Helper()
	src := sc.open(key+".src", 1000)
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Match: fromSource(src)})
	tid := sc.accept(key, sc.request(src, sc.open(key+".dst", 0), 400))
	sc.waitCount(fault.CountLambdaHang, 1)
	if got := legsOf(sc.snapshot(), tid); got != (legs{Debit: 1}) {
		sc.t.Fatalf("at the crash the ledger has %s, want the debit alone", got)
	}
	if err := sc.h.Restart(sc.ctx, func() {
		sc.in.Reset()
		sc.pause(down)
	}); err != nil {
		sc.t.Fatal(err)
	}
}

// killedBetweenDebitAndCredit: after the restart the sweeper finds the
// record IN_PROGRESS and its execution gone, and resumes the transfer: it
// completes, with one debit and one credit, no refund.
func killedBetweenDebitAndCredit(t *testing.T, s *suite) {
	sc := s.begin(t, "HKD")
	sc.crashDuringCredit("c1", 0)
	rest := sc.rest()
	if rest.Sweeps == 0 {
		t.Errorf("settled without a sweep")
	}
	rec, _ := sc.record("c1")
	sc.expect(sc.check(), "c1", sc.requestOf(rec), completed.resumed(anyAttempts))
}

// downPastTheWindow: the stack stays down until the transfer's completion
// window has passed, so after the restart the reaper settles it instead of
// resuming it: the debit is refunded and the transfer fails with TimedOut,
// the TimedOut metric counts it.
func downPastTheWindow(t *testing.T, s *suite) {
	sc := s.begin(t, "MXN")
	sc.crashDuringCredit("c2", crashWindow+time.Second)
	sc.rest()
	rec, _ := sc.record("c2")
	sc.expect(sc.check(), "c2", sc.requestOf(rec), reversed("TimedOut", "transfer_failed").resumed(anyAttempts))
	if n := len(sc.logs.lines(func(l logLine) bool { return l.Attrs["TimedOut"] != "" })); n != 1 {
		t.Errorf("%d TimedOut metric lines, want 1", n)
	}
}

// requestOf is the transfer request a record stores.
func (sc *scenario) requestOf(rec reservation.Record) transfer.Request {
	sc.t.Helper()
	var req transfer.Request
	if err := json.Unmarshal([]byte(rec.Request), &req); err != nil {
		sc.t.Fatalf("stored request of %s: %v", rec.ResourceID, err)
	}
	return req
}

// startRestartableSuite starts a suite whose stack can be restarted
// (Harness.Restart): on a DynamoDB Local of its own, which outlives the
// stack.
func startRestartableSuite(t *testing.T, opts chaos.Options) *suite {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	ddb, err := ddblocal.Start(ctx, ddblocal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ddb.Stop(); err != nil {
			t.Errorf("stop DynamoDB Local: %v", err)
		}
	})
	opts.DynamoDBEndpoint = ddb.Endpoint()
	return startSuiteWith(t, opts)
}
