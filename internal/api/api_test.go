package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/idempotency"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/ledger"
	"github.com/exactlyonce/transfers/internal/local/ddbtest"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
	"github.com/exactlyonce/transfers/internal/reservation"
	"github.com/exactlyonce/transfers/internal/spec"
	"github.com/exactlyonce/transfers/internal/transfer"
)

func TestMain(m *testing.M) { ddbtest.Main(m) }

const (
	alice      = "arn:aws:iam::123456789012:user/alice"
	aliceScope = "iam:" + alice
	bob        = "arn:aws:iam::123456789012:user/bob"
	body       = `{"sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR"}`
)

// env is an API handler on fresh tables and a local Step Functions
// endpoint whose machine succeeds at once without touching the record, so
// records stay where a test puts them.
type env struct {
	t       *testing.T
	handler *api.Handler
	store   *reservation.Store
	ledger  *ledger.Ledger
	db      *dynamodb.Client
	table   string
	// ledgerTable holds the accounts.
	ledgerTable string
	sfn         *sfn.Client
	arn         string
	ids         int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := ddbtest.Client(t)
	tables := ddbtest.Tables(t, db)
	srv := sfnlocal.New(sfnlocal.Config{Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddStateMachine(sfnlocal.StateMachine{Name: "Transfers", Definition: []byte(`{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`)}); err != nil {
		t.Fatal(err)
	}
	endpoint, err := srv.Listen("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, db: db, table: tables["IdempotencyTable"], ledgerTable: tables["LedgerTable"], arn: srv.StateMachineARN("Transfers")}
	e.sfn = sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: db.Options().Credentials})
	e.store = reservation.NewStore(db, e.table)
	if e.ledger, err = ledger.New(db, ledger.Config{LedgerTable: tables["LedgerTable"], IdempotencyTable: e.table}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ledger.OpenAccount(context.Background(), "acct-a", aliceScope, "EUR", 5000); err != nil {
		t.Fatal(err)
	}
	e.handler = e.newHandler(e.sfn, e.store)
	return e
}

// sfnClient is a client without retries, for endpoints that fail.
func sfnClient(db *dynamodb.Client, endpoint string) *sfn.Client {
	return sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: db.Options().Credentials, RetryMaxAttempts: 1})
}

func (e *env) newHandler(executions api.Executions, records api.Records) *api.Handler {
	return api.New(api.Config{StateMachineArn: e.arn, MaxAmount: 1000000, EnforceOwnership: true, Cursors: testCursors}, records, executions, e.ledger,
		func() string { e.ids++; return fmt.Sprintf("transfer-%d", e.ids) }, slog.New(slog.DiscardHandler))
}

func post(caller, key, b string) events.APIGatewayProxyRequest {
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return events.APIGatewayProxyRequest{
		Resource: "/transfers", Path: "/transfers", HTTPMethod: "POST", Headers: headers, Body: b,
		RequestContext: events.APIGatewayProxyRequestContext{Path: "/transfers", Identity: events.APIGatewayRequestIdentity{UserArn: caller}},
	}
}

func get(caller, resource, path string, params map[string]string) events.APIGatewayProxyRequest {
	return events.APIGatewayProxyRequest{
		Resource: resource, Path: path, HTTPMethod: "GET", PathParameters: params,
		RequestContext: events.APIGatewayProxyRequestContext{Path: path, Identity: events.APIGatewayRequestIdentity{UserArn: caller}},
	}
}

func (e *env) do(req events.APIGatewayProxyRequest) events.APIGatewayProxyResponse {
	e.t.Helper()
	resp, err := e.handler.Handle(context.Background(), req)
	if err != nil {
		e.t.Fatalf("Handle: %v", err)
	}
	conforms(e.t, req, resp)
	return resp
}

// conforms fails the test unless the response is one api/openapi.yaml
// declares for the request's route.
func conforms(t *testing.T, req events.APIGatewayProxyRequest, resp events.APIGatewayProxyResponse) {
	t.Helper()
	doc, err := spec.Source()
	if err != nil {
		t.Fatal(err)
	}
	header := make(http.Header)
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			header.Add(k, v)
		}
	}
	b := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			t.Fatalf("response body is not base64: %v", err)
		}
	}
	path := req.Resource
	if path == "" {
		path = req.Path
	}
	if err := doc.CheckResponse(req.HTTPMethod, path, resp.StatusCode, header, b); err != nil {
		t.Errorf("response does not conform to api/openapi.yaml: %v\n%s", err, resp.Body)
	}
}

