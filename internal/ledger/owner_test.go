package ledger_test

import (
	"context"
	"errors"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
)

const mallory = "iam:arn:aws:iam::123456789012:user/mallory"

// A leg invoked with a valid transfer id but another payload than the
// transfer's (its record's) commits nothing: the fence compares accounts,
// amount and currency.
func TestPostPayloadFenced(t *testing.T) {
	env := ledgertest.New(t)
	edits := []struct {
		name string
		edit func(t *testing.T, tr ledgertest.Transfer) ledgertest.Transfer
	}{
		{"larger amount", func(_ *testing.T, tr ledgertest.Transfer) ledgertest.Transfer { tr.Amount++; return tr }},
		{"smaller amount", func(_ *testing.T, tr ledgertest.Transfer) ledgertest.Transfer { tr.Amount--; return tr }},
		{"another currency", func(t *testing.T, tr ledgertest.Transfer) ledgertest.Transfer {
			tr.Currency = "EUR"
			return tr
		}},
		{"another destination", func(t *testing.T, tr ledgertest.Transfer) ledgertest.Transfer {
			tr.Destination = ledgertest.ID("thief")
			env.OpenAccount(t, tr.Destination, "USD", 0)
			return tr
		}},
		{"another source", func(t *testing.T, tr ledgertest.Transfer) ledgertest.Transfer {
			tr.Source = ledgertest.ID("victim")
			env.OpenAccount(t, tr.Source, "USD", 100000)
			return tr
		}},
	}
	for _, kind := range ledger.Kinds {
		for _, e := range edits {
			t.Run(string(kind)+"/"+e.name, func(t *testing.T) {
				tr := transferFixture(t, env)
				if kind != ledger.Debit {
					env.Post(t, tr, ledger.Debit)
				}
				forged := e.edit(t, tr)
				before := env.Snapshot(t)
				got, err := env.Ledger.Post(context.Background(), forged.Leg(kind))
				if !errors.Is(err, ledger.ErrFenced) {
					t.Fatalf("Post = %+v, %v; want ErrFenced", got, err)
				}
				if kind == ledger.Debit {
					if _, err := env.Ledger.Void(context.Background(), forged.Leg(kind), "InsufficientFunds", "x"); !errors.Is(err, ledger.ErrFenced) {
						t.Fatalf("Void = %v; want ErrFenced", err)
					}
				}
				if d := before.Diff(env.Snapshot(t)); d != "" {
					t.Errorf("a leg with another payload wrote:\n%s", d)
				}
				// The transfer's own leg still goes through.
				env.Post(t, tr, kind)
			})
		}
	}
}

// A debit that carries an owner commits only on an account of that owner,
// under a transfer of that owner.
func TestDebitOwner(t *testing.T) {
	env := ledgertest.New(t)
	cases := []struct {
		name string
		// setup opens the source (and the destination) and returns the
		// transfer, whose record's scope is ledgertest.Owner.
		setup func(t *testing.T) ledgertest.Transfer
		owner string
		want  error
	}{
		{name: "the owner's account", owner: ledgertest.Owner, setup: func(t *testing.T) ledgertest.Transfer {
			return transferFixture(t, env)
		}},
		{name: "no owner on the leg: not checked", owner: "", setup: func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccountOf(t, src, mallory, "USD", 1000)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}},
		{name: "another caller's account", owner: ledgertest.Owner, want: ledger.ErrForbidden, setup: func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccountOf(t, src, mallory, "USD", 1000)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}},
		{name: "another caller's account without the funds", owner: ledgertest.Owner, want: ledger.ErrForbidden, setup: func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccountOf(t, src, mallory, "GBP", 1)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}},
		{name: "an account that does not exist", owner: ledgertest.Owner, want: ledger.ErrForbidden, setup: func(t *testing.T) ledgertest.Transfer {
			dst := ledgertest.ID("dst")
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, ledgertest.ID("ghost"), dst, 300, "USD")
		}},
		{name: "the leg's owner is not the transfer's caller", owner: mallory, want: ledger.ErrFenced, setup: func(t *testing.T) ledgertest.Transfer {
			src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
			env.OpenAccountOf(t, src, mallory, "USD", 1000)
			env.OpenAccount(t, dst, "USD", 0)
			return env.NewTransfer(t, src, dst, 300, "USD")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.setup(t)
			leg := tr.Leg(ledger.Debit)
			leg.Owner = tc.owner
			before := env.Snapshot(t)
			got, err := env.Ledger.Post(context.Background(), leg)
			if tc.want == nil {
				if err != nil || got.Amount != -tr.Amount {
					t.Fatalf("Post = %+v, %v; want the debit", got, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Post = %+v, %v; want %v", got, err, tc.want)
			}
			if errors.Is(tc.want, ledger.ErrForbidden) && !ledger.IsBusiness(err) {
				t.Errorf("ErrForbidden is %v, want a business rejection", ledger.ClassOf(err))
			}
			if d := before.Diff(env.Snapshot(t)); d != "" {
				t.Errorf("a refused debit wrote:\n%s", d)
			}
			if !errors.Is(tc.want, ledger.ErrForbidden) {
				return
			}
			// The rejection is made final like any other.
			res, err := env.Ledger.Void(context.Background(), leg, "Forbidden", "no")
			if err != nil || res.Committed != nil || res.Reason != "Forbidden" {
				t.Fatalf("Void = %+v, %v; want the rejection stored", res, err)
			}
			if _, err := env.Ledger.Post(context.Background(), tr.Leg(ledger.Debit)); !errors.Is(err, ledger.ErrVoided) {
				t.Fatalf("a debit after the void = %v, want ErrVoided", err)
			}
		})
	}
}

