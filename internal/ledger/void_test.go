package ledger_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
)

func TestVoid(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	cases := []struct {
		name string
		// prepare runs before Void.
		prepare func(t *testing.T, tr ledgertest.Transfer)
		// wantCommitted: Void finds the debit committed.
		wantCommitted bool
		wantReason    string
		wantErr       error
	}{
		{name: "voids an empty slot", wantReason: "InsufficientFunds"},
		{name: "a committed debit stands", wantCommitted: true,
			prepare: func(t *testing.T, tr ledgertest.Transfer) { env.Post(t, tr, ledger.Debit) }},
		{name: "a second void keeps the first rejection", wantReason: "AccountClosed",
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				if _, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "AccountClosed", "first"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "fenced record", wantErr: ledger.ErrFenced,
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				env.SetRecord(t, tr.RecordKey, idempotency.StatusReconciling, tr.ID)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := transferFixture(t, env)
			if tc.prepare != nil {
				tc.prepare(t, tr)
			}
			before := env.Balance(t, tr.Source)
			res, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "InsufficientFunds", "no money")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Void = %+v, %v; want %v", res, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Void: %v", err)
			}
			if got := res.Committed != nil; got != tc.wantCommitted {
				t.Fatalf("Void committed = %v, want %v (%+v)", got, tc.wantCommitted, res)
			}
			if !tc.wantCommitted && res.Reason != tc.wantReason {
				t.Errorf("Void reason = %q, want %q", res.Reason, tc.wantReason)
			}
			if got := env.Balance(t, tr.Source); got != before {
				t.Errorf("Void moved the balance from %d to %d", before, got)
			}
		})
	}
}

// Once voided, no leg of the transfer moves money, and the reaper's read
// sees no debit.
func TestVoidedDebitBlocksEveryLeg(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	tr := transferFixture(t, env)
	if _, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "InsufficientFunds", "no money"); err != nil {
		t.Fatal(err)
	}
	before := env.Snapshot(t)
	for _, tc := range []struct {
		kind ledger.Kind
		want error
	}{
		{ledger.Debit, ledger.ErrVoided},
		{ledger.Credit, ledger.ErrDebitMissing},
		{ledger.Refund, ledger.ErrNothingToRefund},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			_, err := env.Ledger.Post(ctx, tr.Leg(tc.kind))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Post %s = %v, want %v", tc.kind, err, tc.want)
			}
			var voided *ledger.VoidedError
			if tc.kind == ledger.Debit && (!errors.As(err, &voided) || voided.Reason != "InsufficientFunds" || voided.Detail != "no money") {
				t.Errorf("Post DEBIT error %v does not carry the rejection", err)
			}
		})
	}
	if d := before.Diff(env.Snapshot(t)); d != "" {
		t.Errorf("legs after the void wrote:\n%s", d)
	}
	entries, err := env.Ledger.TransferEntries(ctx, tr.ID, tr.Source, tr.Destination)
	if err != nil || len(entries) != 0 {
		t.Errorf("TransferEntries = %v, %v; want none", entries, err)
	}
	got, err := env.Ledger.RecentEntries(ctx, tr.Source, 10)
	if err != nil || len(got) != 0 {
		t.Errorf("RecentEntries = %v, %v; want none", got, err)
	}
}

// A credit or refund never takes a balance past what the ledger reads back.
func TestPostBalanceLimit(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 1000)
	env.OpenAccount(t, dst, "USD", math.MaxInt64-300)
	ok := env.NewTransfer(t, src, dst, 300, "USD")
	env.Post(t, ok, ledger.Debit)
	env.Post(t, ok, ledger.Credit)
	over := env.NewTransfer(t, src, dst, 1, "USD")
	env.Post(t, over, ledger.Debit)
	if _, err := env.Ledger.Post(ctx, over.Leg(ledger.Credit)); !errors.Is(err, ledger.ErrBalanceLimit) {
		t.Fatalf("credit past MaxInt64 = %v, want ErrBalanceLimit", err)
	}
	if got := env.Balance(t, dst); got != math.MaxInt64 {
		t.Errorf("destination holds %d, want %d", got, int64(math.MaxInt64))
	}
}