func problemOf(t *testing.T, resp events.APIGatewayProxyResponse) api.Problem {
	t.Helper()
	if ct := resp.Headers["Content-Type"]; ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d, body %s)", ct, resp.StatusCode, resp.Body)
	}
	var p api.Problem
	if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
		t.Fatal(err)
	}
	if p.Status != resp.StatusCode || p.Code == "" || p.Title == "" {
		t.Fatalf("problem %+v for status %d", p, resp.StatusCode)
	}
	return p
}

// answeredTransfer is the transfer an answer carries: the problem's, when
// wantCode is the problem code it must have (with a transfer), else the
// body's.
func answeredTransfer(t *testing.T, resp events.APIGatewayProxyResponse, wantCode string) transfer.Transfer {
	t.Helper()
	if wantCode == "" {
		return transferOf(t, resp)
	}
	p := problemOf(t, resp)
	if p.Code != wantCode || p.Transfer == nil {
		t.Fatalf("problem %+v", p)
	}
	return *p.Transfer
}

func transferOf(t *testing.T, resp events.APIGatewayProxyResponse) transfer.Transfer {
	t.Helper()
	var tr transfer.Transfer
	if err := json.Unmarshal([]byte(resp.Body), &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// setRecord moves a record to status with response, as the workflow does.
func (e *env) setRecord(recordKey string, status reservation.Status, response string) {
	e.t.Helper()
	update := expression.Set(expression.Name(reservation.AttrStatus), expression.Value(status))
	if response != "" {
		update = update.Set(expression.Name(reservation.AttrResponse), expression.Value(response))
	}
	expr, err := expression.NewBuilder().WithUpdate(update).Build()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), Key: map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: recordKey}},
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) executions() []string {
	e.t.Helper()
	out, err := e.sfn.ListExecutions(context.Background(), &sfn.ListExecutionsInput{StateMachineArn: aws.String(e.arn)})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, x := range out.Executions {
		names = append(names, aws.ToString(x.Name))
	}
	return names
}

func TestPostNewTransfer(t *testing.T) {
	e := newEnv(t)
	req := post(alice, "k1", body)
	req.RequestContext.Path = "/v1/transfers"
	resp := e.do(req)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	tr := transferOf(t, resp)
	if tr.Status != transfer.StatusPending || tr.Amount != 250 || tr.TransferID != "transfer-1" {
		t.Fatalf("transfer %+v", tr)
	}
	if loc := resp.Headers["Location"]; loc != "/v1/transfers/transfer-1" {
		t.Errorf("Location %q, want the stage-prefixed path", loc)
	}
	if _, ok := resp.Headers[api.HeaderReplayed]; ok {
		t.Error("a new transfer is marked replayed")
	}
	rec, err := e.store.Get(context.Background(), aliceScope, "k1")
	if err != nil || rec.Status != reservation.StatusReserved {
		t.Fatalf("record %+v, %v", rec, err)
	}
	out, err := e.sfn.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(strings.Replace(e.arn, ":stateMachine:", ":execution:", 1) + ":transfer-1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := transfer.NewWorkflowInput(rec)
	if aws.ToString(out.Input) != string(want) {
		t.Fatalf("execution input %s, want %s", aws.ToString(out.Input), want)
	}
}

func TestPostReplays(t *testing.T) {
	completed := `{"transferId":"transfer-1","status":"COMPLETED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","reference":"","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z"}`
	failed := `{"transferId":"transfer-1","status":"FAILED","sourceAccountId":"acct-a","destinationAccountId":"acct-b","amount":250,"currency":"EUR","reference":"","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z","failure":{"code":"InsufficientFunds","detail":"balance too low","reversed":false}}`
	tests := []struct {
		name       string
		status     reservation.Status
		response   string
		wantStatus int
		wantState  string
		wantCode   string
	}{
		{"reserved", reservation.StatusReserved, "", 202, transfer.StatusPending, ""},
		{"in progress", reservation.StatusInProgress, "", 202, transfer.StatusPending, ""},
		{"reconciling", reservation.StatusReconciling, "", 202, transfer.StatusPending, ""},
		{"completed", reservation.StatusCompleted, completed, 200, transfer.StatusCompleted, ""},
		{"failed", reservation.StatusFailed, failed, 422, transfer.StatusFailed, "insufficient_funds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if r := e.do(post(alice, "k", body)); r.StatusCode != 202 {
				t.Fatalf("first request: %d %s", r.StatusCode, r.Body)
			}
			rec, _ := e.store.Get(context.Background(), aliceScope, "k")
			e.setRecord(rec.Key, tt.status, tt.response)

			resp := e.do(post(alice, "k", body))
			if resp.StatusCode != tt.wantStatus || resp.Headers[api.HeaderReplayed] != "true" {
				t.Fatalf("status %d replayed %q: %s", resp.StatusCode, resp.Headers[api.HeaderReplayed], resp.Body)
			}
			tr := answeredTransfer(t, resp, tt.wantCode)
			if tr.TransferID != "transfer-1" || tr.Status != tt.wantState {
				t.Fatalf("transfer %+v", tr)
			}
			if n := len(e.executions()); n != 1 {
				t.Fatalf("%d executions, want 1", n)
			}
		})
	}
}

