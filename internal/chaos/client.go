package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/internal/transfer"
)

// Exchange is one HTTP exchange with the API, as the client saw it.
type Exchange struct {
	// Seq orders the exchanges of a Journal by when they started.
	Seq    int
	Caller string
	// Key is the Idempotency-Key of a POST.
	Key string
	// Prefer is the request's Prefer header ("" for none).
	Prefer string
	Method string
	Path   string
	Body   string
	// Status is the HTTP status; 0 when the exchange failed (see Err).
	Status int
	// Code is the problem code of an error answer.
	Code string
	// TransferID and TransferStatus are those of the transfer the answer
	// carries (the body, or a problem's transfer).
	TransferID     string
	TransferStatus string
	Replayed       bool
	RetryAfter     string
	Err            string
	Start          time.Time
	Elapsed        time.Duration
}

func (e Exchange) String() string {
	s := fmt.Sprintf("#%d %s %s %s", e.Seq, e.Caller, e.Method, e.Path)
	if e.Key != "" {
		s += " key=" + e.Key
	}
	if e.Body != "" {
		s += " " + e.Body
	}
	if e.Err != "" {
		return s + " -> error: " + e.Err
	}
	s += fmt.Sprintf(" -> %d", e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.TransferID != "" {
		s += " transfer=" + e.TransferID + " " + e.TransferStatus
	}
	if e.Replayed {
		s += " replayed"
	}
	if e.RetryAfter != "" {
		s += " retry-after=" + e.RetryAfter
	}
	return s
}

// Journal records every exchange of the clients that share it. It is safe
// for concurrent use.
type Journal struct {
	mu        sync.Mutex
	exchanges []Exchange
}

func (j *Journal) add(e Exchange) Exchange {
	j.mu.Lock()
	defer j.mu.Unlock()
	e.Seq = len(j.exchanges)
	j.exchanges = append(j.exchanges, e)
	return e
}

func (j *Journal) set(e Exchange) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.exchanges[e.Seq] = e
}

// Exchanges returns a copy of the exchanges so far, in Seq order.
func (j *Journal) Exchanges() []Exchange {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.exchanges)
}

// OfKey returns the POSTs of caller's key, in Seq order.
func (j *Journal) OfKey(caller, key string) []Exchange {
	var out []Exchange
	for _, e := range j.Exchanges() {
		if e.Method == http.MethodPost && e.Caller == caller && e.Key == key {
			out = append(out, e)
		}
	}
	return out
}

// Histogram counts the answers by status ("0" for failed exchanges) and,
// for errors, by code: "422 insufficient_funds".
func (j *Journal) Histogram() map[string]int {
	h := map[string]int{}
	for _, e := range j.Exchanges() {
		k := fmt.Sprint(e.Status)
		if e.Code != "" {
			k += " " + e.Code
		}
		h[k]++
	}
	return h
}

// Client calls the API as named callers (Authorization: Bearer NAME) and
// records every exchange in its Journal.
type Client struct {
	base    string
	http    *http.Client
	Journal *Journal
}

// requestTimeout bounds one exchange.
const requestTimeout = 30 * time.Second

// NewClient returns a client of the API at baseURL.
func NewClient(baseURL string) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &Client{base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{Timeout: requestTimeout, Transport: tr}, Journal: &Journal{}}
}

// Scope is the idempotency scope the local API derives for a caller.
func Scope(caller string) string { return "iam:arn:aws:iam::123456789012:user/" + caller }

// RecordKey is the idempotency record's pk of a caller's key.
func RecordKey(caller, key string) string { return idempotency.RecordKey(Scope(caller), key) }

// answer is the part of an answer the client reads: a transfer or a
// problem (with its transfer, for business failures).
type answer struct {
	TransferID string `json:"transferId"`
	// Status is the transfer's status (a string), or a problem's HTTP
	// status (a number).
	Status   json.RawMessage    `json:"status"`
	Code     string             `json:"code"`
	Transfer *transfer.Transfer `json:"transfer"`
}

// PostTransfer posts body to /transfers with the key as caller.
func (c *Client) PostTransfer(ctx context.Context, caller, key string, body []byte) Exchange {
	return c.do(ctx, Exchange{Caller: caller, Key: key, Method: http.MethodPost, Path: "/transfers", Body: string(body)})
}

// PostTransferPreferring posts as PostTransfer does, with a Prefer header
// (such as "wait=5").
func (c *Client) PostTransferPreferring(ctx context.Context, caller, key, prefer string, body []byte) Exchange {
	return c.do(ctx, Exchange{Caller: caller, Key: key, Prefer: prefer, Method: http.MethodPost, Path: "/transfers", Body: string(body)})
}

// GetTransfer gets /transfers/{id} as caller.
func (c *Client) GetTransfer(ctx context.Context, caller, id string) Exchange {
	return c.do(ctx, Exchange{Caller: caller, Method: http.MethodGet, Path: "/transfers/" + url.PathEscape(id)})
}

func (c *Client) do(ctx context.Context, e Exchange) Exchange {
	e.Start = time.Now()
	e = c.Journal.add(e)
	defer func() { c.Journal.set(e) }()
	var body io.Reader
	if e.Body != "" {
		body = bytes.NewReader([]byte(e.Body))
	}
	req, err := http.NewRequestWithContext(ctx, e.Method, c.base+e.Path, body)
	if err != nil {
		e.Err = err.Error()
		return e
	}
	req.Header.Set("Authorization", "Bearer "+e.Caller)
	if e.Key != "" {
		req.Header.Set("Idempotency-Key", e.Key)
	}
	if e.Prefer != "" {
		req.Header.Set("Prefer", e.Prefer)
	}
	if e.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		e.Err, e.Elapsed = err.Error(), time.Since(e.Start)
		return e
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	e.Elapsed = time.Since(e.Start)
	e.Status = resp.StatusCode
	e.Replayed = resp.Header.Get("Idempotent-Replayed") == "true"
	e.RetryAfter = resp.Header.Get("Retry-After")
	if err != nil {
		e.Err = fmt.Sprintf("read body: %v", err)
		return e
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		e.Err = fmt.Sprintf("decode %d answer %q: %v", e.Status, raw, err)
		return e
	}
	e.Code = a.Code
	if a.Code == "" {
		e.TransferID = a.TransferID
		_ = json.Unmarshal(a.Status, &e.TransferStatus) // a transfer's status is a string
	}
	if a.Transfer != nil {
		e.TransferID, e.TransferStatus = a.Transfer.TransferID, a.Transfer.Status
	}
	return e
}
