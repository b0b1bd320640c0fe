package apigw_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
	"github.com/exactlyonce/transfers/internal/spec"
)

// specServer is a server of the API's routes with api/openapi.gateway.json as its
// definition.
func specServer(t *testing.T, inv *fakeInvoker, maxBody int64) *apigw.Server {
	t.Helper()
	def, err := os.ReadFile(spec.GatewayFile())
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, inv, apigw.Config{
		Routes: []apigw.Route{
			{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/accounts/{accountId}", FunctionName: "orchestrator"},
		},
		Definition:         def,
		MaxBodyBytes:       maxBody,
		IntegrationTimeout: 50 * time.Millisecond,
	})
}

// problem is the part of a problem document the tests read.
type problem struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Errors []struct {
		Field, Code, Detail string
	} `json:"errors"`
}

func decodeProblem(t *testing.T, status int, header http.Header, body []byte) problem {
	t.Helper()
	if ct := header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json (status %d, body %s)", ct, status, body)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if p.Code == "" || p.Type != "/problems/"+p.Code {
		t.Fatalf("problem %s without a code and its type", body)
	}
	return p
}

func TestGatewayResponsesFromDefinition(t *testing.T) {
	const valid = `{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR"}`
	ok := func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
		return []byte(`{"statusCode":202,"headers":{"Content-Type":"application/json","Location":"/transfers/t"},"body":"{\"transferId\":\"t\",\"status\":\"PENDING\",\"sourceAccountId\":\"a\",\"destinationAccountId\":\"b\",\"amount\":1,\"currency\":\"EUR\",\"createdAt\":\"2026-05-04T09:08:07.654Z\"}"}`), nil, nil
	}
	tests := []struct {
		name       string
		method     string
		path       string
		header     http.Header
		body       string
		respond    func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error)
		wantStatus int
		wantCode   string // "" when the function answers
		wantHeader string // a header the answer must carry
		invoked    bool
	}{
		{name: "unknown path", method: "GET", path: "/nothing", wantStatus: 404, wantCode: "not_found"},
		{name: "unknown method", method: "DELETE", path: "/transfers", wantStatus: 405, wantCode: "request_refused", wantHeader: "Allow"},
		{name: "malformed Authorization", method: "GET", path: "/transfers/t", header: http.Header{"Authorization": {"Basic eDp5"}},
			wantStatus: 403, wantCode: "missing_authentication_token"},
		{name: "body over the limit", method: "POST", path: "/transfers", header: http.Header{"Idempotency-Key": {"k"}},
			body: strings.Repeat(" ", 200) + valid, wantStatus: 413, wantCode: "body_too_large"},
		{name: "no Idempotency-Key", method: "POST", path: "/transfers", header: http.Header{"Content-Type": {"application/json"}},
			body: valid, wantStatus: 400, wantCode: "idempotency_key_missing"},
		{name: "body not JSON", method: "POST", path: "/transfers", header: http.Header{"Idempotency-Key": {"k"}, "Content-Type": {"application/json"}},
			body: `{"amount":`, wantStatus: 400, wantCode: "invalid_request"},
		{name: "body an array, no Content-Type", method: "POST", path: "/transfers", header: http.Header{"Idempotency-Key": {"k"}},
			body: `[1]`, wantStatus: 400, wantCode: "invalid_request"},
		{name: "text/plain body reaches the function", method: "POST", path: "/transfers",
			header: http.Header{"Idempotency-Key": {"k"}, "Content-Type": {"text/plain"}}, body: `[1]`, respond: ok, wantStatus: 202, invoked: true},
		{name: "valid request", method: "POST", path: "/transfers", header: http.Header{"Idempotency-Key": {"k"}, "Content-Type": {"application/json"}},
			body: valid, respond: ok, wantStatus: 202, invoked: true},
		{name: "function error", method: "GET", path: "/transfers/t", respond: func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return nil, &lambdarun.FunctionError{Type: "Panic", Message: "boom"}, nil
		}, wantStatus: 502, wantCode: "gateway_error", invoked: true},
		{name: "integration timeout", method: "GET", path: "/accounts/a", respond: func(ctx context.Context, _ []byte) ([]byte, *lambdarun.FunctionError, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}, wantStatus: 504, wantCode: "gateway_timeout", wantHeader: "Retry-After", invoked: true},
	}
	doc, err := spec.Source()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{respond: tc.respond}
			s := specServer(t, inv, 256)
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			for k, vs := range tc.header {
				req.Header[k] = vs
			}
			rec := serve(t, s, req)
			body := rec.Body.Bytes()
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, body)
			}
			if tc.wantCode != "" {
				p := decodeProblem(t, rec.Code, rec.Header(), body)
				if p.Code != tc.wantCode {
					t.Errorf("code %q, want %q: %s", p.Code, tc.wantCode, body)
				}
				if p.Status != 0 && p.Status != rec.Code {
					t.Errorf("problem status %d, response status %d", p.Status, rec.Code)
				}
				if tc.wantCode == "invalid_request" && (len(p.Errors) != 1 || p.Errors[0].Code != "malformed_json" || p.Errors[0].Detail == "") {
					t.Errorf("errors %+v, want one malformed_json with a detail", p.Errors)
				}
			}
			if tc.wantHeader != "" && rec.Header().Get(tc.wantHeader) == "" {
				t.Errorf("no %s header", tc.wantHeader)
			}
			if got := inv.calls() > 0; got != tc.invoked {
				t.Errorf("function invoked: %v, want %v", got, tc.invoked)
			}
			if err := doc.CheckResponse(tc.method, tc.path, rec.Code, rec.Header(), body); err != nil {
				t.Errorf("answer does not conform to the spec: %v", err)
			}
		})
	}
}

// TestRefusalsOfTheHTTPServer sends requests net/http refuses before any
// handler runs, on a real connection.
func TestRefusalsOfTheHTTPServer(t *testing.T) {
	tests := []struct {
		name       string
		request    string
		wantStatus int
	}{
		{name: "control character in a header value", wantStatus: 400,
			request: "POST /transfers HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\x01\r\nContent-Length: 2\r\n\r\n{}"},
		{name: "header name with a space", wantStatus: 400,
			request: "GET /transfers/t HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n"},
		{name: "headers over the limit", wantStatus: 431,
			request: "GET /transfers/t HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := specServer(t, &fakeInvoker{}, 0)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: s, MaxHeaderBytes: 1 << 10}
			go func() { _ = srv.Serve(s.Listener(ln)) }()
			t.Cleanup(func() { _ = srv.Close() })

			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.request); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			p := decodeProblem(t, resp.StatusCode, resp.Header, body)
			if p.Code != "request_refused" {
				t.Errorf("code %q, want request_refused", p.Code)
			}
		})
	}
}
