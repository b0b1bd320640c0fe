package client

import (
	"net/http"
	"time"
)

// TransferRequest is the body of POST /transfers (the contract's
// TransferRequest).
type TransferRequest struct {
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	// Amount is a positive whole number of the currency's minor units, as
	// ISO 4217 sets them: 1050 is EUR 10.50, JPY 1050, KWD 1.050.
	Amount int64 `json:"amount"`
	// Currency is an ISO 4217 code, upper case.
	Currency string `json:"currency"`
	// Reference is optional printable text, at most 140 characters.
	Reference string `json:"reference,omitempty"`
}

// TransferStatus is a transfer's state.
type TransferStatus string

// A transfer is PENDING until it settles COMPLETED or FAILED.
const (
	StatusPending   TransferStatus = "PENDING"
	StatusCompleted TransferStatus = "COMPLETED"
	StatusFailed    TransferStatus = "FAILED"
)

// Transfer is a transfer as the API answers it (the contract's Transfer).
type Transfer struct {
	TransferID           string         `json:"transferId"`
	Status               TransferStatus `json:"status"`
	SourceAccountID      string         `json:"sourceAccountId"`
	DestinationAccountID string         `json:"destinationAccountId"`
	Amount               int64          `json:"amount"`
	Currency             string         `json:"currency"`
	Reference            string         `json:"reference,omitempty"`
	CreatedAt            time.Time      `json:"createdAt"`
	// SettledAt is when the transfer reached COMPLETED or FAILED; nil
	// while it is PENDING.
	SettledAt *time.Time `json:"settledAt,omitempty"`
	// Failure tells why a FAILED transfer failed.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is why a transfer failed (the contract's Failure).
type Failure struct {
	// Code is the workflow's or the reaper's error name, such as
	// InsufficientFunds.
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
	// Reversed: the debited amount was refunded to the source account.
	Reversed bool `json:"reversed,omitempty"`
}

// AccountStatus is an account's state.
type AccountStatus string

// Account states.
const (
	AccountOpen   AccountStatus = "OPEN"
	AccountClosed AccountStatus = "CLOSED"
)

// Account is an account's balance and its newest entries (the contract's
// Account).
type Account struct {
	AccountID string        `json:"accountId"`
	Currency  string        `json:"currency"`
	Balance   int64         `json:"balance"` // minor units
	Status    AccountStatus `json:"status"`
	CreatedAt time.Time     `json:"createdAt"`
	// Version counts the account's balance changes: the account has
	// exactly the entries 1 to Version.
	Version int64 `json:"version"`
	// Entries are the 20 newest, newest first.
	Entries []Entry `json:"entries"`
}

// Leg is the kind of a ledger entry.
type Leg string

// Entry legs.
const (
	LegDebit  Leg = "DEBIT"
	LegCredit Leg = "CREDIT"
	LegRefund Leg = "REFUND"
)

// Entry is one ledger entry of an account (the contract's Entry).
type Entry struct {
	AccountID  string `json:"accountId"`
	TransferID string `json:"transferId"`
	Leg        Leg    `json:"leg"`
	// Amount is signed minor units, negative for a DEBIT.
	Amount                int64  `json:"amount"`
	Currency              string `json:"currency"`
	CounterpartyAccountID string `json:"counterpartyAccountId"`
	// Sequence is the entry's place among its account's entries: 1 for
	// the first, then one more for each, in the order they committed.
	// Entries are listed by it, newest first; a gap in the numbers a
	// reader has is an entry it has not read yet.
	Sequence int64     `json:"sequence"`
	PostedAt time.Time `json:"postedAt"`
}

// TransferPage is one page of GET /transfers (the contract's
// TransferPage).
type TransferPage struct {
	Transfers []Transfer `json:"transfers"`
	// NextCursor reads the next page; "" on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// EntryPage is one page of GET /accounts/{accountId}/entries (the
// contract's EntryPage).
type EntryPage struct {
	Entries []Entry `json:"entries"`
	// NextCursor reads the next page; "" on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// PageOptions select a page of a list.
type PageOptions struct {
	// Limit is the number of items per page, 1-100; 0 leaves it to the
	// API (20).
	Limit int
	// Cursor is the NextCursor of the previous page of the same list, as
	// given; "" reads the first page.
	Cursor string
}

// CreateTransferResult is a successful answer of POST /transfers: 202 for a
// transfer accepted and still PENDING, 201 for a new transfer that
// completed within the wait asked for, 200 for a replay of a completed one.
type CreateTransferResult struct {
	Transfer Transfer
	// StatusCode is the HTTP status: 200, 201 or 202.
	StatusCode int
	// Location is the transfer's URL path (Location), with the stage when
	// called on the execute-api URL, e.g. /v1/transfers/{id}.
	Location string
	// Replayed: the answer comes from an earlier request with the same key
	// (Idempotent-Replayed: true).
	Replayed bool
	// PreferenceApplied is the Preference-Applied header, "wait=N" when
	// the wait asked for was honoured (N after the API's cap), else "".
	PreferenceApplied string
	// Attempts is how many requests the answer took (1 without a retry).
	Attempts int
	// Header is the response's header.
	Header http.Header
}
