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
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// SigningName is the service name requests are signed for: API Gateway's
// execute-api.
const SigningName = "execute-api"

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts = 4
	DefaultBaseDelay   = 200 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
)

// DefaultTimeout bounds one attempt with the default HTTP client: more
// than API Gateway's 29 s integration timeout.
const DefaultTimeout = 35 * time.Second

// maxResponseBytes bounds the body read from one answer.
const maxResponseBytes = 16 << 20

// RetryPolicy bounds the retries of a request; see the package doc.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts in all, the first included:
	// 1 never retries. 0 is DefaultMaxAttempts.
	MaxAttempts int
	// BaseDelay is the backoff before the first retry of an answer
	// without Retry-After; each retry doubles it, up to MaxDelay, and
	// waits a random time between half of it and all of it. It is also
	// the most jitter added to a Retry-After. 0 is DefaultBaseDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff (not a Retry-After, which is always
	// waited in full). 0 is DefaultMaxDelay.
	MaxDelay time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	p.MaxDelay = max(p.MaxDelay, p.BaseDelay)
	return p
}

// Option configures New.
type Option func(*options)

type options struct {
	credentials aws.CredentialsProvider
	region      string
	httpClient  *http.Client
	retry       RetryPolicy
	userAgent   string
}

// WithCredentials signs with the given credentials instead of those of the
// SDK's default chain. The provider is cached (aws.CredentialsCache) unless
// it is a cache already.
func WithCredentials(p aws.CredentialsProvider) Option {
	return func(o *options) { o.credentials = p }
}

// WithRegion signs for the given Region (the stack's, e.g. eu-west-1)
// instead of the configured one (AWS_REGION, the shared config's region).
func WithRegion(region string) Option {
	return func(o *options) { o.region = region }
}

// WithHTTPClient sends the requests with c instead of a client with
// DefaultTimeout.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.httpClient = c }
}

// WithRetryPolicy sets how requests are retried.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(o *options) { o.retry = p }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(o *options) { o.userAgent = ua }
}

// DefaultUserAgent is the User-Agent of requests without WithUserAgent.
const DefaultUserAgent = "exactlyonce-transfers-go-client"

// Client calls the transfers API. It is safe for concurrent use.
type Client struct {
	base        *url.URL
	http        *http.Client
	credentials aws.CredentialsProvider
	region      string
	signer      *v4.Signer
	retry       RetryPolicy
	userAgent   string

	// Tests replace these.
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(d time.Duration) time.Duration
}

// New returns a client of the API at endpoint, the stack's API URL with its
// stage (the ApiUrl output, e.g.
// https://abcdef1234.execute-api.eu-west-1.amazonaws.com/v1). Without
// WithCredentials or WithRegion it loads the AWS SDK's default
// configuration (config.LoadDefaultConfig) for what is missing.
func New(ctx context.Context, endpoint string, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	base, err := url.Parse(strings.TrimSuffix(endpoint, "/"))
	if err != nil {
		return nil, fmt.Errorf("transfers: endpoint: %w", err)
	}
	if (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" {
		return nil, fmt.Errorf("transfers: endpoint %q is not an http(s) URL without query", endpoint)
	}
	if o.credentials == nil || o.region == "" {
		var load []func(*config.LoadOptions) error
		if o.region != "" {
			load = append(load, config.WithRegion(o.region))
		}
		cfg, err := config.LoadDefaultConfig(ctx, load...)
		if err != nil {
			return nil, fmt.Errorf("transfers: load the AWS configuration: %w", err)
		}
		if o.credentials == nil {
			o.credentials = cfg.Credentials
		}
		if o.region == "" {
			o.region = cfg.Region
		}
	}
	if o.region == "" {
		return nil, errors.New("transfers: no AWS Region to sign for: set AWS_REGION, a profile's region, or use WithRegion")
	}
	if o.credentials == nil {
		return nil, errors.New("transfers: no AWS credentials: configure the default chain or use WithCredentials")
	}
	if _, ok := o.credentials.(*aws.CredentialsCache); !ok {
		o.credentials = aws.NewCredentialsCache(o.credentials)
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	if o.userAgent == "" {
		o.userAgent = DefaultUserAgent
	}
	return &Client{
		base:        base,
		http:        o.httpClient,
		credentials: o.credentials,
		region:      o.region,
		signer:      v4.NewSigner(),
		retry:       o.retry.withDefaults(),
		userAgent:   o.userAgent,
		now:         time.Now,
		sleep:       sleepContext,
		jitter:      func(d time.Duration) time.Duration { return rand.N(d) },
	}, nil
}

// Region is the Region requests are signed for.
func (c *Client) Region() string { return c.region }

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// call is one API operation.
type call struct {
	// op names the operation in errors, e.g. "create transfer".
	op     string
	method string
	// path is the escaped path under the endpoint, e.g. /transfers/a%2Fb.
	path   string
	query  url.Values
	header http.Header
	body   []byte
}

// answer is a successful (2xx) HTTP answer.
type answer struct {
	status   int
	header   http.Header
	body     []byte
	attempts int
}

// decode decodes a 2xx answer's JSON body into v.
func (a *answer) decode(op string, v any) error {
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("transfers: %s: decode the %d answer: %w", op, a.status, err)
	}
	return nil
}

