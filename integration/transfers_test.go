//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Problem codes of the API.
const (
	codeKeyMissing        = "idempotency_key_missing"
	codeKeyMalformed      = "idempotency_key_malformed"
	codeKeyReused         = "idempotency_key_reused"
	codeInvalidRequest    = "invalid_request"
	codeBodyTooLarge      = "body_too_large"
	codeNotFound          = "not_found"
	codeInsufficientFunds = "insufficient_funds"
	codeAccountNotFound   = "account_not_found"
	codeCurrencyMismatch  = "currency_mismatch"
	codeAccountClosed     = "account_closed"
)

// accept posts a new transfer and checks the 202 that accepts it.
func accept(t testing.TB, c *caller, key string, req transferRequest) transferView {
	t.Helper()
	r := c.post(t, key, req.body(t))
	v := expectTransfer(t, r, http.StatusAccepted)
	expectLocation(t, r, v.TransferID)
	expectReplayed(t, r, false)
	if v.Status != statusPending {
		t.Errorf("%s: status %s, want %s", r, v.Status, statusPending)
	}
	expectSameRequest(t, v, req)
	return v
}

// expectSameRequest checks that a transfer is the one requested.
func expectSameRequest(t testing.TB, v transferView, req transferRequest) {
	t.Helper()
	if v.SourceAccountID != req.SourceAccountID || v.DestinationAccountID != req.DestinationAccountID ||
		v.Amount != req.Amount || v.Currency != req.Currency || v.Reference != req.Reference {
		t.Errorf("transfer %s is %+v, want the request %+v", v.TransferID, v, req)
	}
}

// TestHappyPath: a transfer is accepted, settles COMPLETED and moves the money
// once: one DEBIT on the source, one CREDIT on the destination.
func TestHappyPath(t *testing.T) {
	t.Parallel()
	b := newBook(t)
	c := tg.first
	src := b.open(t, "src", "EUR", 100000)
	dst := b.open(t, "dst", "EUR", 5000)
	req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 2550, Currency: "EUR", Reference: "invoice 42"}
	key := newKey()

	accepted := accept(t, c, key, req)
	done := awaitSettled(t, c, accepted.TransferID)
	if done.Status != statusCompleted || done.Failure != nil {
		t.Fatalf("transfer settled as %+v, want COMPLETED", done)
	}
	if done.SettledAt == "" || done.CreatedAt != accepted.CreatedAt {
		t.Errorf("settled transfer %+v: want settledAt set and createdAt %s", done, accepted.CreatedAt)
	}
	expectSameRequest(t, done, req)

	srcAcct, dstAcct := getAccount(t, c, src), getAccount(t, c, dst)
	if srcAcct.Balance != 100000-2550 || dstAcct.Balance != 5000+2550 {
		t.Errorf("balances %d and %d, want %d and %d", srcAcct.Balance, dstAcct.Balance, 100000-2550, 5000+2550)
	}
	expectLegs(t, srcAcct, accepted.TransferID, leg{legDebit, -2550})
	expectLegs(t, dstAcct, accepted.TransferID, leg{legCredit, 2550})
	if e := legs(srcAcct, accepted.TransferID)[legDebit]; len(e) == 1 && (e[0].CounterpartyAccountID != dst || e[0].Currency != "EUR") {
		t.Errorf("debit entry %+v: want counterparty %s in EUR", e[0], dst)
	}
	expectExecutions(t, c, key, accepted.TransferID)
}

