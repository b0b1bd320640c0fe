package chaos_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/chaos"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/transfer"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

// item is one hand-written table item and the table it goes to.
type item struct {
	ledger bool
	attrs  map[string]any
}

func account(id, currency string, balance, version int64) item {
	return item{ledger: true, attrs: map[string]any{
		"pk": "ACCOUNT#" + id, "sk": "ACCOUNT", "accountId": id, "currency": currency,
		"balance": balance, "status": "OPEN", "createdAt": "2026-01-01T00:00:00.000Z", "version": version, "held": 0, "ceiling": balance,
	}}
}

func entry(accountID, transferID, leg string, amount int64, counterparty string) item {
	return item{ledger: true, attrs: map[string]any{
		"pk": "ACCOUNT#" + accountID, "sk": "LEG#" + transferID + "#" + leg, "accountId": accountID,
		"transferId": transferID, "leg": leg, "amount": amount, "currency": "EUR",
		"counterpartyAccountId": counterparty, "postedAt": "2026-01-01T00:00:00.000000000Z#" + transferID + "#" + leg,
	}}
}

// tombstone is the voided DEBIT a rejected debit leaves.
func tombstone(accountID, transferID, counterparty string) item {
	it := entry(accountID, transferID, "DEBIT", 0, counterparty)
	it.attrs["voided"] = true
	return it
}

// outcome is a record's terminal answer; nil failure means COMPLETED.
type outcome struct {
	status   string
	failure  *transfer.Failure
	response bool
}

var (
	completed  = outcome{status: "COMPLETED", response: true}
	rejected   = outcome{status: "FAILED", response: true, failure: &transfer.Failure{Code: "InsufficientFunds"}}
	reversed   = outcome{status: "FAILED", response: true, failure: &transfer.Failure{Code: "AccountNotFound", Reversed: true}}
	inProgress = outcome{status: "IN_PROGRESS"}
)

func record(t *testing.T, transferID, source, destination string, amount int64, o outcome) item {
	t.Helper()
	req := transfer.Request{SourceAccountID: source, DestinationAccountID: destination, Amount: amount, Currency: "EUR"}
	attrs := map[string]any{
		"pk": "scope#key-" + transferID, "scope": "scope", "status": o.status, "fingerprint": "f",
		"resourceId": transferID, "request": string(req.Canonical()), "createdAt": "2026-01-01T00:00:00.000Z",
		"expiresAt": int64(1893456000),
	}
	if o.response {
		resp, err := json.Marshal(transfer.Transfer{
			TransferID: transferID, Status: o.status, SourceAccountID: source, DestinationAccountID: destination,
			Amount: amount, Currency: "EUR", CreatedAt: "2026-01-01T00:00:00.000Z", SettledAt: "2026-01-01T00:00:01.000Z",
			Failure: o.failure,
		})
		if err != nil {
			t.Fatalf("marshal response: %v", err)
		}
		attrs["response"] = string(resp)
	} else {
		attrs["pending"] = o.status
	}
	return item{attrs: attrs}
}

// put writes the items into fresh tables and returns their names.
func put(t *testing.T, db *dynamodb.Client, items []item) (ledgerTable, idempotencyTable string) {
	t.Helper()
	tables := ddbtest.Tables(t, db)
	ledgerTable, idempotencyTable = tables["LedgerTable"], tables["IdempotencyTable"]
	for _, it := range items {
		av, err := attributevalue.MarshalMap(it.attrs)
		if err != nil {
			t.Fatalf("marshal %v: %v", it.attrs, err)
		}
		table := idempotencyTable
		if it.ledger {
			table = ledgerTable
		}
		if _, err := db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: av}); err != nil {
			t.Fatalf("put %v: %v", it.attrs, err)
		}
	}
	return ledgerTable, idempotencyTable
}

