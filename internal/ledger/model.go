package ledger

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is a ledger leg of a transfer.
type Kind string

// Leg kinds. A transfer debits the source, then credits the destination;
// when the credit cannot happen the debit is refunded to the source.
const (
	Debit  Kind = "DEBIT"
	Credit Kind = "CREDIT"
	Refund Kind = "REFUND"
)

// Kinds lists the leg kinds.
var Kinds = []Kind{Debit, Credit, Refund}

// Valid reports whether k is a known leg kind.
func (k Kind) Valid() bool { return k == Debit || k == Credit || k == Refund }

// verb names the leg in error messages ("debit t-1: ...").
func (k Kind) verb() string { return strings.ToLower(string(k)) }

// AccountStatus is the status of an account.
type AccountStatus string

// Account statuses. Only OPEN accounts take postings.
const (
	AccountOpen   AccountStatus = "OPEN"
	AccountClosed AccountStatus = "CLOSED"
)

// Limits on identifiers, well inside DynamoDB's key size limits.
const (
	maxIDBytes        = 255
	maxRecordKeyBytes = 1024
)

// Leg is one posting a leg worker asks for.
type Leg struct {
	Kind Kind
	// TransferID is the transfer's id, the idempotency record's resourceId.
	TransferID string
	// RecordKey is the idempotency record's partition key (pk).
	RecordKey string
	// AccountID is the account posted to: the source for DEBIT and REFUND,
	// the destination for CREDIT.
	AccountID string
	// CounterpartyAccountID is the transfer's other account: the
	// destination for DEBIT and REFUND, the source for CREDIT.
	CounterpartyAccountID string
	// Amount is the transfer's amount in minor units, always positive;
	// the entry's sign follows from Kind.
	Amount int64
	// Currency is the ISO 4217 code, three upper-case letters.
	Currency string
	// Owner, when set on a DEBIT, is the caller scope of the transfer
	// (its idempotency record's scope): the debit commits only if the
	// account's owner is Owner and the record's scope is Owner too, so a
	// leg cannot borrow another caller's transfer. A debit of an account
	// that is not Owner's fails with ErrForbidden. Empty: no owner check.
	Owner string
	// Attempt is the run of the transfer the leg belongs to (the
	// idempotency record's attempt): the leg commits only while it is
	// the record's current attempt, so a leg of a run that was given up
	// and resumed under a later attempt can commit nothing.
	Attempt int64
	// Reason and Detail, on a REFUND, say why the debit is given back
	// (the credit's refusal, an operator's abort, the completion
	// window's end). They are stored with the entry, so whoever settles
	// the transfer later states the same reason.
	Reason, Detail string
	// Caller, when set on a CREDIT, is the caller scope of the transfer
	// (its idempotency record's scope, which the fence then requires): a
	// credit that a business rule refuses on an account that is not
	// Caller's (or that does not exist) fails with
	// ErrDestinationUnavailable instead of the rule's own error, so that
	// a caller learns nothing of another caller's account but that it
	// cannot receive the transfer. Empty: the rule's own error.
	Caller string
}

// Validate checks the leg without touching DynamoDB. It returns an
// *InvalidInputError.
func (l Leg) Validate() error {
	if !l.Kind.Valid() {
		return invalid("Kind", fmt.Sprintf("%q is not DEBIT, CREDIT or REFUND", string(l.Kind)))
	}
	if err := checkID("TransferID", l.TransferID, maxIDBytes); err != nil {
		return err
	}
	if err := checkID("RecordKey", l.RecordKey, maxRecordKeyBytes); err != nil {
		return err
	}
	if err := checkID("AccountID", l.AccountID, maxIDBytes); err != nil {
		return err
	}
	if err := checkID("CounterpartyAccountID", l.CounterpartyAccountID, maxIDBytes); err != nil {
		return err
	}
	if l.AccountID == l.CounterpartyAccountID {
		return invalid("CounterpartyAccountID", "must differ from AccountID")
	}
	if l.Amount <= 0 {
		return invalid("Amount", "must be a positive number of minor units")
	}
	if l.Attempt < 0 {
		return invalid("Attempt", "must not be negative")
	}
	if (l.Reason != "" || l.Detail != "") && l.Kind != Refund {
		return invalid("Reason", "only a REFUND states why it was posted")
	}
	if l.Owner != "" {
		if l.Kind != Debit {
			return invalid("Owner", "only a DEBIT checks the account's owner")
		}
		if err := checkID("Owner", l.Owner, maxRecordKeyBytes); err != nil {
			return err
		}
	}
	if l.Caller != "" {
		if l.Kind != Credit {
			return invalid("Caller", "only a CREDIT answers for the transfer's caller")
		}
		if err := checkID("Caller", l.Caller, maxRecordKeyBytes); err != nil {
			return err
		}
	}
	return checkCurrency("Currency", l.Currency)
}

