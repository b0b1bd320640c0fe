package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Page sizes of the lists.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// TransferPage is a page of GET /transfers.
type TransferPage struct {
	Transfers []transfer.Transfer `json:"transfers"`
	// NextCursor reads the next page; absent on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// EntryPage is a page of GET /accounts/{accountId}/entries.
type EntryPage struct {
	Entries    []EntryView `json:"entries"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// Errors of a list's query string.
var (
	errLimit  = errors.New("limit must be a whole number from 1 to 100, sent once")
	errCursor = errors.New("cursor is not one this list gave")
	// errNoCursors reports a handler configured without a cursor key:
	// lists fail closed (503) rather than hand out unsigned cursors.
	errNoCursors = errors.New("the lists have no cursor key")
)

// Fields of the positions sealed in cursors.
const (
	posCreatedAt = "c"
	posKey       = "k"
	posSequence  = "q"
	posSK        = "s"
)

// pageQuery reads limit and cursor from the query string: the page size
// and the position sealed for list, nil for the first page.
func (h *Handler) pageQuery(req events.APIGatewayProxyRequest, list string, fields ...string) (int, map[string]string, error) {
	if h.cfg.Cursors == nil {
		return 0, nil, errNoCursors
	}
	limit := DefaultPageSize
	if vs := query(req, "limit"); len(vs) > 0 {
		n, err := strconv.Atoi(vs[0])
		if len(vs) > 1 || err != nil || n < 1 || n > MaxPageSize {
			return 0, nil, errLimit
		}
		limit = n
	}
	vs := query(req, "cursor")
	if len(vs) == 0 {
		return limit, nil, nil
	}
	if len(vs) > 1 {
		return 0, nil, errCursor
	}
	pos, err := h.cfg.Cursors.Open(list, vs[0])
	if err != nil {
		return 0, nil, errCursor
	}
	for _, f := range fields {
		if pos[f] == "" {
			return 0, nil, errCursor
		}
	}
	return limit, pos, nil
}

// query returns the values of a query-string parameter.
func query(req events.APIGatewayProxyRequest, name string) []string {
	if vs, ok := req.MultiValueQueryStringParameters[name]; ok {
		return vs
	}
	if v, ok := req.QueryStringParameters[name]; ok {
		return []string{v}
	}
	return nil
}

// listTransfers answers a page of the caller's transfers, newest first:
// one Query of the ByScope index.
func (h *Handler) listTransfers(ctx context.Context, scope string, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	list := "transfers\x00" + scope
	limit, pos, err := h.pageQuery(req, list, posCreatedAt, posKey)
	if err != nil {
		return problemResponse(problemFor(err), req.Path, nil)
	}
	var after *reservation.Position
	if pos != nil {
		after = &reservation.Position{CreatedAt: pos[posCreatedAt], Key: pos[posKey]}
	}
	recs, next, err := h.records.ListByScope(ctx, scope, limit, after)
	if err != nil {
		h.log.ErrorContext(ctx, "list transfers failed", "error", err)
		return problemResponse(problemFor(err), req.Path, nil)
	}
	page := TransferPage{Transfers: make([]transfer.Transfer, 0, len(recs))}
	for _, rec := range recs {
		t, err := transfer.FromRecord(rec)
		if err != nil {
			return problemResponse(problemFor(err), req.Path, nil)
		}
		page.Transfers = append(page.Transfers, present(t))
	}
	if next != nil {
		page.NextCursor = h.cfg.Cursors.Seal(list, map[string]string{posCreatedAt: next.CreatedAt, posKey: next.Key})
	}
	return jsonResponse(http.StatusOK, page, nil)
}

// listEntries answers a page of an account's entries, newest first: the
// account's GetItem (its owner), then one Query of BySequence. With
// ownership enforced, another caller's account is answered 404, as by
// GET /accounts/{accountId}.
func (h *Handler) listEntries(ctx context.Context, scope string, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	id := req.PathParameters["accountId"]
	list := "entries\x00" + scope + "\x00" + id
	limit, pos, err := h.pageQuery(req, list, posSequence, posSK)
	if err != nil {
		return problemResponse(problemFor(err), req.Path, nil)
	}
	var after *ledger.EntryPosition
	if pos != nil {
		seq, err := strconv.ParseInt(pos[posSequence], 10, 64)
		if err != nil {
			return problemResponse(problemFor(errCursor), req.Path, nil)
		}
		after = &ledger.EntryPosition{Sequence: seq, SK: pos[posSK]}
	}
	if _, err := h.visibleAccount(ctx, scope, id); err != nil {
		return problemResponse(problemFor(err), req.Path, nil)
	}
	entries, next, err := h.accounts.EntriesPage(ctx, id, limit, after)
	if err != nil {
		h.log.ErrorContext(ctx, "list entries failed", "accountId", id, "error", err)
		return problemResponse(problemFor(err), req.Path, nil)
	}
	page := EntryPage{Entries: entryViews(entries)}
	if next != nil {
		page.NextCursor = h.cfg.Cursors.Seal(list, map[string]string{posSequence: strconv.FormatInt(next.Sequence, 10), posSK: next.SK})
	}
	return jsonResponse(http.StatusOK, page, nil)
}
