package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// fakeInvoker records invocations and answers with respond, by default a
// 200 response.
type fakeInvoker struct {
	respond func(ctx context.Context, payload []byte) ([]byte, *lambdarun.FunctionError, error)

	mu       sync.Mutex
	names    []string
	payloads [][]byte
}

func (f *fakeInvoker) InvokeFunction(ctx context.Context, name string, payload []byte) ([]byte, *lambdarun.FunctionError, error) {
	f.mu.Lock()
	f.names = append(f.names, name)
	f.payloads = append(f.payloads, append([]byte(nil), payload...))
	f.mu.Unlock()
	if f.respond == nil {
		return []byte(`{"statusCode":200,"body":"ok"}`), nil, nil
	}
	return f.respond(ctx, payload)
}

func (f *fakeInvoker) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.payloads)
}

// last returns the last event the function received, decoded as handlers
// decode it and as a generic map for the raw JSON shape.
func (f *fakeInvoker) last(t *testing.T) (events.APIGatewayProxyRequest, map[string]any) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.payloads) == 0 {
		t.Fatal("function was not invoked")
	}
	p := f.payloads[len(f.payloads)-1]
	var ev events.APIGatewayProxyRequest
	if err := json.Unmarshal(p, &ev); err != nil {
		t.Fatalf("event %s: %v", p, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(p, &raw); err != nil {
		t.Fatalf("event %s: %v", p, err)
	}
	return ev, raw
}

var fixedNow = time.Date(2026, 5, 4, 9, 8, 7, 654_000_000, time.UTC)

func newServer(t *testing.T, inv apigw.Invoker, cfg apigw.Config) *apigw.Server {
	t.Helper()
	if cfg.Routes == nil {
		cfg.Routes = []apigw.Route{
			{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers/{transferId}/events", FunctionName: "events"},
			{Method: "GET", Path: "/files/{path+}", FunctionName: "files"},
			{Method: "ANY", Path: "/{proxy+}", FunctionName: "fallback"},
			{Method: "GET", Path: "/", FunctionName: "root"},
		}
	}
	cfg.Invoker = inv
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return fixedNow }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := apigw.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	return s
}

func serve(t *testing.T, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestRequestEvent(t *testing.T) {
	inv := &fakeInvoker{}
	s := newServer(t, inv, apigw.Config{APIID: "abcde12345"})
	req := httptest.NewRequest("GET", "http://localhost:3000/Prod/transfers/t%2F1%20x?status=open&tag=a&tag=b&q=%C3%A9+1", nil)
	req.RemoteAddr = "192.0.2.10:51234"
	req.Header.Add("X-Tag", "first")
	req.Header.Add("X-Tag", "second")
	req.Header.Set("User-Agent", "transfers-cli/1.0")
	req.Header.Set("Authorization", "Bearer alice")
	rec := serve(t, s, req)
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	ev, raw := inv.last(t)
	if ev.Resource != "/transfers/{transferId}" || ev.Path != "/transfers/t/1 x" || ev.HTTPMethod != "GET" {
		t.Errorf("resource, path, method = %q, %q, %q", ev.Resource, ev.Path, ev.HTTPMethod)
	}
	if want := map[string]string{"transferId": "t/1 x"}; !reflect.DeepEqual(ev.PathParameters, want) {
		t.Errorf("pathParameters = %v, want %v", ev.PathParameters, want)
	}
	if want := map[string]string{"status": "open", "tag": "b", "q": "é 1"}; !reflect.DeepEqual(ev.QueryStringParameters, want) {
		t.Errorf("queryStringParameters = %v, want %v", ev.QueryStringParameters, want)
	}
	if want := map[string][]string{"status": {"open"}, "tag": {"a", "b"}, "q": {"é 1"}}; !reflect.DeepEqual(ev.MultiValueQueryStringParameters, want) {
		t.Errorf("multiValueQueryStringParameters = %v, want %v", ev.MultiValueQueryStringParameters, want)
	}
	if ev.Headers["X-Tag"] != "second" || !reflect.DeepEqual(ev.MultiValueHeaders["X-Tag"], []string{"first", "second"}) {
		t.Errorf("X-Tag = %q / %q, want last value and both values", ev.Headers["X-Tag"], ev.MultiValueHeaders["X-Tag"])
	}
	for k, want := range map[string]string{
		"Host": "localhost:3000", "X-Forwarded-For": "192.0.2.10", "X-Forwarded-Proto": "http",
		"X-Forwarded-Port": "3000", "User-Agent": "transfers-cli/1.0", "Authorization": "Bearer alice",
	} {
		if ev.Headers[k] != want || len(ev.MultiValueHeaders[k]) != 1 {
			t.Errorf("header %s = %q (%q), want %q", k, ev.Headers[k], ev.MultiValueHeaders[k], want)
		}
	}
	if !strings.HasPrefix(ev.Headers["X-Amzn-Trace-Id"], "Root=1-") {
		t.Errorf("X-Amzn-Trace-Id = %q", ev.Headers["X-Amzn-Trace-Id"])
	}
	for _, k := range []string{"stageVariables", "body"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	if v, ok := raw["isBase64Encoded"]; !ok || v != false {
		t.Errorf("isBase64Encoded = %v (present %v), want false", v, ok)
	}

	rc := ev.RequestContext
	if rc.AccountID != "123456789012" || rc.Stage != "Prod" || rc.APIID != "abcde12345" ||
		rc.ResourcePath != "/transfers/{transferId}" || rc.HTTPMethod != "GET" ||
		rc.Path != "/Prod/transfers/t/1 x" || rc.Protocol != "HTTP/1.1" ||
		rc.DomainName != "localhost:3000" || rc.DomainPrefix != "localhost" {
		t.Errorf("requestContext = %+v", rc)
	}
	if !regexp.MustCompile(`^[a-z2-7]{6}$`).MatchString(rc.ResourceID) {
		t.Errorf("resourceId = %q", rc.ResourceID)
	}
	if !uuidRE.MatchString(rc.RequestID) || rec.Header().Get("x-amzn-RequestId") != rc.RequestID {
		t.Errorf("requestId = %q, response x-amzn-RequestId = %q", rc.RequestID, rec.Header().Get("x-amzn-RequestId"))
	}
	if len(rc.ExtendedRequestID) != 16 || rec.Header().Get("x-amz-apigw-id") != rc.ExtendedRequestID {
		t.Errorf("extendedRequestId = %q", rc.ExtendedRequestID)
	}
	if rc.RequestTime != "04/May/2026:09:08:07 +0000" || rc.RequestTimeEpoch != fixedNow.UnixMilli() {
		t.Errorf("requestTime = %q, epoch = %d", rc.RequestTime, rc.RequestTimeEpoch)
	}
	id := rc.Identity
	if id.SourceIP != "192.0.2.10" || id.UserAgent != "transfers-cli/1.0" {
		t.Errorf("identity source = %+v", id)
	}
	if id.UserArn != "arn:aws:iam::123456789012:user/alice" || id.AccountID != "123456789012" ||
		id.User != id.Caller || !regexp.MustCompile(`^AIDA[A-Z2-7]{17}$`).MatchString(id.User) ||
		!regexp.MustCompile(`^AKIA[A-Z2-7]{16}$`).MatchString(id.AccessKey) {
		t.Errorf("identity = %+v", id)
	}
	rawID := raw["requestContext"].(map[string]any)["identity"].(map[string]any)
	for _, k := range []string{"cognitoIdentityPoolId", "cognitoIdentityId", "cognitoAuthenticationType", "cognitoAuthenticationProvider", "principalOrgId"} {
		if v, ok := rawID[k]; !ok || v != nil {
			t.Errorf("identity.%s = %v (present %v), want null", k, v, ok)
		}
	}
}

func TestRequestEventNulls(t *testing.T) {
	inv := &fakeInvoker{}
	s := newServer(t, inv, apigw.Config{})
	rec := serve(t, s, httptest.NewRequest("GET", "/transfers", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	_, raw := inv.last(t)
	for _, k := range []string{"queryStringParameters", "multiValueQueryStringParameters", "pathParameters", "stageVariables", "body"} {
		if v, ok := raw[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	rc := raw["requestContext"].(map[string]any)
	if rc["path"] != "/transfers" {
		t.Errorf("requestContext.path = %v, want /transfers (called without the stage)", rc["path"])
	}
	rec = serve(t, s, httptest.NewRequest("GET", "/Prod/transfers", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	_, raw = inv.last(t)
	if p := raw["requestContext"].(map[string]any)["path"]; p != "/Prod/transfers" {
		t.Errorf("requestContext.path = %v, want /Prod/transfers (called with the stage)", p)
	}
}

func TestRouting(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		target     string
		wantStatus int
		wantFn     string
		wantRes    string
		wantParams map[string]string
		wantAllow  string
	}{
		{"literal", "GET", "/transfers", 200, "orchestrator", "/transfers", nil, ""},
		{"literal POST", "POST", "/transfers", 200, "orchestrator", "/transfers", nil, ""},
		{"with stage", "GET", "/Prod/transfers", 200, "orchestrator", "/transfers", nil, ""},
		{"trailing slash", "GET", "/transfers/", 200, "orchestrator", "/transfers", nil, ""},
		{"param beats greedy", "GET", "/transfers/t-1", 200, "orchestrator", "/transfers/{transferId}", map[string]string{"transferId": "t-1"}, ""},
		{"encoded param", "GET", "/transfers/a%2Fb%3Fc", 200, "orchestrator", "/transfers/{transferId}", map[string]string{"transferId": "a/b?c"}, ""},
		{"literal below param", "GET", "/transfers/t-1/events", 200, "events", "/transfers/{transferId}/events", map[string]string{"transferId": "t-1"}, ""},
		{"greedy fallback", "GET", "/transfers/t-1/other", 200, "fallback", "/{proxy+}", map[string]string{"proxy": "transfers/t-1/other"}, ""},
		{"greedy any method", "DELETE", "/accounts/a1", 200, "fallback", "/{proxy+}", map[string]string{"proxy": "accounts/a1"}, ""},
		{"greedy decoded", "GET", "/files/a/b%20c/d%2Fe", 200, "files", "/files/{path+}", map[string]string{"path": "a/b c/d/e"}, ""},
		{"root", "GET", "/", 200, "root", "/", nil, ""},
		{"stage root", "GET", "/Prod", 200, "root", "/", nil, ""},
		{"method not allowed", "DELETE", "/transfers", 405, "", "", nil, "GET, POST"},
		{"method not allowed on root", "POST", "/", 405, "", "", nil, "GET"},
		{"not found empty segment", "GET", "/transfers//x", 404, "", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			s := newServer(t, inv, apigw.Config{})
			rec := serve(t, s, httptest.NewRequest(tc.method, tc.target, nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus != 200 {
				if inv.calls() != 0 {
					t.Errorf("function invoked for a %d", rec.Code)
				}
				if got := rec.Header().Get("Allow"); got != tc.wantAllow {
					t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
				}
				return
			}
			ev, _ := inv.last(t)
			if inv.names[0] != tc.wantFn || ev.Resource != tc.wantRes || !reflect.DeepEqual(ev.PathParameters, tc.wantParams) {
				t.Errorf("routed to %s %s %v, want %s %s %v", inv.names[0], ev.Resource, ev.PathParameters, tc.wantFn, tc.wantRes, tc.wantParams)
			}
		})
	}
}

func TestNotFoundWithoutProxy(t *testing.T) {
	inv := &fakeInvoker{}
	s := newServer(t, inv, apigw.Config{Routes: []apigw.Route{{Method: "GET", Path: "/transfers", FunctionName: "f"}}})
	rec := serve(t, s, httptest.NewRequest("GET", "/accounts", nil))
	assertGatewayError(t, rec, 404, "NotFoundException", "Not Found")
	if inv.calls() != 0 {
		t.Error("function invoked")
	}
}

func assertGatewayError(t *testing.T, rec *httptest.ResponseRecorder, status int, errorType, message string) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d", rec.Code, status)
	}
	if got := rec.Header().Get("x-amzn-ErrorType"); got != errorType {
		t.Errorf("x-amzn-ErrorType = %q, want %q", got, errorType)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 1 || body["message"] != message {
		t.Errorf("body = %s (%v), want {\"message\": %q}", rec.Body, err, message)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name     string
		auth     []string
		wantUser string // "" for 403
	}{
		{"no header is the local user", nil, "local"},
		{"bearer name", []string{"Bearer alice"}, "alice"},
		{"scheme is case-insensitive", []string{"bearer bob"}, "bob"},
		{"all allowed characters", []string{"Bearer a+b=c,d.e@f_g-h9"}, "a+b=c,d.e@f_g-h9"},
		{"64 characters", []string{"Bearer " + strings.Repeat("x", 64)}, strings.Repeat("x", 64)},
		{"65 characters", []string{"Bearer " + strings.Repeat("x", 65)}, ""},
		{"empty header", []string{""}, ""},
		{"bearer without name", []string{"Bearer "}, ""},
		{"basic auth", []string{"Basic YWxpY2U6cHc="}, ""},
		{"sigv4", []string{"AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260504/us-east-1/execute-api/aws4_request, SignedHeaders=host, Signature=abc"}, ""},
		{"slash in name", []string{"Bearer team/alice"}, ""},
		{"space in name", []string{"Bearer alice smith"}, ""},
		{"two headers", []string{"Bearer alice", "Bearer bob"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			s := newServer(t, inv, apigw.Config{AccountID: "111122223333"})
			req := httptest.NewRequest("GET", "/transfers", nil)
			for _, a := range tc.auth {
				req.Header.Add("Authorization", a)
			}
			rec := serve(t, s, req)
			if tc.wantUser == "" {
				assertGatewayError(t, rec, 403, "MissingAuthenticationTokenException", "Missing Authentication Token")
				if inv.calls() != 0 {
					t.Error("function invoked without authentication")
				}
				return
			}
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			ev, _ := inv.last(t)
			id := ev.RequestContext.Identity
			want := apigw.NewCaller("111122223333", tc.wantUser)
			if id.UserArn != "arn:aws:iam::111122223333:user/"+tc.wantUser || id.UserArn != want.ARN ||
				id.User != want.UserID || id.Caller != want.UserID || id.AccessKey != want.AccessKeyID ||
				id.AccountID != "111122223333" {
				t.Errorf("identity = %+v, want %+v", id, want)
			}
		})
	}
}

func TestCallerIDsAreStable(t *testing.T) {
	a1, a2 := apigw.NewCaller("123456789012", "alice"), apigw.NewCaller("123456789012", "alice")
	b := apigw.NewCaller("123456789012", "bob")
	other := apigw.NewCaller("999999999999", "alice")
	if a1 != a2 {
		t.Errorf("same name gives %+v and %+v", a1, a2)
	}
	if a1.UserID == b.UserID || a1.AccessKeyID == b.AccessKeyID {
		t.Errorf("alice and bob share ids: %+v %+v", a1, b)
	}
	if a1.UserID == other.UserID {
		t.Errorf("alice has the same id in two accounts: %+v %+v", a1, other)
	}
}

func TestBinaryBodies(t *testing.T) {
	payload := []byte{0x00, 0xff, 0x10, 'a', 0x80}
	tests := []struct {
		name        string
		contentType string
		body        []byte
		wantBase64  bool
	}{
		{"octet-stream", "application/octet-stream", payload, true},
		{"wildcard with ~1 escape", "image/png", payload, true},
		{"parameters ignored", "application/octet-stream; foo=bar", payload, true},
		{"json stays text", "application/json", []byte(`{"amount":100}`), false},
		{"no content type", "", []byte(`plain`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			s := newServer(t, inv, apigw.Config{BinaryMediaTypes: []string{"application/octet-stream", "image~1*"}})
			req := httptest.NewRequest("POST", "/transfers", bytes.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if rec := serve(t, s, req); rec.Code != 200 {
				t.Fatalf("status %d", rec.Code)
			}
			ev, _ := inv.last(t)
			if ev.IsBase64Encoded != tc.wantBase64 {
				t.Fatalf("isBase64Encoded = %v, want %v", ev.IsBase64Encoded, tc.wantBase64)
			}
			got := []byte(ev.Body)
			if tc.wantBase64 {
				var err error
				if got, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					t.Fatalf("body %q: %v", ev.Body, err)
				}
			}
			if !bytes.Equal(got, tc.body) {
				t.Errorf("body = %q, want %q", got, tc.body)
			}
		})
	}
}

func TestResponseMapping(t *testing.T) {
	tests := []struct {
		name        string
		response    string
		wantStatus  int
		wantBody    string
		wantHeaders map[string][]string
	}{
		{"status, headers and body",
			`{"statusCode":201,"headers":{"X-One":"1","Set-Cookie":"ignored=1","Location":"/transfers/t-1"},"multiValueHeaders":{"Set-Cookie":["a=1","b=2"]},"body":"{\"id\":\"t-1\"}"}`,
			201, `{"id":"t-1"}`,
			map[string][]string{"X-One": {"1"}, "Set-Cookie": {"a=1", "b=2"}, "Location": {"/transfers/t-1"}, "Content-Type": {"application/json"}}},
		{"content type kept", `{"statusCode":200,"headers":{"content-type":"text/plain"},"body":"hi"}`,
			200, "hi", map[string][]string{"Content-Type": {"text/plain"}}},
		{"base64 body decoded", `{"statusCode":200,"headers":{"Content-Type":"image/png"},"body":"AP8QYYA=","isBase64Encoded":true}`,
			200, "\x00\xff\x10a\x80", map[string][]string{"Content-Type": {"image/png"}}},
		{"no body", `{"statusCode":204}`, 204, "", nil},
		{"reserved headers remapped", `{"statusCode":200,"headers":{"Content-Length":"999","Server":"fn"},"body":"x"}`,
			200, "x", map[string][]string{"X-Amzn-Remapped-Content-Length": {"999"}, "X-Amzn-Remapped-Server": {"fn"}, "Content-Length": {"1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{respond: func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
				return []byte(tc.response), nil, nil
			}}
			rec := serve(t, newServer(t, inv, apigw.Config{}), httptest.NewRequest("GET", "/transfers", nil))
			if rec.Code != tc.wantStatus || rec.Body.String() != tc.wantBody {
				t.Errorf("response = %d %q, want %d %q", rec.Code, rec.Body, tc.wantStatus, tc.wantBody)
			}
			for k, want := range tc.wantHeaders {
				if got := rec.Header().Values(k); !reflect.DeepEqual(got, want) {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestIntegrationErrors(t *testing.T) {
	tests := []struct {
		name       string
		respond    func(ctx context.Context, payload []byte) ([]byte, *lambdarun.FunctionError, error)
		wantStatus int
		wantMsg    string
		wantLog    string
	}{
		{"function error", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return nil, &lambdarun.FunctionError{Type: "InsufficientFunds", Message: "balance too low"}, nil
		}, 502, "Internal server error", "errorType=InsufficientFunds"},
		{"not JSON", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return []byte(`"just a string"`), nil, nil
		}, 502, "Internal server error", "malformed Lambda proxy response"},
		{"no statusCode", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return []byte(`{"body":"x"}`), nil, nil
		}, 502, "Internal server error", "statusCode is missing"},
		{"bad statusCode", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return []byte(`{"statusCode":42}`), nil, nil
		}, 502, "Internal server error", "not an HTTP status"},
		{"wrong header type", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return []byte(`{"statusCode":200,"headers":{"X":1}}`), nil, nil
		}, 502, "Internal server error", "malformed Lambda proxy response"},
		{"bad base64", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return []byte(`{"statusCode":200,"body":"%%%","isBase64Encoded":true}`), nil, nil
		}, 502, "Internal server error", "not valid base64"},
		{"invoke failure", func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
			return nil, nil, &lambdarun.NotFoundError{Ref: "orchestrator"}
		}, 500, "Internal server error", "function not found"},
		{"timeout honoring ctx", func(ctx context.Context, _ []byte) ([]byte, *lambdarun.FunctionError, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}, 504, "Endpoint request timed out", "integration timed out"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			inv := &fakeInvoker{respond: tc.respond}
			s := newServer(t, inv, apigw.Config{
				IntegrationTimeout: 20 * time.Millisecond,
				Logger:             slog.New(slog.NewTextHandler(&logs, nil)),
			})
			rec := serve(t, s, httptest.NewRequest("GET", "/transfers", nil))
			assertGatewayError(t, rec, tc.wantStatus, "InternalServerErrorException", tc.wantMsg)
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log does not mention %q:\n%s", tc.wantLog, logs.String())
			}
		})
	}
}

func TestIntegrationTimeoutDoesNotWaitForInvoker(t *testing.T) {
	release := make(chan struct{})
	returned := make(chan struct{})
	inv := &fakeInvoker{respond: func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
		defer close(returned)
		<-release // ignores ctx
		return []byte(`{"statusCode":200}`), nil, nil
	}}
	t.Cleanup(func() {
		close(release)
		<-returned
	})
	s := newServer(t, inv, apigw.Config{IntegrationTimeout: 20 * time.Millisecond})
	rec := serve(t, s, httptest.NewRequest("GET", "/transfers", nil))
	assertGatewayError(t, rec, 504, "InternalServerErrorException", "Endpoint request timed out")
}

func TestRequestTooLarge(t *testing.T) {
	tests := []struct {
		name          string
		body          io.Reader
		contentLength int64
		wantStatus    int
	}{
		{"at the limit", strings.NewReader(strings.Repeat("x", 16)), 16, 200},
		{"over the limit", strings.NewReader(strings.Repeat("x", 17)), 17, 413},
		{"over the limit without length", io.MultiReader(strings.NewReader(strings.Repeat("x", 40))), -1, 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			s := newServer(t, inv, apigw.Config{MaxBodyBytes: 16})
			req := httptest.NewRequest("POST", "/transfers", tc.body)
			req.ContentLength = tc.contentLength
			rec := serve(t, s, req)
			if tc.wantStatus == 413 {
				assertGatewayError(t, rec, 413, "RequestTooLongException", "Request Too Long")
				if inv.calls() != 0 {
					t.Error("function invoked")
				}
				return
			}
			if rec.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tc.wantStatus)
			}
		})
	}
}

