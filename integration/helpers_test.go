//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/reservation"
)

// Settling: how long a transfer may take, and how often it is polled.
const (
	settleTimeout  = 20 * time.Second
	settleInterval = 25 * time.Millisecond
)

// maxVisibleEntries is how many entries GET /accounts/{id} shows. A case
// keeps each account below it, so that the entries shown are all of them.
const maxVisibleEntries = 20

var seq atomic.Int64

// uniqueID is an id unique to this run: prefix, run id, sequence. Every
// id but a key's may name a ledger account, opened or not (a debit of an
// unknown account leaves a void marker under its id), so it is noted for
// the clean-up at the end of the run.
func uniqueID(prefix string) string {
	id := fmt.Sprintf("it-%s-%s-%d", prefix, runID, seq.Add(1))
	if prefix != keyPrefix {
		runWrites.noteAccount(id)
	}
	return id
}

// keyPrefix starts the Idempotency-Keys of newKey.
const keyPrefix = "key"

// newKey is a fresh Idempotency-Key.
func newKey() string { return uniqueID(keyPrefix) + "-" + randomHex(4) }

// book is the set of accounts one case opened, with their opening
// balances. Opening it registers the conservation check that runs when the
// case ends.
type book struct {
	opening map[string]openedAccount
}

type openedAccount struct {
	currency string
	balance  int64
	// owner may read (and debit) the account.
	owner *caller
}

// newBook returns an empty book whose accounts are checked for
// conservation when t ends.
func newBook(t *testing.T) *book {
	t.Helper()
	b := &book{opening: map[string]openedAccount{}}
	t.Cleanup(func() { b.checkConservation(t) })
	return b
}

// open opens a new account of the first caller and returns its id.
func (b *book) open(t testing.TB, label, currency string, balance int64) string {
	t.Helper()
	return b.openFor(t, tg.first, label, currency, balance)
}

// openFor opens a new account of c (its owner is c's scope) and returns
// its id.
func (b *book) openFor(t testing.TB, c *caller, label, currency string, balance int64) string {
	t.Helper()
	id := uniqueID(label)
	created, err := tg.ledger.OpenAccount(context.Background(), id, c.scope, currency, balance)
	if err != nil {
		t.Fatalf("open account %s: %v", id, err)
	}
	if !created {
		t.Fatalf("open account %s: it already exists", id)
	}
	b.opening[id] = openedAccount{currency: currency, balance: balance, owner: c}
	return id
}

// balances reads every account of the book through the API, each as its
// owner.
func (b *book) balances(t testing.TB) map[string]accountView {
	t.Helper()
	out := make(map[string]accountView, len(b.opening))
	for _, id := range slices.Sorted(maps.Keys(b.opening)) {
		out[id] = getAccount(t, b.opening[id].owner, id)
	}
	return out
}

// checkConservation checks, through GET /accounts/{id}, that per currency
// the balances of the book's accounts add up to their opening balances,
// and that each balance is its opening balance plus its entries.
func (b *book) checkConservation(t *testing.T) {
	t.Helper()
	if len(b.opening) == 0 {
		return
	}
	note := ""
	if t.Failed() {
		note = " (the case failed earlier; a transfer may still be in flight)"
	}
	opening, total := map[string]int64{}, map[string]int64{}
	for id, acct := range b.balances(t) {
		open := b.opening[id]
		opening[open.currency] += open.balance
		total[acct.Currency] += acct.Balance
		if acct.Currency != open.currency {
			t.Errorf("conservation%s: account %s is in %s, opened in %s", note, id, acct.Currency, open.currency)
		}
		if len(acct.Entries) >= maxVisibleEntries {
			t.Errorf("conservation%s: account %s shows %d entries, it may have more: the case must post fewer", note, id, len(acct.Entries))
		}
		sum := open.balance
		seen := map[string]bool{}
		for _, e := range acct.Entries {
			sum += e.Amount
			leg := e.TransferID + "/" + e.Leg
			if seen[leg] {
				t.Errorf("conservation%s: account %s shows entry %s twice", note, id, leg)
			}
			seen[leg] = true
		}
		if acct.Balance != sum {
			t.Errorf("conservation%s: account %s balance %d, but opening %d plus its entries is %d: %+v",
				note, id, acct.Balance, open.balance, sum, acct.Entries)
		}
	}
	for cur, want := range opening {
		if total[cur] != want {
			t.Errorf("conservation%s: %s balances add up to %d, opened with %d", note, cur, total[cur], want)
		}
	}
}

