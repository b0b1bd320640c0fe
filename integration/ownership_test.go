//go:build integration

package integration

import (
	"context"
	"math"
	"net/http"
	"strings"
	"testing"
)

const codeForbidden = "forbidden"

// twoOwners returns the suite's caller and a second one, each owning its
// accounts; it skips the test, saying why, when the stack does not enforce
// ownership (offReason) or has no second caller.
func twoOwners(t *testing.T, offReason string) (a, b *caller) {
	t.Helper()
	if !tg.ownership {
		t.Skip(offReason)
	}
	b, reason, err := tg.second(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Skip(reason)
	}
	return tg.first, b
}

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
	a, b := twoOwners(t, "the stack's AccountOwnership is off")
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
			// Whether the orchestrator remembered the owner or read it
			// beside the reservation, the record is settled FAILED
			// Forbidden, never started, and every replay is the same 403:
			// one answer, one stored state.
			if p.Transfer == nil || r.header.Get("Location") == "" {
				t.Fatalf("%s: a refusal without its transfer or Location", r)
			}
			refusals = append(refusals, p)
			rec := record(t, tc.caller, tc.key)
			if rec.Status != "FAILED" || rec.ResourceID != p.Transfer.TransferID || p.Transfer.Failure == nil || p.Transfer.Failure.Code != "Forbidden" {
				t.Errorf("%s: record %s of %s, want FAILED Forbidden, named by the refusal", r, rec.Status, rec.ResourceID)
			}
			again := tc.caller.post(t, tc.key, tc.req.body(t))
			if rp := expectProblem(t, again, http.StatusForbidden, codeForbidden); !again.replayed() || rp.Transfer == nil || rp.Transfer.TransferID != rec.ResourceID {
				t.Errorf("replay of a refused transfer: %s", again)
			}
			expectExecutions(t, tc.caller, tc.key)
		})
	}
	for i, p := range refusals[1:] {
		if p.Type != refusals[0].Type || p.Title != refusals[0].Title ||
			strings.ReplaceAll(p.Detail, p.Transfer.SourceAccountID, "SOURCE") != strings.ReplaceAll(refusals[0].Detail, refusals[0].Transfer.SourceAccountID, "SOURCE") {
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

	// B's k is B's own key, which now holds B's refused transfer, never
	// A's; B may pay into A's account from B's own, under a new key.
	t.Run("B's own transfer into A's account", func(t *testing.T) {
		if rec := record(t, b, k); rec.ResourceID == aTransfer.TransferID || rec.Status != "FAILED" {
			t.Fatalf("B's key %q holds %s %s, want B's own refused transfer, not A's %s", k, rec.Status, rec.ResourceID, aTransfer.TransferID)
		}
		ofB := transferRequest{SourceAccountID: bSrc, DestinationAccountID: aDst, Amount: 300, Currency: "EUR", Reference: "B's"}
		bKey := newKey()
		bTransfer := accept(t, b, bKey, ofB)
		if done := awaitSettled(t, b, bTransfer.TransferID); done.Status != statusCompleted {
			t.Fatalf("B's transfer settled as %+v, want COMPLETED", done)
		}
		expectProblem(t, a.get(t, "/transfers/"+bTransfer.TransferID), http.StatusNotFound, codeNotFound)
		r := a.post(t, k, ofA.body(t))
		if v := expectTransfer(t, r, http.StatusOK); v.TransferID != aTransfer.TransferID {
			t.Errorf("A's replay of %q: %s, want A's transfer %s", k, r, aTransfer.TransferID)
		}
		expectExecutions(t, a, k, aTransfer.TransferID)
		expectExecutions(t, b, k)
		expectExecutions(t, b, bKey, bTransfer.TransferID)
		expectLegs(t, getAccount(t, a, aDst), bTransfer.TransferID, leg{legCredit, 300})
		expectLegs(t, getAccount(t, b, bSrc), bTransfer.TransferID, leg{legDebit, -300})
	})
}

const codeDestinationUnavailable = "destination_unavailable"

// TestDestinationOracle: a transfer to another caller's account (or to an
// id no account has) that the destination refuses answers its caller one
// problem, destination_unavailable, whatever the refusal was: unknown,
// closed, another currency, a balance at its limit. Its detail names
// neither the account's currency nor its state. The owner of both
// accounts still reads the precise code (an id no account has is
// nobody's: destination_unavailable to everyone). What an outsider does learn is
// that a transfer to an account that can receive it completes.
func TestDestinationOracle(t *testing.T) {
	t.Parallel()
	a, b := twoOwners(t, "the stack's AccountOwnership is off: every caller may read every account")
	const currency = "NOK"
	bk := newBook(t)
	aSrc := bk.open(t, "a-src", currency, 10000)
	bSrc := bk.openFor(t, b, "b-src", currency, 10000)
	closed := func(c *caller) string {
		id := bk.openFor(t, c, "closed", currency, 0)
		if err := tg.ledger.CloseAccount(context.Background(), id); err != nil {
			t.Fatalf("close %s: %v", id, err)
		}
		return id
	}
	destinations := []struct {
		name string
		// dst opens the destination as c's, or names no account.
		dst func(c *caller) string
		// ownCode is the problem code the destination's owner reads.
		ownCode string
	}{
		// An id no account has is nobody's: telling it apart from
		// another caller's account would be the oracle again.
		{"unknown", func(*caller) string { return uniqueID("nobody") }, codeDestinationUnavailable},
		{"closed", closed, codeAccountClosed},
		{"another currency", func(c *caller) string { return bk.openFor(t, c, "usd", "USD", 0) }, codeCurrencyMismatch},
		{"balance at its limit", func(c *caller) string { return bk.openFor(t, c, "full", currency, math.MaxInt64) }, "transfer_failed"},
	}
	var refusals []problemView
	for _, d := range destinations {
		t.Run(d.name, func(t *testing.T) {
			// A pays into an account of B's (or into nothing).
			req := transferRequest{SourceAccountID: aSrc, DestinationAccountID: d.dst(b), Amount: 1, Currency: currency}
			p := settleRefused(t, a, req, codeDestinationUnavailable)
			if p.Transfer == nil || p.Transfer.Failure == nil || p.Transfer.Failure.Code != "DestinationUnavailable" {
				t.Errorf("the problem's transfer %+v, want failure code DestinationUnavailable", p.Transfer)
			}
			for _, leak := range []string{"USD", "NOK", "closed", "exist", "balance", "hold"} {
				if strings.Contains(p.Title+" "+p.Detail, leak) {
					t.Errorf("the problem tells %q: %+v", leak, p)
				}
			}
			refusals = append(refusals, p)

			// B pays into its own account: the precise code.
			own := transferRequest{SourceAccountID: bSrc, DestinationAccountID: d.dst(b), Amount: 1, Currency: currency}
			settleRefused(t, b, own, d.ownCode)
		})
	}
	for i, p := range refusals[1:] {
		if p.Type != refusals[0].Type || p.Title != refusals[0].Title ||
			strings.ReplaceAll(p.Detail, p.Transfer.SourceAccountID, "SOURCE") != strings.ReplaceAll(refusals[0].Detail, refusals[0].Transfer.SourceAccountID, "SOURCE") {
			t.Errorf("refusal %d differs from the first: %+v and %+v", i+1, p, refusals[0])
		}
	}
	t.Run("open account in the currency", func(t *testing.T) {
		req := transferRequest{SourceAccountID: aSrc, DestinationAccountID: bk.openFor(t, b, "open", currency, 0), Amount: 1, Currency: currency}
		accepted := accept(t, a, newKey(), req)
		if done := awaitSettled(t, a, accepted.TransferID); done.Status != statusCompleted {
			t.Fatalf("a payment into an open account settled as %+v, want COMPLETED", done)
		}
	})
}

// settleRefused posts req as c, waits for the transfer to settle FAILED
// with its debit refunded, and returns the replay's 422 problem, which
// must have the given code.
func settleRefused(t *testing.T, c *caller, req transferRequest, code string) problemView {
	t.Helper()
	key := newKey()
	accepted := accept(t, c, key, req)
	done := awaitSettled(t, c, accepted.TransferID)
	if done.Status != statusFailed || done.Failure == nil || !done.Failure.Reversed {
		t.Fatalf("transfer settled as %+v, want FAILED and reversed", done)
	}
	r := c.post(t, key, req.body(t))
	expectReplayed(t, r, true)
	p := expectProblem(t, r, http.StatusUnprocessableEntity, code)
	got := getTransfer(t, c, accepted.TransferID)
	if got.Failure == nil || got.Failure.Detail != done.Failure.Detail {
		t.Errorf("GET /transfers/%s: %+v, want the replay's failure %+v", accepted.TransferID, got.Failure, done.Failure)
	}
	return p
}
