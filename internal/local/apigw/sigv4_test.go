package apigw_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/exactlyonce/transfers/client"
	"github.com/exactlyonce/transfers/internal/local/apigw"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// The keys of the SigV4 tests: an IAM user's long-term key, an
// assumed-role session's temporary one, and one that has expired.
var (
	userKey = aws.Credentials{AccessKeyID: "AKIASIGV4USER0000001", SecretAccessKey: "user-secret"}
	roleKey = aws.Credentials{AccessKeyID: "ASIASIGV4ROLE0000001", SecretAccessKey: "role-secret", SessionToken: "role-session-token"}
	oldKey  = aws.Credentials{AccessKeyID: "ASIASIGV4OLD00000001", SecretAccessKey: "old-secret", SessionToken: "old-session-token"}
)

const (
	userARN = "arn:aws:iam::111122223333:user/alice"
	roleARN = "arn:aws:sts::111122223333:assumed-role/Payments/worker-1"
)

// sigv4Credentials are the keys known to the servers of the tests, the
// temporary ones expiring an hour after now, the old one a second before.
func sigv4Credentials(now time.Time) map[string]apigw.Credential {
	return map[string]apigw.Credential{
		userKey.AccessKeyID: {SecretAccessKey: userKey.SecretAccessKey, PrincipalARN: userARN},
		roleKey.AccessKeyID: {SecretAccessKey: roleKey.SecretAccessKey, SessionToken: roleKey.SessionToken, PrincipalARN: roleARN,
			Expires: now.Add(time.Hour)},
		oldKey.AccessKeyID: {SecretAccessKey: oldKey.SecretAccessKey, SessionToken: oldKey.SessionToken, PrincipalARN: roleARN,
			Expires: now.Add(-time.Second)},
	}
}

// sigv4Server is a server of the API's routes and definition in the SigV4
// mode, scoped to eu-west-1, its clock at fixedNow.
func sigv4Server(t *testing.T, inv *fakeInvoker) *apigw.Server {
	t.Helper()
	return newServer(t, inv, apigw.Config{
		Routes: []apigw.Route{
			{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers", FunctionName: "orchestrator"},
			{Method: "GET", Path: "/transfers/{transferId}", FunctionName: "orchestrator"},
		},
		Definition:  specDefinition(t),
		AccountID:   "111122223333",
		Region:      "eu-west-1",
		Credentials: sigv4Credentials(fixedNow),
	})
}

// signed is a request signed as the SDK signs it; tamper changes it after
// signing.
type signed struct {
	method, target string
	header         http.Header
	body           string
	creds          aws.Credentials
	region         string
	service        string
	at             time.Time
	tamper         func(r *http.Request)
}

func (s signed) request(t *testing.T) *http.Request {
	t.Helper()
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	r := httptest.NewRequest(s.method, "http://abc.execute-api.eu-west-1.amazonaws.com"+s.target, body)
	for k, vs := range s.header {
		r.Header[k] = vs
	}
	sum := sha256.Sum256([]byte(s.body))
	region, service, at := s.region, s.service, s.at
	if region == "" {
		region = "eu-west-1"
	}
	if service == "" {
		service = "execute-api"
	}
	if at.IsZero() {
		at = fixedNow
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), s.creds, r, hex.EncodeToString(sum[:]), service, region, at); err != nil {
		t.Fatal(err)
	}
	if s.tamper != nil {
		s.tamper(r)
	}
	return r
}