// getAccount reads GET /accounts/{id} and fails unless it is 200.
func getAccount(t testing.TB, c *caller, id string) accountView {
	t.Helper()
	r := c.get(t, "/accounts/"+id)
	if r.status != http.StatusOK {
		t.Fatalf("%s: want 200", r)
	}
	expectMediaType(t, r, "application/json")
	var a accountView
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("%s: decode account: %v", r, err)
	}
	if a.AccountID != id {
		t.Fatalf("%s: accountId %q, want %q", r, a.AccountID, id)
	}
	return a
}

// getTransfer reads GET /transfers/{id} as c and fails unless it is 200.
func getTransfer(t testing.TB, c *caller, id string) transferView {
	t.Helper()
	v := expectTransfer(t, c.get(t, "/transfers/"+id), http.StatusOK)
	if v.TransferID != id {
		t.Fatalf("GET /transfers/%s returned transfer %s", id, v.TransferID)
	}
	return v
}

// awaitSettled polls GET /transfers/{id} until the transfer is COMPLETED
// or FAILED, and fails the test if it is not within settleTimeout.
func awaitSettled(t testing.TB, c *caller, id string) transferView {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		v := getTransfer(t, c, id)
		switch v.Status {
		case statusCompleted, statusFailed:
			return v
		case statusPending:
		default:
			t.Fatalf("transfer %s: unknown status %q", id, v.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("transfer %s still %s after %v: %+v", id, v.Status, settleTimeout, v)
		}
		time.Sleep(settleInterval)
	}
}

// legs returns the entries of transfer id on an account, by leg.
func legs(a accountView, transferID string) map[string][]entryView {
	out := map[string][]entryView{}
	for _, e := range a.Entries {
		if e.TransferID == transferID {
			out[e.Leg] = append(out[e.Leg], e)
		}
	}
	return out
}

// leg is an expected ledger entry: its leg and signed amount.
type leg struct {
	kind   string
	amount int64
}

// expectLegs checks that the account shows exactly the given entries for
// the transfer, each once.
func expectLegs(t testing.TB, a accountView, transferID string, want ...leg) {
	t.Helper()
	got := legs(a, transferID)
	n := 0
	for _, es := range got {
		n += len(es)
	}
	if n != len(want) {
		t.Errorf("account %s: transfer %s has %d entries %v, want %v", a.AccountID, transferID, n, got, want)
		return
	}
	for _, w := range want {
		es := got[w.kind]
		if len(es) != 1 {
			t.Errorf("account %s: transfer %s has %d %s entries, want 1: %v", a.AccountID, transferID, len(es), w.kind, got)
			continue
		}
		if es[0].Amount != w.amount {
			t.Errorf("account %s: %s of transfer %s is %d, want %d", a.AccountID, w.kind, transferID, es[0].Amount, w.amount)
		}
	}
}

// expectUnchanged checks that no account of the book moved since before.
func expectUnchanged(t testing.TB, b *book, before map[string]accountView) {
	t.Helper()
	for id, now := range b.balances(t) {
		was := before[id]
		if now.Balance != was.Balance || len(now.Entries) != len(was.Entries) {
			t.Errorf("account %s moved: balance %d -> %d, entries %d -> %d",
				id, was.Balance, now.Balance, len(was.Entries), len(now.Entries))
		}
	}
}

