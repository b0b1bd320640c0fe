package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
	"github.com/exactlyonce/transfers/internal/reservation"
)

// TestConservation drives many transfers at once through random
// interleavings of their legs: duplicated and concurrent attempts, credit
// racing refund, the reaper fencing a transfer and refunding it, stale
// retries, transfers left after the debit, business failures. Whatever
// happens, the total of all balances is conserved, every balance is its
// opening balance plus its entries, and each transfer's entries are a
// debit alone, a debit and a credit, a debit and a refund, or nothing.
func TestConservation(t *testing.T) {
	seeds := []uint64{1, 2, 3, uint64(time.Now().UnixNano())}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runConservation(t, seed)
		})
	}
}

// observed collects the outcomes one transfer's driver saw.
type observed struct {
	mu      sync.Mutex
	entries map[ledger.Kind]ledger.Entry
}

func (o *observed) add(t *testing.T, e ledger.Entry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.entries[e.Kind]; ok && !sameEntry(prev, e) {
		t.Errorf("%s of %s reported as %+v and as %+v", e.Kind, e.TransferID, prev, e)
	}
	o.entries[e.Kind] = e
}

func runConservation(t *testing.T, seed uint64) {
	env := ledgertest.New(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()

	var accounts []account
	for range 5 {
		accounts = append(accounts, account{ledgertest.ID("usd"), "USD", rng.Int64N(1000)})
	}
	accounts = append(accounts, account{ledgertest.ID("eur"), "EUR", 500}, account{ledgertest.ID("closed"), "USD", 500})
	var total int64
	for _, a := range accounts {
		env.OpenAccount(t, a.id, a.currency, a.opening)
		total += a.opening
	}
	closeAccount(t, env, accounts[len(accounts)-1].id)
	ids := []string{ledgertest.ID("ghost")}
	for _, a := range accounts {
		ids = append(ids, a.id)
	}

	const transfers = 16
	trs := make([]ledgertest.Transfer, transfers)
	obs := make([]*observed, transfers)
	var wg sync.WaitGroup
	for i := range transfers {
		src := ids[rng.IntN(len(ids))]
		dst := ids[rng.IntN(len(ids))]
		for dst == src {
			dst = ids[rng.IntN(len(ids))]
		}
		currency := "USD"
		if rng.IntN(10) == 0 {
			currency = "EUR"
		}
		trs[i] = env.NewTransfer(t, src, dst, 1+rng.Int64N(600), currency)
		obs[i] = &observed{entries: map[ledger.Kind]ledger.Entry{}}
		script := rand.New(rand.NewPCG(rng.Uint64(), uint64(i)))
		wg.Go(func() { drive(ctx, t, env, trs[i], script, obs[i]) })
	}
	wg.Wait()

	// Money in flight: debited, neither credited nor refunded.
	var inFlight int64
	for _, tr := range trs {
		entries, err := env.Ledger.TransferEntries(ctx, tr.ID, tr.Source, tr.Destination)
		if err != nil {
			t.Fatalf("TransferEntries(%s): %v", tr.ID, err)
		}
		if d, ok := entries[ledger.Debit]; ok && len(entries) == 1 {
			inFlight -= d.Amount
		}
	}
	if sum := balanceTotal(t, env, accounts); sum+inFlight != total {
		t.Errorf("balances total %d with %d in flight, want %d", sum, inFlight, total)
	}
	// Settle the stuck transfers as the reaper does: fence, then refund a
	// debit that has no credit.
	for i, tr := range trs {
		entries, err := env.Ledger.TransferEntries(ctx, tr.ID, tr.Source, tr.Destination)
		if err != nil {
			t.Fatalf("TransferEntries(%s): %v", tr.ID, err)
		}
		if _, ok := entries[ledger.Debit]; !ok || len(entries) != 1 {
			continue
		}
		env.SetRecord(t, tr.RecordKey, reservation.StatusReconciling, tr.ID)
		obs[i].add(t, env.Post(t, tr, ledger.Refund))
	}

	var sum int64
	for _, a := range accounts {
		got := env.Account(t, a.id)
		sum += got.Balance
		entries, err := env.Ledger.RecentEntries(ctx, a.id, ledger.MaxRecentEntries)
		if err != nil {
			t.Fatalf("RecentEntries(%s): %v", a.id, err)
		}
		want := a.opening
		for _, e := range entries {
			want += e.Amount
		}
		if got.Balance != want || got.Version != int64(len(entries)) || got.Balance < 0 {
			t.Errorf("account %s: balance %d version %d; opening %d plus %d entries make %d",
				a.id, got.Balance, got.Version, a.opening, len(entries), want)
		}
	}
	if sum != total {
		t.Errorf("balances total %d after settling, want %d", sum, total)
	}

	for i, tr := range trs {
		entries, err := env.Ledger.TransferEntries(ctx, tr.ID, tr.Source, tr.Destination)
		if err != nil {
			t.Fatalf("TransferEntries(%s): %v", tr.ID, err)
		}
		_, debit := entries[ledger.Debit]
		_, credit := entries[ledger.Credit]
		_, refund := entries[ledger.Refund]
		if (credit || refund) && !debit || credit && refund {
			t.Errorf("transfer %s has entries %v", tr.ID, entries)
		}
		want := map[ledger.Kind]int64{ledger.Debit: -tr.Amount, ledger.Credit: tr.Amount, ledger.Refund: tr.Amount}
		for k, e := range entries {
			if e.Amount != want[k] || e.Currency != tr.Currency {
				t.Errorf("transfer %s: %s entry %+v, want %d %s", tr.ID, k, e, want[k], tr.Currency)
			}
			if o, ok := obs[i].entries[k]; !ok || !sameEntry(o, e) {
				t.Errorf("transfer %s: stored %s %+v, its legs reported %+v", tr.ID, k, e, o)
			}
		}
		for k, o := range obs[i].entries {
			if _, ok := entries[k]; !ok {
				t.Errorf("transfer %s: %s reported as %+v is not stored", tr.ID, k, o)
			}
		}
	}
}

type account struct {
	id, currency string
	opening      int64
}

func balanceTotal(t *testing.T, env *ledgertest.Env, accounts []account) int64 {
	t.Helper()
	var sum int64
	for _, a := range accounts {
		sum += env.Balance(t, a.id)
	}
	return sum
}

// drive runs one transfer through a random script. It reports unexpected
// outcomes with t.Errorf and never stops the test from its goroutine.
func drive(ctx context.Context, t *testing.T, env *ledgertest.Env, tr ledgertest.Transfer, r *rand.Rand, o *observed) {
	// burst posts a leg from n concurrent attempts and reports whether it
	// committed; every error must satisfy allowed.
	burst := func(k ledger.Kind, n int, allowed func(error) bool) bool {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
			ok bool
		)
		for range n {
			wg.Go(func() {
				e, err := settle(ctx, env.Ledger, tr.Leg(k))
				if err != nil {
					if !allowed(err) {
						t.Errorf("%s of %s: unexpected %v", k, tr.ID, err)
					}
					return
				}
				o.add(t, e)
				mu.Lock()
				ok = true
				mu.Unlock()
			})
		}
		wg.Wait()
		return ok
	}
	is := func(targets ...error) func(error) bool {
		return func(err error) bool {
			for _, target := range targets {
				if errors.Is(err, target) {
					return true
				}
			}
			return false
		}
	}
	none := is()

	if !burst(ledger.Debit, 1+r.IntN(3), ledger.IsBusiness) {
		if r.IntN(2) == 0 {
			burst(ledger.Credit, 1, is(ledger.ErrDebitMissing))
		}
		return
	}
	switch r.IntN(4) {
	case 0: // the workflow: credit, or refund when the credit fails
		if !burst(ledger.Credit, 1+r.IntN(3), ledger.IsBusiness) {
			burst(ledger.Refund, 1+r.IntN(2), none)
		}
	case 1: // the reaper fences the transfer, then refunds; a late credit is fenced
		if err := env.PutRecord(ctx, tr.RecordKey, reservation.StatusReconciling, tr.ID); err != nil {
			t.Errorf("fence %s: %v", tr.ID, err)
			return
		}
		var wg sync.WaitGroup
		wg.Go(func() { burst(ledger.Credit, 1, is(ledger.ErrFenced)) })
		wg.Go(func() { burst(ledger.Refund, 1+r.IntN(2), none) })
		wg.Wait()
	case 2: // credit races refund: exactly one wins
		var wg sync.WaitGroup
		nc, nr := 1+r.IntN(3), 1+r.IntN(3)
		wg.Go(func() {
			burst(ledger.Credit, nc, func(err error) bool { return ledger.IsBusiness(err) || errors.Is(err, ledger.ErrAlreadyRefunded) })
		})
		wg.Go(func() { burst(ledger.Refund, nr, is(ledger.ErrAlreadyCredited)) })
		wg.Wait()
	case 3: // the transfer stops after its debit
	}
	if r.IntN(2) == 0 {
		// A stale retry of the debit reports the stored entry.
		burst(ledger.Debit, 1, none)
	}
}
