// Package chaos checks that the money stays right when everything around
// it fails: Check reads the ledger and the idempotency records and lists
// every broken invariant; Harness runs the local stack for a test, drives
// the API, settles what is left and verifies the outcome.
//
// The chaos test itself (chaos_test.go, build tag integration) runs random
// operations from concurrent clients while a fault injector breaks the
// functions, the events and the SDK calls, then asks Check and the replays
// whether anything was lost, doubled or left unfinished:
//
//	go test -race -count=1 -tags integration -run TestChaos -v ./internal/chaos/
//	make chaos                          # 10,000 operations
//	CHAOS_SEED=7 CHAOS_OPS=3000 make chaos
//
// A run is reproducible in what each client asks and which faults are
// armed (CHAOS_SEED); the interleaving of the clients, the workflows and
// the faults' draws is up to the scheduler.
package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// DynamoDBScanAPI is the part of the DynamoDB client Check uses.
type DynamoDBScanAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

var _ DynamoDBScanAPI = (*dynamodb.Client)(nil)

// Opening is an account's opening balance, as it was opened.
type Opening struct {
	Currency string
	Balance  int64
}

// Invariant names, in the order Check reports them.
const (
	// Conservation: per currency, the opened accounts' balances add up to
	// their opening balances.
	Conservation = "conservation"
	// Balance: each account's balance is its opening balance plus its
	// entries, and its version counts its entries.
	Balance = "balance"
	// Terminal: every accepted key ended COMPLETED or FAILED.
	Terminal = "terminal"
	// Replay: a record's stored answer agrees with the ledger's entries of
	// its transfer.
	Replay = "replay"
	// Orphan: every ledger entry belongs to a recorded transfer.
	Orphan = "orphan"
	// Completion: a FAILED transfer carries a final code only (a business
	// refusal, an operator's abort, or the end of its completion window:
	// transfer.IsFinal), never an infrastructure fault's.
	Completion = "completion"
)

var invariantOrder = map[string]int{Conservation: 0, Balance: 1, Terminal: 2, Replay: 3, Orphan: 4, Completion: 5}

// Violation is one broken invariant.
type Violation struct {
	// Invariant is one of Conservation, Balance, Terminal, Replay, Orphan,
	// Completion.
	Invariant string
	// TransferID and AccountID name what is wrong; either may be empty.
	TransferID string
	AccountID  string
	// RecordKey is the idempotency record's pk when a record is involved.
	RecordKey string
	Message   string
}

func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Invariant)
	if v.TransferID != "" {
		b.WriteString(" transfer=" + v.TransferID)
	}
	if v.AccountID != "" {
		b.WriteString(" account=" + v.AccountID)
	}
	b.WriteString(": " + v.Message)
	return b.String()
}

// Report is what Check found.
type Report struct {
	// Violations, ordered by invariant, then by transfer and account.
	Violations []Violation
	// Accounts is the number of account items; Entries the number of
	// postings; Voided the number of voided entries (tombstones of
	// rejected debits, not postings).
	Accounts, Entries, Voided int
	// Records counts the idempotency records, by status.
	Records  int
	ByStatus map[reservation.Status]int
	// Failures counts the FAILED records by failure code, with
	// "/reversed" for those whose debit was refunded.
	Failures map[string]int
}

// OK reports whether no invariant is broken.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Summary is a one-line account of the report.
func (r Report) Summary() string {
	var st []string
	for _, s := range slices.Sorted(maps.Keys(r.ByStatus)) {
		st = append(st, fmt.Sprintf("%s=%d", s, r.ByStatus[s]))
	}
	var fs []string
	for _, c := range slices.Sorted(maps.Keys(r.Failures)) {
		fs = append(fs, fmt.Sprintf("%s=%d", c, r.Failures[c]))
	}
	return fmt.Sprintf("%d violations; %d accounts, %d entries, %d voided; %d records (%s); failures (%s)",
		len(r.Violations), r.Accounts, r.Entries, r.Voided, r.Records, strings.Join(st, " "), strings.Join(fs, " "))
}