// expectNoRecord checks that the API stored nothing for c's key.
func expectNoRecord(t testing.TB, c *caller, key string) {
	t.Helper()
	rec, err := tg.records.Get(context.Background(), c.scope, key)
	switch {
	case errors.Is(err, idempotency.ErrNotFound):
	case err != nil:
		t.Fatalf("read the record of key %q: %v", key, err)
	default:
		t.Errorf("key %q of %s has a record (status %s, transfer %s); want none", key, c.name, rec.Status, rec.ResourceID)
	}
}

// record reads the idempotency record of c's key.
func record(t testing.TB, c *caller, key string) reservation.Record {
	t.Helper()
	rec, err := tg.records.Get(context.Background(), c.scope, key)
	if err != nil {
		t.Fatalf("read the record of key %q of %s: %v", key, c.name, err)
	}
	return rec
}

// expectExecutions checks that the executions started for c's key are
// exactly the named ones. Without a known state machine (a deployed stack
// without STATE_MACHINE_ARN) it logs that the check is skipped.
func expectExecutions(t testing.TB, c *caller, key string, names ...string) {
	t.Helper()
	if tg.executions == nil {
		t.Logf("executions of key %q not counted: set %s to count them", key, envStateMachineArn)
		return
	}
	got, err := tg.executions.forRecord(context.Background(), idempotency.RecordKey(c.scope, key))
	if err != nil {
		t.Fatalf("list executions: %v", err)
	}
	if !slices.Equal(got, names) {
		t.Errorf("key %q of %s started executions %q, want %q", key, c.name, got, names)
	}
}

// executionIndex finds the executions of an idempotency record: those whose
// input names its recordKey.
type executionIndex struct {
	client  *sfn.Client
	machine string
	// since: executions started before are not listed.
	since time.Time

	mu sync.Mutex
	// recordKeys caches each execution's recordKey (inputs never change).
	recordKeys map[string]string
}

// forRecord returns the names of the executions whose input carries
// recordKey, sorted.
func (x *executionIndex) forRecord(ctx context.Context, recordKey string) ([]string, error) {
	var names []string
	pages := sfn.NewListExecutionsPaginator(x.client, &sfn.ListExecutionsInput{
		StateMachineArn: aws.String(x.machine),
		MaxResults:      1000,
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Executions {
			if !x.since.IsZero() && e.StartDate != nil && e.StartDate.Before(x.since) {
				// Listed newest first: the rest is older.
				return sorted(names), nil
			}
			rk, err := x.recordKey(ctx, aws.ToString(e.ExecutionArn))
			if err != nil {
				return nil, err
			}
			if rk == recordKey {
				names = append(names, aws.ToString(e.Name))
			}
		}
	}
	return sorted(names), nil
}

func (x *executionIndex) recordKey(ctx context.Context, arn string) (string, error) {
	x.mu.Lock()
	rk, ok := x.recordKeys[arn]
	x.mu.Unlock()
	if ok {
		return rk, nil
	}
	out, err := x.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		return "", err
	}
	var in struct {
		RecordKey string `json:"recordKey"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(out.Input)), &in); err != nil {
		return "", fmt.Errorf("execution %s: input: %w", arn, err)
	}
	x.mu.Lock()
	if x.recordKeys == nil {
		x.recordKeys = map[string]string{}
	}
	x.recordKeys[arn] = in.RecordKey
	x.mu.Unlock()
	return in.RecordKey, nil
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// describe is a short form of a reply list for failure messages: the
// first few replies.
func describe(rs []reply) string {
	const shown = 5
	var b strings.Builder
	for i, r := range rs[:min(len(rs), shown)] {
		fmt.Fprintf(&b, "\n  %d: %s", i, r)
	}
	if len(rs) > shown {
		fmt.Fprintf(&b, "\n  ... and %d more", len(rs)-shown)
	}
	return b.String()
}
