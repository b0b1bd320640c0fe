//go:build integration

package scenarios

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestRetryOfAResumedTransferByAFormerOwner: a transfer's first attempt
// debits the source and dies before its credit; the reaper resumes it
// (RESERVED under attempt 1) but cannot start the next run yet. The
// source account then passes to another owner, and the orchestrator
// learns it. The original caller retries its key. A RESERVED record no
// longer means "never ran": the retry must not settle it FAILED (the
// debit would be held for ever, the money stuck), but answer it as it is
// (starting its next run, as a retry of a RESERVED record does); the
// transfer completes under attempt 1, with the one debit and one credit.
func TestRetryOfAResumedTransferByAFormerOwner(t *testing.T) {
	s := startRestartableSuite(t, chaos.Options{TimeScale: faultTimeScale})
	sc := s.begin(t, "PLN")
	src, dst := sc.open("fo.src", 1000), sc.open("fo.dst", 0)

	// Attempt 0 debits, then its credit crashes: the execution fails and
	// the reaper resumes the transfer, whose next run cannot start.
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Fail, Error: crash, Times: 1, Match: fromSource(src)})
	sc.in.SDK(fault.SDKFault{Service: "SFN", Operation: "StartExecution", When: fault.Before, Err: errInjected,
		Match: func(input any) bool {
			in, ok := input.(*sfn.StartExecutionInput)
			return ok && inputMentions(input, src) && strings.HasSuffix(aws.ToString(in.Name), "_1")
		}})
	req := sc.request(src, dst, 300)
	tid := sc.accept("fo", req)
	sc.waitFor("the reaper to resume the transfer under attempt 1", func() bool {
		rec, found := sc.record("fo")
		return found && rec.Status == reservation.StatusReserved && rec.Attempt == 1
	})
	if got := legsOf(sc.snapshot(), tid); got != (legs{Debit: 1}) {
		t.Fatalf("the resumed transfer has %s, want its debit alone", got)
	}

	// The account passes to another owner; a fresh orchestrator learns it
	// from that owner's own transfer.
	sc.setOwner(src, chaos.Scope("new-owner"))
	if err := sc.h.Restart(sc.ctx, nil); err != nil {
		t.Fatal(err)
	}
	if e := sc.h.Client.PostTransfer(sc.ctx, "new-owner", "fo-new", sc.request(src, dst, 1).Canonical()); e.Status != http.StatusAccepted {
		t.Fatalf("the new owner's transfer: %s, want 202", e)
	}

	// The original caller retries its key, once the next run can start.
	sc.in.Reset()
	e := sc.post("fo", req)
	if e.Status != http.StatusAccepted || e.TransferID != tid || e.TransferStatus == "FAILED" {
		t.Fatalf("the retry: %s; want 202 with transfer %s as it is, not FAILED", e, tid)
	}
	if rec, _ := sc.record("fo"); rec.Status == reservation.StatusFailed {
		t.Fatalf("the retry settled the resumed transfer FAILED (%s) with its debit posted", rec.Response)
	}

	sc.rest()
	sc.expect(sc.check(), "fo", req, completed.resumed(1))
}
