//go:build integration

package scenarios

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/local/ttl"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// ttlDeletesOnlySettled proves that DynamoDB's Time to Live, run with a
// clock past every settled record's expiry, deletes the settled records
// and none of the pending ones: a RESERVED, an IN_PROGRESS and a
// RECONCILING record carry no expiresAt and survive; and that each of
// those transfers then settles exactly once (the reserved and the
// in-progress ones complete, the aborted one is reversed).
//
// The stack's emulator runs on the wall clock (stack.Options has no clock
// to set), so the test runs a ttl.Emulator of its own over the idempotency
// table, with Now set past the retention. It deletes the settled records
// of every earlier scenario too, so this scenario runs last.
func ttlDeletesOnlySettled(t *testing.T, s *suite) {
	sc := s.begin(t, "CZK")
	settledSrc, dst := sc.open("s10.settled.src", 1000), sc.open("s10.dst", 0)
	reservedSrc := sc.open("s10.reserved.src", 1000)
	inProgressSrc := sc.open("s10.inprogress.src", 1000)
	reconcilingSrc := sc.open("s10.reconciling.src", 1000)

	// A settled transfer, past its expiry once the clock is moved on.
	settledReq := sc.request(settledSrc, dst, 100)
	sc.accept("s10-settled", settledReq)
	settled := sc.waitSettled("s10-settled")

	// RESERVED: StartExecution fails, the client got 503.
	sc.in.SDK(fault.SDKFault{Service: "SFN", Operation: "StartExecution", When: fault.Before, Err: errInjected, Match: startOf(reservedSrc)})
	reservedReq := sc.request(reservedSrc, dst, 200)
	if e := sc.post("s10-reserved", reservedReq); e.Status != http.StatusServiceUnavailable {
		t.Fatalf("POST with StartExecution failing: %s, want 503", e)
	}
	reserved, found := sc.record("s10-reserved")
	if !found || reserved.Status != reservation.StatusReserved {
		t.Fatalf("record after the failed start: %+v (found %t), want RESERVED", reserved, found)
	}

	// IN_PROGRESS: the debit crashes before it runs and the execution's
	// status change is lost, so nothing settles it until a sweep.
	sc.in.Lambda(fault.LambdaFault{Function: debitFunction, Kind: fault.Fail, Error: crash, Times: 1, Match: fromSource(inProgressSrc)})
	sc.in.Event(fault.EventFault{Kind: fault.Drop, Times: 1, Match: statusEvent(string(sfntypes.ExecutionStatusFailed), inProgressSrc)})
	inProgressReq := sc.request(inProgressSrc, dst, 300)
	inProgressID := sc.accept("s10-inprogress", inProgressReq)
	if exec := sc.waitExecution(inProgressID); exec.Status != sfntypes.ExecutionStatusFailed {
		t.Fatalf("execution %s, want FAILED", exec.Status)
	}

	// RECONCILING: an operator aborts the transfer while its credit
	// hangs, the event is lost, and the reaper (invoked with the event, as
	// its rule would) fences the record but cannot post the refund.
	sc.in.Lambda(fault.LambdaFault{Function: creditFunction, Kind: fault.Hang, Match: fromSource(reconcilingSrc)})
	sc.in.Event(fault.EventFault{Kind: fault.Drop, Times: 1, Match: statusEvent(string(sfntypes.ExecutionStatusAborted), reconcilingSrc)})
	sc.in.SDK(fault.SDKFault{Service: "DynamoDB", Operation: "TransactWriteItems", When: fault.Before, Err: errInjected, Match: refundPut(reconcilingSrc)})
	reconcilingReq := sc.request(reconcilingSrc, dst, 400)
	reconcilingID := sc.accept("s10-reconciling", reconcilingReq)
	sc.waitCount(fault.CountLambdaHang, 1)
	if _, err := sc.h.SFN.StopExecution(sc.ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(sc.h.ExecutionARN(reconcilingID)),
		Cause: aws.String("ops@example.com: reversed on request")}); err != nil {
		t.Fatalf("stop the execution of %s: %v", reconcilingID, err)
	}
	exec := sc.waitExecution(reconcilingID)
	if exec.Status != sfntypes.ExecutionStatusAborted {
		t.Fatalf("execution %s, want ABORTED", exec.Status)
	}
	sc.drain()
	_, fnErr, err := sc.h.Stack.Functions.InvokeFunction(sc.ctx, reaperFunction, sc.statusChangeEvent(exec))
	if err != nil || fnErr == nil {
		t.Fatalf("reaper with the refund failing: function error %v, invocation error %v; want a function error", fnErr, err)
	}
	if rec, _ := sc.record("s10-reconciling"); rec.Status != reservation.StatusReconciling {
		t.Fatalf("record %s after the reaper failed to refund, want RECONCILING\n%s", rec.Status, sc.history(nil, reconcilingID))
	}
	if rec, _ := sc.record("s10-inprogress"); rec.Status != reservation.StatusInProgress {
		t.Fatalf("record %s with its event lost, want IN_PROGRESS\n%s", rec.Status, sc.history(nil, inProgressID))
	}

	// TTL runs with a clock past every settled record's expiry.
	before := sc.snapshot()
	expired := map[string]bool{} // record keys
	for k, rec := range before.Records {
		switch {
		case !rec.Status.Terminal() && rec.ExpiresAt != 0:
			t.Errorf("%s record %s (transfer %s) carries expiresAt %d", rec.Status, k, rec.ResourceID, rec.ExpiresAt)
		case rec.Status.Terminal() && rec.ExpiresAt == 0:
			t.Errorf("%s record %s (transfer %s) has no expiresAt", rec.Status, k, rec.ResourceID)
		case rec.Status.Terminal():
			expired[k] = true
		}
	}
	future := time.Now().Add(settled.Retention() + time.Hour)
	em := ttl.New(sc.h.DB, []ttl.Table{{Name: sc.h.IdempotencyTable, Attribute: reservation.AttrExpiresAt}},
		ttl.Options{Now: func() time.Time { return future }})
	n, err := em.RunNow(sc.ctx)
	if err != nil {
		t.Fatalf("TTL: %v", err)
	}
	after := sc.snapshot()
	if n != len(expired) {
		t.Errorf("TTL deleted %d records, want the %d settled ones", n, len(expired))
	}
	for _, k := range slices.Sorted(maps.Keys(before.Records)) {
		rec := before.Records[k]
		_, kept := after.Records[k]
		if kept == expired[k] {
			t.Errorf("%s record of transfer %s (expiresAt %d): kept %t, want %t", rec.Status, rec.ResourceID, rec.ExpiresAt, kept, !expired[k])
		}
	}
	for key, status := range map[string]reservation.Status{
		"s10-reserved": reservation.StatusReserved, "s10-inprogress": reservation.StatusInProgress, "s10-reconciling": reservation.StatusReconciling,
	} {
		if rec, found := sc.record(key); !found || rec.Status != status {
			t.Errorf("record of key %s after TTL: %s (found %t), want %s", key, rec.Status, found, status)
		}
	}

	// The pending transfers settle exactly once: the client's retry starts
	// the reserved one, the sweep settles the others.
	sc.in.Reset()
	if e := sc.post("s10-reserved", reservedReq); e.Status != http.StatusAccepted || !e.Replayed {
		t.Errorf("retry of the reserved key: %s, want 202 replayed", e)
	}
	if rec := sc.waitSettled("s10-reserved"); rec.Status != reservation.StatusCompleted {
		t.Errorf("reserved transfer %s after the retry, want COMPLETED", rec.Status)
	}
	sc.rest()

	// The settled records' ledger entries now belong to no record: those
	// orphans, and only those, are what TTL leaves behind.
	rep, snap, err := sc.h.Check(sc.ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{} // transfer ids
	for k := range expired {
		deleted[before.Records[k].ResourceID] = true
	}
	for _, v := range rep.Violations {
		if v.Invariant == chaos.Orphan && deleted[v.TransferID] {
			continue
		}
		t.Errorf("invariant broken: %s\n%s", v, sc.history(snap, v.TransferID))
	}
	sc.expect(snap, "s10-reserved", reservedReq, completed)
	sc.expect(snap, "s10-inprogress", inProgressReq, completed.resumed(2))
	sc.expect(snap, "s10-reconciling", reconcilingReq, reversed("Aborted", "transfer_failed"))
}

