package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const testRegion = "eu-west-1"

var (
	longTerm  = aws.Credentials{AccessKeyID: "AKIDLONGTERM", SecretAccessKey: "long-term-secret"}
	temporary = aws.Credentials{AccessKeyID: "ASIATEMPORARY", SecretAccessKey: "temporary-secret", SessionToken: "session-token"}
)

func static(c aws.Credentials) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return c, nil })
}

// seen is a request the test server received, with its body.
type seen struct {
	req  *http.Request
	body []byte
}

// server is a test API: each request gets the next of answers (the last
// one repeats), and is kept.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	answers  []func(w http.ResponseWriter, r *http.Request)
}

func newServer(t *testing.T, answers ...func(w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{answers: answers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read the request body: %v", err)
		}
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, seen{req: r.Clone(context.Background()), body: body})
		s.mu.Unlock()
		s.answers[min(n, len(s.answers)-1)](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) received() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// reply answers with a status, headers (name, value, ...) and a body.
func reply(status int, body string, header ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func problem(status int, code string, header ...string) func(w http.ResponseWriter, r *http.Request) {
	body := fmt.Sprintf(`{"type":"/problems/%s","title":"%s","status":%d,"code":%q}`, code, code, status, code)
	return reply(status, body, append([]string{"Content-Type", "application/problem+json"}, header...)...)
}

const transferJSON = `{"transferId":"t-1","status":"COMPLETED","sourceAccountId":"a","destinationAccountId":"b","amount":1050,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z"}`

// testClient is a client of s that records its waits instead of waiting.
func testClient(t *testing.T, s *server, creds aws.Credentials, opts ...Option) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := New(context.Background(), s.URL+"/v1", append([]Option{WithCredentials(static(creds)), WithRegion(testRegion)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	c.jitter = func(time.Duration) time.Duration { return 0 }
	return c, &waits
}

// verify checks a received request's SigV4 signature as API Gateway does:
// it signs a request made of the signed headers alone, at the request's
// X-Amz-Date, with creds, and compares the signatures.
func verify(got seen, creds aws.Credentials, region string) error {
	r := got.req
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("authorization %q is not SigV4", r.Header.Get("Authorization"))
	}
	fields := map[string]string{}
	for part := range strings.SplitSeq(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	wantScope := creds.AccessKeyID + "/" + date.Format("20060102") + "/" + region + "/execute-api/aws4_request"
	if fields["Credential"] != wantScope {
		return fmt.Errorf("credential %q, want %q", fields["Credential"], wantScope)
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	re, err := http.NewRequest(r.Method, u.String(), nil)
	if err != nil {
		return err
	}
	re.Host = r.Host
	for _, h := range strings.Split(fields["SignedHeaders"], ";") {
		switch h {
		case "host", "x-amz-date":
		case "content-length":
			re.ContentLength = int64(len(got.body))
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(got.body)
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableSessionToken = true })
	if err := signer.SignHTTP(context.Background(), creds, re, hex.EncodeToString(sum[:]), "execute-api", region, date); err != nil {
		return err
	}
	if re.Header.Get("Authorization") != r.Header.Get("Authorization") {
		return fmt.Errorf("signature mismatch:\n got %s\nwant %s", r.Header.Get("Authorization"), re.Header.Get("Authorization"))
	}
	return nil
}

// TestSignature: every operation's request is signed for execute-api in
// the Region, over its body, with the session token's header exactly when
// the credentials are temporary.
func TestSignature(t *testing.T) {
	ops := []struct {
		name       string
		answer     string
		run        func(*Client) error
		wantMethod string
		wantPath   string
		wantQuery  string
		wantSigned []string
	}{
		{"create transfer", transferJSON, func(c *Client) error {
			_, err := c.CreateTransfer(context.Background(), "key-1", TransferRequest{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1050, Currency: "EUR"}, PreferWait(5))
			return err
		}, "POST", "/v1/transfers", "", []string{"accept", "content-length", "content-type", "host", "idempotency-key", "prefer", "x-amz-date"}},
		{"get transfer", transferJSON, func(c *Client) error {
			_, err := c.GetTransfer(context.Background(), "t/1 x")
			return err
		}, "GET", "/v1/transfers/t%2F1%20x", "", []string{"accept", "host", "x-amz-date"}},
		{"get account", `{"accountId":"a","currency":"EUR","balance":5,"status":"OPEN","createdAt":"2026-05-04T09:08:07.654Z","version":0,"entries":[]}`, func(c *Client) error {
			_, err := c.GetAccount(context.Background(), "acct:1")
			return err
		}, "GET", "/v1/accounts/acct:1", "", []string{"accept", "host", "x-amz-date"}},
		{"list transfers", `{"transfers":[]}`, func(c *Client) error {
			_, err := c.ListTransfers(context.Background(), PageOptions{Limit: 5, Cursor: "c+/="})
			return err
		}, "GET", "/v1/transfers", "cursor=c%2B%2F%3D&limit=5", []string{"accept", "host", "x-amz-date"}},
		{"list entries", `{"entries":[]}`, func(c *Client) error {
			_, err := c.ListEntries(context.Background(), "a", PageOptions{Limit: 1})
			return err
		}, "GET", "/v1/accounts/a/entries", "limit=1", []string{"accept", "host", "x-amz-date"}},
	}
	for _, creds := range []struct {
		name  string
		creds aws.Credentials
	}{{"long-term credentials", longTerm}, {"temporary credentials", temporary}} {
		for _, op := range ops {
			t.Run(creds.name+"/"+op.name, func(t *testing.T) {
				s := newServer(t, reply(200, op.answer))
				c, _ := testClient(t, s, creds.creds)
				if err := op.run(c); err != nil {
					t.Fatal(err)
				}
				got := s.received()
				if len(got) != 1 {
					t.Fatalf("%d requests, want 1", len(got))
				}
				r := got[0].req
				if r.Method != op.wantMethod || r.URL.EscapedPath() != op.wantPath || r.URL.RawQuery != op.wantQuery {
					t.Errorf("request %s %s?%s, want %s %s?%s", r.Method, r.URL.EscapedPath(), r.URL.RawQuery, op.wantMethod, op.wantPath, op.wantQuery)
				}
				if r.Header.Get("X-Amz-Date") == "" {
					t.Error("no X-Amz-Date")
				}
				want := op.wantSigned
				if creds.creds.SessionToken != "" {
					want = append(slices.Clone(want), "x-amz-security-token")
					slices.Sort(want)
				}
				if tok := r.Header.Get("X-Amz-Security-Token"); tok != creds.creds.SessionToken {
					t.Errorf("X-Amz-Security-Token %q, want %q", tok, creds.creds.SessionToken)
				}
				if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "SignedHeaders="+strings.Join(want, ";")+",") {
					t.Errorf("Authorization %q does not sign %v", auth, want)
				}
				if err := verify(got[0], creds.creds, testRegion); err != nil {
					t.Error(err)
				}
				// The check can fail: the wrong secret, another Region, another body.
				wrong := creds.creds
				wrong.SecretAccessKey += "x"
				if verify(got[0], wrong, testRegion) == nil {
					t.Error("the signature verifies with another secret")
				}
				if verify(got[0], creds.creds, "us-east-1") == nil {
					t.Error("the signature verifies for another Region")
				}
				changed := got[0]
				changed.body = append(slices.Clone(changed.body), ' ')
				if verify(changed, creds.creds, testRegion) == nil {
					t.Error("the signature verifies over another body")
				}
			})
		}
	}
}

// flaky is a transport whose first fails round trips fail without an
// answer.
type flaky struct {
	mu    sync.Mutex
	fails int
}

func (f *flaky) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return nil, errors.New("connection reset by peer")
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		answers   []func(http.ResponseWriter, *http.Request)
		transport *flaky
		policy    RetryPolicy
		// wantRequests reach the server; wantWaits are the pauses between
		// attempts (jitter 0).
		wantRequests int
		wantWaits    []time.Duration
		wantStatus   int
		wantCode     Code
	}{
		{name: "503 with Retry-After, then accepted",
			answers:      []func(http.ResponseWriter, *http.Request){problem(503, "service_unavailable", "Retry-After", "1"), reply(202, transferJSON)},
			wantRequests: 2, wantWaits: []time.Duration{time.Second}, wantStatus: 202},
		{name: "429 rate_limited waits its Retry-After",
			answers:      []func(http.ResponseWriter, *http.Request){problem(429, "rate_limited", "Retry-After", "60"), reply(201, transferJSON)},
			wantRequests: 2, wantWaits: []time.Duration{60 * time.Second}, wantStatus: 201},
		{name: "500 and 502 without Retry-After back off, doubling",
			answers:      []func(http.ResponseWriter, *http.Request){problem(500, "internal_error"), problem(502, "gateway_error"), reply(200, transferJSON)},
			wantRequests: 3, wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, wantStatus: 200},
		{name: "504 answered by a proxy, not a problem document",
			answers:      []func(http.ResponseWriter, *http.Request){reply(504, "<html>timeout</html>", "Content-Type", "text/html"), reply(202, transferJSON)},
			wantRequests: 2, wantWaits: []time.Duration{100 * time.Millisecond}, wantStatus: 202},
		{name: "a transport error is retried",
			answers: []func(http.ResponseWriter, *http.Request){reply(202, transferJSON)}, transport: &flaky{fails: 2},
			wantRequests: 1, wantWaits: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, wantStatus: 202},
		{name: "the backoff is capped",
			answers: []func(http.ResponseWriter, *http.Request){problem(503, "service_unavailable")}, policy: RetryPolicy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: 3 * time.Second},
			wantRequests: 5, wantWaits: []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond}, wantCode: CodeServiceUnavailable},
		{name: "gives up after MaxAttempts with the last problem",
			answers:      []func(http.ResponseWriter, *http.Request){problem(503, "service_unavailable", "Retry-After", "1")},
			wantRequests: 4, wantWaits: []time.Duration{time.Second, time.Second, time.Second}, wantCode: CodeServiceUnavailable},
		{name: "MaxAttempts 1 never retries",
			answers: []func(http.ResponseWriter, *http.Request){problem(503, "service_unavailable", "Retry-After", "1")}, policy: RetryPolicy{MaxAttempts: 1},
			wantRequests: 1, wantCode: CodeServiceUnavailable},
		{name: "400 is not retried",
			answers: []func(http.ResponseWriter, *http.Request){problem(400, "invalid_request")}, wantRequests: 1, wantCode: CodeInvalidRequest},
		{name: "403 is not retried",
			answers: []func(http.ResponseWriter, *http.Request){problem(403, "invalid_signature")}, wantRequests: 1, wantCode: CodeInvalidSignature},
		{name: "404 is not retried",
			answers: []func(http.ResponseWriter, *http.Request){problem(404, "not_found")}, wantRequests: 1, wantCode: CodeNotFound},
		{name: "415 is not retried",
			answers: []func(http.ResponseWriter, *http.Request){problem(415, "unsupported_media_type")}, wantRequests: 1, wantCode: CodeUnsupportedMediaType},
		{name: "422 is not retried, even with Retry-After",
			answers: []func(http.ResponseWriter, *http.Request){problem(422, "insufficient_funds", "Retry-After", "1")}, wantRequests: 1, wantCode: CodeInsufficientFunds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.answers...)
			var opts []Option
			if tc.transport != nil {
				opts = append(opts, WithHTTPClient(&http.Client{Transport: tc.transport}))
			}
			opts = append(opts, WithRetryPolicy(tc.policy))
			c, waits := testClient(t, s, temporary, opts...)
			req := TransferRequest{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1050, Currency: "EUR", Reference: "retry"}
			res, err := c.CreateTransfer(context.Background(), "key-42", req)

			got := s.received()
			if len(got) != tc.wantRequests {
				t.Errorf("%d requests reached the server, want %d", len(got), tc.wantRequests)
			}
			for i, g := range got {
				if k := g.req.Header.Values("Idempotency-Key"); !slices.Equal(k, []string{"key-42"}) {
					t.Errorf("request %d: Idempotency-Key %q, want the same key", i, k)
				}
				if !bytes.Equal(g.body, got[0].body) {
					t.Errorf("request %d: body %s, the first was %s", i, g.body, got[0].body)
				}
				if err := verify(g, temporary, testRegion); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
			}
			if !slices.Equal(*waits, tc.wantWaits) {
				t.Errorf("waits %v, want %v", *waits, tc.wantWaits)
			}
			if tc.wantCode != "" {
				var p *Problem
				if !errors.As(err, &p) || p.Code != tc.wantCode {
					t.Fatalf("error %v, want a problem %s", err, tc.wantCode)
				}
				if res != nil {
					t.Errorf("result %+v with an error", res)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantAttempts := len(tc.wantWaits) + 1
			if res.StatusCode != tc.wantStatus || res.Attempts != wantAttempts || res.Transfer.TransferID != "t-1" {
				t.Errorf("result status %d, attempts %d, transfer %q; want %d, %d, t-1", res.StatusCode, res.Attempts, res.Transfer.TransferID, tc.wantStatus, wantAttempts)
			}
		})
	}
}

