package apigateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/apigateway"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

func TestMain(m *testing.M) { idemtest.Main(m) }

// request is an API request, sent as a REST or an HTTP API event.
type request struct {
	method, path, body string
	base64             bool
	headers            map[string]string
	multi              map[string][]string // REST's multiValueHeaders
	caller             string              // an IAM user ARN, "" for none
}

// response is a REST or HTTP API response.
type response struct {
	status  int
	headers map[string]string
	body    string
}

// settings are the Config of either API.
type settings struct {
	header      string
	optional    bool
	scope       func(caller string) (string, error) // nil: the default
	unavailable time.Duration
}

type handler = func(context.Context, request) (response, error)

// api is REST or HTTP behind one signature, so that every case runs on
// both.
type api struct {
	name string
	wrap func(i *idempotency.Idempotency, s settings, fn handler) handler
}

var apis = []api{
	{"REST", func(i *idempotency.Idempotency, s settings, fn handler) handler {
		c := apigateway.Config[events.APIGatewayProxyRequest]{Header: s.header, OptionalKey: s.optional, UnavailableRetryAfter: s.unavailable}
		if s.scope != nil {
			c.Scope = func(r events.APIGatewayProxyRequest) (string, error) {
				return s.scope(r.RequestContext.Identity.UserArn)
			}
		}
		h := apigateway.REST(i, c, func(ctx context.Context, r events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			resp, err := fn(ctx, request{method: r.HTTPMethod, path: r.Path, body: r.Body, base64: r.IsBase64Encoded, headers: r.Headers, caller: r.RequestContext.Identity.UserArn})
			return events.APIGatewayProxyResponse{StatusCode: resp.status, Headers: resp.headers, Body: resp.body}, err
		})
		return func(ctx context.Context, r request) (response, error) {
			ev := events.APIGatewayProxyRequest{
				HTTPMethod: r.method, Path: r.path, Body: r.body, IsBase64Encoded: r.base64,
				Headers: r.headers, MultiValueHeaders: r.multi,
				RequestContext: events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: r.caller}},
			}
			resp, err := h(ctx, ev)
			return response{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}, err
		}
	}},
	{"HTTP", func(i *idempotency.Idempotency, s settings, fn handler) handler {
		c := apigateway.Config[events.APIGatewayV2HTTPRequest]{Header: s.header, OptionalKey: s.optional, UnavailableRetryAfter: s.unavailable}
		if s.scope != nil {
			c.Scope = func(r events.APIGatewayV2HTTPRequest) (string, error) { return s.scope(httpCaller(r)) }
		}
		h := apigateway.HTTP(i, c, func(ctx context.Context, r events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			resp, err := fn(ctx, request{method: r.RequestContext.HTTP.Method, path: r.RawPath, body: r.Body, base64: r.IsBase64Encoded, headers: r.Headers, caller: httpCaller(r)})
			return events.APIGatewayV2HTTPResponse{StatusCode: resp.status, Headers: resp.headers, Body: resp.body}, err
		})
		return func(ctx context.Context, r request) (response, error) {
			// HTTP APIs pass header names in lower case.
			headers := map[string]string{}
			for k, v := range r.headers {
				headers[strings.ToLower(k)] = v
			}
			ev := events.APIGatewayV2HTTPRequest{
				RawPath: r.path, Body: r.body, IsBase64Encoded: r.base64, Headers: headers,
				RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.method, Path: r.path}},
			}
			if r.caller != "" {
				ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					IAM: &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: r.caller},
				}
			}
			resp, err := h(ctx, ev)
			return response{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}, err
		}
	}},
}

func httpCaller(r events.APIGatewayV2HTTPRequest) string {
	if a := r.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return a.IAM.UserARN
	}
	return ""
}

const (
	alice = "arn:aws:iam::111122223333:user/alice"
	bob   = "arn:aws:iam::111122223333:user/bob"
)

// aliceScope is the default scope of alice's requests.
const aliceScope = `iam "` + alice + `"`

func post(key, body string) request {
	r := request{method: "POST", path: "/transfers", body: body, caller: alice, headers: map[string]string{"Content-Type": "application/json"}}
	if key != "" {
		r.headers["Idempotency-Key"] = key
	}
	return r
}