// TestReplay: a key presented again, after its transfer completed, while
// it is in progress, and with another request.
func TestReplay(t *testing.T) {
	t.Parallel()

	// After completion the same request is answered from the
	// record: 200, the same transfer, no new execution, no new entry.
	t.Run("after completion", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		req := transferRequest{
			SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: b.open(t, "dst", "EUR", 0),
			Amount: 1000, Currency: "EUR", Reference: "rent",
		}
		key := newKey()
		accepted := accept(t, c, key, req)
		if done := awaitSettled(t, c, accepted.TransferID); done.Status != statusCompleted {
			t.Fatalf("transfer settled as %+v, want COMPLETED", done)
		}
		before := b.balances(t)

		// The same request, and the same request written differently:
		// the fingerprint is of the validated request, not of its bytes.
		reordered := fmt.Sprintf(`{ "reference": %q, "currency": %q, "amount": %d,
			"destinationAccountId": %q, "sourceAccountId": %q }`,
			req.Reference, req.Currency, req.Amount, req.DestinationAccountID, req.SourceAccountID)
		for _, body := range [][]byte{req.body(t), []byte(reordered)} {
			r := c.post(t, key, body)
			v := expectTransfer(t, r, http.StatusOK)
			expectReplayed(t, r, true)
			expectLocation(t, r, accepted.TransferID)
			if v.TransferID != accepted.TransferID || v.Status != statusCompleted {
				t.Errorf("%s: want transfer %s COMPLETED", r, accepted.TransferID)
			}
		}
		expectExecutions(t, c, key, accepted.TransferID)
		expectUnchanged(t, b, before)
	})

	// The natural race: a duplicate sent right after the 202 finds
	// the transfer in progress (202) or already done (200); either way it
	// is a replay of the same transfer.
	t.Run("duplicate right after acceptance", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		req := transferRequest{
			SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: b.open(t, "dst", "EUR", 0),
			Amount: 700, Currency: "EUR",
		}
		key := newKey()
		accepted := accept(t, c, key, req)
		r := c.post(t, key, req.body(t))
		if r.status != http.StatusAccepted && r.status != http.StatusOK {
			t.Fatalf("%s: want 202 or 200", r)
		}
		v := expectTransfer(t, r, r.status)
		expectReplayed(t, r, true)
		expectLocation(t, r, accepted.TransferID)
		if v.TransferID != accepted.TransferID {
			t.Errorf("%s: replay answered transfer %s, want %s", r, v.TransferID, accepted.TransferID)
		}
		if done := awaitSettled(t, c, accepted.TransferID); done.Status != statusCompleted {
			t.Fatalf("transfer settled as %+v, want COMPLETED", done)
		}
		expectLegs(t, getAccount(t, c, req.SourceAccountID), accepted.TransferID, leg{legDebit, -700})
		expectLegs(t, getAccount(t, c, req.DestinationAccountID), accepted.TransferID, leg{legCredit, 700})
		expectExecutions(t, c, key, accepted.TransferID)
	})

	// The same, deterministic: a workflow that is running is indistinguishable,
	// for the API, from a record its first state marked IN_PROGRESS. The
	// record is written here exactly as the API reserves it and as
	// MarkInProgress updates it, and no workflow is started, so the
	// transfer stays in progress for as long as the case needs: the
	// duplicate must get 202 with Idempotent-Replayed, start nothing and
	// move nothing.
	t.Run("while in progress", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		req := transferRequest{
			SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: b.open(t, "dst", "EUR", 0),
			Amount: 300, Currency: "EUR", Reference: "held",
		}
		key := newKey()
		held := holdInProgress(t, c, key, req)
		before := b.balances(t)

		r := c.post(t, key, req.body(t))
		v := expectTransfer(t, r, http.StatusAccepted)
		expectReplayed(t, r, true)
		expectLocation(t, r, held)
		if v.TransferID != held || v.Status != statusPending {
			t.Errorf("%s: want transfer %s PENDING", r, held)
		}
		expectSameRequest(t, v, req)
		if got := getTransfer(t, c, held); got.Status != statusPending {
			t.Errorf("GET /transfers/%s: status %s, want %s", held, got.Status, statusPending)
		}
		if rec := record(t, c, key); rec.Status != reservation.StatusInProgress || rec.ResourceID != held {
			t.Errorf("record after the replay: status %s, transfer %s; want IN_PROGRESS, %s", rec.Status, rec.ResourceID, held)
		}
		expectExecutions(t, c, key)
		expectUnchanged(t, b, before)
	})

	// The key of a completed transfer with another request is
	// refused and changes nothing.
	t.Run("same key different body", func(t *testing.T) {
		t.Parallel()
		b := newBook(t)
		c := tg.first
		src, dst := b.open(t, "src", "EUR", 10000), b.open(t, "dst", "EUR", 0)
		other := b.open(t, "other", "EUR", 0)
		req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: 1200, Currency: "EUR", Reference: "first"}
		key := newKey()
		accepted := accept(t, c, key, req)
		if done := awaitSettled(t, c, accepted.TransferID); done.Status != statusCompleted {
			t.Fatalf("transfer settled as %+v, want COMPLETED", done)
		}
		before, recBefore := b.balances(t), record(t, c, key)

		for _, change := range []struct {
			name  string
			apply func(*transferRequest)
		}{
			{"amount", func(r *transferRequest) { r.Amount++ }},
			{"destination", func(r *transferRequest) { r.DestinationAccountID = other }},
			{"reference", func(r *transferRequest) { r.Reference = "second" }},
			{"no reference", func(r *transferRequest) { r.Reference = "" }},
		} {
			changed := req
			change.apply(&changed)
			r := c.post(t, key, changed.body(t))
			p := expectProblem(t, r, http.StatusUnprocessableEntity, codeKeyReused)
			if p.Transfer != nil {
				t.Errorf("%s: changed %s: the problem shows the key's transfer to a request that does not match it", r, change.name)
			}
		}
		recAfter := record(t, c, key)
		if recAfter.Fingerprint != recBefore.Fingerprint || recAfter.ResourceID != recBefore.ResourceID ||
			recAfter.Status != recBefore.Status || recAfter.Response != recBefore.Response {
			t.Errorf("record changed: %+v -> %+v", recBefore, recAfter)
		}
		expectExecutions(t, c, key, accepted.TransferID)
		expectUnchanged(t, b, before)
	})
}