func TestOwnerOnlyOnDebit(t *testing.T) {
	env := ledgertest.New(t)
	tr := transferFixture(t, env)
	for _, kind := range []ledger.Kind{ledger.Credit, ledger.Refund} {
		t.Run(string(kind), func(t *testing.T) {
			leg := tr.Leg(kind)
			leg.Owner = ledgertest.Owner
			var iv *ledger.InvalidInputError
			if _, err := env.Ledger.Post(context.Background(), leg); !errors.As(err, &iv) || iv.Field != "Owner" {
				t.Fatalf("Post = %v, want an invalid Owner", err)
			}
		})
	}
}

// A credit that carries the transfer's caller (Leg.Caller) and is refused
// on an account that is not the caller's fails with one error,
// ErrDestinationUnavailable, whatever the rule was; on the caller's own
// account the rule's own error stands. Nothing is written either way.
func TestCreditCaller(t *testing.T) {
	env := ledgertest.New(t)
	const limit = int64(^uint64(0) >> 1)
	cases := []struct {
		name string
		// open opens the destination as owner's (or not at all).
		open func(t *testing.T, id, owner string)
		// rule is the refusal the owner reads.
		rule error
	}{
		{"unknown", func(*testing.T, string, string) {}, ledger.ErrAccountNotFound},
		{"closed", func(t *testing.T, id, owner string) {
			env.OpenAccountOf(t, id, owner, "USD", 0)
			if err := env.Ledger.CloseAccount(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}, ledger.ErrAccountClosed},
		{"another currency", func(t *testing.T, id, owner string) { env.OpenAccountOf(t, id, owner, "EUR", 0) }, ledger.ErrCurrencyMismatch},
		{"balance at its limit", func(t *testing.T, id, owner string) { env.OpenAccountOf(t, id, owner, "USD", limit) }, ledger.ErrBalanceLimit},
	}
	for _, tc := range cases {
		for _, owner := range []string{ledgertest.Owner, mallory} {
			name := tc.name + "/caller's own"
			want := tc.rule
			if owner == mallory {
				name, want = tc.name+"/another caller's", ledger.ErrDestinationUnavailable
			}
			t.Run(name, func(t *testing.T) {
				src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
				env.OpenAccount(t, src, "USD", 1000)
				if tc.name == "unknown" && owner == ledgertest.Owner {
					// No account is the caller's: it does not exist.
					want = ledger.ErrDestinationUnavailable
				}
				tc.open(t, dst, owner)
				tr := env.NewTransfer(t, src, dst, 300, "USD")
				env.Post(t, tr, ledger.Debit)
				leg := tr.Leg(ledger.Credit)
				leg.Caller = ledgertest.Owner
				before := env.Snapshot(t)
				_, err := env.Ledger.Post(context.Background(), leg)
				if !errors.Is(err, want) || !ledger.IsBusiness(err) {
					t.Fatalf("Post = %v, want the business error %v", err, want)
				}
				if want == ledger.ErrDestinationUnavailable && errors.Is(err, tc.rule) {
					t.Errorf("Post = %v: it still matches %v", err, tc.rule)
				}
				if d := before.Diff(env.Snapshot(t)); d != "" {
					t.Errorf("a refused credit wrote:\n%s", d)
				}
				// Without a caller, the rule's own error.
				if _, err := env.Ledger.Post(context.Background(), tr.Leg(ledger.Credit)); !errors.Is(err, tc.rule) {
					t.Errorf("Post without a caller = %v, want %v", err, tc.rule)
				}
			})
		}
	}
	t.Run("caller is not the transfer's", func(t *testing.T) {
		src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
		env.OpenAccount(t, src, "USD", 1000)
		env.OpenAccountOf(t, dst, mallory, "USD", 0)
		tr := env.NewTransfer(t, src, dst, 300, "USD")
		env.Post(t, tr, ledger.Debit)
		leg := tr.Leg(ledger.Credit)
		leg.Caller = mallory
		if _, err := env.Ledger.Post(context.Background(), leg); !errors.Is(err, ledger.ErrFenced) {
			t.Fatalf("Post = %v, want ErrFenced", err)
		}
	})
	t.Run("only on a credit", func(t *testing.T) {
		tr := transferFixture(t, env)
		for _, kind := range []ledger.Kind{ledger.Debit, ledger.Refund} {
			leg := tr.Leg(kind)
			leg.Caller = ledgertest.Owner
			var iv *ledger.InvalidInputError
			if _, err := env.Ledger.Post(context.Background(), leg); !errors.As(err, &iv) || iv.Field != "Caller" {
				t.Errorf("%s: Post = %v, want an invalid Caller", kind, err)
			}
		}
	})
}