func TestCheck(t *testing.T) {
	db := ddbtest.Client(t)
	// A and B open with EUR 1000 each; X never exists.
	opening := map[string]chaos.Opening{"A": {"EUR", 1000}, "B": {"EUR", 1000}}
	cases := []struct {
		name  string
		items func(t *testing.T) []item
		// want lists "invariant transfer/account" of each violation, in
		// report order.
		want []string
	}{
		{
			name: "clean: completed, reversed, rejected with a tombstone, and a second page",
			items: func(t *testing.T) []item {
				its := []item{
					account("A", "EUR", 900, 3), account("B", "EUR", 1100, 1),
					entry("A", "t1", "DEBIT", -100, "B"), entry("B", "t1", "CREDIT", 100, "A"),
					record(t, "t1", "A", "B", 100, completed),
					entry("A", "t2", "DEBIT", -50, "X"), entry("A", "t2", "REFUND", 50, "X"),
					record(t, "t2", "A", "X", 50, reversed),
					tombstone("A", "t3", "B"),
					record(t, "t3", "A", "B", 5000, rejected),
					record(t, "t4", "X", "B", 10, outcome{status: "FAILED", response: true, failure: &transfer.Failure{Code: "AccountNotFound"}}),
				}
				// Enough rejected transfers that a scan needs more than
				// one page (1 MB) to read them.
				pad := strings.Repeat("x", 20000)
				for i := range 60 {
					r := record(t, fmt.Sprintf("pad-%d", i), "A", "B", 1, rejected)
					r.attrs["padding"] = pad
					its = append(its, r)
				}
				return its
			},
		},
		{
			name: "money created without an entry",
			items: func(*testing.T) []item {
				return []item{account("A", "EUR", 1000, 0), account("B", "EUR", 1100, 0)}
			},
			want: []string{"conservation /", "balance /B"},
		},
		{
			name: "leg applied twice under one entry",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 800, 2), account("B", "EUR", 1100, 1),
					entry("A", "t1", "DEBIT", -100, "B"), entry("B", "t1", "CREDIT", 100, "A"),
					record(t, "t1", "A", "B", 100, completed),
				}
			},
			want: []string{"conservation /", "balance /A", "balance /A"},
		},
		{
			name: "version does not count the entries",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1100, 2),
					entry("A", "t1", "DEBIT", -100, "B"), entry("B", "t1", "CREDIT", 100, "A"),
					record(t, "t1", "A", "B", 100, completed),
				}
			},
			want: []string{"balance /B"},
		},
		{
			name: "opened account missing",
			items: func(*testing.T) []item {
				return []item{account("A", "EUR", 1000, 0)}
			},
			want: []string{"conservation /B", "conservation /"},
		},
		{
			name: "accepted key left in progress",
			items: func(t *testing.T) []item {
				return []item{account("A", "EUR", 1000, 0), account("B", "EUR", 1000, 0), record(t, "t1", "A", "B", 100, inProgress)}
			},
			want: []string{"terminal t1/"},
		},
		{
			name: "completed without a credit",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1000, 0),
					entry("A", "t1", "DEBIT", -100, "B"),
					record(t, "t1", "A", "B", 100, completed),
				}
			},
			want: []string{"conservation /", "balance /A", "replay t1/"},
		},
		{
			name: "failed with its debit kept",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1000, 0),
					entry("A", "t1", "DEBIT", -100, "B"),
					record(t, "t1", "A", "B", 100, rejected),
				}
			},
			want: []string{"conservation /", "balance /A", "replay t1/"},
		},
		{
			name: "failed for an infrastructure fault",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 1000, 2), account("B", "EUR", 1000, 0),
					entry("A", "t1", "DEBIT", -100, "B"), entry("A", "t1", "REFUND", 100, "B"),
					record(t, "t1", "A", "B", 100, outcome{status: "FAILED", response: true,
						failure: &transfer.Failure{Code: "LedgerUnavailable", Reversed: true}}),
				}
			},
			want: []string{"completion t1/"},
		},
		{
			name: "a debit in flight not held",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1000, 0),
					entry("A", "t1", "DEBIT", -100, "B"),
					record(t, "t1", "A", "B", 100, inProgress),
				}
			},
			want: []string{"conservation /", "balance /A", "terminal t1/"},
		},
		{
			name: "failed not reversed although refunded",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 1000, 2), account("B", "EUR", 1000, 0),
					entry("A", "t1", "DEBIT", -100, "B"), entry("A", "t1", "REFUND", 100, "B"),
					record(t, "t1", "A", "B", 100, rejected),
				}
			},
			want: []string{"replay t1/"},
		},
		{
			name: "failed reversed although nothing moved",
			items: func(t *testing.T) []item {
				return []item{account("A", "EUR", 1000, 0), account("B", "EUR", 1000, 0), record(t, "t1", "A", "B", 100, reversed)}
			},
			want: []string{"replay t1/"},
		},
		{
			name: "tombstone is no debit: reversed is wrong",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 1000, 0), account("B", "EUR", 1000, 0),
					tombstone("A", "t1", "B"), record(t, "t1", "A", "B", 100, reversed),
				}
			},
			want: []string{"replay t1/"},
		},
		{
			name: "entries do not match the request's amount",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1100, 1),
					entry("A", "t1", "DEBIT", -100, "B"), entry("B", "t1", "CREDIT", 100, "A"),
					record(t, "t1", "A", "B", 200, completed),
				}
			},
			want: []string{"replay t1/", "replay t1/"},
		},
		{
			name: "credit posted to the wrong account",
			items: func(t *testing.T) []item {
				return []item{
					account("A", "EUR", 1100, 1), account("B", "EUR", 900, 1),
					entry("B", "t1", "DEBIT", -100, "A"), entry("A", "t1", "CREDIT", 100, "B"),
					record(t, "t1", "A", "B", 100, completed),
				}
			},
			want: []string{"replay t1/", "replay t1/", "replay t1/"},
		},
		{
			name: "entries without a record",
			items: func(*testing.T) []item {
				return []item{
					account("A", "EUR", 900, 1), account("B", "EUR", 1100, 1),
					entry("A", "t9", "DEBIT", -100, "B"), entry("B", "t9", "CREDIT", 100, "A"),
				}
			},
			want: []string{"orphan t9/B", "orphan t9/A"},
		},
		{
			name: "terminal record without a response",
			items: func(t *testing.T) []item {
				r := record(t, "t1", "A", "B", 100, inProgress)
				r.attrs["status"] = "COMPLETED"
				return []item{account("A", "EUR", 1000, 0), account("B", "EUR", 1000, 0), r}
			},
			want: []string{"replay t1/"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ledgerTable, idempotencyTable := put(t, db, tc.items(t))
			rep, err := chaos.Check(t.Context(), db, ledgerTable, idempotencyTable, opening)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Invariant+" "+v.TransferID+"/"+v.AccountID)
				if v.Message == "" {
					t.Errorf("violation %+v has no message", v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("violations %q, want %q; report:\n%s", got, tc.want, describe(rep))
			}
			if rep.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %t with %d violations", rep.OK(), len(rep.Violations))
			}
		})
	}
}

