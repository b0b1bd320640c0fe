package ledger_test

import (
	"context"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/ledger/ledgertest"
)

// Paging an account's entries gives each entry once, newest first, and
// entries posted while the pages are read come before the first page:
// they neither repeat nor push an older entry out of the pages.
func TestEntriesPage(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src := ledgertest.ID("src")
	env.OpenAccount(t, src, "USD", 1000)
	post := func() ledger.Entry {
		dst := ledgertest.ID("dst")
		env.OpenAccount(t, dst, "USD", 0)
		return env.Post(t, env.NewTransfer(t, src, dst, 1, "USD"), ledger.Debit)
	}
	var posted []ledger.Entry
	for range 7 {
		posted = append(posted, post())
	}
	for _, limit := range []int{1, 3, 7, 8} {
		t.Run("", func(t *testing.T) {
			var (
				got   []ledger.Entry
				after *ledger.EntryPosition
				pages int
			)
			for {
				page, next, err := env.Ledger.EntriesPage(ctx, src, limit, after)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit || (next != nil && len(page) != limit) {
					t.Fatalf("page %d: %d entries and next %v, limit %d", pages, len(page), next, limit)
				}
				got = append(got, page...)
				pages++
				if pages == 1 {
					post() // arrives while the pages are read
				}
				if next == nil {
					break
				}
				after = next
			}
			if len(got) != len(posted) {
				t.Fatalf("limit %d: %d entries in %d pages, want the %d posted before", limit, len(got), pages, len(posted))
			}
			for i := range got {
				if want := posted[len(posted)-1-i]; !sameEntry(got[i], want) {
					t.Errorf("limit %d: entry %d = %+v, want %+v", limit, i, got[i], want)
				}
			}
			// The entries posted meanwhile lead the next listing.
			fresh, _, err := env.Ledger.EntriesPage(ctx, src, ledger.MaxRecentEntries, nil)
			if err != nil {
				t.Fatal(err)
			}
			posted = posted[:0]
			for i := len(fresh) - 1; i >= 0; i-- {
				posted = append(posted, fresh[i])
			}
		})
	}
}