// harness is one case's world: a memory store, a fake clock, and a
// handler that counts its runs.
type harness struct {
	t     *testing.T
	api   api
	store *idemtest.MemoryStore
	clock *idemtest.Clock
	cfg   idempotency.Config
	s     settings
	runs  int
	// answer, when set, is the handler's answer to its run-th run, else
	// 201 with the transfer t-<run>.
	answer func(run int, r request) (response, error)
	// during, when set, runs inside the handler, once.
	during func(ctx context.Context)
	idem   *idempotency.Idempotency
}

func (h *harness) handle(ctx context.Context, r request) (response, error) {
	h.runs++
	if d := h.during; d != nil {
		h.during = nil
		d(ctx)
	}
	if h.answer != nil {
		return h.answer(h.runs, r)
	}
	id := fmt.Sprintf("t-%d", h.runs)
	return response{status: 201, headers: map[string]string{"Content-Type": "application/json", "Location": "/transfers/" + id}, body: `{"id":"` + id + `"}`}, nil
}

// send sends r through the wrapped handler, made anew with h.s and h.cfg.
func (h *harness) send(ctx context.Context, r request) (response, error) {
	h.t.Helper()
	if h.idem == nil {
		cfg := h.cfg
		cfg.Store, cfg.Clock = h.store, h.clock.Now
		if cfg.Lease == 0 {
			cfg.Lease = time.Minute
		}
		i, err := idempotency.New(cfg)
		if err != nil {
			h.t.Fatal(err)
		}
		h.idem = i
	}
	return h.api.wrap(h.idem, h.s, h.handle)(ctx, r)
}

// ok sends r and fails the test on an error.
func (h *harness) ok(r request) response {
	h.t.Helper()
	resp, err := h.send(h.t.Context(), r)
	if err != nil {
		h.t.Fatalf("handler error: %v", err)
	}
	return resp
}

// calls checks the store calls of each operation since the last check,
// and that there were no others.
func (h *harness) calls(want map[idemtest.Op]int) {
	h.t.Helper()
	total := 0
	for op, n := range want {
		total += n
		if got := h.store.Calls(op); got != n {
			h.t.Errorf("%s calls = %d, want %d", op, got, n)
		}
	}
	if got := h.store.TotalCalls(); got != total {
		h.t.Errorf("store calls = %d, want %d", got, total)
	}
	h.store.ResetCalls()
}

func (h *harness) wantRuns(n int) {
	h.t.Helper()
	if h.runs != n {
		h.t.Errorf("handler runs = %d, want %d", h.runs, n)
	}
}

func (h *harness) wantRecord(scope, key string, status idempotency.EntryStatus, count int64) idempotency.Entry {
	h.t.Helper()
	e, ok := h.store.Peek(scope, key)
	if !ok {
		h.t.Fatalf("no record of (%s, %s)", scope, key)
	}
	if e.Status != status || e.LeaseCount != count {
		h.t.Errorf("record = %s lease %d, want %s lease %d", e.Status, e.LeaseCount, status, count)
	}
	return e
}

// wantTransfer checks a response of the default handler.
func wantTransfer(t *testing.T, resp response, id string, replayed bool) {
	t.Helper()
	if resp.status != 201 || resp.body != `{"id":"`+id+`"}` || resp.headers["Location"] != "/transfers/"+id {
		t.Errorf("response = %+v, want 201 of %s", resp, id)
	}
	if got := resp.headers[apigateway.ReplayedHeader]; (got == "true") != replayed || (!replayed && got != "") {
		t.Errorf("%s = %q, want replayed %v", apigateway.ReplayedHeader, got, replayed)
	}
}

// wantProblem checks one of the wrapper's own answers.
func wantProblem(t *testing.T, resp response, status int, code, retryAfter string) {
	t.Helper()
	if resp.status != status || resp.headers["Content-Type"] != apigateway.ProblemContentType {
		t.Errorf("response = %+v, want %d %s", resp, status, apigateway.ProblemContentType)
	}
	if got := resp.headers["Retry-After"]; got != retryAfter {
		t.Errorf("Retry-After = %q, want %q", got, retryAfter)
	}
	var p apigateway.Problem
	if err := json.Unmarshal([]byte(resp.body), &p); err != nil {
		t.Fatalf("problem body %q: %v", resp.body, err)
	}
	if p.Status != status || p.Code != code || p.Type != "about:blank" || p.Title == "" || p.Detail == "" {
		t.Errorf("problem = %+v, want status %d code %s", p, status, code)
	}
}

var (
	errLedger    = errors.New("ledger unavailable")
	errThrottled = errors.New("throttled")
)

