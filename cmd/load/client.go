package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/exactlyonce/transfers/internal/api"
)

// localAccountID is the AWS account of the local stack's callers.
const localAccountID = "123456789012"

// authorizer adds a caller's credentials to a request whose body is body.
type authorizer func(ctx context.Context, req *http.Request, body []byte) error

// bearer is a caller of the local stack, named by its bearer token; its
// scope is IAM user name of the local account.
func bearer(name string) (authorizer, string) {
	return func(_ context.Context, req *http.Request, _ []byte) error {
		req.Header.Set("Authorization", "Bearer "+name)
		return nil
	}, "iam:arn:aws:iam::" + localAccountID + ":user/" + name
}

// sigv4 signs requests for execute-api with cfg's credentials, as the
// integration tests do. The scope (who owns the accounts the caller may
// debit) is asked of STS only when scope is called.
func sigv4(cfg aws.Config) (authorizer, func(context.Context) (string, error)) {
	signer := v4.NewSigner()
	auth := func(ctx context.Context, req *http.Request, body []byte) error {
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return fmt.Errorf("credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		return signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", cfg.Region, time.Now())
	}
	scope := func(ctx context.Context) (string, error) {
		id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err != nil {
			return "", fmt.Errorf("who am I: %w", err)
		}
		return api.IAMScope(aws.ToString(id.Arn)), nil
	}
	return auth, scope
}

// isLoopback reports whether u's host is this machine.
func isLoopback(u *url.URL) bool {
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// client calls the API at base as one caller.
type client struct {
	base    *url.URL
	auth    authorizer
	http    *http.Client
	timeout time.Duration
}

func newClient(base *url.URL, auth authorizer, conns int, timeout time.Duration) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns + 4
	tr.Proxy = nil // only ever the URL it is given
	return &client{base: base, auth: auth, timeout: timeout, http: &http.Client{
		Transport: tr,
		// A redirect would lead elsewhere than the URL given.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// answer is what the load generator reads of a response: a transfer, or
// a problem with its code and, for a business refusal, its transfer.
type answer struct {
	Status   int // HTTP status; 0 when there was no answer
	Code     string
	Transfer transferView
	Replayed bool
	Balance  int64
	Currency string
}

type transferView struct {
	ID      string `json:"transferId"`
	Status  string `json:"status"`
	Failure *struct {
		Code     string `json:"code"`
		Reversed bool   `json:"reversed"`
	} `json:"failure"`
}

// outcome names a transfer's state for the report: its status, the
// problem code of a refusal and, when that code is the generic
// transfer_failed, the workflow's failure code.
func (t transferView) outcome(code string) string {
	o := t.Status
	if code != "" {
		o += " " + code
	}
	if t.Failure != nil && (code == "transfer_failed" || code == "") && t.Failure.Code != "" {
		o += " (" + t.Failure.Code + ")"
	}
	if t.Failure != nil && t.Failure.Reversed {
		o += " reversed"
	}
	return o
}

// terminal reports whether a transfer status is final.
func terminal(status string) bool { return status == "COMPLETED" || status == "FAILED" }

type body struct {
	TransferID string          `json:"transferId"`
	Status     json.RawMessage `json:"status"` // a transfer's state; a problem's HTTP status
	Code       string          `json:"code"`
	Transfer   *transferView   `json:"transfer"`
	Balance    *int64          `json:"balance"`
	Currency   string          `json:"currency"`
}

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 20

func (c *client) do(ctx context.Context, method, path string, headers map[string]string, payload []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.JoinPath(path).String(), rd)
	if err != nil {
		return answer{}, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if err := c.auth(ctx, req, payload); err != nil {
		return answer{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	a := answer{Status: resp.StatusCode, Replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	var b body
	if len(raw) > 0 && json.Unmarshal(raw, &b) == nil {
		a.Code = b.Code
		switch {
		case b.Transfer != nil:
			a.Transfer = *b.Transfer
		case b.TransferID != "":
			a.Transfer.ID = b.TransferID
			_ = json.Unmarshal(b.Status, &a.Transfer.Status)
		}
		if b.Balance != nil {
			a.Balance = *b.Balance
		}
		a.Currency = b.Currency
	}
	return a, nil
}

// postTransfer sends a transfer under key.
func (c *client) postTransfer(ctx context.Context, key string, payload []byte) (answer, error) {
	return c.do(ctx, http.MethodPost, "/transfers", map[string]string{"Idempotency-Key": key}, payload)
}

// account reads an account's balance and currency as its owner.
func (c *client) account(ctx context.Context, id string) (balance int64, currency string, err error) {
	a, err := c.do(ctx, http.MethodGet, "/accounts/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return 0, "", fmt.Errorf("account %s: %w", id, err)
	}
	switch {
	case a.Status == http.StatusOK && a.Currency != "":
		return a.Balance, a.Currency, nil
	case a.Status == http.StatusNotFound:
		return 0, "", fmt.Errorf("account %s: 404: it does not exist or is not the caller's (open it with cmd/seed, or -open N)", id)
	}
	return 0, "", &statusError{what: "account " + id, status: a.Status, code: a.Code}
}

type statusError struct {
	what   string
	status int
	code   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: answered %s", e.what, label(e.status, e.code))
}

// retryable reports whether an error or answer asks for the same request
// again: no answer, 503, or API Gateway's 429.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.status == http.StatusServiceUnavailable || se.status == http.StatusTooManyRequests
	}
	return err != nil
}