// signed is the entry amount: negative for a debit.
func (l Leg) signed() int64 {
	if l.Kind == Debit {
		return -l.Amount
	}
	return l.Amount
}

// source and destination of the transfer the leg belongs to.
func (l Leg) source() string {
	if l.Kind == Credit {
		return l.CounterpartyAccountID
	}
	return l.AccountID
}

func (l Leg) destination() string {
	if l.Kind == Credit {
		return l.AccountID
	}
	return l.CounterpartyAccountID
}

func checkID(field, v string, maxBytes int) error {
	switch {
	case v == "":
		return invalid(field, "must not be empty")
	case len(v) > maxBytes:
		return invalid(field, fmt.Sprintf("must be at most %d bytes", maxBytes))
	case !utf8.ValidString(v):
		return invalid(field, "must be valid UTF-8")
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return invalid(field, "must not contain control characters")
		}
	}
	return nil
}

func checkCurrency(field, c string) error {
	if len(c) != 3 {
		return invalid(field, fmt.Sprintf("%q is not a three-letter ISO 4217 code", c))
	}
	for i := range len(c) {
		if c[i] < 'A' || c[i] > 'Z' {
			return invalid(field, fmt.Sprintf("%q is not a three-letter ISO 4217 code", c))
		}
	}
	return nil
}

// Entry is a posted ledger entry: one per (account, transfer, leg).
type Entry struct {
	AccountID  string `json:"accountId"`
	TransferID string `json:"transferId"`
	Kind       Kind   `json:"leg"`
	// Amount is signed: negative for DEBIT, positive for CREDIT and REFUND.
	Amount                int64  `json:"amount"`
	Currency              string `json:"currency"`
	CounterpartyAccountID string `json:"counterpartyAccountId"`
	// Sequence is the entry's place among the account's entries: the
	// account's Version once the entry's leg committed. It is assigned in
	// the transaction that posts the entry, so the entries of an account
	// are numbered 1, 2, ... Version without a gap, in commit order.
	Sequence int64     `json:"sequence"`
	PostedAt time.Time `json:"postedAt"`
	// Reason and Detail: why a REFUND was posted (Leg.Reason); not shown
	// to callers.
	Reason string `json:"-"`
	Detail string `json:"-"`
	// Replayed is set by Post when the leg had already committed and the
	// stored entry is returned; it is not stored or serialised.
	Replayed bool `json:"-"`
}

// Account is an account with its balance.
type Account struct {
	ID string `json:"accountId"`
	// Owner is the caller scope that may debit and read the account (see
	// internal/api); it is not shown to callers.
	Owner    string `json:"-"`
	Currency string `json:"currency"`
	Balance  int64  `json:"balance"`
	// Held is what the account's debits in flight amount to: debited,
	// neither credited to their destination nor refunded yet. The
	// account must be able to take all of it back (Balance + Held stays
	// at most math.MaxInt64), so a refund is never refused.
	Held   int64         `json:"-"`
	Status AccountStatus `json:"status"`
	// CreatedAt is when the account was opened.
	CreatedAt time.Time `json:"createdAt"`
	// Version counts the account's balance changes.
	Version int64 `json:"version"`
}

// Attribute names and key layout of LedgerTable.
const (
	attrPK       = "pk"
	attrSK       = "sk"
	attrCurrency = "currency"
	attrOwner    = "owner"
	attrBalance  = "balance"
	attrHeld     = "held"
	attrCeiling  = "ceiling"
	attrStatus   = "status"
	attrVersion  = "version"
	attrAmount   = "amount"
	attrCounter  = "counterpartyAccountId"
	attrSequence = "seq"
	attrVoided   = "voided"
	indexBySeq   = "BySequence"

	accountPrefix = "ACCOUNT#"
	accountSK     = "ACCOUNT"
	legPrefix     = "LEG#"
)

// postedAtLayout is RFC 3339 with nanoseconds, UTC.
const postedAtLayout = time.RFC3339Nano

// createdAtLayout is RFC 3339 with milliseconds, UTC.
const createdAtLayout = "2006-01-02T15:04:05.000Z07:00"

