//go:build integration

package scenarios

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// TestRollForward proves that an accepted transfer completes through
// infrastructure faults: each scenario breaks a part of the stack for a
// while in the middle of transfers, then checks that every transfer ended
// COMPLETED, with no refund, and that the invariants hold.
func TestRollForward(t *testing.T) {
	s := startSuite(t, faultTimeScale)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"DynamoDB fails every call for 30 s", dynamoDBFrozen},
		{"every Lambda fails with a service error for 20 s", lambdasFailing},
		{"the credit times out until its retries run out", creditTimesOut},
		{"MarkCompleted meets DynamoDB 500s", markCompletedServerErrors},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// acceptMany opens n pairs of accounts and accepts a transfer from each
// source; it returns the keys and requests.
func (sc *scenario) acceptMany(prefix string, n int) (keys []string, reqs []transfer.Request) {
	sc.t.Helper()
	for i := range n {
		id := prefix + string(rune('a'+i))
		req := sc.request(sc.open(id+".src", 1000), sc.open(id+".dst", 0), int64(100+i))
		key := prefix + "-" + string(rune('a'+i))
		sc.accept(key, req)
		keys, reqs = append(keys, key), append(reqs, req)
	}
	return keys, reqs
}

// pause waits d, or fails the test if it ends first.
func (sc *scenario) pause(d time.Duration) {
	sc.t.Helper()
	select {
	case <-time.After(d):
	case <-sc.ctx.Done():
		sc.t.Fatal(sc.ctx.Err())
	}
}

// dynamoDBFrozen: every DynamoDB call answers 500 InternalServerError for
// 30 s (the functions' SDK calls and the workflow's own DynamoDB tasks),
// starting once every transfer has its debit and its credit under way (the
// first attempt of each credit hangs to its timeout). Meanwhile a new
// request is refused 503 with Retry-After and nothing is stored; its retry
// after the outage is accepted. Every transfer completes.
func dynamoDBFrozen(t *testing.T, s *suite) {
	const n = 4
	sc := s.begin(t, "AUD")
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Times: n})
	keys, reqs := sc.acceptMany("r1", n)
	sc.waitCount(fault.CountLambdaHang, n)

	sc.in.SDK(fault.SDKFault{Service: "DynamoDB", Err: &smithy.GenericAPIError{Code: "InternalServerError", Message: "injected outage", Fault: smithy.FaultServer}})
	sc.in.Integration(fault.IntegrationFault{ServerError: true})
	late := sc.request(sc.open("r1.late.src", 1000), sc.open("r1.late.dst", 0), 150)
	if e := sc.post("r1-late", late); e.Status != http.StatusServiceUnavailable || e.RetryAfter == "" {
		t.Errorf("a new request during the outage: %s; want 503 with Retry-After", e)
	}
	if _, found := sc.record("r1-late"); found {
		t.Errorf("the request refused during the outage stored a record")
	}
	sc.pause(30 * time.Second)
	counts := sc.in.Counts()
	sc.in.Reset()
	if counts[fault.CountSDKBefore] < n {
		t.Fatalf("the outage touched nothing: %v", counts)
	}
	sc.accept("r1-late", late)

	sc.rest()
	snap := sc.check()
	for i, k := range keys {
		sc.expect(snap, k, reqs[i], completed.resumed(anyAttempts))
	}
	sc.expect(snap, "r1-late", late, completed.resumed(anyAttempts))
}

// lambdasFailing: every function (the legs and the reaper) fails with
// Lambda.ServiceException for 20 s, right after the transfers were
// accepted. Every transfer completes.
func lambdasFailing(t *testing.T, s *suite) {
	sc := s.begin(t, "NZD")
	keys, reqs := sc.acceptMany("r2", 4)
	for _, fn := range []string{debitFunction, creditFunction, "RefundFunction", reaperFunction} {
		sc.in.Lambda(fault.LambdaFault{Function: fn, Kind: fault.Fail, Error: "Lambda.ServiceException"})
	}
	sc.pause(20 * time.Second)
	counts := sc.in.Counts()
	sc.in.Reset()
	if counts[fault.CountLambdaFail] == 0 {
		t.Fatalf("the outage touched nothing: %v", counts)
	}

	sc.rest()
	snap := sc.check()
	for i, k := range keys {
		sc.expect(snap, k, reqs[i], completed.resumed(anyAttempts))
	}
}

// creditTimesOut: every attempt of a transfer's credit hangs until its
// task timeout, until the workflow's Retry gives up (States.Timeout) and
// the execution fails. The reaper resumes the transfer, the next
// execution's credit commits, and the transfer completes, its debit taken
// once.
func creditTimesOut(t *testing.T, s *suite) {
	const creditAttempts = 1 + 12 // the Credit state's Retry: MaxAttempts 12
	sc := s.begin(t, "SGD")
	src, dst := sc.open("r3.src", 1000), sc.open("r3.dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Times: creditAttempts, Match: fromSource(src)})

	req := sc.request(src, dst, 300)
	sc.accept("r3-timeout", req)
	sc.waitSettled("r3-timeout")
	if n := sc.in.Counts()[fault.CountLambdaHang]; n != creditAttempts {
		t.Errorf("credit attempts that hung: %d, want %d", n, creditAttempts)
	}

	sc.rest()
	sc.expect(sc.check(), "r3-timeout", req, completed.resumed(2))
}

// markCompletedServerErrors: the workflow's MarkCompleted meets
// DynamoDB's 500 (DynamoDB.InternalServerError) five times, fewer than its
// Retry allows: the workflow itself carries the transfer through, one
// execution SUCCEEDED, COMPLETED.
func markCompletedServerErrors(t *testing.T, s *suite) {
	const failures = 5 // MarkCompleted's Retry: MaxAttempts 8
	sc := s.begin(t, "PLN")
	src, dst := sc.open("r4.src", 1000), sc.open("r4.dst", 0)
	sc.in.Integration(fault.IntegrationFault{Operation: "UpdateItem", ServerError: true, Times: failures, Match: func(body []byte) bool {
		return bytes.Contains(body, []byte("COMPLETED")) && bytes.Contains(body, []byte(src))
	}})

	req := sc.request(src, dst, 500)
	tid := sc.accept("r4-mark", req)
	if exec := sc.waitExecution(tid); exec.Status != sfntypes.ExecutionStatusSucceeded {
		t.Errorf("execution %s (%s), want SUCCEEDED: the workflow retries DynamoDB.InternalServerError", exec.Status, aws.ToString(exec.Error))
	}
	if n := sc.in.Counts()[fault.CountIntegrationBefore]; n != failures {
		t.Errorf("MarkCompleted attempts answered 500: %d, want %d", n, failures)
	}

	sc.rest()
	sc.expect(sc.check(), "r4-mark", req, completed)
}
