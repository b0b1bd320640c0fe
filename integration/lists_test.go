//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
)

type (
	transferPageView struct {
		Transfers  []transferView `json:"transfers"`
		NextCursor string         `json:"nextCursor"`
	}
	entryPageView struct {
		Entries    []entryView `json:"entries"`
		NextCursor string      `json:"nextCursor"`
	}
)

// pageOf reads one page of a list as c into v and returns its reply.
func pageOf(t testing.TB, c *caller, path string, limit, cursor string, v any) reply {
	t.Helper()
	q := url.Values{}
	if limit != "" {
		q.Set("limit", limit)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	r := c.get(t, path)
	if r.status == http.StatusOK {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
	return r
}

// TestLists: an account's entries and the caller's transfers page newest
// first with signed cursors; a cursor of another list, or another
// caller's, is refused.
func TestLists(t *testing.T) {
	t.Parallel()
	b := newBook(t)
	c := tg.first
	src, dst := b.open(t, "src", "EUR", 10000), b.open(t, "dst", "EUR", 0)
	var ids []string
	for range 5 {
		r := postWaiting(t, c, newKey(), "5", transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 10, Currency: "EUR"})
		ids = append(ids, expectTransfer(t, r, http.StatusCreated).TransferID)
	}

	var got []string
	cursor := ""
	for {
		var page entryPageView
		r := pageOf(t, c, "/accounts/"+src+"/entries", "2", cursor, &page)
		if r.status != http.StatusOK {
			t.Fatalf("%s", r)
		}
		for _, e := range page.Entries {
			if e.Leg != legDebit || e.AccountID != src {
				t.Errorf("entry %+v of %s", e, src)
			}
			got = append(got, e.TransferID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
		entriesCursor := cursor
		defer func() {
			// Another list's cursor: the destination's entries, the
			// caller's transfers.
			var p entryPageView
			expectProblem(t, pageOf(t, c, "/accounts/"+dst+"/entries", "", entriesCursor, &p), http.StatusBadRequest, "invalid_cursor")
			var tp transferPageView
			expectProblem(t, pageOf(t, c, "/transfers", "", entriesCursor, &tp), http.StatusBadRequest, "invalid_cursor")
		}()
	}
	if len(got) != len(ids) {
		t.Fatalf("entries of transfers %v, want the debits of %v", got, ids)
	}
	for i, id := range got {
		if want := ids[len(ids)-1-i]; id != want {
			t.Errorf("entry %d is of %s, want %s (newest first)", i, id, want)
		}
	}

	var page transferPageView
	if r := pageOf(t, c, "/transfers", "3", "", &page); r.status != http.StatusOK || len(page.Transfers) != 3 || page.NextCursor == "" {
		t.Fatalf("%s: want 3 transfers and a cursor", r)
	}
	var bad transferPageView
	expectProblem(t, pageOf(t, c, "/transfers", "1000", "", &bad), http.StatusBadRequest, "invalid_limit")
	if other, reason, err := tg.second(context.Background()); err != nil {
		t.Fatal(err)
	} else if other == nil {
		t.Logf("no second caller (%s): the foreign-cursor case is not run", reason)
	} else {
		expectProblem(t, pageOf(t, other, "/transfers", "", page.NextCursor, &bad), http.StatusBadRequest, "invalid_cursor")
	}
}