// holdInProgress stores c's key for req as the API reserves it and marks
// it IN_PROGRESS as the workflow's first state does, without starting a
// workflow. It returns the transfer id.
func holdInProgress(t testing.TB, c *caller, key string, req transferRequest) string {
	t.Helper()
	ctx := context.Background()
	parsed, err := transfer.ParseRequest(req.body(t), tg.maxAmount)
	if err != nil {
		t.Fatalf("the held request is invalid: %v", err)
	}
	canonical := parsed.Canonical()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	rec, created, err := tg.records.Reserve(ctx, reservation.Reservation{
		Scope: c.scope, Key: key, Fingerprint: idempotency.Fingerprint(canonical), ResourceID: id.String(), Request: canonical,
		Attributes: ledger.RecordAttributes(parsed.SourceAccountID, parsed.DestinationAccountID, parsed.Amount, parsed.Currency),
	})
	if err != nil || !created {
		t.Fatalf("reserve key %q: created=%v, %v", key, created, err)
	}
	_, err = tg.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(tg.recordsTable),
		Key:                 map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: rec.Key}},
		UpdateExpression:    aws.String("SET #status = :inProgress, #pending = :inProgress, updatedAt = :now"),
		ConditionExpression: aws.String("#status = :reserved"),
		ExpressionAttributeNames: map[string]string{
			"#status": reservation.AttrStatus, "#pending": reservation.AttrPending,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inProgress": &types.AttributeValueMemberS{Value: string(reservation.StatusInProgress)},
			":reserved":   &types.AttributeValueMemberS{Value: string(reservation.StatusReserved)},
			":now":        &types.AttributeValueMemberS{Value: time.Now().UTC().Format(reservation.TimeFormat)},
		},
	})
	if err != nil {
		t.Fatalf("mark key %q IN_PROGRESS: %v", key, err)
	}
	runWrites.noteHeld(rec.Key)
	return rec.ResourceID
}

