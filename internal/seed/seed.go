// Package seed opens accounts with opening balances, in any stack.
package seed

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Account is an account to open.
type Account struct {
	ID       string
	Currency string
	Balance  int64
}

// Demo are the accounts a local stack starts with: EUR 1,000.00 each.
var Demo = []Account{
	{ID: "demo-alice", Currency: "EUR", Balance: 100000},
	{ID: "demo-bob", Currency: "EUR", Balance: 100000},
}

// Parse reads "ID:CURRENCY:BALANCE", the balance in minor units.
func Parse(spec string) (Account, error) {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return Account{}, fmt.Errorf("account %q: want ID:CURRENCY:BALANCE, e.g. demo-alice:EUR:100000", spec)
	}
	bal, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || bal < 0 {
		return Account{}, fmt.Errorf("account %q: balance must be a whole number of minor units >= 0", spec)
	}
	if !transfer.ValidCurrency(parts[1]) {
		return Account{}, fmt.Errorf("account %q: %q is not an ISO 4217 currency code", spec, parts[1])
	}
	if parts[0] == "" {
		return Account{}, fmt.Errorf("account %q: empty account id", spec)
	}
	return Account{ID: parts[0], Currency: parts[1], Balance: bal}, nil
}

// Opener opens accounts.
type Opener interface {
	OpenAccount(ctx context.Context, accountID, currency string, openingBalance int64) (bool, error)
}

var _ Opener = (*ledger.Ledger)(nil)

// Open opens each account that does not exist yet; existing accounts are
// left as they are. It reports, for each account it got to, whether it
// was created; on error, the accounts before the failing one.
func Open(ctx context.Context, o Opener, accounts []Account) ([]bool, error) {
	created := make([]bool, 0, len(accounts))
	for _, a := range accounts {
		ok, err := o.OpenAccount(ctx, a.ID, a.Currency, a.Balance)
		if err != nil {
			return created, fmt.Errorf("open %s: %w", a.ID, err)
		}
		created = append(created, ok)
	}
	return created, nil
}
