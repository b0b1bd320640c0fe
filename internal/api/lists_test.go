package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/reservation"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/cursor"
)

// testCursors signs the cursors of the tests' handlers.
var testCursors = func() *cursor.Sealer {
	s, err := cursor.New([]byte(strings.Repeat("test cursor key ", 4)))
	if err != nil {
		panic(err)
	}
	return s
}()

func list(caller, resource, path string, params map[string]string, query map[string][]string) events.APIGatewayProxyRequest {
	req := get(caller, resource, path, params)
	req.MultiValueQueryStringParameters = query
	return req
}

func transferPage(t *testing.T, resp events.APIGatewayProxyResponse) api.TransferPage {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	var p api.TransferPage
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// GET /transfers pages through the caller's transfers, newest first, each
// once, with transfers made meanwhile coming before the first page; it
// never shows another caller's.
func TestListTransfers(t *testing.T) {
	e := newEnv(t)
	if _, err := e.ledger.OpenAccount(context.Background(), "acct-bob", bobScope, "EUR", 5000); err != nil {
		t.Fatal(err)
	}
	var made []string
	for i := range 7 {
		r := e.do(post(alice, fmt.Sprintf("k%d", i), body))
		made = append(made, transferOf(t, r).TransferID)
	}
	e.do(post(bob, "kb", transferBody("acct-bob")))
	for _, limit := range []int{1, 3, 7, 20} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			seen := map[string]bool{}
			var order []string
			cursor := ""
			for pages := 0; ; pages++ {
				q := map[string][]string{"limit": {fmt.Sprint(limit)}}
				if cursor != "" {
					q["cursor"] = []string{cursor}
				}
				page := transferPage(t, e.do(list(alice, "/transfers", "/transfers", nil, q)))
				if len(page.Transfers) > limit || (page.NextCursor != "" && len(page.Transfers) != limit) {
					t.Fatalf("page %d: %d transfers, next %q", pages, len(page.Transfers), page.NextCursor)
				}
				for i, tr := range page.Transfers {
					if seen[tr.TransferID] {
						t.Fatalf("transfer %s listed twice", tr.TransferID)
					}
					seen[tr.TransferID] = true
					order = append(order, tr.TransferID)
					if i > 0 && tr.CreatedAt > page.Transfers[i-1].CreatedAt {
						t.Errorf("page %d is not newest first: %s after %s", pages, tr.CreatedAt, page.Transfers[i-1].CreatedAt)
					}
				}
				if pages == 0 {
					// A transfer made while the pages are read.
					r := e.do(post(alice, fmt.Sprintf("late-%d", limit), body))
					defer func(id string) { made = append(made, id) }(transferOf(t, r).TransferID)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			if len(order) != len(made) {
				t.Fatalf("listed %v, want the %d transfers %v", order, len(made), made)
			}
			for _, id := range made {
				if !seen[id] {
					t.Errorf("transfer %s was skipped", id)
				}
			}
		})
	}
	bobs := transferPage(t, e.do(list(bob, "/transfers", "/transfers", nil, nil)))
	if len(bobs.Transfers) != 1 || bobs.Transfers[0].SourceAccountID != "acct-bob" {
		t.Errorf("bob's list %+v, want his one transfer", bobs.Transfers)
	}
}

