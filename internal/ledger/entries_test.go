package ledger_test

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

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

// heldTransaction is a DynamoDB client whose first TransactWriteItems
// waits, once it is ready to be sent, until the test lets it go: a leg
// whose commit is slow.
type heldTransaction struct {
	*dynamodb.Client
	sending, release chan struct{}
	once             sync.Once
}

func (h *heldTransaction) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	h.once.Do(func() {
		close(h.sending)
		<-h.release
	})
	return h.Client.TransactWriteItems(ctx, in, optFns...)
}

// A leg whose transaction commits late is listed above every entry a
// client had already read: a client that follows an account from the head
// (newest first, until the first entry it has seen) never skips it.
func TestEntryCommittedLateIsNotSkipped(t *testing.T) {
	env := ledgertest.New(t)
	ctx := context.Background()
	src := ledgertest.ID("src")
	env.OpenAccount(t, src, "USD", 1000)
	transfer := func() ledgertest.Transfer {
		dst := ledgertest.ID("dst")
		env.OpenAccount(t, dst, "USD", 0)
		return env.NewTransfer(t, src, dst, 1, "USD")
	}
	env.Post(t, transfer(), ledger.Debit)

	held := &heldTransaction{Client: env.Client, sending: make(chan struct{}), release: make(chan struct{})}
	slow, err := ledger.New(held, ledger.Config{LedgerTable: env.LedgerTable, IdempotencyTable: env.IdempotencyTable})
	if err != nil {
		t.Fatal(err)
	}
	late := transfer()
	done := make(chan error, 1)
	go func() {
		_, err := slow.Post(ctx, late.Leg(ledger.Debit))
		done <- err
	}()
	<-held.sending
	env.Post(t, transfer(), ledger.Debit)
	env.Post(t, transfer(), ledger.Debit)

	seen := map[string]bool{}
	head, _, err := env.Ledger.EntriesPage(ctx, src, ledger.MaxRecentEntries, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range head {
		seen[e.TransferID] = true
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatalf("the late debit: %v", err)
	}

	// Follow from the head, a page of one at a time, to the first entry
	// already seen.
	var (
		fresh []string
		after *ledger.EntryPosition
	)
	for {
		page, next, err := env.Ledger.EntriesPage(ctx, src, 1, after)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 || seen[page[0].TransferID] {
			break
		}
		fresh = append(fresh, page[0].TransferID)
		if next == nil {
			break
		}
		after = next
	}
	if len(fresh) != 1 || fresh[0] != late.ID {
		t.Fatalf("entries above those already read: %v, want the late debit %s", fresh, late.ID)
	}
}