func TestPostKeyReused(t *testing.T) {
	e := newEnv(t)
	e.do(post(alice, "k", body))
	resp := e.do(post(alice, "k", strings.Replace(body, "250", "251", 1)))
	if p := problemOf(t, resp); resp.StatusCode != 422 || p.Code != api.CodeKeyReused {
		t.Fatalf("status %d problem %+v", resp.StatusCode, p)
	}
	rec, _ := e.store.Get(context.Background(), aliceScope, "k")
	if !strings.Contains(rec.Request, `"amount":250`) {
		t.Fatalf("stored request changed: %s", rec.Request)
	}
}

func TestPostInvalid(t *testing.T) {
	e := newEnv(t)
	conflicting := post(alice, "", body)
	conflicting.MultiValueHeaders = map[string][]string{"idempotency-key": {"a", "b"}}
	badBase64 := post(alice, "k-b64", "%%%")
	badBase64.IsBase64Encoded = true
	tests := []struct {
		name       string
		req        events.APIGatewayProxyRequest
		wantStatus int
		wantCode   string
	}{
		{"no caller", post("", "k", body), 403, api.CodeUnauthenticated},
		{"missing key", post(alice, "", body), 400, api.CodeKeyMissing},
		{"long key", post(alice, strings.Repeat("k", 256), body), 400, api.CodeKeyMalformed},
		{"control character in key", post(alice, "k\x01", body), 400, api.CodeKeyMalformed},
		{"conflicting key headers", conflicting, 400, api.CodeKeyMalformed},
		{"invalid body", post(alice, "k-invalid", `{"amount":0}`), 400, api.CodeInvalidRequest},
		{"not base64", badBase64, 400, api.CodeInvalidRequest},
		{"body too large", post(alice, "k-large", strings.Repeat(" ", 17<<10)+body), 400, api.CodeBodyTooLarge},
		{"text/plain body", withContentType(post(alice, "k-text", body), "text/plain"), 415, api.CodeUnsupportedMediaType},
		{"octet-stream body", withContentType(post(alice, "k-octets", body), "application/octet-stream"), 415, api.CodeUnsupportedMediaType},
		{"form body", withContentType(post(alice, "k-form", body), "application/x-www-form-urlencoded"), 415, api.CodeUnsupportedMediaType},
		{"another JSON media type", withContentType(post(alice, "k-patch", body), "application/merge-patch+json"), 415, api.CodeUnsupportedMediaType},
		{"malformed Content-Type", withContentType(post(alice, "k-ct", body), "application/json; charset"), 415, api.CodeUnsupportedMediaType},
		{"unknown route", events.APIGatewayProxyRequest{HTTPMethod: "DELETE", Resource: "/transfers", Path: "/transfers",
			RequestContext: events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: alice}}}, 404, api.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(tt.req)
			if p := problemOf(t, resp); resp.StatusCode != tt.wantStatus || p.Code != tt.wantCode {
				t.Fatalf("status %d problem %+v, want %d %s", resp.StatusCode, p, tt.wantStatus, tt.wantCode)
			}
		})
	}
	if names := e.executions(); len(names) != 0 {
		t.Fatalf("executions %v started for invalid requests", names)
	}
	out, err := e.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil || out.Count != 0 {
		t.Fatalf("%d records stored for invalid requests (%v)", out.Count, err)
	}
}

// withContentType sets the request's Content-Type header.
func withContentType(req events.APIGatewayProxyRequest, ct string) events.APIGatewayProxyRequest {
	req.Headers["Content-Type"] = ct
	return req
}