var cases = []struct {
	name string
	only string // "REST" or "HTTP": the case runs on that API only
	run  func(t *testing.T, h *harness)
}{
	{"new request runs and stores the response", "", func(t *testing.T, h *harness) {
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-1", false)
		h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1, idemtest.OpSettle: 1})
		e := h.wantRecord(aliceScope, "k1", idempotency.EntryCompleted, 1)
		if want := idempotency.Fingerprint(apigateway.CanonicalRequest("POST", "/transfers", []byte(`{"amount":5}`))); e.Fingerprint != want {
			t.Errorf("fingerprint %s, want that of the method, path and body", e.Fingerprint)
		}
		var stored struct {
			StatusCode int               `json:"statusCode"`
			Headers    map[string]string `json:"headers"`
			Body       string            `json:"body"`
		}
		if err := json.Unmarshal(e.Output, &stored); err != nil || stored.StatusCode != 201 || stored.Body != `{"id":"t-1"}` || stored.Headers["Location"] != "/transfers/t-1" {
			t.Errorf("stored output %s (%v), want the response", e.Output, err)
		}
	}},
	{"duplicate is replayed with the stored response", "", func(t *testing.T, h *harness) {
		h.ok(post("k1", `{"amount":5}`))
		h.store.ResetCalls()
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-1", true)
		h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1})
		h.wantRuns(1)
	}},
	{"cached duplicate costs no call", "", func(t *testing.T, h *harness) {
		h.cfg.CacheSize = 8
		h.ok(post("k1", `{"amount":5}`))
		h.store.ResetCalls()
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-1", true)
		h.calls(nil)
	}},
	{"header name in any case", "", func(t *testing.T, h *harness) {
		r := post("", `{"amount":5}`)
		r.headers["idempotency-key"] = "k1"
		h.ok(r)
		r = post("", `{"amount":5}`)
		r.headers["IDEMPOTENCY-KEY"] = "k1"
		wantTransfer(t, h.ok(r), "t-1", true)
	}},
	{"configured header", "", func(t *testing.T, h *harness) {
		h.s.header = "X-Request-Key"
		r := post("", `{"amount":5}`)
		r.headers["x-request-key"] = "k1"
		wantTransfer(t, h.ok(r), "t-1", false)
		h.wantRecord(aliceScope, "k1", idempotency.EntryCompleted, 1)
		h.store.ResetCalls()
		wantProblem(t, h.ok(post("k1", `{"amount":5}`)), 400, apigateway.CodeKeyMissing, "")
		h.calls(nil)
	}},
	{"missing key is 400 and runs nothing", "", func(t *testing.T, h *harness) {
		wantProblem(t, h.ok(post("", `{"amount":5}`)), 400, apigateway.CodeKeyMissing, "")
		r := post("", `{"amount":5}`)
		r.headers["Idempotency-Key"] = ""
		wantProblem(t, h.ok(r), 400, apigateway.CodeKeyMissing, "")
		h.calls(nil)
		h.wantRuns(0)
	}},
	{"missing key runs without idempotency when optional", "", func(t *testing.T, h *harness) {
		h.s.optional = true
		wantTransfer(t, h.ok(post("", `{"amount":5}`)), "t-1", false)
		wantTransfer(t, h.ok(post("", `{"amount":5}`)), "t-2", false)
		h.calls(nil)
	}},
	{"malformed key is 400 even when optional", "", func(t *testing.T, h *harness) {
		h.s.optional = true
		for _, key := range []string{strings.Repeat("k", 256), "a\x01b", "clé"} {
			wantProblem(t, h.ok(post(key, `{"amount":5}`)), 400, apigateway.CodeKeyMalformed, "")
		}
		h.calls(nil)
		h.wantRuns(0)
	}},
	{"key sent twice with two values is 400", "REST", func(t *testing.T, h *harness) {
		r := post("k1", `{"amount":5}`)
		r.multi = map[string][]string{"Idempotency-Key": {"k1", "k2"}}
		wantProblem(t, h.ok(r), 400, apigateway.CodeKeyMalformed, "")
		r.multi = map[string][]string{"Idempotency-Key": {"k1"}, "idempotency-key": {"k2"}}
		wantProblem(t, h.ok(r), 400, apigateway.CodeKeyMalformed, "")
		h.calls(nil)
		r.multi = map[string][]string{"Idempotency-Key": {"k1", "k1"}}
		wantTransfer(t, h.ok(r), "t-1", false)
	}},
	{"in flight is 409 with Retry-After rounded up", "", func(t *testing.T, h *harness) {
		for _, c := range []struct {
			key     string
			advance time.Duration
			want    string
		}{
			{"k1", 20 * time.Second, "40"},
			{"k2", 20500 * time.Millisecond, "40"},
			{"k3", time.Minute - time.Millisecond, "1"},
		} {
			var inner response
			h.during = func(ctx context.Context) {
				h.clock.Advance(c.advance)
				h.store.ResetCalls()
				var err error
				if inner, err = h.send(ctx, post(c.key, `{"amount":5}`)); err != nil {
					t.Errorf("duplicate: %v", err)
				}
				h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1})
			}
			h.ok(post(c.key, `{"amount":5}`))
			wantProblem(t, inner, 409, apigateway.CodeKeyInProgress, c.want)
		}
		h.wantRuns(3)
	}},
	{"another body, path or method is 422", "", func(t *testing.T, h *harness) {
		h.ok(post("k1", `{"amount":5}`))
		h.store.ResetCalls()
		other := []request{post("k1", `{"amount":6}`), post("k1", `{"amount":5}`), post("k1", `{"amount":5}`)}
		other[1].path = "/transfers/x"
		other[2].method = "PUT"
		for _, r := range other {
			wantProblem(t, h.ok(r), 422, apigateway.CodeKeyReused, "")
		}
		h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 3})
		h.wantRuns(1)
	}},
	{"a base64 body is fingerprinted decoded", "", func(t *testing.T, h *harness) {
		h.ok(post("k1", `{"amount":5}`))
		r := post("k1", base64.StdEncoding.EncodeToString([]byte(`{"amount":5}`)))
		r.base64 = true
		wantTransfer(t, h.ok(r), "t-1", true)
	}},
	{"5xx releases the key and a retry runs again", "", func(t *testing.T, h *harness) {
		h.answer = func(run int, r request) (response, error) {
			if run == 1 {
				return response{status: 503, headers: map[string]string{"Retry-After": "7"}, body: "ledger down"}, nil
			}
			return response{status: 201, body: "done"}, nil
		}
		resp := h.ok(post("k1", `{"amount":5}`))
		if resp.status != 503 || resp.body != "ledger down" || resp.headers["Retry-After"] != "7" {
			t.Errorf("response = %+v, want the handler's 503", resp)
		}
		h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 1, idemtest.OpRelease: 1})
		h.wantRecord(aliceScope, "k1", idempotency.EntryReleased, 1)
		if resp := h.ok(post("k1", `{"amount":5}`)); resp.status != 201 || resp.headers[apigateway.ReplayedHeader] != "" {
			t.Errorf("retry = %+v, want a new 201", resp)
		}
		h.wantRecord(aliceScope, "k1", idempotency.EntryCompleted, 2)
		h.wantRuns(2)
	}},
	{"4xx is settled and replayed", "", func(t *testing.T, h *harness) {
		h.answer = func(int, request) (response, error) {
			return response{status: 400, headers: map[string]string{"Content-Type": "application/json"}, body: `{"error":"bad account"}`}, nil
		}
		h.ok(post("k1", `{"amount":5}`))
		resp := h.ok(post("k1", `{"amount":5}`))
		if resp.status != 400 || resp.body != `{"error":"bad account"}` || resp.headers[apigateway.ReplayedHeader] != "true" {
			t.Errorf("retry = %+v, want the 400 replayed", resp)
		}
		h.wantRuns(1)
	}},
	{"handler error releases the key and is returned", "", func(t *testing.T, h *harness) {
		for _, fail := range []error{errLedger, idempotency.Permanent(errLedger)} {
			h.answer = func(int, request) (response, error) { return response{}, fail }
			_, err := h.send(t.Context(), post("k1", `{"amount":5}`))
			if !errors.Is(err, errLedger) || err.Error() != fail.Error() {
				t.Errorf("handler error = %v, want %v", err, fail)
			}
			var perm *idempotency.PermanentError
			if errors.As(fail, &perm) != errors.As(err, &perm) {
				t.Errorf("the error %v is not the handler's own %v", err, fail)
			}
			e := h.wantRecord(aliceScope, "k1", idempotency.EntryReleased, int64(h.runs))
			if e.Failure != "" {
				t.Errorf("a failure was stored: %q", e.Failure)
			}
		}
		h.answer = nil
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-3", false)
	}},
	{"store failure is 503 with Retry-After", "", func(t *testing.T, h *harness) {
		h.store.FailBefore(idemtest.OpAcquire, errThrottled)
		wantProblem(t, h.ok(post("k1", `{"amount":5}`)), 503, apigateway.CodeUnavailable, "1")
		h.s.unavailable = 2500 * time.Millisecond
		h.store.FailAfter(idemtest.OpAcquire, errThrottled)
		wantProblem(t, h.ok(post("k2", `{"amount":5}`)), 503, apigateway.CodeUnavailable, "3")
		h.calls(map[idemtest.Op]int{idemtest.OpAcquire: 2})
		h.wantRuns(0)
	}},
	{"a failed settle still answers the handler's response", "", func(t *testing.T, h *harness) {
		h.store.FailBefore(idemtest.OpSettle, errThrottled)
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-1", false)
		h.wantRecord(aliceScope, "k1", idempotency.EntryInProgress, 1)
	}},
	{"callers never share a key", "", func(t *testing.T, h *harness) {
		a, b := post("k1", `{"amount":5}`), post("k1", `{"amount":900}`)
		b.caller = bob
		wantTransfer(t, h.ok(a), "t-1", false)
		wantTransfer(t, h.ok(b), "t-2", false)
		wantTransfer(t, h.ok(a), "t-1", true)
		wantTransfer(t, h.ok(b), "t-2", true)
	}},
	{"no caller is 500 and runs nothing", "", func(t *testing.T, h *harness) {
		r := post("k1", `{"amount":5}`)
		r.caller = ""
		wantProblem(t, h.ok(r), 500, apigateway.CodeNoCaller, "")
		h.calls(nil)
		h.wantRuns(0)
	}},
	{"a configured scope serves an API without callers", "", func(t *testing.T, h *harness) {
		h.s.scope = func(string) (string, error) { return "public", nil }
		r := post("k1", `{"amount":5}`)
		r.caller = ""
		h.ok(r)
		wantTransfer(t, h.ok(r), "t-1", true)
		h.wantRecord("public", "k1", idempotency.EntryCompleted, 1)
	}},
	{"disabled runs the handler as it is", "", func(t *testing.T, h *harness) {
		h.cfg.Disabled = true
		wantTransfer(t, h.ok(post("", `{"amount":5}`)), "t-1", false)
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-2", false)
		wantTransfer(t, h.ok(post("k1", `{"amount":5}`)), "t-3", false)
		h.calls(nil)
	}},
}

