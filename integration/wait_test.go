//go:build integration

package integration

import (
	"net/http"
	"testing"
)

// postWaiting posts a transfer with Prefer: wait=N.
func postWaiting(t testing.TB, c *caller, key, wait string, req transferRequest) reply {
	t.Helper()
	return c.postWith(t, http.Header{"Idempotency-Key": {key}, "Prefer": {"wait=" + wait}}, req.body(t))
}

// expectApplied checks the Preference-Applied header.
func expectApplied(t testing.TB, r reply, want string) {
	t.Helper()
	if got := r.header.Get("Preference-Applied"); got != want {
		t.Errorf("%s: Preference-Applied = %q, want %q", r, got, want)
	}
}

// TestPreferWait: with Prefer: wait=N the first answer is the final one
// when the transfer settles within N seconds: 201 with the completed
// transfer, or the stored refusal as a replay answers it. A replay of a
// transfer still in progress waits too, and answers 202 when the wait
// ends first.
func TestPreferWait(t *testing.T) {
	t.Parallel()

	t.Run("completed", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		src, dst := b.open(t, "src", "EUR", 10000), b.open(t, "dst", "EUR", 0)
		req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 700, Currency: "EUR"}
		r := postWaiting(t, c, newKey(), "5", req)
		v := expectTransfer(t, r, http.StatusCreated)
		expectLocation(t, r, v.TransferID)
		expectReplayed(t, r, false)
		expectApplied(t, r, "wait=5")
		if v.Status != statusCompleted || v.SettledAt == "" {
			t.Fatalf("%s: want the completed transfer", r)
		}
		expectSameRequest(t, v, req)
		// The answer is final: the ledger already holds both legs.
		expectLegs(t, getAccount(t, c, src), v.TransferID, leg{legDebit, -700})
		expectLegs(t, getAccount(t, c, dst), v.TransferID, leg{legCredit, 700})
	})

	t.Run("refused by the ledger", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		src, dst := b.open(t, "src", "EUR", 100), b.open(t, "dst", "EUR", 0)
		req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 700, Currency: "EUR"}
		key := newKey()
		r := postWaiting(t, c, key, "5", req)
		p := expectProblem(t, r, http.StatusUnprocessableEntity, "insufficient_funds")
		expectReplayed(t, r, false)
		expectApplied(t, r, "wait=5")
		if p.Transfer == nil || p.Transfer.Status != statusFailed {
			t.Fatalf("%s: want the failed transfer in the problem", r)
		}
		expectLocation(t, r, p.Transfer.TransferID)
		// A replay gives the same problem.
		again := c.post(t, key, req.body(t))
		expectProblem(t, again, http.StatusUnprocessableEntity, "insufficient_funds")
		expectReplayed(t, again, true)
	})

	t.Run("replay of a transfer in progress", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		src, dst := b.open(t, "src", "EUR", 10000), b.open(t, "dst", "EUR", 0)
		req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 700, Currency: "EUR"}
		key := newKey()
		id := holdInProgress(t, c, key, req)
		r := postWaiting(t, c, key, "1", req)
		v := expectTransfer(t, r, http.StatusAccepted)
		expectReplayed(t, r, true)
		expectApplied(t, r, "wait=1")
		if v.TransferID != id || v.Status != statusPending {
			t.Fatalf("%s: want the pending transfer %s", r, id)
		}
	})
}
