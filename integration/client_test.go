//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/exactlyonce/transfers/internal/api"
	"github.com/exactlyonce/transfers/internal/spec"
)

// localAccountID is the account of the local stack's callers.
const localAccountID = "123456789012"

// requestTimeout bounds one HTTP exchange.
const requestTimeout = 30 * time.Second

var httpClient = &http.Client{
	Timeout: requestTimeout,
	Transport: func() http.RoundTripper {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// The concurrency case keeps 50 requests in flight.
		tr.MaxIdleConnsPerHost = 64
		return tr
	}(),
}

// caller is an authenticated client of the API.
type caller struct {
	name string
	// scope is the idempotency scope the API derives for this caller from
	// the request context; it keys the caller's records.
	scope string
	// authorize adds the caller's credentials to a request.
	authorize func(ctx context.Context, req *http.Request, body []byte) error
}

// bearerCaller is a caller of the local stack, IAM user name of its
// account.
func bearerCaller(name string) *caller {
	return &caller{
		name:  name,
		scope: "iam:arn:aws:iam::" + localAccountID + ":user/" + name,
		authorize: func(_ context.Context, req *http.Request, _ []byte) error {
			req.Header.Set("Authorization", "Bearer "+name)
			return nil
		},
	}
}

// signingCaller is a caller of a deployed stack: requests are SigV4-signed
// with cfg's credentials for execute-api in cfg's region.
func signingCaller(ctx context.Context, name string, cfg aws.Config) (*caller, error) {
	id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return nil, fmt.Errorf("%s: who am I: %w", name, err)
	}
	signer := v4.NewSigner()
	region := cfg.Region
	return &caller{
		name:  name,
		scope: api.IAMScope(aws.ToString(id.Arn)),
		authorize: func(ctx context.Context, req *http.Request, body []byte) error {
			creds, err := cfg.Credentials.Retrieve(ctx)
			if err != nil {
				return fmt.Errorf("%s: credentials: %w", name, err)
			}
			sum := sha256.Sum256(body)
			return signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", region, time.Now())
		},
	}, nil
}

// reply is an HTTP response, read in full.
type reply struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
}

func (r reply) String() string {
	body := string(r.body)
	if len(body) > 600 {
		body = body[:600] + "..."
	}
	return fmt.Sprintf("%s %s -> %d %s", r.method, r.path, r.status, body)
}

// replayed reports whether the response carries Idempotent-Replayed: true.
func (r reply) replayed() bool { return r.header.Get("Idempotent-Replayed") == "true" }

// send makes one request as c. headers may hold several values of one
// name; a nil body sends none.
func (c *caller) send(ctx context.Context, method, path string, headers http.Header, body []byte) (reply, error) {
	route, rawQuery, _ := strings.Cut(path, "?")
	u := tg.api.JoinPath(route)
	u.RawQuery = rawQuery
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	if body != nil && headers.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if err := c.authorize(ctx, req, body); err != nil {
		return reply{}, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s as %s: %w", method, path, c.name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s as %s: read body: %w", method, path, c.name, err)
	}
	r := reply{method: method, path: path, status: resp.StatusCode, header: resp.Header, body: b}
	if err := conforms(r); err != nil {
		return reply{}, fmt.Errorf("%s: the answer does not conform to api/openapi.yaml: %w", r, err)
	}
	return r, nil
}

// conforms checks a response against api/openapi.yaml: a declared status,
// the declared headers and a body matching the declared schema; outside the
// declared routes, a problem document.
func conforms(r reply) error {
	doc, err := spec.Source()
	if err != nil {
		return err
	}
	path, _, _ := strings.Cut(r.path, "?")
	return doc.CheckResponse(r.method, path, r.status, r.header, r.body)
}

// post sends POST /transfers with the given Idempotency-Key and body.
func (c *caller) post(t testing.TB, key string, body []byte) reply {
	t.Helper()
	return c.postWith(t, http.Header{"Idempotency-Key": {key}}, body)
}