// Ledger table layout (see internal/ledger/model.go).
const (
	accountPrefix = "ACCOUNT#"
	accountSK     = "ACCOUNT"
	legPrefix     = "LEG#"
)

// ledgerItem is any LedgerTable item: an account or an entry.
type ledgerItem struct {
	PK string `dynamodbav:"pk"`
	SK string `dynamodbav:"sk"`
	// Account attributes.
	AccountID string `dynamodbav:"accountId"`
	Currency  string `dynamodbav:"currency"`
	Balance   int64  `dynamodbav:"balance"`
	Held      int64  `dynamodbav:"held"`
	Ceiling   int64  `dynamodbav:"ceiling"`
	Status    string `dynamodbav:"status"`
	Version   int64  `dynamodbav:"version"`
	// Entry attributes.
	TransferID            string `dynamodbav:"transferId"`
	Leg                   string `dynamodbav:"leg"`
	Amount                int64  `dynamodbav:"amount"`
	CounterpartyAccountID string `dynamodbav:"counterpartyAccountId"`
	// Voided marks the tombstone a rejected debit leaves in its slot: not
	// a posting.
	Voided bool `dynamodbav:"voided"`
}

// Entry is a ledger entry as Check read it, for reports.
type Entry struct {
	AccountID             string
	TransferID            string
	Leg                   ledger.Kind
	Amount                int64
	Currency              string
	CounterpartyAccountID string
	Voided                bool
}

func (e Entry) String() string {
	s := fmt.Sprintf("%s %s %+d %s on %s (counterparty %s)", e.TransferID, e.Leg, e.Amount, e.Currency, e.AccountID, e.CounterpartyAccountID)
	if e.Voided {
		s += " voided"
	}
	return s
}

// account is an account item with its entries.
type account struct {
	id       string
	currency string
	balance  int64
	held     int64
	ceiling  int64
	version  int64
	found    bool
	entries  []Entry
}

// Snapshot is both tables as one Check read them.
type Snapshot struct {
	// Accounts by id, with their entries.
	accounts map[string]*account
	// Entries by transfer id, voided ones included.
	ByTransfer map[string][]Entry
	// Records by pk.
	Records map[string]reservation.Record
}

// ReadSnapshot scans both tables with consistent reads.
func ReadSnapshot(ctx context.Context, db DynamoDBScanAPI, ledgerTable, idempotencyTable string) (*Snapshot, error) {
	s := &Snapshot{accounts: map[string]*account{}, ByTransfer: map[string][]Entry{}, Records: map[string]reservation.Record{}}
	acct := func(id string) *account {
		a, ok := s.accounts[id]
		if !ok {
			a = &account{id: id}
			s.accounts[id] = a
		}
		return a
	}
	err := scan(ctx, db, ledgerTable, func(item map[string]types.AttributeValue) error {
		var it ledgerItem
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return fmt.Errorf("decode ledger item: %w", err)
		}
		id, ok := strings.CutPrefix(it.PK, accountPrefix)
		if !ok {
			return fmt.Errorf("ledger item %s/%s: pk is not %s<id>", it.PK, it.SK, accountPrefix)
		}
		switch {
		case it.SK == accountSK:
			a := acct(id)
			a.found, a.currency, a.balance, a.version = true, it.Currency, it.Balance, it.Version
			a.held, a.ceiling = it.Held, it.Ceiling
		case strings.HasPrefix(it.SK, legPrefix):
			e := Entry{AccountID: id, TransferID: it.TransferID, Leg: ledger.Kind(it.Leg), Amount: it.Amount,
				Currency: it.Currency, CounterpartyAccountID: it.CounterpartyAccountID, Voided: it.Voided}
			if want := legPrefix + it.TransferID + "#" + it.Leg; it.SK != want {
				return fmt.Errorf("ledger item %s/%s: sk does not match transferId %q and leg %q", it.PK, it.SK, it.TransferID, it.Leg)
			}
			a := acct(id)
			a.entries = append(a.entries, e)
			s.ByTransfer[e.TransferID] = append(s.ByTransfer[e.TransferID], e)
		default:
			return fmt.Errorf("ledger item %s/%s: unknown sort key", it.PK, it.SK)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read ledger table %s: %w", ledgerTable, err)
	}
	err = scan(ctx, db, idempotencyTable, func(item map[string]types.AttributeValue) error {
		var rec reservation.Record
		if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
			return fmt.Errorf("decode idempotency record: %w", err)
		}
		s.Records[rec.Key] = rec
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read idempotency table %s: %w", idempotencyTable, err)
	}
	return s, nil
}

// SettledAfter returns, sorted, how long after since each transfer whose
// record settled after since took to settle (its stored settledAt less
// since).
func SettledAfter(s *Snapshot, since time.Time) []time.Duration {
	var out []time.Duration
	for _, rec := range s.Records {
		if !rec.Status.Terminal() {
			continue
		}
		var t transfer.Transfer
		if json.Unmarshal([]byte(rec.Response), &t) != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.SettledAt)
		if err != nil || !at.After(since) {
			continue
		}
		out = append(out, at.Sub(since))
	}
	slices.Sort(out)
	return out
}

