package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/transfer"
)

const bobScope = "iam:" + bob

// countCalls adds a middleware counting the calls that reach the
// transport to a client's options.
func countCalls(n *atomic.Int64) func(*middleware.Stack) error {
	return func(s *middleware.Stack) error {
		return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("count",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// counted is a handler of e whose DynamoDB and Step Functions calls are
// counted, with ownership enforced or not, remembering owners for a
// minute.
func (e *env) counted(enforce bool) (*api.Handler, *atomic.Int64) {
	n := &atomic.Int64{}
	db := dynamodb.New(e.db.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, countCalls(n)) })
	executions := sfn.New(e.sfn.Options(), func(o *sfn.Options) { o.APIOptions = append(o.APIOptions, countCalls(n)) })
	led, err := ledger.New(db, ledger.Config{LedgerTable: e.ledgerTable, IdempotencyTable: e.table})
	if err != nil {
		e.t.Fatal(err)
	}
	h := api.New(api.Config{StateMachineArn: e.arn, MaxAmount: 1000000, EnforceOwnership: enforce, Cursors: testCursors, OwnerCacheAge: time.Minute},
		reservation.NewStore(db, e.table), executions, led,
		func() string { e.ids++; return fmt.Sprintf("transfer-%d", e.ids) }, slog.New(slog.DiscardHandler))
	return h, n
}

func transferBody(source string) string {
	return fmt.Sprintf(`{"sourceAccountId":%q,"destinationAccountId":"acct-b","amount":250,"currency":"EUR"}`, source)
}

// A transfer is accepted from the owner of its source account only, and a
// refusal does not tell an account of another caller from one that does
// not exist. The reservation is one PutItem whatever the owner; the owner
// costs nothing when the container remembers it ("warm"), and one read
// sent alongside the reservation when it does not ("cold"):
//
//   - warm: a new key is 2 calls, a duplicate 1; a refusal is 1 read of
//     the key, with nothing stored;
//   - cold: a new key is 3 calls (the read alongside); a refusal settles
//     the record it made FAILED Forbidden at once, starts nothing, and
//     replays as 403.
func TestPostOwnership(t *testing.T) {
	tests := []struct {
		name    string
		enforce bool
		// warm: the handler has read the source account's owner before
		// (an earlier transfer of alice's from it, under another key).
		warm bool
		// prior is a request made before, by alice with key "k".
		prior      bool
		caller     string
		source     string
		wantStatus int
		wantCode   string
		// wantCalls is the exact count of remote calls, or at most
		// wantCalls when atMost: a duplicate does not wait for the read
		// sent alongside, which may not reach the service.
		wantCalls int64
		atMost    bool
		// wantRecord is the status of the caller's key "k" afterwards;
		// empty: no record.
		wantRecord reservation.Status
		// wantStarted: an execution was started for this request.
		wantStarted bool
	}{
		{name: "owner, warm", enforce: true, warm: true, caller: alice, source: "acct-a", wantStatus: 202, wantCalls: 2, wantRecord: reservation.StatusReserved, wantStarted: true},
		{name: "owner, cold", enforce: true, caller: alice, source: "acct-a", wantStatus: 202, wantCalls: 3, wantRecord: reservation.StatusReserved, wantStarted: true},
		{name: "owner's duplicate, warm", enforce: true, warm: true, prior: true, caller: alice, source: "acct-a", wantStatus: 202, wantCalls: 1, wantRecord: reservation.StatusInProgress},
		{name: "owner's duplicate, cold", enforce: true, prior: true, caller: alice, source: "acct-a", wantStatus: 202, wantCalls: 2, atMost: true, wantRecord: reservation.StatusInProgress},
		// Remembered or not, a foreign or unknown source gets the same
		// answer and leaves the same record: the reservation, settled
		// FAILED Forbidden (an outsider cannot tell an active account
		// from one the container never saw).
		{name: "another caller, warm", enforce: true, warm: true, caller: bob, source: "acct-a", wantStatus: 403, wantCode: api.CodeForbidden, wantCalls: 2, wantRecord: reservation.StatusFailed},
		{name: "another caller, cold", enforce: true, caller: bob, source: "acct-a", wantStatus: 403, wantCode: api.CodeForbidden, wantCalls: 3, wantRecord: reservation.StatusFailed},
		{name: "unknown account, warm", enforce: true, warm: true, caller: alice, source: "ghost", wantStatus: 403, wantCode: api.CodeForbidden, wantCalls: 2, wantRecord: reservation.StatusFailed},
		{name: "unknown account, cold", enforce: true, caller: alice, source: "ghost", wantStatus: 403, wantCode: api.CodeForbidden, wantCalls: 3, wantRecord: reservation.StatusFailed},
		// bob's "k" is bob's own key: alice's transfer under "k" is not
		// his to see, and his request is refused as any other.
		{name: "another caller with the owner's key, warm", enforce: true, warm: true, prior: true, caller: bob, source: "acct-a", wantStatus: 403, wantCode: api.CodeForbidden, wantCalls: 2, wantRecord: reservation.StatusFailed},
		{name: "ownership off", enforce: false, caller: bob, source: "acct-a", wantStatus: 202, wantCalls: 2, wantRecord: reservation.StatusReserved, wantStarted: true},
	}
	var refusals []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			var first string
			if tt.prior {
				first = transferOf(t, e.do(post(alice, "k", transferBody("acct-a")))).TransferID
				// Its workflow started (a RESERVED record would be
				// started again by the duplicate).
				e.setRecord(idempotency.RecordKey(aliceScope, "k"), reservation.StatusInProgress, "")
			}
			h, calls := e.counted(tt.enforce)
			e.handler = h
			if tt.warm {
				// The handler reads the owner once, for an earlier
				// transfer of alice's from the same account.
				e.do(post(alice, "warm", transferBody(tt.source)))
			}
			before := len(e.executions())
			calls.Store(0)
			req := post(tt.caller, "k", transferBody(tt.source))
			resp := e.do(req)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, resp.Body)
			}
			if n := calls.Load(); n != tt.wantCalls && !(tt.atMost && n >= 1 && n < tt.wantCalls) {
				t.Errorf("%d remote calls, want %d (at most: %t)", n, tt.wantCalls, tt.atMost)
			}
			scope := "iam:" + tt.caller
			rec, err := e.store.Get(context.Background(), scope, "k")
			switch {
			case tt.wantRecord == "" && !errors.Is(err, idempotency.ErrNotFound):
				t.Errorf("record of %s's key: %+v, %v; want none", tt.caller, rec, err)
			case tt.wantRecord != "" && (err != nil || rec.Status != tt.wantRecord):
				t.Errorf("record of %s's key: %+v, %v; want one %s", tt.caller, rec, err, tt.wantRecord)
			}
			if tt.wantCode != "" {
				p := problemOf(t, resp)
				if p.Code != tt.wantCode {
					t.Fatalf("problem %+v, want %s", p, tt.wantCode)
				}
				// The same answer but for the account the request named.
				refusals = append(refusals, fmt.Sprintf("%s|%s|transfer %t|location %t", p.Title,
					strings.ReplaceAll(p.Detail, tt.source, "SOURCE"), p.Transfer != nil, resp.Headers["Location"] != ""))
				if tt.wantRecord == "" {
					t.Fatalf("a refusal %+v stored nothing", p)
				} else {
					// The record made on the way answers it, now and on
					// every replay: FAILED Forbidden, settled, never
					// started.
					if p.Transfer == nil || p.Transfer.TransferID != rec.ResourceID || p.Transfer.Status != "FAILED" ||
						p.Transfer.Failure == nil || p.Transfer.Failure.Code != "Forbidden" {
						t.Fatalf("refusal %+v, want the failed transfer %s", p, rec.ResourceID)
					}
					if rec.ExpiresAt == 0 || rec.Pending != "" {
						t.Errorf("refused record %+v: want an expiry and no pending", rec)
					}
					replay := e.do(req)
					rp := problemOf(t, replay)
					if replay.StatusCode != http.StatusForbidden || rp.Code != api.CodeForbidden || replay.Headers[api.HeaderReplayed] != "true" ||
						rp.Transfer == nil || rp.Transfer.TransferID != rec.ResourceID {
						t.Fatalf("replay of a refused transfer: %d %v %+v", replay.StatusCode, replay.Headers, rp)
					}
				}
			} else if got := transferOf(t, resp).TransferID; tt.prior && got != first {
				t.Errorf("transfer %s, want the first %s", got, first)
			}
			started := len(e.executions()) - before
			if want := map[bool]int{true: 1, false: 0}[tt.wantStarted]; started != want {
				t.Errorf("%d executions started, want %d", started, want)
			}
		})
	}
	for _, f := range refusals[1:] {
		if f != refusals[0] {
			t.Errorf("refusals differ: %q and %q", refusals[0], f)
		}
	}
}