// A bad limit, or a cursor the list did not give the caller, is 400 with
// its own code, for both lists.
func TestListRefusals(t *testing.T) {
	e := newEnv(t)
	for i := range 3 {
		e.do(post(alice, fmt.Sprintf("k%d", i), body))
	}
	first := transferPage(t, e.do(list(alice, "/transfers", "/transfers", nil, map[string][]string{"limit": {"1"}})))
	if first.NextCursor == "" {
		t.Fatal("no cursor after the first of three transfers")
	}
	payload, mac, _ := strings.Cut(first.NextCursor, ".")
	altered := payload[:len(payload)-2] + "AA." + mac
	entries := map[string]string{"accountId": "acct-a"}
	tests := []struct {
		name     string
		caller   string
		resource string
		path     string
		params   map[string]string
		query    map[string][]string
		code     string
	}{
		{"limit 0", alice, "/transfers", "/transfers", nil, map[string][]string{"limit": {"0"}}, api.CodeInvalidLimit},
		{"limit 101", alice, "/transfers", "/transfers", nil, map[string][]string{"limit": {"101"}}, api.CodeInvalidLimit},
		{"limit not a number", alice, "/transfers", "/transfers", nil, map[string][]string{"limit": {"ten"}}, api.CodeInvalidLimit},
		{"limit twice", alice, "/transfers", "/transfers", nil, map[string][]string{"limit": {"1", "1"}}, api.CodeInvalidLimit},
		{"entries limit 0", alice, "/accounts/{accountId}/entries", "/accounts/acct-a/entries", entries, map[string][]string{"limit": {"0"}}, api.CodeInvalidLimit},
		{"made-up cursor", alice, "/transfers", "/transfers", nil, map[string][]string{"cursor": {"eyJjIjoiMjAyNiJ9.AAAA"}}, api.CodeInvalidCursor},
		{"altered cursor", alice, "/transfers", "/transfers", nil, map[string][]string{"cursor": {altered}}, api.CodeInvalidCursor},
		{"another caller's cursor", bob, "/transfers", "/transfers", nil, map[string][]string{"cursor": {first.NextCursor}}, api.CodeInvalidCursor},
		{"another list's cursor", alice, "/accounts/{accountId}/entries", "/accounts/acct-a/entries", entries, map[string][]string{"cursor": {first.NextCursor}}, api.CodeInvalidCursor},
		{"cursor twice", alice, "/transfers", "/transfers", nil, map[string][]string{"cursor": {first.NextCursor, first.NextCursor}}, api.CodeInvalidCursor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(list(tt.caller, tt.resource, tt.path, tt.params, tt.query))
			if p := problemOf(t, resp); resp.StatusCode != http.StatusBadRequest || p.Code != tt.code {
				t.Fatalf("status %d problem %+v, want 400 %s", resp.StatusCode, p, tt.code)
			}
		})
	}
}

