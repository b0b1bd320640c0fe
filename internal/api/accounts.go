package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/internal/ledger"
)

// RecentEntryCount is how many ledger entries an account shows.
const RecentEntryCount = 20

// Accounts is the part of the ledger the API reads: the accounts shown,
// and the owner of a transfer's source account when ownership is
// enforced.
type Accounts interface {
	Account(ctx context.Context, accountID string) (ledger.Account, error)
	RecentEntries(ctx context.Context, accountID string, limit int) ([]ledger.Entry, error)
	EntriesPage(ctx context.Context, accountID string, limit int, after *ledger.EntryPosition) ([]ledger.Entry, *ledger.EntryPosition, error)
}

var _ Accounts = (*ledger.Ledger)(nil)

// getAccount shows an account with its newest entries. With ownership
// enforced, an account of another caller is answered as one that does not
// exist: the owner is compared after the same single GetItem.
func (h *Handler) getAccount(ctx context.Context, scope string, req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	id := req.PathParameters["accountId"]
	acct, err := h.visibleAccount(ctx, scope, id)
	if err != nil {
		return problemResponse(problemFor(err), req.Path, nil)
	}
	entries, err := h.accounts.RecentEntries(ctx, id, RecentEntryCount)
	if err != nil {
		h.log.ErrorContext(ctx, "read entries failed", "accountId", id, "error", err)
		return problemResponse(problemFor(err), req.Path, nil)
	}
	return jsonResponse(http.StatusOK, accountView(acct, entries), nil)
}

// visibleAccount reads account id for the caller scope: with ownership
// enforced, an account of another caller is errNotFound, as one that does
// not exist. A read failure other than a missing account or a malformed
// id is logged.
func (h *Handler) visibleAccount(ctx context.Context, scope, id string) (ledger.Account, error) {
	acct, err := h.accounts.Account(ctx, id)
	if err != nil {
		if !errors.Is(err, ledger.ErrAccountNotFound) && !errors.Is(err, ledger.ErrInvalidInput) {
			h.log.ErrorContext(ctx, "read account failed", "accountId", id, "error", err)
		}
		return ledger.Account{}, err
	}
	if h.cfg.EnforceOwnership && acct.Owner != scope {
		return ledger.Account{}, errNotFound
	}
	return acct, nil
}
