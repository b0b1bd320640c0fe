//go:build integration

package scenarios

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestStartFailures covers the orchestrator's second call failing: the
// key is reserved, StartExecution never happens (the orchestrator crashed
// between its two calls, or Step Functions refused it).
func TestStartFailures(t *testing.T) {
	s := startSuite(t, faultTimeScale)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"crash before StartExecution, the client never retries", startLostNoRetry},
		{"crash before StartExecution, the client retries", startLostClientRetries},
		{"StartExecution throttled", startThrottled},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// armStartFailure makes the next StartExecution of a transfer from src
// fail before it reaches Step Functions, with an error the SDK does not
// retry: to the record it is a crash between the orchestrator's two calls.
func armStartFailure(sc *scenario, src string, err error, times int) {
	sc.in.SDK(fault.SDKFault{Service: "SFN", Operation: "StartExecution", When: fault.Before, Times: times, Err: err,
		Match: func(input any) bool { return inputMentions(input, src) }})
}

// startLostNoRetry proves that a reservation whose execution never started
// is not stranded: with no retry from the client, the sweeper starts the
// execution from the stored record and the transfer completes once.
func startLostNoRetry(t *testing.T, s *suite) {
	sc := s.begin(t, "SEK")
	src, dst := sc.open("s11.src", 1000), sc.open("s11.dst", 0)
	armStartFailure(sc, src, errInjected, 1)

	req := sc.request(src, dst, 100)
	e := sc.post("s11-lost", req)
	if e.Status != http.StatusServiceUnavailable || e.RetryAfter == "" {
		t.Fatalf("POST: %s, want 503 with Retry-After", e)
	}
	if rec, found := sc.record("s11-lost"); !found || rec.Status != reservation.StatusReserved {
		t.Fatalf("record %+v (found %v), want RESERVED", rec, found)
	}
	if n := len(sc.executions(e.TransferID)); n != 0 {
		t.Fatalf("%d executions after the failed start, want none", n)
	}

	sc.rest() // the sweep starts it
	sc.expect(sc.check(), "s11-lost", req, completed)
}

// startLostClientRetries proves that the client's retry after a lost start
// makes exactly one execution and one debit.
func startLostClientRetries(t *testing.T, s *suite) {
	sc := s.begin(t, "NOK")
	src, dst := sc.open("s12.src", 1000), sc.open("s12.dst", 0)
	armStartFailure(sc, src, errInjected, 1)

	req := sc.request(src, dst, 100)
	if e := sc.post("s12-retried", req); e.Status != http.StatusServiceUnavailable {
		t.Fatalf("POST: %s, want 503", e)
	}
	for range 3 {
		if e := sc.post("s12-retried", req); e.Status != http.StatusAccepted && e.Status != http.StatusOK {
			t.Fatalf("retry: %s, want 202 or 200", e)
		}
	}
	sc.waitSettled("s12-retried")
	sc.rest()
	sc.expect(sc.check(), "s12-retried", req, completed)
}

// startThrottled proves that a throttled StartExecution, still throttled
// after the SDK's own retries, answers 503 with Retry-After, and that the
// client's retry then succeeds.
func startThrottled(t *testing.T, s *suite) {
	sc := s.begin(t, "DKK")
	src, dst := sc.open("s13.src", 1000), sc.open("s13.dst", 0)
	// The SDK's standard retryer makes 3 attempts for a throttle.
	armStartFailure(sc, src, &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded", Fault: smithy.FaultClient}, 3)

	req := sc.request(src, dst, 100)
	e := sc.post("s13-throttled", req)
	if e.Status != http.StatusServiceUnavailable || e.RetryAfter == "" {
		t.Fatalf("POST: %s, want 503 with Retry-After", e)
	}
	if n := sc.in.Counts()[fault.CountSDKBefore]; n != 3 {
		t.Errorf("throttled attempts: %d, want 3 (the SDK retried)", n)
	}
	if e := sc.post("s13-throttled", req); e.Status != http.StatusAccepted && e.Status != http.StatusOK {
		t.Fatalf("retry: %s, want 202 or 200", e)
	}
	sc.waitSettled("s13-throttled")
	sc.rest()
	sc.expect(sc.check(), "s13-throttled", req, completed)
}

// inputMentions reports whether a StartExecution input names account (as
// the source of the transfer it starts).
func inputMentions(input any, account string) bool {
	in, ok := input.(*sfn.StartExecutionInput)
	return ok && strings.Contains(aws.ToString(in.Input), `"sourceAccountId":"`+account+`"`)
}
