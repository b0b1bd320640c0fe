package api

import (
	"time"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// TimeLayout is the layout of every timestamp the API answers: RFC 3339
// in UTC with exactly three fraction digits. Its fixed width makes the
// lexical order of timestamps their time order.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// stamp renders t in TimeLayout.
func stamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// restamp renders an RFC 3339 timestamp of any precision in TimeLayout;
// an empty or unreadable one is returned as it is.
func restamp(s string) string {
	if inTimeLayout(s) {
		// What parsing and formatting it again would give: the same
		// string, or, for a date that does not exist, s as it is.
		return s
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return stamp(t)
}

// inTimeLayout reports whether s has the shape of TimeLayout: digits
// where it has digits, its separators elsewhere.
func inTimeLayout(s string) bool {
	if len(s) != len(TimeLayout) {
		return false
	}
	for i := range len(s) {
		if l := TimeLayout[i]; '0' <= l && l <= '9' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != l {
			return false
		}
	}
	return true
}

// present is the transfer as the API answers it: its timestamps in
// TimeLayout, whoever stored them (the service, the workflow's context
// object, the reaper).
func present(t transfer.Transfer) transfer.Transfer {
	t.CreatedAt = restamp(t.CreatedAt)
	t.SettledAt = restamp(t.SettledAt)
	return t
}

// AccountView is the account resource: balance and the newest entries.
type AccountView struct {
	AccountID string      `json:"accountId"`
	Currency  string      `json:"currency"`
	Balance   int64       `json:"balance"`
	Status    string      `json:"status"`
	CreatedAt string      `json:"createdAt"`
	Version   int64       `json:"version"`
	Entries   []EntryView `json:"entries"`
}

// EntryView is a ledger entry as the API answers it.
type EntryView struct {
	AccountID             string `json:"accountId"`
	TransferID            string `json:"transferId"`
	Leg                   string `json:"leg"`
	Amount                int64  `json:"amount"`
	Currency              string `json:"currency"`
	CounterpartyAccountID string `json:"counterpartyAccountId"`
	Sequence              int64  `json:"sequence"`
	PostedAt              string `json:"postedAt"`
}

func accountView(a ledger.Account, entries []ledger.Entry) AccountView {
	return AccountView{
		AccountID: a.ID, Currency: a.Currency, Balance: a.Balance, Status: string(a.Status),
		CreatedAt: stamp(a.CreatedAt), Version: a.Version, Entries: entryViews(entries),
	}
}

func entryViews(entries []ledger.Entry) []EntryView {
	out := make([]EntryView, 0, len(entries))
	for _, e := range entries {
		out = append(out, EntryView{
			AccountID: e.AccountID, TransferID: e.TransferID, Leg: string(e.Kind), Amount: e.Amount,
			Currency: e.Currency, CounterpartyAccountID: e.CounterpartyAccountID, Sequence: e.Sequence,
			PostedAt: stamp(e.PostedAt),
		})
	}
	return out
}
