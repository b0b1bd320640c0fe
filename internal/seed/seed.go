// Package seed opens accounts with opening balances, in any stack.
package seed

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/text/currency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Account is an account to open.
type Account struct {
	ID string
	// Owner is the caller scope that may debit and read the account, as
	// the API computes it: "iam:" and the caller's IAM ARN (an assumed
	// role's role ARN, or its session ARN with ScopeBySession=true),
	// "cognito-user:" and a subject, "authorizer:" and a principal id.
	Owner    string
	Currency string
	Balance  int64
}

// LocalOwner is the scope of the local stack's default caller: IAM user
// "local" of account 123456789012, the identity the local API Gateway
// gives a request without an Authorization header or with
// "Authorization: Bearer local" (internal/local/apigw).
const LocalOwner = "iam:arn:aws:iam::123456789012:user/local"

// Demo are the accounts a local stack starts with: EUR 1,000.00 each, of
// the default local caller.
var Demo = []Account{
	{ID: "demo-alice", Owner: LocalOwner, Currency: "EUR", Balance: 100000},
	{ID: "demo-bob", Owner: LocalOwner, Currency: "EUR", Balance: 100000},
}

// Parse reads "ID:CURRENCY:BALANCE[:OWNER]", the balance in minor units.
// OWNER is a caller scope and may itself contain colons; without it the
// account's Owner is owner.
func Parse(spec, owner string) (Account, error) {
	parts := strings.SplitN(spec, ":", 4)
	if len(parts) < 3 {
		return Account{}, fmt.Errorf("account %q: want ID:CURRENCY:BALANCE[:OWNER], e.g. demo-alice:EUR:100000", spec)
	}
	if len(parts) == 4 {
		owner = parts[3]
	}
	if owner == "" {
		return Account{}, fmt.Errorf("account %q: no owner: append :OWNER (a caller scope such as iam:arn:aws:iam::123456789012:user/alice) or set one for all accounts", spec)
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
	return Account{ID: parts[0], Owner: owner, Currency: parts[1], Balance: bal}, nil
}

// Opener opens accounts.
type Opener interface {
	OpenAccount(ctx context.Context, accountID, owner, currency string, openingBalance int64) (bool, error)
}

var _ Opener = (*ledger.Ledger)(nil)

// Open opens each account that does not exist yet; existing accounts are
// left as they are. It reports, for each account it got to, whether it
// was created; on error, the accounts before the failing one.
func Open(ctx context.Context, o Opener, accounts []Account) ([]bool, error) {
	created := make([]bool, 0, len(accounts))
	for _, a := range accounts {
		ok, err := o.OpenAccount(ctx, a.ID, a.Owner, a.Currency, a.Balance)
		if err != nil {
			return created, fmt.Errorf("open %s: %w", a.ID, err)
		}
		created = append(created, ok)
	}
	return created, nil
}

// Major formats an amount in minor units in the currency's major units,
// with its ISO 4217 number of decimals: Major(100000, "EUR") is
// "EUR 1,000.00", Major(500, "JPY") is "JPY 500".
func Major(minor int64, cur string) string {
	scale := 2
	if u, err := currency.ParseISO(cur); err == nil {
		scale, _ = currency.Standard.Rounding(u)
	}
	neg := minor < 0
	abs := new(big.Int).Abs(big.NewInt(minor)).String()
	if len(abs) <= scale {
		abs = strings.Repeat("0", scale-len(abs)+1) + abs
	}
	whole, frac := abs[:len(abs)-scale], abs[len(abs)-scale:]
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	s := b.String()
	if scale > 0 {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return cur + " " + s
}

// AccountReader reads an account as it is stored.
type AccountReader interface {
	Account(ctx context.Context, accountID string) (ledger.Account, error)
}

var _ AccountReader = (*ledger.Ledger)(nil)

// Describe says what Open did with a: the account as asked when it was
// created; else the account as it is (its own owner, currency and
// balance), and which owner was asked when that is another.
func Describe(ctx context.Context, r AccountReader, a Account, created bool) string {
	if created {
		return fmt.Sprintf("%s %s of %s: opened", a.ID, Major(a.Balance, a.Currency), a.Owner)
	}
	got, err := r.Account(ctx, a.ID)
	if err != nil {
		return fmt.Sprintf("%s: exists, left as it is (reading it failed: %v)", a.ID, err)
	}
	line := fmt.Sprintf("%s %s of %s: exists, left as it is", got.ID, Major(got.Balance, got.Currency), got.Owner)
	if got.Owner != a.Owner {
		line += fmt.Sprintf(" (not of %s, as asked)", a.Owner)
	}
	return line
}