func TestPostMediaTypes(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name        string
		contentType string
	}{
		{"absent, read as JSON", ""},
		{"application/json", "application/json"},
		{"with charset", "application/json; charset=utf-8"},
		{"in another case", "Application/JSON"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := post(alice, fmt.Sprintf("k-media-%d", i), body)
			if tt.contentType != "" {
				req = withContentType(req, tt.contentType)
			}
			if resp := e.do(req); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
		})
	}
}

func TestPostValidationListsFields(t *testing.T) {
	e := newEnv(t)
	resp := e.do(post(alice, "k", `{"sourceAccountId":"a","destinationAccountId":"a","amount":1.5,"currency":"eur"}`))
	p := problemOf(t, resp)
	fields := map[string]bool{}
	for _, f := range p.Errors {
		fields[f.Field] = true
	}
	for _, f := range []string{"destinationAccountId", "amount", "currency"} {
		if !fields[f] {
			t.Errorf("no error for %s in %+v", f, p.Errors)
		}
	}
}

func TestPostBase64Body(t *testing.T) {
	e := newEnv(t)
	req := post(alice, "k", base64.StdEncoding.EncodeToString([]byte(body)))
	req.IsBase64Encoded = true
	if resp := e.do(req); resp.StatusCode != 202 {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
}

func TestPostStepFunctionsUnavailable(t *testing.T) {
	e := newEnv(t)
	down := e.newHandler(sfnClient(e.db, "http://127.0.0.1:1"), e.store)
	req := post(alice, "k", body)
	resp, err := down.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	conforms(t, req, resp)
	if p := problemOf(t, resp); resp.StatusCode != 503 || p.Code != api.CodeUnavailable || resp.Headers["Retry-After"] == "" {
		t.Fatalf("status %d headers %v problem %+v", resp.StatusCode, resp.Headers, p)
	}
	rec, err := e.store.Get(context.Background(), aliceScope, "k")
	if err != nil || rec.Status != reservation.StatusReserved {
		t.Fatalf("record after failed start: %+v, %v; want it kept RESERVED", rec, err)
	}
	// The client's retry starts the same transfer.
	resp = e.do(post(alice, "k", body))
	if resp.StatusCode != 202 || transferOf(t, resp).TransferID != rec.ResourceID {
		t.Fatalf("retry: %d %s", resp.StatusCode, resp.Body)
	}
	if names := e.executions(); len(names) != 1 || names[0] != rec.ResourceID {
		t.Fatalf("executions %v, want [%s]", names, rec.ResourceID)
	}
}

func TestPostDynamoDBUnavailable(t *testing.T) {
	e := newEnv(t)
	db := dynamodb.New(e.db.Options(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.RetryMaxAttempts = 1
	})
	down := e.newHandler(e.sfn, reservation.NewStore(db, e.table))
	req := post(alice, "k", body)
	resp, err := down.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	conforms(t, req, resp)
	if p := problemOf(t, resp); resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || p.Code != api.CodeUnavailable {
		t.Fatalf("status %d problem %+v", resp.StatusCode, p)
	}
	if names := e.executions(); len(names) != 0 {
		t.Fatalf("executions %v started without a reservation", names)
	}
}

func TestPostAfterExecutionClosed(t *testing.T) {
	e := newEnv(t)
	// A reservation whose execution ran and closed without settling it
	// (the reaper's case): the replay's StartExecution gets
	// ExecutionAlreadyExists and the answer comes from the record.
	rec, _, err := e.store.Reserve(context.Background(), reservation.Reservation{
		Scope: aliceScope, Key: "k", Fingerprint: idempotency.Fingerprint([]byte(canonical(t))),
		ResourceID: "closed-1", Request: []byte(canonical(t)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sfn.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(e.arn), Name: aws.String("closed-1"), Input: aws.String(`{"other":"input"}`),
	}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, e, "closed-1")
	resp := e.do(post(alice, "k", body))
	if resp.StatusCode != 202 || resp.Headers[api.HeaderReplayed] != "true" || transferOf(t, resp).TransferID != rec.ResourceID {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
}

func canonical(t *testing.T) string {
	t.Helper()
	r, err := transfer.ParseRequest([]byte(body), 1000000)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Canonical())
}

func waitClosed(t *testing.T, e *env, name string) {
	t.Helper()
	arn := strings.Replace(e.arn, ":stateMachine:", ":execution:", 1) + ":" + name
	for range 1000 {
		out, err := e.sfn.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != "RUNNING" {
			return
		}
	}
	t.Fatalf("execution %s still running", name)
}

func TestGetTransfer(t *testing.T) {
	e := newEnv(t)
	id := transferOf(t, e.do(post(alice, "k", body))).TransferID
	tests := []struct {
		name       string
		caller, id string
		wantStatus int
	}{
		{"owner", alice, id, 200},
		{"another caller", bob, id, 404},
		{"unknown", alice, "nope", 404},
		{"longer than an execution name", alice, strings.Repeat("x", 81), 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(get(tt.caller, "/transfers/{transferId}", "/transfers/"+tt.id, map[string]string{"transferId": tt.id}))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
			}
			if tt.wantStatus == 200 && transferOf(t, resp).TransferID != id {
				t.Fatalf("body %s", resp.Body)
			}
			if tt.wantStatus == 404 {
				problemOf(t, resp)
			}
		})
	}
}