func TestSigV4(t *testing.T) {
	post := func(mod func(*signed)) signed {
		s := signed{method: "POST", target: "/Prod/transfers?x=1",
			header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"k-1"}},
			body:   `{"amount":1050}`, creds: userKey}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	setBody := func(b string) func(*http.Request) {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(b))
			r.ContentLength = int64(len(b))
		}
	}
	tests := []struct {
		name string
		req  signed
		// wantARN is the identity of a verified request; else the refusal.
		wantARN      string
		wantStatus   int
		wantCode     string
		wantError    string
		wantMessage  string
		unsignedAuth string // an Authorization header set in place of a signature
		noAuth       bool
	}{
		{name: "an IAM user's long-term key", req: post(nil), wantARN: userARN},
		{name: "an assumed role's temporary key", req: post(func(s *signed) { s.creds = roleKey }), wantARN: roleARN},
		{name: "a GET without a body", req: signed{method: "GET", target: "/transfers/t-1", creds: userKey}, wantARN: userARN},
		{name: "a GET with a query", req: signed{method: "GET", target: "/Prod/transfers?limit=2&cursor=a%2Bb%3D", creds: roleKey}, wantARN: roleARN},
		{name: "an unsigned header may change", req: post(func(s *signed) {
			s.tamper = func(r *http.Request) { r.Header.Set("User-Agent", "other"); r.Header.Set("X-Unsigned", "1") }
		}), wantARN: userARN},
		{name: "4 minutes old", req: post(func(s *signed) { s.at = fixedNow.Add(-4 * time.Minute) }), wantARN: userARN},

		{name: "no Authorization header", noAuth: true, req: post(nil),
			wantStatus: 403, wantCode: "missing_authentication_token", wantError: "MissingAuthenticationTokenException"},
		{name: "a Bearer token", unsignedAuth: "Bearer alice", req: post(nil),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "IncompleteSignatureException"},
		{name: "no SignedHeaders", req: post(func(s *signed) {
			s.tamper = func(r *http.Request) {
				a := r.Header.Get("Authorization")
				i, j := strings.Index(a, "SignedHeaders="), strings.Index(a, ", Signature=")
				r.Header.Set("Authorization", a[:i]+a[j+2:])
			}
		}), wantStatus: 403, wantCode: "invalid_signature", wantError: "IncompleteSignatureException", wantMessage: "requires 'SignedHeaders'"},
		{name: "no X-Amz-Date", req: post(func(s *signed) { s.tamper = func(r *http.Request) { r.Header.Del("X-Amz-Date") } }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "IncompleteSignatureException", wantMessage: "X-Amz-Date"},
		{name: "another service", req: post(func(s *signed) { s.service = "execute-apis" }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "correct service: 'execute-api'"},
		{name: "another Region", req: post(func(s *signed) { s.region = "us-east-1" }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "valid region"},
		{name: "6 minutes old", req: post(func(s *signed) { s.at = fixedNow.Add(-6 * time.Minute) }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "Signature expired: 20260504T090207Z is now earlier than 20260504T090307Z (20260504T090807Z - 5 min.)"},
		{name: "6 minutes ahead", req: post(func(s *signed) { s.at = fixedNow.Add(6 * time.Minute) }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "Signature not yet current"},
		{name: "X-Amz-Date changed after signing", req: post(func(s *signed) {
			s.tamper = func(r *http.Request) {
				r.Header.Set("X-Amz-Date", fixedNow.Add(time.Second).Format("20060102T150405Z"))
			}
		}), wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "does not match"},
		{name: "an unknown key", req: post(func(s *signed) { s.creds = aws.Credentials{AccessKeyID: "AKIAUNKNOWN000000001", SecretAccessKey: "x"} }),
			wantStatus: 403, wantCode: "access_denied", wantError: "AccessDeniedException", wantMessage: "security token included in the request is invalid"},
		{name: "a temporary key without its session token", req: post(func(s *signed) { s.creds = roleKey; s.creds.SessionToken = "" }),
			wantStatus: 403, wantCode: "access_denied", wantError: "AccessDeniedException"},
		{name: "a temporary key with another session token", req: post(func(s *signed) { s.creds = roleKey; s.creds.SessionToken = "stolen" }),
			wantStatus: 403, wantCode: "access_denied", wantError: "AccessDeniedException"},
		{name: "a long-term key with a session token", req: post(func(s *signed) { s.creds.SessionToken = "token" }),
			wantStatus: 403, wantCode: "access_denied", wantError: "AccessDeniedException"},
		{name: "expired temporary credentials", req: post(func(s *signed) { s.creds = oldKey }),
			wantStatus: 403, wantCode: "expired_token", wantError: "ExpiredTokenException"},
		{name: "the wrong secret", req: post(func(s *signed) { s.creds.SecretAccessKey = "guess" }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException", wantMessage: "does not match"},
		{name: "the body changed", req: post(func(s *signed) { s.tamper = setBody(`{"amount":9999}`) }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "the body dropped", req: post(func(s *signed) { s.tamper = setBody("") }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "a signed header changed", req: post(func(s *signed) { s.tamper = func(r *http.Request) { r.Header.Set("Idempotency-Key", "k-2") } }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "a signed header dropped", req: post(func(s *signed) { s.tamper = func(r *http.Request) { r.Header.Del("Content-Type") } }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "the query changed", req: post(func(s *signed) { s.tamper = func(r *http.Request) { r.URL.RawQuery = "x=2" } }),
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "the path changed", req: signed{method: "GET", target: "/transfers/t-1", creds: userKey, tamper: func(r *http.Request) {
			r.URL.Path, r.URL.RawPath = "/transfers/t-2", ""
		}}, wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "the method changed", req: signed{method: "GET", target: "/transfers", creds: userKey, tamper: func(r *http.Request) { r.Method = "POST" }},
			wantStatus: 403, wantCode: "invalid_signature", wantError: "InvalidSignatureException"},
		{name: "a second Authorization header", req: post(func(s *signed) {
			s.tamper = func(r *http.Request) { r.Header.Add("Authorization", r.Header.Get("Authorization")) }
		}), wantStatus: 403, wantCode: "invalid_signature", wantError: "IncompleteSignatureException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{}
			s := sigv4Server(t, inv)
			req := tc.req.request(t)
			switch {
			case tc.noAuth:
				req.Header.Del("Authorization")
			case tc.unsignedAuth != "":
				req.Header.Set("Authorization", tc.unsignedAuth)
			}
			rec := serve(t, s, req)
			if tc.wantARN != "" {
				if rec.Code != 200 {
					t.Fatalf("status %d %s, want the request verified", rec.Code, rec.Body)
				}
				ev, raw := inv.last(t)
				want, err := apigw.PrincipalCaller(tc.wantARN, tc.req.creds.AccessKeyID)
				if err != nil {
					t.Fatal(err)
				}
				id := ev.RequestContext.Identity
				if id.UserArn != tc.wantARN || id.Caller != want.UserID || id.User != want.UserID || id.AccessKey != tc.req.creds.AccessKeyID || id.AccountID != "111122223333" {
					t.Errorf("identity %+v, want %+v", id, want)
				}
				if ev.Body != tc.req.body {
					t.Errorf("event body %q, want %q", ev.Body, tc.req.body)
				}
				if _, ok := raw["requestContext"].(map[string]any)["identity"].(map[string]any)["cognitoIdentityId"]; !ok {
					t.Error("identity lost its null Cognito fields")
				}
				return
			}
			if inv.calls() != 0 {
				t.Error("the function was invoked for a refused request")
			}
			p := decodeProblem(t, rec.Code, rec.Header(), rec.Body.Bytes())
			if rec.Code != tc.wantStatus || p.Code != tc.wantCode {
				t.Errorf("answer %d %s, want %d %s: %s", rec.Code, p.Code, tc.wantStatus, tc.wantCode, rec.Body)
			}
			if got := rec.Header().Get("x-amzn-ErrorType"); got != tc.wantError {
				t.Errorf("x-amzn-ErrorType %q, want %q", got, tc.wantError)
			}
			if !strings.Contains(rec.Body.String(), tc.wantMessage) {
				t.Errorf("body %s does not say %q", rec.Body, tc.wantMessage)
			}
		})
	}
}

// TestSigV4IdentityIsBearers: an IAM user verified by signature is the
// caller the Bearer mode makes of the same name.
func TestSigV4IdentityIsBearers(t *testing.T) {
	viaSig, err := apigw.PrincipalCaller("arn:aws:iam::123456789012:user/alice", "AKIAEXAMPLE")
	if err != nil {
		t.Fatal(err)
	}
	viaBearer := apigw.NewCaller("123456789012", "alice")
	viaBearer.AccessKeyID = "AKIAEXAMPLE"
	if viaSig != viaBearer {
		t.Errorf("signed %+v, bearer %+v", viaSig, viaBearer)
	}
}

func TestPrincipalCaller(t *testing.T) {
	tests := []struct {
		name, arn  string
		wantUserID string // prefix; "" for an error
		wantName   string
	}{
		{"IAM user", "arn:aws:iam::123456789012:user/alice", "AIDA", "alice"},
		{"IAM user with a path", "arn:aws:iam::123456789012:user/team/alice", "AIDA", "alice"},
		{"assumed role", "arn:aws:sts::123456789012:assumed-role/Payments/worker-1", "AROA", "Payments/worker-1"},
		{"root", "arn:aws:iam::123456789012:root", "123456789012", "root"},
		{"another partition", "arn:aws-cn:iam::123456789012:user/alice", "AIDA", "alice"},
		{"a role, which cannot sign", "arn:aws:iam::123456789012:role/Payments", "", ""},
		{"no account", "arn:aws:iam:::user/alice", "", ""},
		{"a region", "arn:aws:iam:us-east-1:123456789012:user/alice", "", ""},
		{"not an ARN", "alice", "", ""},
		{"a session without its name", "arn:aws:sts::123456789012:assumed-role/Payments", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := apigw.PrincipalCaller(tc.arn, "AKIA1")
			if tc.wantUserID == "" {
				if err == nil {
					t.Errorf("accepted: %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.UserID, tc.wantUserID) || c.Name != tc.wantName || c.ARN != tc.arn || c.AccountID != "123456789012" || c.AccessKeyID != "AKIA1" {
				t.Errorf("caller %+v", c)
			}
		})
	}
	a, _ := apigw.PrincipalCaller("arn:aws:sts::123456789012:assumed-role/Payments/worker-1", "ASIA1")
	b, _ := apigw.PrincipalCaller("arn:aws:sts::123456789012:assumed-role/Payments/worker-2", "ASIA2")
	ra, _, _ := strings.Cut(a.UserID, ":")
	rb, _, _ := strings.Cut(b.UserID, ":")
	if ra != rb || a.UserID == b.UserID || !strings.HasSuffix(a.UserID, ":worker-1") {
		t.Errorf("two sessions of a role: %s and %s, want one role id and two sessions", a.UserID, b.UserID)
	}
}

func TestSigV4Config(t *testing.T) {
	for _, tc := range []struct {
		name  string
		creds map[string]apigw.Credential
	}{
		{"no secret", map[string]apigw.Credential{"AKIA1": {PrincipalARN: userARN}}},
		{"no principal", map[string]apigw.Credential{"AKIA1": {SecretAccessKey: "s"}}},
		{"a role as principal", map[string]apigw.Credential{"AKIA1": {SecretAccessKey: "s", PrincipalARN: "arn:aws:iam::111122223333:role/R"}}},
		{"an access key id with a slash", map[string]apigw.Credential{"AKIA/1": {SecretAccessKey: "s", PrincipalARN: userARN}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apigw.NewServer(apigw.Config{Invoker: &fakeInvoker{}, Credentials: tc.creds,
				Routes: []apigw.Route{{Method: "GET", Path: "/", FunctionName: "f"}}})
			if err == nil {
				t.Error("NewServer accepted the credentials")
			}
		})
	}
}

// tamperer changes each request the client sends, after it is signed.
type tamperer func(r *http.Request)

func (f tamperer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if f != nil {
		f(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestPublicClientSignatures: a request the public client signs verifies;
// the same request with its body or a signed header changed on the way, or
// signed with the wrong secret, is refused 403 invalid_signature.
func TestPublicClientSignatures(t *testing.T) {
	replaceBody := func(b string) tamperer {
		return func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(b))
			r.ContentLength = int64(len(b))
			r.GetBody = nil
		}
	}
	tests := []struct {
		name    string
		creds   aws.Credentials
		tamper  tamperer
		wantARN string
	}{
		{"as signed", userKey, nil, userARN},
		{"as signed, temporary credentials", roleKey, nil, roleARN},
		{"the body changed", userKey, replaceBody(`{"sourceAccountId":"a","destinationAccountId":"b","amount":999999,"currency":"EUR"}`), ""},
		{"the Idempotency-Key changed", userKey, func(r *http.Request) { r.Header.Set("Idempotency-Key", "another") }, ""},
		{"the Content-Type changed", userKey, func(r *http.Request) { r.Header.Set("Content-Type", "application/json; charset=utf-8") }, ""},
		{"the wrong secret", aws.Credentials{AccessKeyID: userKey.AccessKeyID, SecretAccessKey: "not-the-secret"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := &fakeInvoker{respond: func(context.Context, []byte) ([]byte, *lambdarun.FunctionError, error) {
				return []byte(`{"statusCode":202,"headers":{"Content-Type":"application/json","Location":"/Prod/transfers/t-1"},"body":"{\"transferId\":\"t-1\",\"status\":\"PENDING\",\"sourceAccountId\":\"a\",\"destinationAccountId\":\"b\",\"amount\":1050,\"currency\":\"EUR\",\"createdAt\":\"2026-05-04T09:08:07.654Z\"}"}`), nil, nil
			}}
			// The real clock: the client signs at time.Now.
			s := newServer(t, inv, apigw.Config{
				Routes:      []apigw.Route{{Method: "POST", Path: "/transfers", FunctionName: "orchestrator"}},
				Definition:  specDefinition(t),
				AccountID:   "111122223333",
				Region:      "eu-west-1",
				Credentials: sigv4Credentials(time.Now()),
				Now:         time.Now,
			})
			addr := serveHTTP(t, s)
			c, err := client.New(context.Background(), "http://"+addr+"/Prod",
				client.WithRegion("eu-west-1"),
				client.WithCredentials(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return tc.creds, nil })),
				client.WithHTTPClient(&http.Client{Transport: tc.tamper, Timeout: 10 * time.Second}),
				client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: 1}))
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.CreateTransfer(context.Background(), "k-1",
				client.TransferRequest{SourceAccountID: "a", DestinationAccountID: "b", Amount: 1050, Currency: "EUR"})
			if tc.wantARN != "" {
				if err != nil {
					t.Fatal(err)
				}
				if res.StatusCode != 202 || res.Location != "/Prod/transfers/t-1" {
					t.Errorf("result %+v", res)
				}
				ev, _ := inv.last(t)
				if ev.RequestContext.Identity.UserArn != tc.wantARN || ev.RequestContext.Identity.AccessKey != tc.creds.AccessKeyID {
					t.Errorf("identity %+v, want %s", ev.RequestContext.Identity, tc.wantARN)
				}
				return
			}
			var p *client.Problem
			if !errors.As(err, &p) || p.Status != 403 || p.Code != client.CodeInvalidSignature || !errors.Is(err, client.CodeInvalidSignature) {
				t.Fatalf("error %v, want 403 invalid_signature", err)
			}
			if inv.calls() != 0 {
				t.Error("the function was invoked")
			}
		})
	}
}