func TestWrappers(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			for _, c := range cases {
				if c.only != "" && c.only != a.name {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					h := &harness{t: t, api: a, store: idemtest.NewMemoryStore(), clock: idemtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))}
					c.run(t, h)
				})
			}
		})
	}
}

// TestHTTPReplaysCookies: an HTTP API response's cookies are part of
// what is stored and replayed.
func TestHTTPReplaysCookies(t *testing.T) {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	h := apigateway.HTTP(idem, apigateway.Config[events.APIGatewayV2HTTPRequest]{}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Cookies: []string{"seen=1; Secure"}, Body: "ok"}, nil
	})
	req := events.APIGatewayV2HTTPRequest{
		RawPath: "/x", Headers: map[string]string{"idempotency-key": "k1"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "u1"}}},
		},
	}
	for range 2 {
		resp, err := h(t.Context(), req)
		if err != nil || len(resp.Cookies) != 1 || resp.Cookies[0] != "seen=1; Secure" || resp.Body != "ok" {
			t.Errorf("response = %+v, %v, want the cookie", resp, err)
		}
	}
}

func TestCanonicalRequest(t *testing.T) {
	tests := []struct {
		method, path, body, want string
	}{
		{"POST", "/transfers", `{"amount":5}`, `4:POST10:/transfers{"amount":5}`},
		{"GET", "/", "", `3:GET1:/`},
		{"POST", "/a9:/b", "", `4:POST6:/a9:/b`},
	}
	for _, tt := range tests {
		if got := string(apigateway.CanonicalRequest(tt.method, tt.path, []byte(tt.body))); got != tt.want {
			t.Errorf("CanonicalRequest(%q, %q, %q) = %q, want %q", tt.method, tt.path, tt.body, got, tt.want)
		}
	}
	// A path and body that concatenate alike are still two requests.
	if string(apigateway.CanonicalRequest("POST", "/a", []byte("b"))) == string(apigateway.CanonicalRequest("POST", "/ab", nil)) {
		t.Error("the path's end and the body's start are not told apart")
	}
}