func TestGetAccount(t *testing.T) {
	e := newEnv(t)
	resp := e.do(get(alice, "/accounts/{accountId}", "/accounts/acct-a", map[string]string{"accountId": "acct-a"}))
	var view api.AccountView
	if err := json.Unmarshal([]byte(resp.Body), &view); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
	if view.AccountID != "acct-a" || view.Balance != 5000 || view.Currency != "EUR" || view.Entries == nil {
		t.Fatalf("account %+v", view)
	}
	for _, id := range []string{"ghost", strings.Repeat("a", 300), "a\x01b"} {
		resp = e.do(get(alice, "/accounts/{accountId}", "/accounts/"+id, map[string]string{"accountId": id}))
		if p := problemOf(t, resp); resp.StatusCode != 404 || p.Code != api.CodeNotFound {
			t.Fatalf("account %q: %d %+v", id, resp.StatusCode, p)
		}
	}
}

// A remote call that would outlive the function fails in time for a 503.
func TestPostAnswersBeforeTheDeadline(t *testing.T) {
	e := newEnv(t)
	// A listener that accepts connections and never answers: Step
	// Functions hanging.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	hung := e.newHandler(sfnClient(e.db, "http://"+ln.Addr().String()), e.store)
	deadline := time.Now().Add(2 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	req := post(alice, "k", body)
	resp, err := hung.Handle(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	conforms(t, req, resp)
	if time.Now().After(deadline) {
		t.Fatalf("answered after the function's deadline")
	}
	if resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" {
		t.Fatalf("status %d: %s", resp.StatusCode, resp.Body)
	}
}

// A transfer the reaper resumed is RESERVED under its next attempt until
// that attempt's execution starts: the client's retry starts it, under the
// attempt's own name (Step Functions keeps the first run's name), with the
// input the reaper would send.
func TestRetryStartsTheResumedAttempt(t *testing.T) {
	e := newEnv(t)
	down := e.newHandler(sfnClient(e.db, "http://127.0.0.1:1"), e.store)
	if resp, err := down.Handle(context.Background(), post(alice, "k", body)); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("first request with Step Functions down: %v %d", err, resp.StatusCode)
	}
	rec, err := e.store.Get(context.Background(), aliceScope, "k")
	if err != nil {
		t.Fatal(err)
	}
	expr, err := expression.NewBuilder().WithUpdate(expression.Set(expression.Name(reservation.AttrAttempt), expression.Value(2))).Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.table), Key: map[string]types.AttributeValue{reservation.AttrKey: &types.AttributeValueMemberS{Value: rec.Key}},
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}); err != nil {
		t.Fatal(err)
	}

	resp := e.do(post(alice, "k", body))
	if resp.StatusCode != http.StatusAccepted || transferOf(t, resp).TransferID != rec.ResourceID {
		t.Fatalf("retry: %d %s", resp.StatusCode, resp.Body)
	}
	want := transfer.ExecutionName(rec.ResourceID, 2)
	if names := e.executions(); len(names) != 1 || names[0] != want {
		t.Fatalf("executions %v, want [%s]", names, want)
	}
	out, err := e.sfn.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(strings.Replace(e.arn, ":stateMachine:", ":execution:", 1) + ":" + want),
	})
	if err != nil {
		t.Fatal(err)
	}
	var in transfer.WorkflowInput
	if err := json.Unmarshal([]byte(aws.ToString(out.Input)), &in); err != nil || in.Attempt != 2 || in.TransferID != rec.ResourceID {
		t.Errorf("input %s (%v): want attempt 2 of %s", aws.ToString(out.Input), err, rec.ResourceID)
	}
}