func TestNewServerErrors(t *testing.T) {
	inv := &fakeInvoker{}
	tests := []struct {
		name   string
		routes []apigw.Route
	}{
		{"bad method", []apigw.Route{{Method: "FETCH", Path: "/a", FunctionName: "f"}}},
		{"relative path", []apigw.Route{{Method: "GET", Path: "a", FunctionName: "f"}}},
		{"greedy not last", []apigw.Route{{Method: "GET", Path: "/{proxy+}/a", FunctionName: "f"}}},
		{"mixed segment", []apigw.Route{{Method: "GET", Path: "/a-{id}", FunctionName: "f"}}},
		{"repeated parameter", []apigw.Route{{Method: "GET", Path: "/{id}/{id}", FunctionName: "f"}}},
		{"empty segment", []apigw.Route{{Method: "GET", Path: "/a//b", FunctionName: "f"}}},
		{"duplicate", []apigw.Route{{Method: "GET", Path: "/a", FunctionName: "f"}, {Method: "get", Path: "/a", FunctionName: "g"}}},
		{"variable siblings", []apigw.Route{{Method: "GET", Path: "/t/{id}", FunctionName: "f"}, {Method: "GET", Path: "/t/{transferId}/x", FunctionName: "g"}}},
		{"param and greedy siblings", []apigw.Route{{Method: "GET", Path: "/{id}", FunctionName: "f"}, {Method: "GET", Path: "/{proxy+}", FunctionName: "g"}}},
		{"no function", []apigw.Route{{Method: "GET", Path: "/a"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := apigw.NewServer(apigw.Config{Routes: tc.routes, Invoker: inv}); !errors.Is(err, apigw.ErrInvalidRoute) {
				t.Errorf("NewServer = %v, want ErrInvalidRoute", err)
			}
		})
	}
	if _, err := apigw.NewServer(apigw.Config{Routes: []apigw.Route{{Method: "GET", Path: "/a", FunctionName: "f"}}}); !errors.Is(err, apigw.ErrInvalidRoute) {
		t.Errorf("NewServer without invoker = %v, want ErrInvalidRoute", err)
	}
}

// TestWithLambdaRuntime runs real handlers through lambdarun.
func TestWithLambdaRuntime(t *testing.T) {
	var reg lambdarun.Registry
	err := reg.Register(
		&lambdarun.Function{Name: "get-transfer", Handler: lambda.NewHandler(
			func(_ context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				body, _ := json.Marshal(map[string]string{
					"transferId": req.PathParameters["transferId"],
					"caller":     req.RequestContext.Identity.UserArn,
				})
				return events.APIGatewayProxyResponse{
					StatusCode:        200,
					Headers:           map[string]string{"Content-Type": "application/json"},
					MultiValueHeaders: map[string][]string{"X-Seen": {"1", "2"}},
					Body:              string(body),
				}, nil
			})},
		&lambdarun.Function{Name: "broken", Handler: lambda.NewHandler(
			func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				panic("nil ledger")
			})},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newServer(t, &reg, apigw.Config{Routes: []apigw.Route{
		{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "get-transfer"},
		{Method: "POST", Path: "/transfers", FunctionName: "broken"},
	}}))
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/Prod/transfers/t%201", nil)
	req.Header.Set("Authorization", "Bearer carol")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"caller":"arn:aws:iam::123456789012:user/carol","transferId":"t 1"}` {
		t.Errorf("GET = %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Values("X-Seen"); !reflect.DeepEqual(got, []string{"1", "2"}) {
		t.Errorf("X-Seen = %q", got)
	}

	resp, err = srv.Client().Post(srv.URL+"/transfers", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || string(body) != `{"message": "Internal server error"}` {
		t.Errorf("POST to panicking function = %d %s", resp.StatusCode, body)
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
