package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// apiClient posts transfers to the local REST API as one caller, over
// keep-alive connections.
type apiClient struct {
	url    string // .../transfers
	caller string
	http   *http.Client
}

// newAPIClient returns a client for conns concurrent requests: it keeps
// that many idle connections to the API, so every request reuses one.
func newAPIClient(base, caller string, conns int) *apiClient {
	return &apiClient{
		url:    strings.TrimSuffix(base, "/") + "/transfers",
		caller: caller,
		http:   &http.Client{Transport: newTransport(conns)},
	}
}

// newTransport is an HTTP transport for conns concurrent requests to one
// host on loopback: no proxy, conns idle connections kept per host.
func newTransport(conns int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns = 0 // no limit over all hosts
	tr.MaxIdleConnsPerHost = conns + 4
	return tr
}

// transferRequest is the body of POST /transfers.
type transferRequest struct {
	Source      string `json:"sourceAccountId"`
	Destination string `json:"destinationAccountId"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
}

// accepted is the part of a 202 answer the client reads.
type accepted struct {
	TransferID string `json:"transferId"`
	Status     string `json:"status"`
}

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 64 << 10

// post sends a new transfer under key and returns its id; any answer but
// 202 is an error.
func (c *apiClient) post(ctx context.Context, key string, body []byte) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("POST /transfers key %s: %w", key, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Authorization", "Bearer "+c.caller)
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST /transfers key %s: %w", key, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("POST /transfers key %s: read the answer: %w", key, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /transfers key %s: answered %d, want 202: %s", key, resp.StatusCode, truncate(string(raw), 300))
	}
	var a accepted
	if err := json.Unmarshal(raw, &a); err != nil || a.TransferID == "" {
		return "", fmt.Errorf("POST /transfers key %s: 202 without a transfer: %s", key, truncate(string(raw), 300))
	}
	return a.TransferID, nil
}

// transfer runs one transfer: it posts it under key and waits until the
// probe sees its record turn terminal. It returns the transfer id, the
// request's round trip and the time from the request to the terminal
// write; a record that ended other than COMPLETED is an error.
func (p *Probe) transfer(ctx context.Context, c *apiClient, key string, body []byte, timeout time.Duration) (id string, accept, total time.Duration, err error) {
	recordKey := recordKeyOf(c.caller, key)
	w := p.expect(recordKey)
	defer p.forget(recordKey)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	id, err = c.post(ctx, key, body)
	if err != nil {
		return "", 0, 0, err
	}
	accept = time.Since(start)
	select {
	case <-w.done:
	case <-ctx.Done():
		return id, accept, 0, fmt.Errorf("transfer %s (key %s): its record did not turn terminal within %s: %w", id, key, timeout, context.Cause(ctx))
	}
	if w.status != statusCompleted {
		return id, accept, 0, fmt.Errorf("transfer %s (key %s) ended %s, want %s", id, key, w.status, statusCompleted)
	}
	return id, accept, w.at.Sub(start), nil
}