func accountPK(accountID string) string { return accountPrefix + accountID }

// PartitionKey is the LedgerTable partition key (pk) of an account: the
// account's item and every entry and void marker posted to it are stored
// under it, so a query on it finds all that the ledger holds of the
// account (the end-to-end suite removes its own test accounts so).
func PartitionKey(accountID string) string { return accountPK(accountID) }

func entrySK(transferID string, k Kind) string {
	return legPrefix + transferID + "#" + string(k)
}

// accountItem is an account as stored in LedgerTable.
type accountItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	AccountID string `dynamodbav:"accountId"`
	Owner     string `dynamodbav:"owner"`
	Currency  string `dynamodbav:"currency"`
	Balance   int64  `dynamodbav:"balance"`
	// Held: see Account.Held. Ceiling is Balance + Held, kept as its own
	// attribute because a condition cannot add two attributes: a credit
	// is conditioned on it, so that every debit in flight can come back.
	Held      int64  `dynamodbav:"held"`
	Ceiling   int64  `dynamodbav:"ceiling"`
	Status    string `dynamodbav:"status"`
	CreatedAt string `dynamodbav:"createdAt"`
	Version   int64  `dynamodbav:"version"`
}

func (it accountItem) account() (Account, error) {
	created, err := time.Parse(time.RFC3339, it.CreatedAt)
	if err != nil {
		return Account{}, fmt.Errorf("account %s: createdAt %q: %w", it.AccountID, it.CreatedAt, err)
	}
	return Account{
		ID:        it.AccountID,
		Owner:     it.Owner,
		Currency:  it.Currency,
		Balance:   it.Balance,
		Held:      it.Held,
		Status:    AccountStatus(it.Status),
		CreatedAt: created,
		Version:   it.Version,
	}, nil
}

// entryItem is a ledger entry as stored in LedgerTable.
type entryItem struct {
	PK                    string `dynamodbav:"pk"`
	SK                    string `dynamodbav:"sk"`
	AccountID             string `dynamodbav:"accountId"`
	TransferID            string `dynamodbav:"transferId"`
	Leg                   string `dynamodbav:"leg"`
	Amount                int64  `dynamodbav:"amount"`
	Currency              string `dynamodbav:"currency"`
	CounterpartyAccountID string `dynamodbav:"counterpartyAccountId"`
	// Seq is the entry's Sequence: the sort key of BySequence. A void
	// marker has none, so it stays out of the index.
	Seq      int64  `dynamodbav:"seq,omitempty"`
	PostedAt string `dynamodbav:"postedAt,omitempty"`
	// Voided marks a void marker (see Ledger.Void): the slot of a leg
	// whose rejection was made final. It moves no money (Amount 0) and
	// keeps every later attempt of the leg from committing. Reason and
	// Detail are the rejection's; on a REFUND, why it was posted.
	Voided bool   `dynamodbav:"voided,omitempty"`
	Reason string `dynamodbav:"reason,omitempty"`
	Detail string `dynamodbav:"detail,omitempty"`
}

// newEntryItem is the leg's entry, posted at now onto an account whose
// version is version before the leg.
func newEntryItem(l Leg, now time.Time, version int64) entryItem {
	return entryItem{
		PK:                    accountPK(l.AccountID),
		SK:                    entrySK(l.TransferID, l.Kind),
		AccountID:             l.AccountID,
		TransferID:            l.TransferID,
		Leg:                   string(l.Kind),
		Amount:                l.signed(),
		Currency:              l.Currency,
		CounterpartyAccountID: l.CounterpartyAccountID,
		Seq:                   version + 1,
		PostedAt:              now.UTC().Format(postedAtLayout),
		Reason:                l.Reason,
		Detail:                l.Detail,
	}
}

func (it entryItem) entry() (Entry, error) {
	posted, err := time.Parse(time.RFC3339Nano, it.PostedAt)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %s/%s: postedAt %q: %w", it.PK, it.SK, it.PostedAt, err)
	}
	return Entry{
		AccountID:             it.AccountID,
		TransferID:            it.TransferID,
		Kind:                  Kind(it.Leg),
		Amount:                it.Amount,
		Currency:              it.Currency,
		CounterpartyAccountID: it.CounterpartyAccountID,
		Sequence:              it.Seq,
		PostedAt:              posted,
		Reason:                it.Reason,
		Detail:                it.Detail,
	}, nil
}
