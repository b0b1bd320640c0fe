package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
)

func TestOpenAccount(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	id := ledgertest.ID("acct")
	before := time.Now().Add(-time.Second)
	created, err := env.Ledger.OpenAccount(ctx, id, "iam:alice", "EUR", 250)
	if err != nil || !created {
		t.Fatalf("OpenAccount = %v, %v; want true, nil", created, err)
	}
	want := env.Account(t, id)
	if want.ID != id || want.Owner != "iam:alice" || want.Currency != "EUR" || want.Balance != 250 || want.Status != ledger.AccountOpen || want.Version != 0 {
		t.Errorf("Account = %+v", want)
	}
	if want.CreatedAt.Before(before) || want.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt = %v, want about now", want.CreatedAt)
	}

	t.Run("existing account is left untouched", func(t *testing.T) {
		created, err := env.Ledger.OpenAccount(ctx, id, "iam:mallory", "USD", 999)
		if err != nil || created {
			t.Fatalf("OpenAccount again = %v, %v; want false, nil", created, err)
		}
		if got := env.Account(t, id); got != want {
			t.Errorf("Account = %+v, want %+v", got, want)
		}
	})

	invalid := []struct {
		name, id, owner, currency string
		balance                   int64
		field                     string
	}{
		{"empty id", "", "iam:alice", "USD", 0, "AccountID"},
		{"no owner", ledgertest.ID("acct"), "", "USD", 0, "Owner"},
		{"owner with a control character", ledgertest.ID("acct"), "iam:\x00", "USD", 0, "Owner"},
		{"bad currency", ledgertest.ID("acct"), "iam:alice", "us", 0, "Currency"},
		{"negative balance", ledgertest.ID("acct"), "iam:alice", "USD", -1, "OpeningBalance"},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			created, err := env.Ledger.OpenAccount(ctx, tc.id, tc.owner, tc.currency, tc.balance)
			var iv *ledger.InvalidInputError
			if created || !errors.As(err, &iv) || iv.Field != tc.field {
				t.Fatalf("OpenAccount = %v, %v; want an invalid %s", created, err, tc.field)
			}
			if tc.id != "" {
				if _, err := env.Ledger.Account(ctx, tc.id); !errors.Is(err, ledger.ErrAccountNotFound) {
					t.Errorf("Account after invalid open = %v, want ErrAccountNotFound", err)
				}
			}
		})
	}
}

func TestCloseAccount(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	id := ledgertest.ID("acct")
	env.OpenAccount(t, id, "USD", 10)
	for range 2 {
		if err := env.Ledger.CloseAccount(ctx, id); err != nil {
			t.Fatalf("CloseAccount: %v", err)
		}
		if a := env.Account(t, id); a.Status != ledger.AccountClosed || a.Balance != 10 {
			t.Errorf("Account = %+v, want CLOSED with its balance", a)
		}
	}
	if err := env.Ledger.CloseAccount(ctx, ledgertest.ID("ghost")); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Errorf("CloseAccount(unknown) = %v, want ErrAccountNotFound", err)
	}
	if _, err := env.Ledger.Account(ctx, ledgertest.ID("ghost")); !errors.Is(err, ledger.ErrAccountNotFound) {
		t.Errorf("Account(unknown) = %v, want ErrAccountNotFound", err)
	}
}

