//go:build integration

package scenarios

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestOwnershipScenarios runs, with ownership enforced (the template's
// default), the cases where the orchestrator's early answer about the
// source account's owner is out of date by the time the debit runs. The
// debit's own check, in the transaction that moves the money, decides:
// the transfer settles FAILED Forbidden with its debit slot voided, no
// money moves, and every replay is 403 forbidden.
func TestOwnershipScenarios(t *testing.T) {
	s := startSuite(t, faultTimeScale)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"owner changes between the orchestrator's read and the debit", ownerChangesAfterRead},
		{"the orchestrator remembers an owner that changed since", ownerRememberedStale},
		{"a caller who does not own the source account", notTheOwner},
		{"the orchestrator cannot read the owner", ownerUnreadable},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// forbidden is a transfer the debit refused because its caller no longer
// owns the source account: nothing moved, the debit's slot voided.
var forbidden = outcome{status: reservation.StatusFailed, code: "Forbidden", legs: legs{Voided: 1},
	replay: http.StatusForbidden, replayCode: chaos.CodeForbidden}

// ownerChangesAfterRead: the account is new to the orchestrator, which
// reads its owner while reserving the key: the caller, so the transfer is
// accepted. The first debit attempt hangs; meanwhile the account passes
// to another owner; the retried debit refuses the transfer.
func ownerChangesAfterRead(t *testing.T, s *suite) {
	sc := s.begin(t, "AUD")
	src, dst := sc.open("own-a-src", 1000), sc.open("own-a-dst", 0)
	sc.in.Lambda(fault.LambdaFault{Function: debitFunction, Kind: fault.Hang, Times: 1, Match: fromSource(src)})
	req := sc.request(src, dst, 300)
	tid := sc.accept("own-a", req)
	sc.waitFor("the first debit attempt to hang", func() bool { return sc.in.Counts()[fault.CountLambdaHang] >= 1 })
	sc.setOwner(src, chaos.Scope("someone-else"))
	if rec := sc.waitSettled("own-a"); rec.Status != reservation.StatusFailed {
		t.Fatalf("transfer %s settled %s, want FAILED\n%s", tid, rec.Status, sc.history(nil, tid))
	}
	sc.rest()
	sc.expect(sc.check(), "own-a", req, forbidden)
}

// ownerRememberedStale: a completed transfer makes the orchestrator
// remember the caller as the owner; the account then passes to another
// owner, and the next transfer is accepted from the stale memory. Its
// debit refuses it.
func ownerRememberedStale(t *testing.T, s *suite) {
	sc := s.begin(t, "NZD")
	src, dst := sc.open("own-b-src", 1000), sc.open("own-b-dst", 0)
	first := sc.request(src, dst, 100)
	sc.accept("own-b-1", first)
	if rec := sc.waitSettled("own-b-1"); rec.Status != reservation.StatusCompleted {
		t.Fatalf("first transfer %s, want COMPLETED", rec.Status)
	}
	sc.setOwner(src, chaos.Scope("someone-else"))
	second := sc.request(src, dst, 200)
	tid := sc.accept("own-b-2", second)
	if rec := sc.waitSettled("own-b-2"); rec.Status != reservation.StatusFailed {
		t.Fatalf("transfer %s settled %s, want FAILED\n%s", tid, rec.Status, sc.history(nil, tid))
	}
	sc.rest()
	snap := sc.check()
	sc.expect(snap, "own-b-1", first, completed)
	sc.expect(snap, "own-b-2", second, forbidden)
}

// notTheOwner: another caller's account is refused with 403 forbidden.
// Whether the orchestrator reads the owner beside the reservation (the
// first key) or remembers it (the second), the record it made is settled
// FAILED Forbidden at once (no execution, no entry), and every replay is
// the same 403.
func notTheOwner(t *testing.T, s *suite) {
	sc := s.begin(t, "CAD")
	src, dst := sc.open("own-c-src", 1000), sc.open("own-c-dst", 0)
	sc.setOwner(src, chaos.Scope("someone-else"))
	req := sc.request(src, dst, 100)
	for _, key := range []string{"own-c-1", "own-c-2"} {
		e := sc.post(key, req)
		if e.Status != http.StatusForbidden || e.Code != chaos.CodeForbidden {
			t.Fatalf("key %s: %s, want 403 %s", key, e, chaos.CodeForbidden)
		}
		rec, found := sc.record(key)
		switch {
		case !found:
			t.Errorf("key %s: refused, but nothing is stored", key)
		case rec.Status != reservation.StatusFailed || rec.ResourceID != e.TransferID || e.TransferStatus != "FAILED":
			t.Errorf("key %s: record %s of %s, answer %s; want FAILED, named by the answer", key, rec.Status, rec.ResourceID, e)
		case len(sc.executions(rec.ResourceID)) != 0:
			t.Errorf("key %s: the refused transfer %s was started", key, rec.ResourceID)
		}
		if r := sc.post(key, req); r.Status != http.StatusForbidden || r.Code != chaos.CodeForbidden || !r.Replayed {
			t.Errorf("key %s: replay %s, want 403 %s, replayed", key, r, chaos.CodeForbidden)
		}
	}
	sc.rest()
	snap := sc.check()
	for _, id := range []string{src, dst} {
		for _, e := range snap.AccountEntries(id) {
			t.Errorf("account %s has entry %s", id, e)
		}
	}
}

// ownerUnreadable: the read of the owner fails (the account is another
// caller's). The orchestrator does not wait for a second opinion: the
// transfer is accepted and its debit refuses it, so the 403 comes later,
// from the settled record.
func ownerUnreadable(t *testing.T, s *suite) {
	sc := s.begin(t, "HUF")
	src, dst := sc.open("own-d-src", 1000), sc.open("own-d-dst", 0)
	sc.setOwner(src, chaos.Scope("someone-else"))
	sc.in.SDK(fault.SDKFault{Service: "DynamoDB", Operation: "GetItem", Times: 1, Err: errors.New("injected: owner read failed"),
		Match: func(in any) bool {
			get, ok := in.(*dynamodb.GetItemInput)
			if !ok || aws.ToString(get.TableName) != sc.h.LedgerTable {
				return false
			}
			pk, ok := get.Key["pk"].(*ddbtypes.AttributeValueMemberS)
			return ok && pk.Value == "ACCOUNT#"+src
		}})
	req := sc.request(src, dst, 100)
	tid := sc.accept("own-d", req)
	if n := sc.in.Counts()[fault.CountSDKBefore]; n != 1 {
		t.Fatalf("owner reads failed: %d, want 1", n)
	}
	if rec := sc.waitSettled("own-d"); rec.Status != reservation.StatusFailed {
		t.Fatalf("transfer %s settled %s, want FAILED\n%s", tid, rec.Status, sc.history(nil, tid))
	}
	sc.rest()
	sc.expect(sc.check(), "own-d", req, forbidden)
}

// setOwner gives an account another owner, as an operator might.
func (sc *scenario) setOwner(id, owner string) {
	sc.t.Helper()
	if err := sc.h.SetOwner(sc.ctx, id, owner); err != nil {
		sc.t.Fatal(err)
	}
}
