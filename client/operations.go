package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// ErrNoKey is returned by CreateTransfer without an Idempotency-Key.
var ErrNoKey = errors.New("transfers: an Idempotency-Key is required: generate one per transfer, before the first attempt, and keep it for every retry")

// CreateOption is an option of CreateTransfer.
type CreateOption func(*createOptions)

type createOptions struct {
	wait int
}

// PreferWait asks the API to answer the transfer's final state if it
// settles within the given number of seconds (Prefer: wait=N, RFC 7240; the
// API caps N at 10): 201 with the COMPLETED transfer, or its refusal as a
// *Problem with the FAILED transfer. A transfer still running when the
// wait ends is answered 202, PENDING. Zero or less sends no Prefer.
func PreferWait(seconds int) CreateOption {
	return func(o *createOptions) { o.wait = seconds }
}

// CreateTransfer makes a transfer exactly once per key: POST /transfers
// with the Idempotency-Key header. Generate the key (a UUID) before the
// first attempt and store it with the transfer; send the same key and the
// same request on every retry of that transfer, and a new key for a new
// transfer. The client's own retries reuse the key.
//
// A transfer the ledger refused (insufficient_funds, ...), or a refused
// replay of one, is a *Problem whose Transfer is the FAILED transfer; a key
// sent with another request is a *Problem with CodeIdempotencyKeyReused.
func (c *Client) CreateTransfer(ctx context.Context, key string, req TransferRequest, opts ...CreateOption) (*CreateTransferResult, error) {
	if key == "" {
		return nil, ErrNoKey
	}
	var o createOptions
	for _, opt := range opts {
		opt(&o)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("transfers: create transfer: encode the request: %w", err)
	}
	header := http.Header{"Idempotency-Key": {key}}
	if o.wait > 0 {
		header.Set("Prefer", "wait="+strconv.Itoa(o.wait))
	}
	const op = "create transfer"
	a, err := c.do(ctx, call{op: op, method: http.MethodPost, path: "/transfers", header: header, body: body})
	if err != nil {
		return nil, err
	}
	res := &CreateTransferResult{
		StatusCode:        a.status,
		Location:          a.header.Get("Location"),
		Replayed:          a.header.Get("Idempotent-Replayed") == "true",
		PreferenceApplied: a.header.Get("Preference-Applied"),
		Attempts:          a.attempts,
		Header:            a.header,
	}
	if err := a.decode(op, &res.Transfer); err != nil {
		return nil, err
	}
	return res, nil
}

// GetTransfer reads a transfer the caller made: GET /transfers/{id}.
// Another caller's transfer, or an unknown id, is a *Problem with
// CodeNotFound.
func (c *Client) GetTransfer(ctx context.Context, transferID string) (*Transfer, error) {
	const op = "get transfer"
	a, err := c.do(ctx, call{op: op, method: http.MethodGet, path: "/transfers/" + url.PathEscape(transferID)})
	if err != nil {
		return nil, err
	}
	var t Transfer
	if err := a.decode(op, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// GetAccount reads an account's balance and its 20 newest entries:
// GET /accounts/{id}. Another caller's account, or an unknown id, is a
// *Problem with CodeNotFound.
func (c *Client) GetAccount(ctx context.Context, accountID string) (*Account, error) {
	const op = "get account"
	a, err := c.do(ctx, call{op: op, method: http.MethodGet, path: "/accounts/" + url.PathEscape(accountID)})
	if err != nil {
		return nil, err
	}
	var acct Account
	if err := a.decode(op, &acct); err != nil {
		return nil, err
	}
	return &acct, nil
}

// ListTransfers reads one page of the caller's transfers, newest first:
// GET /transfers. The list is eventually consistent (docs/api.md, "Lists
// and pagination").
func (c *Client) ListTransfers(ctx context.Context, opts PageOptions) (*TransferPage, error) {
	const op = "list transfers"
	a, err := c.do(ctx, call{op: op, method: http.MethodGet, path: "/transfers", query: opts.query()})
	if err != nil {
		return nil, err
	}
	var page TransferPage
	if err := a.decode(op, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// ListEntries reads one page of an account's ledger entries, newest first
// (by Sequence): GET /accounts/{id}/entries.
func (c *Client) ListEntries(ctx context.Context, accountID string, opts PageOptions) (*EntryPage, error) {
	const op = "list entries"
	a, err := c.do(ctx, call{op: op, method: http.MethodGet, path: "/accounts/" + url.PathEscape(accountID) + "/entries", query: opts.query()})
	if err != nil {
		return nil, err
	}
	var page EntryPage
	if err := a.decode(op, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// Transfers iterates over the caller's transfers, newest first, from the
// page opts selects (the first without a Cursor) to the last page, reading
// each page when the previous one is used up. On an error it yields the
// error once and stops.
func (c *Client) Transfers(ctx context.Context, opts PageOptions) iter.Seq2[Transfer, error] {
	return paginate(opts, func(o PageOptions) ([]Transfer, string, error) {
		page, err := c.ListTransfers(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return page.Transfers, page.NextCursor, nil
	})
}

// Entries iterates over an account's entries, newest first, as Transfers
// does over transfers.
func (c *Client) Entries(ctx context.Context, accountID string, opts PageOptions) iter.Seq2[Entry, error] {
	return paginate(opts, func(o PageOptions) ([]Entry, string, error) {
		page, err := c.ListEntries(ctx, accountID, o)
		if err != nil {
			return nil, "", err
		}
		return page.Entries, page.NextCursor, nil
	})
}

// paginate yields the items of every page from opts on.
func paginate[T any](opts PageOptions, read func(PageOptions) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := read(opts)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if next == opts.Cursor {
				var zero T
				yield(zero, fmt.Errorf("transfers: the API gave the cursor %q twice in a row", next))
				return
			}
			opts.Cursor = next
		}
	}
}

// query is the page's query string.
func (o PageOptions) query() url.Values {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}