// TestIdempotencyKeyHeader: the Idempotency-Key header is required and must be 1-255
// printable ASCII characters, sent once. A refused key stores nothing and
// moves nothing, although the body is a valid transfer.
func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	longest := newKey() + "-"
	longest += strings.Repeat("k", idempotency.MaxKeyLength-len(longest))
	cases := []struct {
		name   string
		values []string // nil: no header
		status int
		code   string
	}{
		{name: "missing", status: http.StatusBadRequest, code: codeKeyMissing},
		{name: "empty", values: []string{""}, status: http.StatusBadRequest, code: codeKeyMissing},
		{name: "too long", values: []string{longest + "k"}, status: http.StatusBadRequest, code: codeKeyMalformed},
		{name: "control character", values: []string{newKey() + "\tx"}, status: http.StatusBadRequest, code: codeKeyMalformed},
		{name: "non-ASCII", values: []string{newKey() + "-clé"}, status: http.StatusBadRequest, code: codeKeyMalformed},
		{name: "sent twice with different values", values: []string{newKey(), newKey()}, status: http.StatusBadRequest, code: codeKeyMalformed},
		{name: "longest accepted", values: []string{longest}, status: http.StatusAccepted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBook(t)
			c := tg.first
			req := transferRequest{
				SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: b.open(t, "dst", "EUR", 0),
				Amount: 100, Currency: "EUR",
			}
			headers := http.Header{}
			if tc.values != nil {
				headers["Idempotency-Key"] = tc.values
			}
			r := c.postWith(t, headers, req.body(t))
			if tc.status == http.StatusAccepted {
				v := expectTransfer(t, r, http.StatusAccepted)
				if done := awaitSettled(t, c, v.TransferID); done.Status != statusCompleted {
					t.Errorf("transfer settled as %+v, want COMPLETED", done)
				}
				return
			}
			expectProblem(t, r, tc.status, tc.code)
			for _, key := range tc.values {
				expectNoRecord(t, c, key)
			}
			for _, id := range []string{req.SourceAccountID, req.DestinationAccountID} {
				if a := getAccount(t, c, id); len(a.Entries) != 0 {
					t.Errorf("account %s has entries %+v, want none", id, a.Entries)
				}
			}
		})
	}
}

