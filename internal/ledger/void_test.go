package ledger_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/reservation"
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
		// wantReplayed: the slot was void before this call.
		wantReplayed bool
		wantErr      error
	}{
		{name: "voids an empty slot", wantReason: "InsufficientFunds"},
		{name: "a committed debit stands", wantCommitted: true,
			prepare: func(t *testing.T, tr ledgertest.Transfer) { env.Post(t, tr, ledger.Debit) }},
		{name: "a second void keeps the first rejection", wantReason: "AccountClosed", wantReplayed: true,
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				if _, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "AccountClosed", "first"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "fenced record", wantErr: ledger.ErrFenced,
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				env.SetRecord(t, tr.RecordKey, reservation.StatusReconciling, tr.ID)
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
			if res.Replayed != tc.wantReplayed {
				t.Errorf("Void replayed = %v, want %v", res.Replayed, tc.wantReplayed)
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

// A refund can never be refused. The source is within one transfer of
// math.MaxInt64 after its debit, and another transfer credits it up to the
// limit before the refund: the debit in flight is held against the limit,
// so that credit is the one refused, and the refund posts.
func TestRefundNeverRefusedByTheBalanceLimit(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src, dst, funder := ledgertest.ID("src"), ledgertest.ID("dst"), ledgertest.ID("funder")
	env.OpenAccount(t, src, "USD", math.MaxInt64-100)
	env.OpenAccount(t, dst, "USD", 0)
	env.OpenAccount(t, funder, "USD", 1000)

	out := env.NewTransfer(t, src, dst, 500, "USD")
	env.Post(t, out, ledger.Debit) // src: MaxInt64-600, 500 in flight

	in := env.NewTransfer(t, funder, src, 600, "USD")
	env.Post(t, in, ledger.Debit)
	_, err := env.Ledger.Post(ctx, in.Leg(ledger.Credit))
	if !errors.Is(err, ledger.ErrBalanceLimit) {
		t.Fatalf("credit that leaves no room for the refund of a debit in flight = %v, want ErrBalanceLimit", err)
	}
	if _, err := env.Ledger.Post(ctx, out.Leg(ledger.Refund)); err != nil {
		t.Fatalf("refund of the debit in flight: %v", err)
	}
	if got, want := env.Balance(t, src), int64(math.MaxInt64-100); got != want {
		t.Errorf("source holds %d after the refund, want %d", got, want)
	}
	if a := env.Account(t, src); a.Held != 0 {
		t.Errorf("source holds %d in flight after the refund, want 0", a.Held)
	}
}

// Held is what an account's debits in flight (neither credited nor
// refunded) amount to: a debit raises it, the credit or the refund of that
// debit lowers it, and a credit to the account is refused if the account
// could not take back every debit in flight.
func TestHeld(t *testing.T) {
	env := ledgertest.New(t)
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "EUR", 1000)
	env.OpenAccount(t, dst, "EUR", 0)
	a, b := env.NewTransfer(t, src, dst, 100, "EUR"), env.NewTransfer(t, src, dst, 30, "EUR")
	steps := []struct {
		name     string
		tr       ledgertest.Transfer
		kind     ledger.Kind
		wantHeld int64
		wantBal  int64
	}{
		{"debit a", a, ledger.Debit, 100, 900},
		{"debit b", b, ledger.Debit, 130, 870},
		{"debit a again (replay)", a, ledger.Debit, 130, 870},
		{"credit a", a, ledger.Credit, 30, 870},
		{"credit a again (replay)", a, ledger.Credit, 30, 870},
		{"refund b", b, ledger.Refund, 0, 900},
	}
	for _, s := range steps {
		env.Post(t, s.tr, s.kind)
		acc := env.Account(t, src)
		if acc.Held != s.wantHeld || acc.Balance != s.wantBal {
			t.Errorf("after %s: source balance %d held %d, want %d held %d", s.name, acc.Balance, acc.Held, s.wantBal, s.wantHeld)
		}
	}
	if d := env.Account(t, dst); d.Held != 0 || d.Balance != 100 {
		t.Errorf("destination balance %d held %d, want 100 held 0", d.Balance, d.Held)
	}
}

// A leg commits only under the record's current attempt: once a transfer
// is resumed under attempt 1, a leg of attempt 0 (its run was given up but
// goes on) is fenced and moves nothing, whatever its kind.
func TestLegFencedToTheCurrentAttempt(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "EUR", 1000)
	env.OpenAccount(t, dst, "EUR", 0)
	tr := env.NewTransfer(t, src, dst, 100, "EUR")
	env.SetAttempt(t, tr.RecordKey, 1)
	before := env.Snapshot(t)
	for _, kind := range []ledger.Kind{ledger.Debit, ledger.Credit, ledger.Refund} {
		t.Run(string(kind)+" of the earlier attempt", func(t *testing.T) {
			if _, err := env.Ledger.Post(ctx, tr.Leg(kind)); !errors.Is(err, ledger.ErrFenced) {
				t.Fatalf("Post %s of attempt 0 under attempt 1 = %v, want ErrFenced", kind, err)
			}
		})
	}
	if _, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "InsufficientFunds", "no money"); !errors.Is(err, ledger.ErrFenced) {
		t.Errorf("Void of attempt 0 under attempt 1 = %v, want ErrFenced", err)
	}
	if d := before.Diff(env.Snapshot(t)); d != "" {
		t.Fatalf("legs of the earlier attempt wrote:\n%s", d)
	}
	for _, kind := range []ledger.Kind{ledger.Debit, ledger.Credit} {
		leg := tr.Leg(kind)
		leg.Attempt = 1
		if _, err := env.Ledger.Post(ctx, leg); err != nil {
			t.Fatalf("Post %s of the current attempt: %v", kind, err)
		}
	}
	if got := env.Balance(t, dst); got != 100 {
		t.Errorf("destination holds %d, want 100", got)
	}
}

// Rejection reads the rejection a void marker holds in the debit's slot,
// and nothing from an empty slot or a committed debit.
func TestRejection(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	cases := []struct {
		name       string
		prepare    func(t *testing.T, tr ledgertest.Transfer)
		wantReason string // "": no rejection
	}{
		{name: "empty slot"},
		{name: "committed debit",
			prepare: func(t *testing.T, tr ledgertest.Transfer) { env.Post(t, tr, ledger.Debit) }},
		{name: "void marker", wantReason: "AccountClosed",
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				if _, err := env.Ledger.Void(ctx, tr.Leg(ledger.Debit), "AccountClosed", "Account closed."); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a refunded debit is no rejection",
			prepare: func(t *testing.T, tr ledgertest.Transfer) {
				env.Post(t, tr, ledger.Debit)
				env.Post(t, tr, ledger.Refund)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := transferFixture(t, env)
			if tc.prepare != nil {
				tc.prepare(t, tr)
			}
			got, err := env.Ledger.Rejection(ctx, tr.ID, tr.Source)
			if err != nil {
				t.Fatalf("Rejection: %v", err)
			}
			switch {
			case tc.wantReason == "" && got != nil:
				t.Errorf("Rejection = %+v, want none", got)
			case tc.wantReason != "" && (got == nil || got.Reason != tc.wantReason || got.Detail != "Account closed."):
				t.Errorf("Rejection = %+v, want %s with its detail", got, tc.wantReason)
			}
		})
	}
	if _, err := env.Ledger.Rejection(ctx, "", "src"); err == nil {
		t.Error("Rejection of an empty transfer id: no error")
	}
}