func TestRecentEntries(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src := ledgertest.ID("src")
	env.OpenAccount(t, src, "USD", 1000)
	var posted []ledger.Entry
	for i := range 4 {
		dst := ledgertest.ID("dst")
		env.OpenAccount(t, dst, "USD", 0)
		tr := env.NewTransfer(t, src, dst, int64(10+i), "USD")
		posted = append(posted, env.Post(t, tr, ledger.Debit))
		if i == 3 {
			posted = append(posted, env.Post(t, tr, ledger.Refund))
		}
		time.Sleep(2 * time.Millisecond)
	}
	cases := []struct {
		name  string
		limit int
		want  int
	}{
		{"one", 1, 1},
		{"some", 3, 3},
		{"all", ledger.MaxRecentEntries, len(posted)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := env.Ledger.RecentEntries(ctx, src, tc.limit)
			if err != nil {
				t.Fatalf("RecentEntries: %v", err)
			}
			if len(got) != tc.want {
				t.Fatalf("RecentEntries returned %d entries, want %d", len(got), tc.want)
			}
			for i := range got {
				if want := posted[len(posted)-1-i]; !sameEntry(got[i], want) {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], want)
				}
			}
		})
	}
	t.Run("unknown account", func(t *testing.T) {
		got, err := env.Ledger.RecentEntries(ctx, ledgertest.ID("ghost"), 10)
		if err != nil || len(got) != 0 {
			t.Errorf("RecentEntries = %v, %v; want none", got, err)
		}
	})
	for _, limit := range []int{0, -1, ledger.MaxRecentEntries + 1} {
		if _, err := env.Ledger.RecentEntries(ctx, src, limit); !errors.Is(err, ledger.ErrInvalidInput) {
			t.Errorf("RecentEntries(limit %d) = %v, want ErrInvalidInput", limit, err)
		}
	}
}

func TestTransferEntries(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src, dst := ledgertest.ID("src"), ledgertest.ID("dst")
	env.OpenAccount(t, src, "USD", 1000)
	env.OpenAccount(t, dst, "USD", 0)
	cases := []struct {
		name string
		legs []ledger.Kind
	}{
		{"none", nil},
		{"debit", []ledger.Kind{ledger.Debit}},
		{"debit and credit", []ledger.Kind{ledger.Debit, ledger.Credit}},
		{"debit and refund", []ledger.Kind{ledger.Debit, ledger.Refund}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := env.NewTransfer(t, src, dst, 7, "USD")
			want := map[ledger.Kind]ledger.Entry{}
			for _, k := range tc.legs {
				want[k] = env.Post(t, tr, k)
			}
			got, err := env.Ledger.TransferEntries(ctx, tr.ID, src, dst)
			if err != nil {
				t.Fatalf("TransferEntries: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("TransferEntries = %+v, want %+v", got, want)
			}
			for k, w := range want {
				if !sameEntry(got[k], w) {
					t.Errorf("%s = %+v, want %+v", k, got[k], w)
				}
			}
		})
	}
	if _, err := env.Ledger.TransferEntries(ctx, "", src, dst); !errors.Is(err, ledger.ErrInvalidInput) {
		t.Errorf("TransferEntries without transfer id = %v, want ErrInvalidInput", err)
	}
}

func TestClassOf(t *testing.T) {
	cases := []struct {
		err  error
		want ledger.Class
	}{
		{ledger.ErrInsufficientFunds, ledger.ClassBusiness},
		{ledger.ErrAccountNotFound, ledger.ClassBusiness},
		{ledger.ErrCurrencyMismatch, ledger.ClassBusiness},
		{ledger.ErrAccountClosed, ledger.ClassBusiness},
		{ledger.ErrFenced, ledger.ClassTerminal},
		{ledger.ErrDebitMissing, ledger.ClassTerminal},
		{ledger.ErrNothingToRefund, ledger.ClassTerminal},
		{ledger.ErrAlreadyRefunded, ledger.ClassTerminal},
		{ledger.ErrAlreadyCredited, ledger.ClassTerminal},
		{&ledger.InvalidInputError{Field: "Amount", Problem: "x"}, ledger.ClassTerminal},
		{ledger.ErrUnavailable, ledger.ClassTransient},
		{errors.New("something else"), ledger.ClassTransient},
	}
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			wrapped := errors.Join(errors.New("context"), tc.err)
			if got := ledger.ClassOf(wrapped); got != tc.want {
				t.Errorf("ClassOf = %v, want %v", got, tc.want)
			}
			if got := ledger.IsBusiness(wrapped); got != (tc.want == ledger.ClassBusiness) {
				t.Errorf("IsBusiness = %v", got)
			}
		})
	}
	if ledger.IsBusiness(nil) {
		t.Error("IsBusiness(nil) = true")
	}
}