// TestInvalidBody: an invalid body is refused with 400 and a field-level problem,
// and nothing is stored.
func TestInvalidBody(t *testing.T) {
	t.Parallel()
	// valid is a valid request as a JSON object, with fields to change.
	valid := func(src, dst string) map[string]any {
		return map[string]any{"sourceAccountId": src, "destinationAccountId": dst, "amount": 100, "currency": "EUR", "reference": "ok"}
	}
	with := func(field string, v any) func(src, dst string) map[string]any {
		return func(src, dst string) map[string]any {
			m := valid(src, dst)
			m[field] = v
			return m
		}
	}
	without := func(field string) func(src, dst string) map[string]any {
		return func(src, dst string) map[string]any {
			m := valid(src, dst)
			delete(m, field)
			return m
		}
	}
	raw := func(s string) func(t testing.TB, src, dst string) []byte {
		return func(testing.TB, string, string) []byte { return []byte(s) }
	}
	cases := []struct {
		name string
		// object or body builds the body.
		object func(src, dst string) map[string]any
		body   func(t testing.TB, src, dst string) []byte
		code   string
		// field and fieldCode name the expected entry of errors[]; the
		// body-too-large problem has none.
		field, fieldCode string
	}{
		{name: "bad JSON", body: raw(`{"sourceAccountId": `), code: codeInvalidRequest, field: "", fieldCode: "malformed_json"},
		{name: "empty body", body: raw(``), code: codeInvalidRequest, field: "", fieldCode: "malformed_json"},
		{name: "array", body: raw(`[]`), code: codeInvalidRequest, field: "", fieldCode: "malformed_json"},
		{name: "two objects", body: func(t testing.TB, src, dst string) []byte {
			one := string(mustJSON(t, valid(src, dst)))
			return []byte(one + one)
		}, code: codeInvalidRequest, field: "", fieldCode: "malformed_json"},
		{name: "unknown field", object: with("memo", "x"), code: codeInvalidRequest, field: "memo", fieldCode: "unknown_field"},
		{name: "name in another case", object: with("Amount", 7), code: codeInvalidRequest, field: "Amount", fieldCode: "unknown_field"},
		{name: "repeated name", body: func(t testing.TB, src, dst string) []byte {
			one := string(mustJSON(t, valid(src, dst)))
			return []byte(one[:len(one)-1] + `,"currency":"USD"}`)
		}, code: codeInvalidRequest, field: "currency", fieldCode: "duplicate_field"},
		{name: "account of wrong type", object: with("sourceAccountId", 42), code: codeInvalidRequest, field: "sourceAccountId", fieldCode: "invalid_type"},
		{name: "amount 0", object: with("amount", 0), code: codeInvalidRequest, field: "amount", fieldCode: "invalid_amount"},
		{name: "amount -1", object: with("amount", -1), code: codeInvalidRequest, field: "amount", fieldCode: "invalid_amount"},
		{name: "amount 1.5", object: with("amount", 1.5), code: codeInvalidRequest, field: "amount", fieldCode: "invalid_amount"},
		{name: "amount 1e3", object: with("amount", json1e3{}), code: codeInvalidRequest, field: "amount", fieldCode: "invalid_amount"},
		{name: `amount "10"`, object: with("amount", "10"), code: codeInvalidRequest, field: "amount", fieldCode: "invalid_amount"},
		{name: "amount over the cap", object: with("amount", tg.maxAmount+1), code: codeInvalidRequest, field: "amount", fieldCode: "amount_too_large"},
		{name: "amount missing", object: without("amount"), code: codeInvalidRequest, field: "amount", fieldCode: "required"},
		{name: `currency "eur"`, object: with("currency", "eur"), code: codeInvalidRequest, field: "currency", fieldCode: "invalid_currency"},
		{name: `currency "ABC"`, object: with("currency", "ABC"), code: codeInvalidRequest, field: "currency", fieldCode: "invalid_currency"},
		{name: "currency missing", object: without("currency"), code: codeInvalidRequest, field: "currency", fieldCode: "required"},
		{name: "source missing", object: without("sourceAccountId"), code: codeInvalidRequest, field: "sourceAccountId", fieldCode: "required"},
		{name: "source malformed", object: with("sourceAccountId", "no spaces allowed"), code: codeInvalidRequest, field: "sourceAccountId", fieldCode: "invalid_account_id"},
		{name: "source equals destination", object: func(src, _ string) map[string]any { return valid(src, src) },
			code: codeInvalidRequest, field: "destinationAccountId", fieldCode: "same_account"},
		{name: "reference over 140 characters", object: with("reference", strings.Repeat("r", transfer.MaxReferenceLength+1)),
			code: codeInvalidRequest, field: "reference", fieldCode: "invalid_reference"},
		{name: "reference with a control character", object: with("reference", "bell\a"),
			code: codeInvalidRequest, field: "reference", fieldCode: "invalid_reference"},
		{name: "body over 16 KiB", object: with("reference", strings.Repeat("r", transfer.MaxBodyBytes)), code: codeBodyTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBook(t)
			c := tg.first
			src, dst := b.open(t, "src", "EUR", 10000), b.open(t, "dst", "EUR", 0)
			var body []byte
			if tc.object != nil {
				body = mustJSON(t, tc.object(src, dst))
			} else {
				body = tc.body(t, src, dst)
			}
			key := newKey()
			p := expectProblem(t, c.post(t, key, body), http.StatusBadRequest, tc.code)
			if tc.code == codeBodyTooLarge {
				if len(p.Errors) != 0 {
					t.Errorf("body too large: errors %+v, want none", p.Errors)
				}
			} else if !hasFieldError(p.Errors, tc.field, tc.fieldCode) {
				t.Errorf("errors %+v: want one for field %q with code %q", p.Errors, tc.field, tc.fieldCode)
			}
			expectNoRecord(t, c, key)
			for _, id := range []string{src, dst} {
				if a := getAccount(t, c, id); len(a.Entries) != 0 {
					t.Errorf("account %s has entries %+v, want none", id, a.Entries)
				}
			}
		})
	}
}

// json1e3 encodes as the JSON number 1e3 (1000 in exponent form).
type json1e3 struct{}

func (json1e3) MarshalJSON() ([]byte, error) { return []byte("1e3"), nil }