// startOf matches a StartExecution whose input moves money from account.
func startOf(account string) func(any) bool {
	return func(input any) bool {
		in, ok := input.(*sfn.StartExecutionInput)
		if !ok {
			return false
		}
		var wi transfer.WorkflowInput
		var req transfer.Request
		return json.Unmarshal([]byte(aws.ToString(in.Input)), &wi) == nil &&
			json.Unmarshal(wi.Request, &req) == nil && req.SourceAccountID == account
	}
}

// statusChangeEvent is the EventBridge event Step Functions sends when the
// transfer's execution closed, as the reaper's rule delivers it.
func (sc *scenario) statusChangeEvent(exec *sfn.DescribeExecutionOutput) []byte {
	sc.t.Helper()
	detail := map[string]any{
		"executionArn": aws.ToString(exec.ExecutionArn), "stateMachineArn": aws.ToString(exec.StateMachineArn),
		"name": aws.ToString(exec.Name), "status": string(exec.Status), "input": aws.ToString(exec.Input),
		"error": exec.Error, "cause": exec.Cause, "startDate": aws.ToTime(exec.StartDate).UnixMilli(),
	}
	event, err := json.Marshal(map[string]any{
		"version": "0", "id": strconv.FormatInt(time.Now().UnixNano(), 36), "detail-type": "Step Functions Execution Status Change",
		"source": "aws.states", "account": stack.AccountID, "time": time.Now().UTC().Format(time.RFC3339),
		"region": stack.Region, "resources": []string{aws.ToString(exec.ExecutionArn)}, "detail": detail,
	})
	if err != nil {
		sc.t.Fatal(err)
	}
	return event
}