// A duplicate that finds the owner not remembered sends the read but does
// not wait for it; the read goes on, and the next request that needs the
// owner shares it or finds its answer remembered: one read in all, never
// one per request.
func TestOwnerReadOutlivesTheDuplicate(t *testing.T) {
	e := newEnv(t)
	e.do(post(alice, "k", transferBody("acct-a")))
	e.setRecord(idempotency.RecordKey(aliceScope, "k"), reservation.StatusInProgress, "")
	h, calls := e.counted(true)
	e.handler = h
	calls.Store(0)
	if resp := e.do(post(alice, "k", transferBody("acct-a"))); resp.StatusCode != http.StatusAccepted || resp.Headers[api.HeaderReplayed] != "true" {
		t.Fatalf("duplicate: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	for i, key := range []string{"k2", "k3"} {
		if resp := e.do(post(alice, key, transferBody("acct-a"))); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("new key %s: %d %s", key, resp.StatusCode, resp.Body)
		}
		// The duplicate's PutItem, the one read, and each new key's
		// PutItem and StartExecution.
		if n, want := calls.Load(), int64(2+2*(i+1)); n != want {
			t.Errorf("after new key %s: %d remote calls, want %d", key, n, want)
		}
	}
}

// A retry of a refused request whose first attempt reserved the key and
// was answered 503 before the record was settled finds the record still
// RESERVED: it is settled FAILED Forbidden then, never started, and the
// retry is answered 403 with it.
func TestRetryOfARefusalSettlesItsReservation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	req := post(bob, "k", transferBody("acct-a"))
	tr, _, err := transfer.Parse([]byte(req.Body), 1000000)
	if err != nil {
		t.Fatal(err)
	}
	// What the first attempt left: the reservation alone.
	canonical := tr.Canonical()
	if _, _, err := e.store.Reserve(ctx, reservation.Reservation{Scope: bobScope, Key: "k", Fingerprint: idempotency.Fingerprint(canonical),
		ResourceID: "transfer-first", Request: canonical,
		Attributes: ledger.RecordAttributes(tr.SourceAccountID, tr.DestinationAccountID, tr.Amount, tr.Currency)}); err != nil {
		t.Fatal(err)
	}
	h, calls := e.counted(true)
	e.handler = h
	// The container has read the owner since.
	e.do(post(alice, "warm", transferBody("acct-a")))
	before := len(e.executions())
	calls.Store(0)
	resp := e.do(req)
	p := problemOf(t, resp)
	if resp.StatusCode != http.StatusForbidden || p.Code != api.CodeForbidden || p.Transfer == nil || p.Transfer.TransferID != "transfer-first" ||
		p.Transfer.Status != "FAILED" || resp.Headers[api.HeaderReplayed] != "true" {
		t.Fatalf("retry: %d %+v", resp.StatusCode, p)
	}
	// The read of the key and the settlement.
	if n := calls.Load(); n != 2 {
		t.Errorf("%d remote calls, want 2", n)
	}
	rec, err := e.store.Get(ctx, bobScope, "k")
	if err != nil || rec.Status != reservation.StatusFailed {
		t.Fatalf("record %+v, %v; want FAILED", rec, err)
	}
	if n := len(e.executions()) - before; n != 0 {
		t.Errorf("%d executions started, want none", n)
	}
}