func hasFieldError(errs []fieldErrorView, field, code string) bool {
	for _, e := range errs {
		if e.Field == field && e.Code == code && e.Detail != "" {
			return true
		}
	}
	return false
}

// TestRejectedTransfers: a transfer the ledger rejects settles FAILED, with the
// debit refunded when the credit was the leg refused; its replay is the
// stored 422; balances end as they began.
func TestRejectedTransfers(t *testing.T) {
	t.Parallel()
	const amount = 4000
	cases := []struct {
		name string
		// accounts opens the case's accounts (or not) and returns them.
		accounts    func(t *testing.T, b *book) (src, dst string)
		failureCode string
		problemCode string
		// reversed: the debit committed and was refunded.
		reversed bool
		// withoutOwnership: the case runs only with AccountOwnership=off;
		// with enforce, the API refuses it before any workflow
		// (TestAccountOwnership).
		withoutOwnership bool
		// withOwnership: the case runs only with AccountOwnership=enforce.
		withOwnership bool
	}{
		{
			name: "insufficient funds",
			accounts: func(t *testing.T, b *book) (string, string) {
				return b.open(t, "src", "EUR", amount-1), b.open(t, "dst", "EUR", 0)
			},
			failureCode: "InsufficientFunds", problemCode: codeInsufficientFunds,
		},
		{
			name: "unknown destination",
			accounts: func(t *testing.T, b *book) (string, string) {
				return b.open(t, "src", "EUR", 10000), uniqueID("nobody")
			},
			failureCode: "AccountNotFound", problemCode: codeAccountNotFound, reversed: true, withoutOwnership: true,
		},
		{
			// An account that does not exist is not the caller's: its
			// refusal is told as any other caller's account's
			// (TestDestinationOracle).
			name: "unknown destination, ownership enforced",
			accounts: func(t *testing.T, b *book) (string, string) {
				return b.open(t, "src", "EUR", 10000), uniqueID("nobody")
			},
			failureCode: "DestinationUnavailable", problemCode: codeDestinationUnavailable, reversed: true, withOwnership: true,
		},
		{
			name: "unknown source",
			accounts: func(t *testing.T, b *book) (string, string) {
				return uniqueID("nobody"), b.open(t, "dst", "EUR", 0)
			},
			failureCode: "AccountNotFound", problemCode: codeAccountNotFound, withoutOwnership: true,
		},
		{
			name: "destination in another currency",
			accounts: func(t *testing.T, b *book) (string, string) {
				return b.open(t, "src", "EUR", 10000), b.open(t, "dst", "USD", 0)
			},
			failureCode: "CurrencyMismatch", problemCode: codeCurrencyMismatch, reversed: true,
		},
		{
			name: "closed destination",
			accounts: func(t *testing.T, b *book) (string, string) {
				dst := b.open(t, "dst", "EUR", 0)
				if err := tg.ledger.CloseAccount(context.Background(), dst); err != nil {
					t.Fatalf("close %s: %v", dst, err)
				}
				return b.open(t, "src", "EUR", 10000), dst
			},
			failureCode: "AccountClosed", problemCode: codeAccountClosed, reversed: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.withoutOwnership && tg.ownership {
				t.Skip("with AccountOwnership=enforce the case is told otherwise (TestAccountOwnership, TestDestinationOracle)")
			}
			if tc.withOwnership && !tg.ownership {
				t.Skip("the stack's AccountOwnership is off")
			}
			t.Parallel()
			b := newBook(t)
			c := tg.first
			src, dst := tc.accounts(t, b)
			req := transferRequest{SourceAccountID: src, DestinationAccountID: dst, Amount: amount, Currency: "EUR", Reference: tc.name}
			key := newKey()
			accepted := accept(t, c, key, req)
			done := awaitSettled(t, c, accepted.TransferID)
			if done.Status != statusFailed || done.Failure == nil {
				t.Fatalf("transfer settled as %+v, want FAILED with a failure", done)
			}
			if done.Failure.Code != tc.failureCode || done.Failure.Reversed != tc.reversed || done.SettledAt == "" {
				t.Errorf("failure %+v (settledAt %q): want code %s, reversed %v, settledAt set", *done.Failure, done.SettledAt, tc.failureCode, tc.reversed)
			}
			expectSameRequest(t, done, req)

			r := c.post(t, key, req.body(t))
			p := expectProblem(t, r, http.StatusUnprocessableEntity, tc.problemCode)
			expectReplayed(t, r, true)
			expectLocation(t, r, accepted.TransferID)
			switch {
			case p.Transfer == nil:
				t.Errorf("%s: no transfer in the problem", r)
			case p.Transfer.TransferID != accepted.TransferID || p.Transfer.Status != statusFailed ||
				p.Transfer.Failure == nil || p.Transfer.Failure.Reversed != tc.reversed:
				t.Errorf("%s: problem's transfer %+v, want %s FAILED reversed=%v", r, *p.Transfer, accepted.TransferID, tc.reversed)
			}

			// Balances are as opened (the book checks it at the end);
			// a reversed transfer shows its debit and its refund.
			if _, ok := b.opening[src]; ok {
				want := []leg(nil)
				if tc.reversed {
					want = []leg{{legDebit, -amount}, {legRefund, amount}}
				}
				a := getAccount(t, c, src)
				expectLegs(t, a, accepted.TransferID, want...)
				if a.Balance != b.opening[src].balance {
					t.Errorf("source balance %d, want %d", a.Balance, b.opening[src].balance)
				}
			}
			if _, ok := b.opening[dst]; ok {
				expectLegs(t, getAccount(t, c, dst), accepted.TransferID)
			}
			expectExecutions(t, c, key, accepted.TransferID)
		})
	}
}

