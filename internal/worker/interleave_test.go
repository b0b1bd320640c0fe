package worker_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/worker"
)

// A debit attempt that Step Functions gave up on (a retryable Lambda error)
// may still commit after a later attempt was rejected for insufficient
// funds and the workflow went on to store FAILED without a reversal. The
// rejection must be final: once an attempt is rejected, no attempt of the
// same debit may move money.
func TestStaleDebitAfterRejectionMovesNothing(t *testing.T) {
	env := ledgertest.New(t)
	src, dst, funder := ledgertest.ID("src"), ledgertest.ID("dst"), ledgertest.ID("funder")
	env.OpenAccount(t, src, "USD", 100)
	env.OpenAccount(t, dst, "USD", 0)
	env.OpenAccount(t, funder, "USD", 1000)
	tr := env.NewTransfer(t, src, dst, 300, "USD")

	w, err := worker.New(ledger.Debit, env.Ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Attempt 2 runs while attempt 1 hangs: it is rejected.
	if _, err := w.Handle(context.Background(), taskOf(tr)); err == nil {
		// After the fix the rejection is a result, not an error; either
		// way nothing may have been posted.
		t.Logf("attempt 2 answered without an error")
	}
	if got := env.Balance(t, src); got != 100 {
		t.Fatalf("after the rejection the source holds %d, want 100", got)
	}

	// Another transfer funds the source.
	fund := env.NewTransfer(t, funder, src, 500, "USD")
	env.Post(t, fund, ledger.Debit)
	env.Post(t, fund, ledger.Credit)

	// Attempt 1 finally runs its transaction.
	_, _ = w.Handle(context.Background(), taskOf(tr))

	if got := env.Balance(t, src); got != 600 {
		t.Errorf("after the stale attempt the source holds %d, want 600: a rejected debit committed", got)
	}
	entries, err := env.Ledger.TransferEntries(context.Background(), tr.ID, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := entries[ledger.Debit]; ok {
		t.Errorf("the rejected transfer has a DEBIT entry %+v", e)
	}
}