// TestRetriesStopWithTheContext: a retry never outlives its context, and a
// Retry-After beyond the deadline ends the call at once.
func TestRetriesStopWithTheContext(t *testing.T) {
	t.Run("cancelled while waiting", func(t *testing.T) {
		s := newServer(t, problem(503, "service_unavailable", "Retry-After", "30"))
		c, _ := testClient(t, s, longTerm)
		c.sleep = sleepContext // a real wait
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for len(s.received()) == 0 {
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
		}()
		start := time.Now()
		_, err := c.GetTransfer(ctx, "t-1")
		if !errors.Is(err, context.Canceled) || !errors.Is(err, CodeServiceUnavailable) {
			t.Errorf("error %v, want the cancellation and the last problem", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("returned after %v", d)
		}
		if n := len(s.received()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("Retry-After past the deadline", func(t *testing.T) {
		s := newServer(t, problem(429, "throttled", "Retry-After", "30"))
		c, waits := testClient(t, s, longTerm)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.ListTransfers(ctx, PageOptions{})
		if !errors.Is(err, CodeThrottled) || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("error %v, want the throttled problem and the deadline", err)
		}
		if len(*waits) != 0 || len(s.received()) != 1 {
			t.Errorf("waited %v over %d requests, want one request and no wait", *waits, len(s.received()))
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		s := newServer(t, reply(200, transferJSON))
		c, _ := testClient(t, s, longTerm)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.GetTransfer(ctx, "t-1"); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if n := len(s.received()); n != 0 {
			t.Errorf("%d requests, want none", n)
		}
	})
}

func TestProblems(t *testing.T) {
	settled := time.Date(2026, 5, 4, 9, 8, 7, 912_000_000, time.UTC)
	tests := []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		want   Problem
	}{
		{"refused transfer with its stored transfer",
			reply(422, `{"type":"/problems/insufficient_funds","title":"Insufficient funds in the source account","status":422,"detail":"balance 300 is less than 1050","instance":"/v1/transfers/t-1","code":"insufficient_funds","transfer":{"transferId":"t-1","status":"FAILED","sourceAccountId":"a","destinationAccountId":"b","amount":1050,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z","settledAt":"2026-05-04T09:08:07.912Z","failure":{"code":"InsufficientFunds","detail":"balance 300"}}}`,
				"Content-Type", "application/problem+json", "Location", "/v1/transfers/t-1", "Idempotent-Replayed", "true"),
			Problem{Status: 422, Code: CodeInsufficientFunds, Type: "/problems/insufficient_funds", Title: "Insufficient funds in the source account",
				Detail: "balance 300 is less than 1050", Instance: "/v1/transfers/t-1", Location: "/v1/transfers/t-1", Replayed: true,
				Transfer: &Transfer{TransferID: "t-1", Status: StatusFailed, SourceAccountID: "a", DestinationAccountID: "b", Amount: 1050, Currency: "EUR",
					CreatedAt: time.Date(2026, 5, 4, 9, 8, 7, 654_000_000, time.UTC), SettledAt: &settled, Failure: &Failure{Code: "InsufficientFunds", Detail: "balance 300"}}}},
		{"invalid request with its field errors",
			reply(400, `{"type":"/problems/invalid_request","title":"The transfer request is invalid","status":400,"code":"invalid_request","errors":[{"field":"amount","code":"invalid_amount","detail":"amount must be positive"},{"field":"","code":"too_many_errors","detail":"3 more"}]}`,
				"Content-Type", "application/problem+json"),
			Problem{Status: 400, Code: CodeInvalidRequest, Type: "/problems/invalid_request", Title: "The transfer request is invalid",
				Errors: []FieldError{{Field: "amount", Code: "invalid_amount", Detail: "amount must be positive"}, {Field: "", Code: "too_many_errors", Detail: "3 more"}}}},
		{"API Gateway's DEFAULT_4XX has no status member",
			reply(405, `{"type":"/problems/request_refused","title":"Request refused","detail":"Method Not Allowed","code":"request_refused"}`, "Content-Type", "application/problem+json"),
			Problem{Status: 405, Code: CodeRequestRefused, Type: "/problems/request_refused", Title: "Request refused", Detail: "Method Not Allowed"}},
		{"an answer that is not a problem document",
			reply(404, "<html>no such page</html>", "Content-Type", "text/html"),
			Problem{Status: 404, Title: "Not Found", Detail: "<html>no such page</html>"}},
		{"JSON without a code",
			reply(403, `{"message":"Missing Authentication Token"}`),
			Problem{Status: 403, Title: "Forbidden", Detail: `{"message":"Missing Authentication Token"}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.answer)
			c, _ := testClient(t, s, longTerm)
			_, err := c.CreateTransfer(context.Background(), "k", TransferRequest{})
			var p *Problem
			if !errors.As(err, &p) {
				t.Fatalf("error %v (%T), want a *Problem", err, err)
			}
			if !reflect.DeepEqual(*p, tc.want) {
				t.Errorf("problem\n got %+v\nwant %+v", *p, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "transfers: create transfer: ") {
				t.Errorf("error %q does not name the operation", err)
			}
			if got := CodeOf(err); got != tc.want.Code {
				t.Errorf("CodeOf = %q, want %q", got, tc.want.Code)
			}
			if tc.want.Code != "" && !errors.Is(err, tc.want.Code) {
				t.Errorf("errors.Is(err, %q) is false", tc.want.Code)
			}
			if errors.Is(err, CodeGatewayTimeout) {
				t.Error("errors.Is matches another code")
			}
		})
	}
	if CodeOf(errors.New("plain")) != "" || CodeOf(nil) != "" {
		t.Error("CodeOf of an error without a problem is not empty")
	}
}

func TestCreateTransfer(t *testing.T) {
	tests := []struct {
		name       string
		opts       []CreateOption
		answer     func(http.ResponseWriter, *http.Request)
		wantPrefer string
		want       CreateTransferResult
	}{
		{"accepted", nil, reply(202, strings.Replace(transferJSON, "COMPLETED", "PENDING", 1), "Location", "/v1/transfers/t-1"), "",
			CreateTransferResult{StatusCode: 202, Location: "/v1/transfers/t-1", Attempts: 1}},
		{"completed within the wait", []CreateOption{PreferWait(5)}, reply(201, transferJSON, "Location", "/v1/transfers/t-1", "Preference-Applied", "wait=5"), "wait=5",
			CreateTransferResult{StatusCode: 201, Location: "/v1/transfers/t-1", PreferenceApplied: "wait=5", Attempts: 1}},
		{"replay of a completed transfer", []CreateOption{PreferWait(0)}, reply(200, transferJSON, "Location", "/v1/transfers/t-1", "Idempotent-Replayed", "true"), "",
			CreateTransferResult{StatusCode: 200, Location: "/v1/transfers/t-1", Replayed: true, Attempts: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.answer)
			c, _ := testClient(t, s, longTerm)
			req := TransferRequest{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1050, Currency: "EUR"}
			res, err := c.CreateTransfer(context.Background(), "k-1", req, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := s.received()[0]
			if p := got.req.Header.Get("Prefer"); p != tc.wantPrefer {
				t.Errorf("Prefer %q, want %q", p, tc.wantPrefer)
			}
			if ct := got.req.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var sent map[string]any
			if err := json.Unmarshal(got.body, &sent); err != nil || len(sent) != 4 || sent["amount"] != 1050.0 {
				t.Errorf("body %s (%v): want the four fields, no empty reference", got.body, err)
			}
			if res.Transfer.TransferID != "t-1" {
				t.Errorf("transfer %+v", res.Transfer)
			}
			res.Transfer, res.Header = Transfer{}, nil
			if !reflect.DeepEqual(*res, tc.want) {
				t.Errorf("result %+v, want %+v", *res, tc.want)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		s := newServer(t, reply(202, transferJSON))
		c, _ := testClient(t, s, longTerm)
		if _, err := c.CreateTransfer(context.Background(), "", TransferRequest{}); !errors.Is(err, ErrNoKey) {
			t.Errorf("error %v, want ErrNoKey", err)
		}
		if n := len(s.received()); n != 0 {
			t.Errorf("%d requests without a key", n)
		}
	})
}

// pages serves a list of n items, limit per page, with cursors "c<offset>",
// and fails the request for the page at failAt when failAt > 0.
func pages(t *testing.T, key string, n, failAt int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 20
		if v := q.Get("limit"); v != "" {
			fmt.Sscan(v, &limit)
		}
		offset := 0
		if c := q.Get("cursor"); c != "" {
			if _, err := fmt.Sscanf(c, "c%d", &offset); err != nil {
				t.Errorf("cursor %q", c)
			}
		}
		if failAt > 0 && offset >= failAt {
			problem(400, "invalid_cursor")(w, r)
			return
		}
		var items []string
		for i := offset; i < min(n, offset+limit); i++ {
			if key == "transfers" {
				items = append(items, fmt.Sprintf(`{"transferId":"t-%d","status":"COMPLETED","sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","createdAt":"2026-05-04T09:08:07.654Z"}`, i))
			} else {
				items = append(items, fmt.Sprintf(`{"accountId":"a","transferId":"t-%d","leg":"DEBIT","amount":-1,"currency":"EUR","counterpartyAccountId":"b","sequence":%d,"postedAt":"2026-05-04T09:08:07.654Z"}`, i, n-i))
			}
		}
		next := ""
		if offset+limit < n {
			next = fmt.Sprintf(`,"nextCursor":"c%d"`, offset+limit)
		}
		reply(200, fmt.Sprintf(`{%q:[%s]%s}`, key, strings.Join(items, ","), next))(w, r)
	}
}

func TestPagination(t *testing.T) {
	tests := []struct {
		name         string
		n, failAt    int
		opts         PageOptions
		stopAfter    int // 0: read all
		wantItems    int
		wantRequests []string // the query of each request
		wantErr      Code
	}{
		{name: "every page", n: 5, opts: PageOptions{Limit: 2}, wantItems: 5,
			wantRequests: []string{"limit=2", "cursor=c2&limit=2", "cursor=c4&limit=2"}},
		{name: "pages of exactly limit items", n: 4, opts: PageOptions{Limit: 2}, wantItems: 4,
			wantRequests: []string{"limit=2", "cursor=c2&limit=2"}},
		{name: "from a cursor", n: 5, opts: PageOptions{Limit: 2, Cursor: "c2"}, wantItems: 3,
			wantRequests: []string{"cursor=c2&limit=2", "cursor=c4&limit=2"}},
		{name: "an empty list", n: 0, wantItems: 0, wantRequests: []string{""}},
		{name: "a break reads no further page", n: 5, opts: PageOptions{Limit: 2}, stopAfter: 3, wantItems: 3,
			wantRequests: []string{"limit=2", "cursor=c2&limit=2"}},
		{name: "an error ends the iteration", n: 5, failAt: 2, opts: PageOptions{Limit: 2}, wantItems: 2, wantErr: CodeInvalidCursor,
			wantRequests: []string{"limit=2", "cursor=c2&limit=2"}},
	}
	for _, kind := range []string{"transfers", "entries"} {
		for _, tc := range tests {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				s := newServer(t, pages(t, kind, tc.n, tc.failAt))
				c, _ := testClient(t, s, longTerm)
				var ids []string
				var errs []error
				consume := func(id string, err error) bool {
					if err != nil {
						errs = append(errs, err)
						return true
					}
					ids = append(ids, id)
					return tc.stopAfter == 0 || len(ids) < tc.stopAfter
				}
				if kind == "transfers" {
					for tr, err := range c.Transfers(context.Background(), tc.opts) {
						if !consume(tr.TransferID, err) {
							break
						}
					}
				} else {
					var last int64
					for e, err := range c.Entries(context.Background(), "a", tc.opts) {
						if err == nil && last != 0 && e.Sequence != last-1 {
							t.Errorf("entry %s has sequence %d after %d", e.TransferID, e.Sequence, last)
						}
						last = e.Sequence
						if !consume(e.TransferID, err) {
							break
						}
					}
				}
				if len(ids) != tc.wantItems {
					t.Errorf("%d items %v, want %d", len(ids), ids, tc.wantItems)
				}
				for i, id := range ids {
					if want := fmt.Sprintf("t-%d", i+offsetOf(tc.opts.Cursor)); id != want {
						t.Errorf("item %d is %s, want %s", i, id, want)
					}
				}
				switch {
				case tc.wantErr == "" && len(errs) != 0:
					t.Errorf("errors %v", errs)
				case tc.wantErr != "" && (len(errs) != 1 || !errors.Is(errs[0], tc.wantErr)):
					t.Errorf("errors %v, want one %s", errs, tc.wantErr)
				}
				var queries []string
				for _, g := range s.received() {
					queries = append(queries, g.req.URL.RawQuery)
				}
				if !slices.Equal(queries, tc.wantRequests) {
					t.Errorf("queries %q, want %q", queries, tc.wantRequests)
				}
			})
		}
	}
}

func offsetOf(cursor string) int {
	n := 0
	if cursor != "" {
		fmt.Sscanf(cursor, "c%d", &n)
	}
	return n
}

// TestOnePage: ListTransfers and ListEntries return a page and its cursor.
func TestOnePage(t *testing.T) {
	s := newServer(t, pages(t, "entries", 3, 0))
	c, _ := testClient(t, s, longTerm)
	page, err := c.ListEntries(context.Background(), "a", PageOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 2 || page.NextCursor != "c2" || page.Entries[0].Sequence != 3 || page.Entries[0].Leg != LegDebit {
		t.Fatalf("first page %+v", page)
	}
	page, err = c.ListEntries(context.Background(), "a", PageOptions{Limit: 2, Cursor: page.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 1 || page.NextCursor != "" || page.Entries[0].Sequence != 1 {
		t.Fatalf("last page %+v", page)
	}
}

// TestNew: the endpoint is checked, and without options the Region and the
// credentials come from the SDK's default configuration.
func TestNew(t *testing.T) {
	// A shared configuration of its own: nothing from the machine's.
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	if err := os.WriteFile(cfgFile, []byte("[default]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")

	t.Run("invalid endpoints", func(t *testing.T) {
		for _, endpoint := range []string{"", "abc.execute-api.eu-west-1.amazonaws.com/v1", "ftp://host/v1", "https://host/v1?x=1", "https://host/v1#f", "http://[::1"} {
			if _, err := New(context.Background(), endpoint, WithRegion(testRegion), WithCredentials(static(longTerm))); err == nil {
				t.Errorf("New(%q) accepted it", endpoint)
			}
		}
	})
	t.Run("no Region", func(t *testing.T) {
		_, err := New(context.Background(), "https://host/v1", WithCredentials(static(longTerm)))
		if err == nil || !strings.Contains(err.Error(), "Region") {
			t.Errorf("error %v, want no Region", err)
		}
	})
	t.Run("the default chain's credentials and Region", func(t *testing.T) {
		t.Setenv("AWS_REGION", "ap-southeast-2")
		t.Setenv("AWS_ACCESS_KEY_ID", temporary.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", temporary.SecretAccessKey)
		t.Setenv("AWS_SESSION_TOKEN", temporary.SessionToken)
		s := newServer(t, reply(200, transferJSON))
		c, err := New(context.Background(), s.URL+"/v1/")
		if err != nil {
			t.Fatal(err)
		}
		if c.Region() != "ap-southeast-2" {
			t.Errorf("Region %q", c.Region())
		}
		if _, err := c.GetTransfer(context.Background(), "t-1"); err != nil {
			t.Fatal(err)
		}
		got := s.received()[0]
		if got.req.URL.Path != "/v1/transfers/t-1" {
			t.Errorf("path %s", got.req.URL.Path)
		}
		if err := verify(got, temporary, "ap-southeast-2"); err != nil {
			t.Error(err)
		}
		if got.req.Header.Get("X-Amz-Security-Token") != temporary.SessionToken {
			t.Error("no session token")
		}
	})
	t.Run("an option's Region wins", func(t *testing.T) {
		t.Setenv("AWS_REGION", "ap-southeast-2")
		t.Setenv("AWS_ACCESS_KEY_ID", longTerm.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", longTerm.SecretAccessKey)
		c, err := New(context.Background(), "https://host/v1", WithRegion("eu-central-1"))
		if err != nil {
			t.Fatal(err)
		}
		if c.Region() != "eu-central-1" {
			t.Errorf("Region %q", c.Region())
		}
	})
	t.Run("credentials that cannot be had", func(t *testing.T) {
		s := newServer(t, reply(200, transferJSON))
		failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no credentials here")
		})
		c, err := New(context.Background(), s.URL, WithRegion(testRegion), WithCredentials(failing))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTransfer(context.Background(), "t-1"); err == nil || !strings.Contains(err.Error(), "no credentials here") {
			t.Errorf("error %v", err)
		}
		if n := len(s.received()); n != 0 {
			t.Errorf("%d unsigned requests sent", n)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, value string
		want        time.Duration
	}{
		{"absent", "", 0},
		{"seconds", "1", time.Second},
		{"zero", "0", 0},
		{"negative", "-5", 0},
		{"capped at a day", "99999999999", 24 * time.Hour},
		{"HTTP date", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.value != "" {
				h.Set("Retry-After", tc.value)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Errorf("retryAfter(%q) = %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}