// TestConcurrentDuplicates: 50 identical requests at once start one execution and move the
// money once; every answer is the same transfer.
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	const n = 50
	b := newBook(t)
	c := tg.first
	req := transferRequest{
		SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: b.open(t, "dst", "EUR", 0),
		Amount: 999, Currency: "EUR", Reference: "once",
	}
	key, body := newKey(), req.body(t)

	replies, errs := make([]reply, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			replies[i], errs[i] = c.send(context.Background(), http.MethodPost, "/transfers", http.Header{"Idempotency-Key": {key}}, body)
		})
	}
	close(start)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	var bad []reply
	for _, r := range replies {
		if r.status != http.StatusAccepted && r.status != http.StatusOK {
			bad = append(bad, r)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d answers are not 202 or 200:%s", len(bad), n, describe(bad))
	}
	ids := map[string]int{}
	fresh := 0
	for _, r := range replies {
		v := expectTransfer(t, r, r.status)
		expectLocation(t, r, v.TransferID)
		ids[v.TransferID]++
		if !r.replayed() {
			fresh++
		}
	}
	if len(ids) != 1 {
		t.Fatalf("answers name %d transfers %v, want one:%s", len(ids), ids, describe(replies))
	}
	// One request reserved the key; the others are replays. (The first
	// may itself be answered as a replay, when a duplicate started and
	// finished its execution before it did.)
	if fresh > 1 {
		t.Errorf("%d answers without Idempotent-Replayed, want at most 1", fresh)
	}
	var id string
	for k := range ids {
		id = k
	}
	if done := awaitSettled(t, c, id); done.Status != statusCompleted {
		t.Fatalf("transfer settled as %+v, want COMPLETED", done)
	}
	expectExecutions(t, c, key, id)
	src, dst := getAccount(t, c, req.SourceAccountID), getAccount(t, c, req.DestinationAccountID)
	expectLegs(t, src, id, leg{legDebit, -999})
	expectLegs(t, dst, id, leg{legCredit, 999})
	if src.Balance != 10000-999 || dst.Balance != 999 {
		t.Errorf("balances %d and %d, want %d and %d", src.Balance, dst.Balance, 10000-999, 999)
	}
}