func TestRESTCaller(t *testing.T) {
	identity := func(id events.APIGatewayRequestIdentity) events.APIGatewayProxyRequestContext {
		return events.APIGatewayProxyRequestContext{Identity: id}
	}
	tests := []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want string
	}{
		{"Cognito user pool token", events.APIGatewayProxyRequestContext{
			Authorizer: map[string]any{"claims": map[string]any{"sub": "u-1", "iss": "https://cognito-idp.eu-west-1.amazonaws.com/pool"}},
			Identity:   events.APIGatewayRequestIdentity{UserArn: alice},
		}, `jwt "https://cognito-idp.eu-west-1.amazonaws.com/pool" "u-1"`},
		{"Lambda authorizer", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": "user|42", "tier": "gold"}}, `lambda "user|42"`},
		{"claims without sub fall through", events.APIGatewayProxyRequestContext{
			Authorizer: map[string]any{"claims": map[string]any{"email": "a@example.com"}, "principalId": "p"},
		}, `lambda "p"`},
		{"Cognito identity before its role", identity(events.APIGatewayRequestIdentity{
			CognitoIdentityID: "eu-west-1:abcd", UserArn: "arn:aws:sts::111122223333:assumed-role/Cognito_Auth/CognitoIdentityCredentials",
		}), `cognito-identity "eu-west-1:abcd"`},
		{"IAM user", identity(events.APIGatewayRequestIdentity{UserArn: alice}), aliceScope},
		{"quotes are escaped", identity(events.APIGatewayRequestIdentity{UserArn: `a" "b`}), `iam "a\" \"b"`},
		{"none", identity(events.APIGatewayRequestIdentity{SourceIP: "192.0.2.1", APIKeyID: "key"}), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := apigateway.RESTCaller(events.APIGatewayProxyRequest{RequestContext: tt.rc})
			if tt.want == "" {
				if !errors.Is(err, apigateway.ErrNoCaller) {
					t.Fatalf("RESTCaller = %q, %v, want ErrNoCaller", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("RESTCaller = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

func TestHTTPCaller(t *testing.T) {
	type authz = events.APIGatewayV2HTTPRequestContextAuthorizerDescription
	type iam = events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription
	type jwt = events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription
	tests := []struct {
		name string
		a    *authz
		want string
	}{
		{"JWT", &authz{JWT: &jwt{Claims: map[string]string{"sub": "u-1", "iss": "https://issuer"}}}, `jwt "https://issuer" "u-1"`},
		{"JWT without sub", &authz{JWT: &jwt{Claims: map[string]string{"client_id": "c"}}}, ""},
		{"Cognito identity before its role", &authz{IAM: &iam{UserARN: "arn:aws:sts::1:assumed-role/R/S", CognitoIdentity: events.APIGatewayV2HTTPRequestContextAuthorizerCognitoIdentity{IdentityID: "eu-west-1:abcd"}}}, `cognito-identity "eu-west-1:abcd"`},
		{"IAM", &authz{IAM: &iam{UserARN: alice}}, aliceScope},
		{"Lambda authorizer", &authz{Lambda: map[string]any{"principalId": "p"}}, ""},
		{"no authorizer", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := apigateway.HTTPCaller(events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{Authorizer: tt.a}})
			if tt.want == "" {
				if !errors.Is(err, apigateway.ErrNoCaller) {
					t.Fatalf("HTTPCaller = %q, %v, want ErrNoCaller", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("HTTPCaller = %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}

// stuck is a Persistence whose every key is held by a lease that ends
// just now: Do reports ErrInProgress with no time left.
type stuck struct{ idempotency.Persistence }

func (stuck) Acquire(_ context.Context, in idempotency.AcquireInput) (idempotency.Entry, bool, error) {
	return idempotency.Entry{Status: idempotency.EntryInProgress, Fingerprint: in.Fingerprint, LeaseUntil: in.Now}, false, nil
}

// TestRetryAfterIsAtLeastOneSecond: a 409 never says Retry-After 0.
func TestRetryAfterIsAtLeastOneSecond(t *testing.T) {
	idem, err := idempotency.New(idempotency.Config{Store: stuck{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apis {
		h := a.wrap(idem, settings{}, func(context.Context, request) (response, error) {
			t.Error("the handler ran")
			return response{}, nil
		})
		resp, err := h(t.Context(), post("k1", "{}"))
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, resp, 409, apigateway.CodeKeyInProgress, "1")
	}
}