// postWith sends POST /transfers with exactly the given headers.
func (c *caller) postWith(t testing.TB, headers http.Header, body []byte) reply {
	t.Helper()
	r, err := c.send(context.Background(), http.MethodPost, "/transfers", headers, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// get sends GET path.
func (c *caller) get(t testing.TB, path string) reply {
	t.Helper()
	r, err := c.send(context.Background(), http.MethodGet, path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// transferRequest is the body of POST /transfers.
type transferRequest struct {
	SourceAccountID      string `json:"sourceAccountId"`
	DestinationAccountID string `json:"destinationAccountId"`
	Amount               int64  `json:"amount"`
	Currency             string `json:"currency"`
	Reference            string `json:"reference,omitempty"`
}

func (r transferRequest) body(t testing.TB) []byte {
	t.Helper()
	return mustJSON(t, r)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

// The API's resources as the wire carries them; declared here rather than
// taken from the service's packages so that a renamed field fails a test.
type (
	transferView struct {
		TransferID           string       `json:"transferId"`
		Status               string       `json:"status"`
		SourceAccountID      string       `json:"sourceAccountId"`
		DestinationAccountID string       `json:"destinationAccountId"`
		Amount               int64        `json:"amount"`
		Currency             string       `json:"currency"`
		Reference            string       `json:"reference"`
		CreatedAt            string       `json:"createdAt"`
		SettledAt            string       `json:"settledAt"`
		Failure              *failureView `json:"failure"`
	}
	failureView struct {
		Code     string `json:"code"`
		Detail   string `json:"detail"`
		Reversed bool   `json:"reversed"`
	}
	problemView struct {
		Type     string           `json:"type"`
		Title    string           `json:"title"`
		Status   int              `json:"status"`
		Detail   string           `json:"detail"`
		Instance string           `json:"instance"`
		Code     string           `json:"code"`
		Errors   []fieldErrorView `json:"errors"`
		Transfer *transferView    `json:"transfer"`
	}
	fieldErrorView struct {
		Field  string `json:"field"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	accountView struct {
		AccountID string      `json:"accountId"`
		Currency  string      `json:"currency"`
		Balance   int64       `json:"balance"`
		Status    string      `json:"status"`
		Entries   []entryView `json:"entries"`
	}
	entryView struct {
		AccountID             string `json:"accountId"`
		TransferID            string `json:"transferId"`
		Leg                   string `json:"leg"`
		Amount                int64  `json:"amount"`
		Currency              string `json:"currency"`
		CounterpartyAccountID string `json:"counterpartyAccountId"`
		PostedAt              string `json:"postedAt"`
	}
)

// Transfer statuses and entry legs on the wire.
const (
	statusPending   = "PENDING"
	statusCompleted = "COMPLETED"
	statusFailed    = "FAILED"

	legDebit  = "DEBIT"
	legCredit = "CREDIT"
	legRefund = "REFUND"
)

// expectMediaType fails unless the response's Content-Type is want.
func expectMediaType(t testing.TB, r reply, want string) {
	t.Helper()
	got, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil || got != want {
		t.Errorf("%s: Content-Type = %q, want %s", r, r.header.Get("Content-Type"), want)
	}
}

// expectTransfer checks the status and media type of a response carrying
// a transfer and decodes it.
func expectTransfer(t testing.TB, r reply, status int) transferView {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d", r, r.status, status)
	}
	expectMediaType(t, r, "application/json")
	var v transferView
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("%s: decode transfer: %v", r, err)
	}
	if v.TransferID == "" {
		t.Fatalf("%s: no transferId", r)
	}
	return v
}

// expectProblem checks that a response is the RFC 9457 problem with the
// given status and code, and decodes it.
func expectProblem(t testing.TB, r reply, status int, code string) problemView {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d (%s)", r, r.status, status, code)
	}
	expectMediaType(t, r, "application/problem+json")
	var p problemView
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("%s: decode problem: %v", r, err)
	}
	if p.Code != code {
		t.Errorf("%s: problem code %q, want %q", r, p.Code, code)
	}
	if p.Status != status {
		t.Errorf("%s: problem status %d, want %d", r, p.Status, status)
	}
	if p.Title == "" || p.Type == "" {
		t.Errorf("%s: problem without type or title", r)
	}
	return p
}

// expectLocation checks that r points at the transfer.
func expectLocation(t testing.TB, r reply, transferID string) {
	t.Helper()
	if got, want := r.header.Get("Location"), tg.basePath+"/transfers/"+transferID; got != want {
		t.Errorf("%s: Location = %q, want %q", r, got, want)
	}
}

// expectReplayed checks the Idempotent-Replayed header.
func expectReplayed(t testing.TB, r reply, want bool) {
	t.Helper()
	if r.replayed() != want {
		t.Errorf("%s: Idempotent-Replayed = %q, want replayed=%v", r, r.header.Get("Idempotent-Replayed"), want)
	}
}
