//go:build integration

package scenarios

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// TestWaitFloodLeavesOthersServed floods the API with one caller's
// requests that ask to wait (Prefer: wait=5) on transfers that cannot
// settle while their debits hang, then has another caller make a transfer
// while the waits go on. The orchestrator's reserved concurrency is 16,
// as the local stack enforces it (a throttled invocation is API Gateway's
// INTEGRATION_FAILURE: 503 with Retry-After).
//
// With the wait limit (CallerWaitLimit 10), the flooder's first 10 waits
// hold 10 places and the rest are answered at once, so the other caller
// is served. Without it, the flood fills every place and the other caller
// is refused: the test shows what the limit buys.
func TestWaitFloodLeavesOthersServed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		waitLimit  string
		wantServed bool
	}{
		{"with the per-caller wait limit", "10", true},
		{"without it", "0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSuiteWith(t, chaos.Options{TimeScale: faultTimeScale, Parameters: map[string]string{
				"OrchestratorReservedConcurrency": "16",
				"CallerRateLimit":                 "6000",
				"CallerWaitLimit":                 tc.waitLimit,
			}})
			sc := s.begin(t, "CHF")
			src, dst := sc.open("flood.src", 1_000_000), sc.open("flood.dst", 0)
			sc.in.Lambda(fault.LambdaFault{Function: debitFunction, Kind: fault.Hang, Match: fromSource(src)})
			const other = "other-caller"
			if err := sc.h.OpenAccount(sc.ctx, "other.src", other, sc.currency, 1000); err != nil {
				t.Fatal(err)
			}
			if err := sc.h.OpenAccount(sc.ctx, "other.dst", other, sc.currency, 0); err != nil {
				t.Fatal(err)
			}

			const flood = 30
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				answers = map[int]int{}
			)
			body := sc.request(src, dst, 1).Canonical()
			for i := range flood {
				wg.Go(func() {
					e := sc.h.Client.PostTransferPreferring(sc.ctx, caller, fmt.Sprintf("flood-%d", i), "wait=5", body)
					mu.Lock()
					answers[e.Status]++
					mu.Unlock()
				})
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)

			req := transfer.Request{SourceAccountID: "other.src", DestinationAccountID: "other.dst", Amount: 5, Currency: sc.currency}
			e := sc.h.Client.PostTransfer(sc.ctx, other, "other-1", req.Canonical())
			wg.Wait()
			t.Logf("the flooder's answers by status: %v; the other caller's: %s", answers, e)
			served := e.Status == http.StatusAccepted || e.Status == http.StatusCreated
			if served != tc.wantServed {
				t.Fatalf("the other caller's POST: %s; served = %v, want %v", e, served, tc.wantServed)
			}
			if !served && (e.Status != http.StatusServiceUnavailable || e.Code != "service_unavailable" || e.RetryAfter == "") {
				t.Errorf("refused as %s, want 503 service_unavailable with Retry-After", e)
			}

			// The debits go through once the fault is gone: every
			// transfer completes, once.
			s.in.Reset()
			sc.rest()
			sc.check()
		})
	}
}