// TestCheckCounts checks the report's counts on the clean case's kind of
// data: voided entries are not postings.
func TestCheckCounts(t *testing.T) {
	db := ddbtest.Client(t)
	ledgerTable, idempotencyTable := put(t, db, []item{
		account("A", "EUR", 900, 1), account("B", "EUR", 1100, 1),
		entry("A", "t1", "DEBIT", -100, "B"), entry("B", "t1", "CREDIT", 100, "A"),
		record(t, "t1", "A", "B", 100, completed),
		tombstone("A", "t2", "B"), record(t, "t2", "A", "B", 5000, rejected),
	})
	rep, err := chaos.Check(t.Context(), db, ledgerTable, idempotencyTable, map[string]chaos.Opening{"A": {"EUR", 1000}, "B": {"EUR", 1000}})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"accounts", rep.Accounts, 2},
		{"entries", rep.Entries, 2},
		{"voided", rep.Voided, 1},
		{"records", rep.Records, 2},
		{"completed", rep.ByStatus["COMPLETED"], 1},
		{"failed", rep.ByStatus["FAILED"], 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d (%s)", c.name, c.got, c.want, rep.Summary())
		}
	}
	if !rep.OK() {
		t.Errorf("want no violations:\n%s", describe(rep))
	}
}

func describe(r chaos.Report) string {
	s := r.Summary()
	for _, v := range r.Violations {
		s += "\n  " + v.String()
	}
	return s
}