// hasLeg reports whether the transfer has a posted (not voided) entry of
// kind.
func (s *Snapshot) hasLeg(transferID string, kind ledger.Kind) bool {
	for _, e := range s.ByTransfer[transferID] {
		if e.Leg == kind && !e.Voided {
			return true
		}
	}
	return false
}

// Entries returns the entries of a transfer, voided ones included, sorted
// by leg.
func (s *Snapshot) Entries(transferID string) []Entry {
	es := slices.Clone(s.ByTransfer[transferID])
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Or(cmp.Compare(a.Leg, b.Leg), cmp.Compare(a.AccountID, b.AccountID)) })
	return es
}

// AccountEntries returns an account's entries, voided ones included.
func (s *Snapshot) AccountEntries(accountID string) []Entry {
	if a, ok := s.accounts[accountID]; ok {
		return slices.Clone(a.entries)
	}
	return nil
}

// RecordOf returns the record whose resourceId is transferID.
func (s *Snapshot) RecordOf(transferID string) (reservation.Record, bool) {
	for _, rec := range s.Records {
		if rec.ResourceID == transferID {
			return rec, true
		}
	}
	return reservation.Record{}, false
}

func scan(ctx context.Context, db DynamoDBScanAPI, table string, each func(map[string]types.AttributeValue) error) error {
	pages := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// Check reads both tables fully with consistent scans and checks the
// invariants (see the constants) against the accounts' opening balances.
// Accounts missing from opening are read for their entries but their
// balances are not checked. An error means the tables could not be read;
// broken invariants are in the report.
func Check(ctx context.Context, db DynamoDBScanAPI, ledgerTable, idempotencyTable string, opening map[string]Opening) (Report, error) {
	s, err := ReadSnapshot(ctx, db, ledgerTable, idempotencyTable)
	if err != nil {
		return Report{}, err
	}
	return s.Check(opening), nil
}

// Check checks the invariants on the snapshot.
func (s *Snapshot) Check(opening map[string]Opening) Report {
	r := Report{ByStatus: map[reservation.Status]int{}, Failures: map[string]int{}}
	add := func(v Violation) { r.Violations = append(r.Violations, v) }

	// Conservation and balance integrity.
	total, opened := map[string]int64{}, map[string]int64{}
	for _, id := range slices.Sorted(maps.Keys(opening)) {
		o := opening[id]
		opened[o.Currency] += o.Balance
		a, ok := s.accounts[id]
		if !ok || !a.found {
			add(Violation{Invariant: Conservation, AccountID: id, Message: "opened account has no account item"})
			continue
		}
		if a.currency != o.Currency {
			add(Violation{Invariant: Conservation, AccountID: id,
				Message: fmt.Sprintf("account is in %s, opened in %s", a.currency, o.Currency)})
		}
		total[a.currency] += a.balance
	}
	for _, cur := range slices.Sorted(maps.Keys(opened)) {
		if total[cur] != opened[cur] {
			add(Violation{Invariant: Conservation,
				Message: fmt.Sprintf("%s balances add up to %d, opened with %d (difference %+d)", cur, total[cur], opened[cur], total[cur]-opened[cur])})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.accounts)) {
		a := s.accounts[id]
		if a.found {
			r.Accounts++
		}
		var sum, postings int64
		for _, e := range a.entries {
			if e.Voided {
				r.Voided++
				continue
			}
			r.Entries++
			postings++
			sum += e.Amount
			if a.found && e.Currency != a.currency {
				add(Violation{Invariant: Balance, AccountID: id, TransferID: e.TransferID,
					Message: fmt.Sprintf("%s entry in %s on an account in %s", e.Leg, e.Currency, a.currency)})
			}
		}
		if !a.found {
			if postings > 0 {
				add(Violation{Invariant: Balance, AccountID: id,
					Message: fmt.Sprintf("%d entries (sum %+d) on an account that does not exist", postings, sum)})
			}
			continue
		}
		o, ok := opening[id]
		if !ok {
			continue
		}
		if want := o.Balance + sum; a.balance != want {
			add(Violation{Invariant: Balance, AccountID: id,
				Message: fmt.Sprintf("balance %d, but opening %d plus %d entries (sum %+d) is %d", a.balance, o.Balance, postings, sum, want)})
		}
		if a.version != postings {
			add(Violation{Invariant: Balance, AccountID: id,
				Message: fmt.Sprintf("version %d, but the account has %d entries", a.version, postings)})
		}
		// Held: the account's debits neither credited nor refunded.
		var inFlight int64
		for _, e := range a.entries {
			if e.Voided || e.Leg != ledger.Debit {
				continue
			}
			if !s.hasLeg(e.TransferID, ledger.Credit) && !s.hasLeg(e.TransferID, ledger.Refund) {
				inFlight -= e.Amount
			}
		}
		if a.held != inFlight || a.ceiling != a.balance+a.held {
			add(Violation{Invariant: Balance, AccountID: id,
				Message: fmt.Sprintf("held %d and ceiling %d, but its debits in flight are %d and balance + held is %d", a.held, a.ceiling, inFlight, a.balance+a.held)})
		}
	}

	// Records: terminal, and their answers agree with the ledger.
	transfers := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(s.Records)) {
		rec := s.Records[key]
		r.Records++
		r.ByStatus[rec.Status]++
		transfers[rec.ResourceID] = true
		if !rec.Status.Terminal() {
			add(Violation{Invariant: Terminal, TransferID: rec.ResourceID, RecordKey: rec.Key,
				Message: fmt.Sprintf("record is %s, not COMPLETED or FAILED", rec.Status)})
		}
		if rec.Status == reservation.StatusFailed {
			var t transfer.Transfer
			if json.Unmarshal([]byte(rec.Response), &t) == nil && t.Failure != nil {
				code := t.Failure.Code
				if !transfer.IsFinal(code) {
					add(Violation{Invariant: Completion, TransferID: rec.ResourceID, RecordKey: rec.Key,
						Message: fmt.Sprintf("FAILED with %s, an infrastructure fault: it must have delayed the transfer, not failed it", code)})
				}
				if t.Failure.Reversed {
					code += "/reversed"
				}
				r.Failures[code]++
			}
		}
		for _, msg := range s.replayProblems(rec) {
			add(Violation{Invariant: Replay, TransferID: rec.ResourceID, RecordKey: rec.Key, Message: msg})
		}
	}

	// Orphans.
	for _, tid := range slices.Sorted(maps.Keys(s.ByTransfer)) {
		if transfers[tid] {
			continue
		}
		for _, e := range s.Entries(tid) {
			add(Violation{Invariant: Orphan, TransferID: tid, AccountID: e.AccountID,
				Message: fmt.Sprintf("entry %s belongs to no idempotency record", e)})
		}
	}

	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Compare(invariantOrder[a.Invariant], invariantOrder[b.Invariant])
	})
	return r
}