// do sends a call, retrying as RetryPolicy says, and returns its 2xx
// answer; any other answer is a *Problem, wrapped with the operation.
func (c *Client) do(ctx context.Context, cl call) (*answer, error) {
	for attempt := 1; ; attempt++ {
		a, retryable, err := c.attempt(ctx, cl)
		if err == nil {
			a.attempts = attempt
			return a, nil
		}
		if !retryable {
			return nil, fmt.Errorf("transfers: %s: %w", cl.op, err)
		}
		if attempt >= c.retry.MaxAttempts {
			return nil, fmt.Errorf("transfers: %s: %d attempts: %w", cl.op, attempt, err)
		}
		delay := c.backoff(attempt)
		var p *Problem
		if errors.As(err, &p) && p.RetryAfter > 0 {
			delay = p.RetryAfter + c.jitter(c.retry.BaseDelay)
		}
		if deadline, ok := ctx.Deadline(); ok && c.now().Add(delay).After(deadline) {
			return nil, fmt.Errorf("transfers: %s: %d attempts, and a retry in %v would pass the context's deadline: %w",
				cl.op, attempt, delay.Round(time.Millisecond), err)
		}
		if serr := c.sleep(ctx, delay); serr != nil {
			return nil, fmt.Errorf("transfers: %s: %d attempts, then %w: %w", cl.op, attempt, serr, err)
		}
	}
}

// backoff is the wait before retry number attempt (1 for the first) of an
// answer without Retry-After: BaseDelay doubled each time up to MaxDelay,
// half of it fixed and half random.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.BaseDelay
	for i := 1; i < attempt && d < c.retry.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, c.retry.MaxDelay)
	return d/2 + c.jitter(d/2+1)
}

// attempt makes one signed request. It returns the answer when it is 2xx;
// otherwise the error, and whether it may be retried: a transport error,
// a 5xx or a 429.
func (c *Client) attempt(ctx context.Context, cl call) (*answer, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, context.Cause(ctx)
	}
	req, err := c.request(ctx, cl)
	if err != nil {
		return nil, false, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// No answer: the request may or may not have arrived. Sending it
		// again is safe, unless the caller gave up.
		return nil, ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("read the %d answer: %w", resp.StatusCode, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &answer{status: resp.StatusCode, header: resp.Header, body: body}, false, nil
	}
	p := decodeProblem(resp.StatusCode, resp.Header, body)
	return nil, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, p
}

// request builds and signs one attempt's request: SigV4 for execute-api in
// the client's Region, over the body's SHA-256, at the current time.
func (c *Client) request(ctx context.Context, cl call) (*http.Request, error) {
	u := *c.base
	escaped := u.EscapedPath() + cl.path
	path, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", escaped, err)
	}
	u.Path, u.RawPath = path, escaped
	u.RawQuery = cl.query.Encode()
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), bytes.NewReader(cl.body))
	if err != nil {
		return nil, err
	}
	for k, vs := range cl.header {
		req.Header[k] = append([]string(nil), vs...)
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	creds, err := c.credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieve AWS credentials: %w", err)
	}
	sum := sha256.Sum256(cl.body)
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), SigningName, c.region, c.now()); err != nil {
		return nil, fmt.Errorf("sign the request: %w", err)
	}
	return req, nil
}