// TestKeysAreScopedToTheCaller: keys belong to their caller. The same key
// from two callers, each debiting an account of their own and crediting
// the same account of the first, are two transfers, and neither caller
// can read the other's.
func TestKeysAreScopedToTheCaller(t *testing.T) {
	t.Parallel()
	second, reason, err := tg.second(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second == nil {
		t.Skip(reason)
	}
	first := tg.first
	b := newBook(t)
	dst := b.open(t, "dst", "EUR", 0)
	reqs := map[*caller]transferRequest{
		first:  {SourceAccountID: b.open(t, "src", "EUR", 10000), DestinationAccountID: dst, Amount: 250, Currency: "EUR", Reference: "shared key"},
		second: {SourceAccountID: b.openFor(t, second, "src", "EUR", 10000), DestinationAccountID: dst, Amount: 250, Currency: "EUR", Reference: "shared key"},
	}
	key := newKey()
	one, two := accept(t, first, key, reqs[first]), accept(t, second, key, reqs[second])
	if one.TransferID == two.TransferID {
		t.Fatalf("both callers got transfer %s", one.TransferID)
	}
	for _, tc := range []struct {
		owner, other *caller
		id           string
	}{{first, second, one.TransferID}, {second, first, two.TransferID}} {
		if done := awaitSettled(t, tc.owner, tc.id); done.Status != statusCompleted {
			t.Errorf("%s's transfer settled as %+v, want COMPLETED", tc.owner.name, done)
		}
		expectProblem(t, tc.other.get(t, "/transfers/"+tc.id), http.StatusNotFound, codeNotFound)

		r := tc.owner.post(t, key, reqs[tc.owner].body(t))
		if v := expectTransfer(t, r, http.StatusOK); v.TransferID != tc.id {
			t.Errorf("%s's replay: %s, want transfer %s", tc.owner.name, r, tc.id)
		}
		expectReplayed(t, r, true)
		expectExecutions(t, tc.owner, key, tc.id)

		src := getAccount(t, tc.owner, reqs[tc.owner].SourceAccountID)
		expectLegs(t, src, tc.id, leg{legDebit, -250})
		if src.Balance != 10000-250 {
			t.Errorf("%s's source holds %d, want %d", tc.owner.name, src.Balance, 10000-250)
		}
	}
	d := getAccount(t, first, dst)
	for _, id := range []string{one.TransferID, two.TransferID} {
		expectLegs(t, d, id, leg{legCredit, 250})
	}
	if d.Balance != 500 {
		t.Errorf("destination holds %d, want %d", d.Balance, 500)
	}
}

// TestNotFound: unknown resources are 404 problems.
func TestNotFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, path string }{
		{"unknown transfer", "/transfers/" + uuid.NewString()},
		{"unknown account", "/accounts/" + uniqueID("nobody")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			expectProblem(t, tg.first.get(t, tc.path), http.StatusNotFound, codeNotFound)
		})
	}
}

// TestDamagedTextRefused: a body whose text is not valid UTF-8 is refused
// with 400 and nothing is stored, even where the gateway hands the function
// the text with each bad byte replaced by U+FFFD (as API Gateway does for a
// non-binary media type): U+FFFD in a text field is refused. So two bodies
// that differ only in their invalid bytes never share a key's transfer.
func TestDamagedTextRefused(t *testing.T) {
	t.Parallel()
	c := tg.first
	bk := newBook(t)
	src, dst := bk.open(t, "src", "EUR", 1000), bk.open(t, "dst", "EUR", 0)
	body := func(reference string) []byte {
		return []byte(`{"sourceAccountId":"` + src + `","destinationAccountId":"` + dst + `","amount":5,"currency":"EUR","reference":"` + reference + `"}`)
	}
	key := newKey()
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"an invalid byte", body("rent \xff")},
		{"another invalid byte", body("rent \xfe")},
		{"a truncated sequence", body("rent \xe2\x82")},
		{"U+FFFD itself", body("rent \uFFFD")},
		{"an escaped U+FFFD", body(`rent \ufffd`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.post(t, key, tc.body)
			p := expectProblem(t, r, http.StatusBadRequest, codeInvalidRequest)
			if !hasFieldError(p.Errors, "reference", "invalid_reference") {
				t.Errorf("%s: no invalid_reference error", r)
			}
			expectNoRecord(t, c, key)
		})
	}
	expectExecutions(t, c, key)
}