// A key whose record exists is answered from the record, whoever owns
// the account now: the record already answers it.
func TestReplayAnsweredFromTheRecordWhateverTheOwner(t *testing.T) {
	e := newEnv(t)
	first := transferOf(t, e.do(post(alice, "k", transferBody("acct-a"))))
	setOwner(t, e, "acct-a", bobScope)
	resp := e.do(post(alice, "k", transferBody("acct-a")))
	if resp.StatusCode != 202 || resp.Headers[api.HeaderReplayed] != "true" || transferOf(t, resp).TransferID != first.TransferID {
		t.Fatalf("replay: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	// A new key of alice's is refused now.
	if resp := e.do(post(alice, "k2", transferBody("acct-a"))); resp.StatusCode != 403 {
		t.Fatalf("new key after the owner changed: %d %s", resp.StatusCode, resp.Body)
	}
}

// A transfer the workflow stored as failed for its owner check replays as
// 403 forbidden, with the transfer.
func TestReplayOfAForbiddenTransfer(t *testing.T) {
	e := newEnv(t)
	first := transferOf(t, e.do(post(alice, "k", transferBody("acct-a"))))
	rec, err := e.store.Get(context.Background(), aliceScope, "k")
	if err != nil {
		t.Fatal(err)
	}
	failed := fmt.Sprintf(`{"transferId":%q,"status":"FAILED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","createdAt":%q,"settledAt":%q,"failure":{"code":"Forbidden","detail":"The caller may not debit account acct-a."}}`,
		first.TransferID, first.CreatedAt, first.CreatedAt)
	e.setRecord(rec.Key, reservation.StatusFailed, failed)
	resp := e.do(post(alice, "k", transferBody("acct-a")))
	p := problemOf(t, resp)
	if resp.StatusCode != http.StatusForbidden || p.Code != api.CodeForbidden || resp.Headers[api.HeaderReplayed] != "true" ||
		p.Transfer == nil || p.Transfer.TransferID != first.TransferID || p.Transfer.Failure == nil || p.Transfer.Failure.Code != "Forbidden" {
		t.Fatalf("replay: %d %v %+v", resp.StatusCode, resp.Headers, p)
	}
}

// The record carries the transfer's payload as attributes, which fence
// its legs.
func TestRecordCarriesThePayload(t *testing.T) {
	e := newEnv(t)
	e.do(post(alice, "k", transferBody("acct-a")))
	out, err := e.db.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table),
		Key:       map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: idempotency.RecordKey(aliceScope, "k")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Source      string `dynamodbav:"sourceAccountId"`
		Destination string `dynamodbav:"destinationAccountId"`
		Amount      int64  `dynamodbav:"amount"`
		Currency    string `dynamodbav:"currency"`
		Scope       string `dynamodbav:"scope"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &got); err != nil {
		t.Fatal(err)
	}
	if got.Source != "acct-a" || got.Destination != "acct-b" || got.Amount != 250 || got.Currency != "EUR" || got.Scope != aliceScope {
		t.Fatalf("record attributes %+v", got)
	}
}

// An account is shown to its owner only; to anyone else it does not exist.
func TestGetAccountOwnership(t *testing.T) {
	tests := []struct {
		name       string
		enforce    bool
		caller, id string
		wantStatus int
	}{
		{"owner", true, alice, "acct-a", 200},
		{"another caller", true, bob, "acct-a", 404},
		{"unknown account", true, bob, "ghost", 404},
		{"ownership off", false, bob, "acct-a", 200},
	}
	var notFound []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			h, calls := e.counted(tt.enforce)
			e.handler = h
			resp := e.do(get(tt.caller, "/accounts/{accountId}", "/accounts/"+tt.id, map[string]string{"accountId": tt.id}))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, resp.Body)
			}
			if tt.wantStatus == 404 {
				p := problemOf(t, resp)
				if p.Code != api.CodeNotFound {
					t.Fatalf("problem %+v", p)
				}
				if n := calls.Load(); n != 1 {
					t.Errorf("%d remote calls for a refusal, want the one GetItem", n)
				}
				var raw map[string]any
				if err := json.Unmarshal([]byte(resp.Body), &raw); err != nil {
					t.Fatal(err)
				}
				delete(raw, "instance")
				b, _ := json.Marshal(raw)
				notFound = append(notFound, string(b))
				return
			}
			var view api.AccountView
			if err := json.Unmarshal([]byte(resp.Body), &view); err != nil || view.AccountID != tt.id {
				t.Fatalf("account %s (%v)", resp.Body, err)
			}
		})
	}
	if len(notFound) == 2 && notFound[0] != notFound[1] {
		t.Errorf("another caller's account and an unknown one answer differently: %s and %s", notFound[0], notFound[1])
	}
}

// setOwner gives an account another owner, as an operator might.
func setOwner(t *testing.T, e *env, id, owner string) {
	t.Helper()
	acct, err := e.ledger.Account(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.ledgerTable),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "ACCOUNT#" + acct.ID},
			"sk": &types.AttributeValueMemberS{Value: "ACCOUNT"},
		},
		UpdateExpression:          aws.String("SET #owner = :owner"),
		ConditionExpression:       aws.String("attribute_exists(pk)"),
		ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":owner": &types.AttributeValueMemberS{Value: owner}},
	}); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			t.Fatalf("account %s not found", id)
		}
		t.Fatal(err)
	}
}