// replayProblems lists where the record's stored request and answer
// disagree with the ledger's entries of its transfer.
func (s *Snapshot) replayProblems(rec reservation.Record) []string {
	var out []string
	var req transfer.Request
	if err := json.Unmarshal([]byte(rec.Request), &req); err != nil {
		return []string{fmt.Sprintf("stored request is unreadable: %v", err)}
	}
	// The legs in their slots; anything elsewhere is misplaced.
	slot := map[ledger.Kind]string{ledger.Debit: req.SourceAccountID, ledger.Credit: req.DestinationAccountID, ledger.Refund: req.SourceAccountID}
	want := map[ledger.Kind]int64{ledger.Debit: -req.Amount, ledger.Credit: req.Amount, ledger.Refund: req.Amount}
	posted := map[ledger.Kind]bool{}
	for _, e := range s.Entries(rec.ResourceID) {
		if acct, ok := slot[e.Leg]; !ok || e.AccountID != acct {
			out = append(out, fmt.Sprintf("entry %s is not in a slot of the transfer (%s from %s to %s)", e, e.Leg, req.SourceAccountID, req.DestinationAccountID))
			continue
		}
		if e.Voided {
			if e.Leg != ledger.Debit {
				out = append(out, fmt.Sprintf("voided %s entry: only a rejected debit leaves a tombstone", e.Leg))
			}
			continue
		}
		posted[e.Leg] = true
		if e.Amount != want[e.Leg] || e.Currency != req.Currency {
			out = append(out, fmt.Sprintf("entry %s, but the request is %d %s: want %+d %s", e, req.Amount, req.Currency, want[e.Leg], req.Currency))
		}
	}
	legs := describeLegs(posted)
	if !rec.Status.Terminal() {
		return out
	}
	if rec.Response == "" {
		return append(out, fmt.Sprintf("%s record has no stored response", rec.Status))
	}
	var t transfer.Transfer
	if err := json.Unmarshal([]byte(rec.Response), &t); err != nil {
		return append(out, fmt.Sprintf("stored response is unreadable: %v", err))
	}
	if t.TransferID != rec.ResourceID || t.Status != string(rec.Status) {
		out = append(out, fmt.Sprintf("stored response is transfer %s %s, the record %s %s", t.TransferID, t.Status, rec.ResourceID, rec.Status))
	}
	if t.SourceAccountID != req.SourceAccountID || t.DestinationAccountID != req.DestinationAccountID || t.Amount != req.Amount || t.Currency != req.Currency {
		out = append(out, fmt.Sprintf("stored response moves %d %s from %s to %s, the request %d %s from %s to %s",
			t.Amount, t.Currency, t.SourceAccountID, t.DestinationAccountID, req.Amount, req.Currency, req.SourceAccountID, req.DestinationAccountID))
	}
	debit, credit, refund := posted[ledger.Debit], posted[ledger.Credit], posted[ledger.Refund]
	switch rec.Status {
	case reservation.StatusCompleted:
		if !debit || !credit || refund {
			out = append(out, fmt.Sprintf("COMPLETED, but the ledger has %s (want DEBIT and CREDIT)", legs))
		}
		if t.Failure != nil {
			out = append(out, fmt.Sprintf("COMPLETED with a failure %+v", *t.Failure))
		}
	case reservation.StatusFailed:
		nothing := !debit && !credit && !refund
		reversed := debit && refund && !credit
		if !nothing && !reversed {
			out = append(out, fmt.Sprintf("FAILED, but the ledger has %s (want nothing, or DEBIT and REFUND)", legs))
		}
		switch {
		case t.Failure == nil:
			out = append(out, "FAILED without a failure")
		case t.Failure.Reversed != reversed:
			out = append(out, fmt.Sprintf("FAILED with reversed=%t, but the ledger has %s", t.Failure.Reversed, legs))
		}
	}
	return out
}

func describeLegs(posted map[ledger.Kind]bool) string {
	var legs []string
	for _, k := range ledger.Kinds {
		if posted[k] {
			legs = append(legs, string(k))
		}
	}
	if len(legs) == 0 {
		return "no entry"
	}
	return strings.Join(legs, "+")
}