// An account's entries are its owner's only: another caller's account is
// 404, as for GET /accounts/{accountId}.
func TestListEntriesOwnerOnly(t *testing.T) {
	e := newEnv(t)
	entries := map[string]string{"accountId": "acct-a"}
	resp := e.do(list(alice, "/accounts/{accountId}/entries", "/accounts/acct-a/entries", entries, nil))
	var page api.EntryPage
	if err := json.Unmarshal([]byte(resp.Body), &page); err != nil || resp.StatusCode != http.StatusOK || page.Entries == nil || page.NextCursor != "" {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	for _, c := range []string{bob} {
		resp := e.do(list(c, "/accounts/{accountId}/entries", "/accounts/acct-a/entries", entries, nil))
		if p := problemOf(t, resp); resp.StatusCode != http.StatusNotFound || p.Code != api.CodeNotFound {
			t.Fatalf("%s: status %d problem %+v", c, resp.StatusCode, p)
		}
	}
}

// A handler configured without a cursor key fails its lists closed, with
// 503, rather than hand out cursors nobody signed.
func TestListsWithoutACursorKey(t *testing.T) {
	e := newEnv(t)
	h := api.New(api.Config{StateMachineArn: e.arn, MaxAmount: 1000000, EnforceOwnership: true}, e.store, e.sfn, e.ledger,
		func() string { return "transfer-x" }, slog.New(slog.DiscardHandler))
	req := list(alice, "/transfers", "/transfers", nil, nil)
	resp, err := h.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	conforms(t, req, resp)
	if p := problemOf(t, resp); resp.StatusCode != http.StatusServiceUnavailable || p.Code != api.CodeUnavailable {
		t.Fatalf("status %d problem %+v", resp.StatusCode, p)
	}
}

// heldPut is a DynamoDB client whose first PutItem waits, once it is
// ready to be sent, until the test lets it go: a reservation whose write
// is slow, stamped before transfers that commit ahead of it.
type heldPut struct {
	*dynamodb.Client
	sending, release chan struct{}
	once             sync.Once
}

func (h *heldPut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	h.once.Do(func() {
		close(h.sending)
		<-h.release
	})
	return h.Client.PutItem(ctx, in, optFns...)
}

// syncOverlap is the overlap docs/api.md ("Lists and pagination") tells a
// client syncing every transfer to read again.
const syncOverlap = 60 * time.Second

// syncTransfers reads the caller's transfers from the head, as docs/api.md
// tells a client that syncs every transfer: page after page until a
// transfer created more than syncOverlap before the newest one seen by the
// previous sync (newest; "" on the first sync). It returns the ids not in
// seen, adds them to it, and returns the newest createdAt now seen.
// naive stops instead at the first transfer already seen.
func syncTransfers(t *testing.T, e *env, seen map[string]bool, newest string, naive bool) ([]string, string) {
	t.Helper()
	var stop string
	if newest != "" {
		at, err := time.Parse(time.RFC3339Nano, newest)
		if err != nil {
			t.Fatal(err)
		}
		stop = at.Add(-syncOverlap).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	var fresh []string
	cursor := ""
	for {
		q := map[string][]string{"limit": {"2"}}
		if cursor != "" {
			q["cursor"] = []string{cursor}
		}
		page := transferPage(t, e.do(list(alice, "/transfers", "/transfers", nil, q)))
		for _, tr := range page.Transfers {
			if (naive && seen[tr.TransferID]) || (stop != "" && tr.CreatedAt < stop) {
				return fresh, newest
			}
			if !seen[tr.TransferID] {
				seen[tr.TransferID] = true
				fresh = append(fresh, tr.TransferID)
			}
			if tr.CreatedAt > newest {
				newest = tr.CreatedAt
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return fresh, newest
		}
	}
}

// A transfer whose reservation is stamped before others but stored after
// them lands behind transfers a client already listed. The recipe of
// docs/api.md (read back to the newest time seen less the overlap) finds
// it; stopping at the first transfer already seen does not.
func TestSyncRecipeFindsALateTransfer(t *testing.T) {
	for _, naive := range []bool{false, true} {
		t.Run(map[bool]string{false: "recipe", true: "until the first seen"}[naive], func(t *testing.T) {
			e := newEnv(t)
			for i := range 3 {
				e.do(post(alice, fmt.Sprintf("k%d", i), body))
			}
			held := &heldPut{Client: e.db, sending: make(chan struct{}), release: make(chan struct{})}
			slow := e.newHandler(e.sfn, reservation.NewStore(held, e.table))
			done := make(chan events.APIGatewayProxyResponse, 1)
			go func() {
				resp, err := slow.Handle(context.Background(), post(alice, "late", body))
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			<-held.sending
			time.Sleep(2 * time.Millisecond) // createdAt has millisecond precision
			e.do(post(alice, "k3", body))

			seen := map[string]bool{}
			first, newest := syncTransfers(t, e, seen, "", naive)
			if len(first) != 4 {
				t.Fatalf("first sync: %d transfers, want the 4 stored", len(first))
			}
			close(held.release)
			late := transferOf(t, <-done)
			if late.CreatedAt >= newest {
				t.Fatalf("the late transfer was created at %s, not before %s: nothing to find", late.CreatedAt, newest)
			}
			fresh, _ := syncTransfers(t, e, seen, newest, naive)
			found := len(fresh) == 1 && fresh[0] == late.TransferID
			if found == naive {
				t.Errorf("second sync found %v; the late transfer is %s", fresh, late.TransferID)
			}
		})
	}
}
