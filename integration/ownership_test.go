//go:build integration

package integration

import (
	"context"
	"net/http"
	"testing"
)

const codeForbidden = "forbidden"

// TestAccountOwnership: an account is its owner's. Caller B can neither
// debit caller A's account (403, no execution: nothing stored, or, when
// the orchestrator had not yet read the account's owner, a record it
// settled FAILED Forbidden at once, which the 403 names) nor read
// it (404, as an unknown account), nor replay A's key (B's same key is
// B's own: it never shows A's transfer), nor reach A's transfer. An
// unknown source is refused exactly as another caller's account is. B may
// still pay into A's account.
func TestAccountOwnership(t *testing.T) {
	t.Parallel()
	if !tg.ownership {
		t.Skip("the stack's AccountOwnership is off")
	}
	b, reason, err := tg.second(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Skip(reason)
	}
	a := tg.first
	bk := newBook(t)
	aSrc, aDst := bk.open(t, "a-src", "EUR", 10000), bk.open(t, "a-dst", "EUR", 0)
	bSrc := bk.openFor(t, b, "b-src", "EUR", 10000)
	ofA := transferRequest{SourceAccountID: aSrc, DestinationAccountID: aDst, Amount: 700, Currency: "EUR", Reference: "A's"}

	// A's transfer under key k.
	k := newKey()
	aTransfer := accept(t, a, k, ofA)
	if done := awaitSettled(t, a, aTransfer.TransferID); done.Status != statusCompleted {
		t.Fatalf("A's transfer settled as %+v, want COMPLETED", done)
	}
	aRecord := record(t, a, k)
	before := bk.balances(t)

	var refusals []problemView
	posts := []struct {
		name   string
		caller *caller
		key    string
		req    transferRequest
	}{
		{"B debits A's account", b, newKey(), ofA},
		{"B debits A's account under A's key", b, k, ofA},
		{"A debits an unknown account", a, newKey(), transferRequest{SourceAccountID: uniqueID("nobody"), DestinationAccountID: aDst, Amount: 700, Currency: "EUR"}},
		{"B debits an unknown account", b, newKey(), transferRequest{SourceAccountID: uniqueID("nobody"), DestinationAccountID: bSrc, Amount: 700, Currency: "EUR"}},
	}
	for _, tc := range posts {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.caller.post(t, tc.key, tc.req.body(t))
			p := expectProblem(t, r, http.StatusForbidden, codeForbidden)
			if r.replayed() {
				t.Errorf("%s: a first refusal says it is replayed", r)
			}
			if p.Transfer == nil {
				// Refused from the owner the orchestrator remembers:
				// nothing stored.
				if r.header.Get("Location") != "" {
					t.Errorf("%s: a refusal that stored nothing names a transfer", r)
				}
				refusals = append(refusals, p)
				expectNoRecord(t, tc.caller, tc.key)
			} else {
				// Refused on the owner read beside the reservation: the
				// record is settled FAILED Forbidden, never started, and
				// every replay is the same 403.
				rec := record(t, tc.caller, tc.key)
				if rec.Status != "FAILED" || rec.ResourceID != p.Transfer.TransferID || p.Transfer.Failure == nil || p.Transfer.Failure.Code != "Forbidden" {
					t.Errorf("%s: record %s of %s, want FAILED Forbidden, named by the refusal", r, rec.Status, rec.ResourceID)
				}
				again := tc.caller.post(t, tc.key, tc.req.body(t))
				if rp := expectProblem(t, again, http.StatusForbidden, codeForbidden); !again.replayed() || rp.Transfer == nil || rp.Transfer.TransferID != rec.ResourceID {
					t.Errorf("replay of a refused transfer: %s", again)
				}
			}
			expectExecutions(t, tc.caller, tc.key)
		})
	}
	for i, p := range refusals[1:] {
		if p.Type != refusals[0].Type || p.Title != refusals[0].Title || p.Detail != refusals[0].Detail {
			t.Errorf("refusal %d differs from the first: %+v and %+v", i+1, p, refusals[0])
		}
	}
	if got := record(t, a, k); got.Status != aRecord.Status || got.ResourceID != aRecord.ResourceID || got.UpdatedAt != aRecord.UpdatedAt {
		t.Errorf("A's record changed: %+v -> %+v", aRecord, got)
	}
	expectExecutions(t, a, k, aTransfer.TransferID)
	expectUnchanged(t, bk, before)

	reads := []struct {
		name   string
		caller *caller
		path   string
	}{
		{"B reads A's account", b, "/accounts/" + aSrc},
		{"B reads an unknown account", b, "/accounts/" + uniqueID("nobody")},
		{"B reads A's transfer", b, "/transfers/" + aTransfer.TransferID},
		{"A reads B's account", a, "/accounts/" + bSrc},
	}
	var notFound []problemView
	for _, tc := range reads {
		t.Run(tc.name, func(t *testing.T) {
			p := expectProblem(t, tc.caller.get(t, tc.path), http.StatusNotFound, codeNotFound)
			if p.Transfer != nil {
				t.Errorf("a 404 shows a transfer: %+v", p)
			}
			notFound = append(notFound, p)
		})
	}
	for i, p := range notFound[1:] {
		if p.Type != notFound[0].Type || p.Title != notFound[0].Title || p.Detail != notFound[0].Detail {
			t.Errorf("404 %d differs from the first: %+v and %+v", i+1, p, notFound[0])
		}
	}

	// B's k is B's own new key: with B's own account it is a new
	// transfer, never A's, and B may pay into A's account.
	t.Run("B's own transfer under A's key", func(t *testing.T) {
		ofB := transferRequest{SourceAccountID: bSrc, DestinationAccountID: aDst, Amount: 300, Currency: "EUR", Reference: "B's"}
		bTransfer := accept(t, b, k, ofB)
		if bTransfer.TransferID == aTransfer.TransferID {
			t.Fatalf("B's key %q answered A's transfer %s", k, aTransfer.TransferID)
		}
		if done := awaitSettled(t, b, bTransfer.TransferID); done.Status != statusCompleted {
			t.Fatalf("B's transfer settled as %+v, want COMPLETED", done)
		}
		expectProblem(t, a.get(t, "/transfers/"+bTransfer.TransferID), http.StatusNotFound, codeNotFound)
		r := a.post(t, k, ofA.body(t))
		if v := expectTransfer(t, r, http.StatusOK); v.TransferID != aTransfer.TransferID {
			t.Errorf("A's replay of %q: %s, want A's transfer %s", k, r, aTransfer.TransferID)
		}
		expectExecutions(t, a, k, aTransfer.TransferID)
		expectExecutions(t, b, k, bTransfer.TransferID)
		expectLegs(t, getAccount(t, a, aDst), bTransfer.TransferID, leg{legCredit, 300})
		expectLegs(t, getAccount(t, b, bSrc), bTransfer.TransferID, leg{legDebit, -300})
	})
}
