package seed

import (
	"context"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

func TestMajor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		minor int64
		cur   string
		want  string
	}{
		{"two decimals", 100000, "EUR", "EUR 1,000.00"},
		{"less than one", 5, "EUR", "EUR 0.05"},
		{"zero", 0, "USD", "USD 0.00"},
		{"no decimals", 500, "JPY", "JPY 500"},
		{"three decimals", 1234, "KWD", "KWD 1.234"},
		{"negative", -250, "EUR", "EUR -2.50"},
		{"millions", 123456789, "EUR", "EUR 1,234,567.89"},
		{"unknown code keeps two decimals", 150, "XYZ", "XYZ 1.50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Major(tc.minor, tc.cur); got != tc.want {
				t.Errorf("Major(%d, %q) = %q, want %q", tc.minor, tc.cur, got, tc.want)
			}
		})
	}
}

// TestDescribeSaysWhoOwnsAnExistingAccount: seeding an account that exists
// leaves it as it is and reports its real owner and balance, not the ones
// asked for.
func TestDescribeSaysWhoOwnsAnExistingAccount(t *testing.T) {
	ctx := context.Background()
	client := ddbtest.Client(t)
	tables := ddbtest.Tables(t, client)
	led, err := ledger.New(client, ledger.Config{LedgerTable: tables["LedgerTable"], IdempotencyTable: tables["IdempotencyTable"]})
	if err != nil {
		t.Fatal(err)
	}
	const payments = "iam:arn:aws:iam::123456789012:user/payments-app"
	first, err := Open(ctx, led, Demo[:1])
	if err != nil {
		t.Fatal(err)
	}
	asked := Demo[0]
	asked.Owner, asked.Balance = payments, 5
	again, err := Open(ctx, led, []Account{asked})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		a       Account
		created bool
		want    string
	}{
		{"opened", Demo[0], first[0], "demo-alice EUR 1,000.00 of " + LocalOwner + ": opened"},
		{"exists, another owner asked", asked, again[0],
			"demo-alice EUR 1,000.00 of " + LocalOwner + ": exists, left as it is (not of " + payments + ", as asked)"},
		{"exists, same owner", Demo[0], false, "demo-alice EUR 1,000.00 of " + LocalOwner + ": exists, left as it is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Describe(ctx, led, tc.a, tc.created); got != tc.want {
				t.Errorf("Describe = %q\nwant       %q", got, tc.want)
			}
		})
	}
	if !strings.Contains(Describe(ctx, led, Account{ID: "nobody", Owner: payments, Currency: "EUR"}, false), "reading it failed") {
		t.Error("Describe of an account that cannot be read does not say so")
	}
}
