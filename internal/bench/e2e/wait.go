package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/percentile"
)

// WaitConfig is a run of POST /transfers with Prefer: wait.
type WaitConfig struct {
	// Clients post concurrently, each on its own account pair.
	Clients int
	// Wait is the N of Prefer: wait=N, in seconds; 0 sends no Prefer
	// header, for comparison.
	Wait int
	// Duration is how long the clients post.
	Duration time.Duration
	// Pairs are the accounts, at least Clients of them (SeedPairs).
	Pairs []Pair
	// Caller is the clients' caller (the pairs' owner).
	Caller string
}

// WaitResult is what the clients of a WaitConfig saw.
type WaitResult struct {
	Clients, Wait int
	// Requests were answered; Final of them with the transfer's final
	// state (201, or a stored refusal), the rest 202.
	Requests, Final int
	// P50 and P99 are the answers' round trips, final or not.
	P50, P99 time.Duration
	// Reads counts the DynamoDB GetItem calls of the stack during the
	// run, when the caller counts them (see WaitMarkdown).
	Reads int64
}

// Share is the fraction of answers that were final.
func (r WaitResult) Share() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Final) / float64(r.Requests)
}

// MeasureWait posts new transfers with Prefer: wait=cfg.Wait from
// cfg.Clients concurrent clients for cfg.Duration, each waiting for its
// answer before the next, and reports the share answered final and the
// round trips. An answer other than 201, 202 or a refusal of the ledger
// (422) is an error.
func MeasureWait(ctx context.Context, st *stack.Stack, cfg WaitConfig) (WaitResult, error) {
	if cfg.Clients < 1 || len(cfg.Pairs) < cfg.Clients {
		return WaitResult{}, fmt.Errorf("e2e: wait: %d clients on %d pairs", cfg.Clients, len(cfg.Pairs))
	}
	c := newAPIClient(st.APIURL, cfg.Caller, cfg.Clients)
	prefer := ""
	if cfg.Wait > 0 {
		prefer = fmt.Sprintf("wait=%d", cfg.Wait)
	}
	deadline := time.Now().Add(cfg.Duration)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		final     int
		firstErr  error
		wg        sync.WaitGroup
	)
	for i := range cfg.Clients {
		body, _ := json.Marshal(transferRequest{Source: cfg.Pairs[i].Source, Destination: cfg.Pairs[i].Destination, Amount: 1, Currency: DefaultCurrency})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				start := time.Now()
				status, err := c.postPreferring(ctx, rand.Text(), prefer, body)
				took := time.Since(start)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				latencies = append(latencies, took)
				if status != http.StatusAccepted {
					final++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return WaitResult{}, fmt.Errorf("e2e: wait: %w", firstErr)
	}
	slices.Sort(latencies)
	return WaitResult{
		Clients: cfg.Clients, Wait: cfg.Wait, Requests: len(latencies), Final: final,
		P50: percentile.Of(latencies, 500), P99: percentile.Of(latencies, 990),
	}, nil
}

// postPreferring posts a new transfer with a Prefer header and returns
// the answer's status: 201, 202 or 422.
func (c *apiClient) postPreferring(ctx context.Context, key, prefer string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("POST /transfers key %s: %w", key, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	req.Header.Set("Authorization", "Bearer "+c.caller)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST /transfers key %s: %w", key, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, fmt.Errorf("POST /transfers key %s: read the answer: %w", key, err)
	}
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusAccepted, http.StatusUnprocessableEntity:
		return resp.StatusCode, nil
	}
	return 0, fmt.Errorf("POST /transfers key %s: answered %d: %s", key, resp.StatusCode, truncate(string(raw), 300))
}

// WaitMarkdown writes the results of runs with and without the header
// as a section of the benchmark's report.
func WaitMarkdown(w io.Writer, d time.Duration, results ...WaitResult) error {
	if len(results) == 0 {
		return nil
	}
	if _, err := fmt.Fprintf(w, `
## Prefer: wait

%d clients, each posting new transfers one after the other for %s, on the same local stack (go run ./cmd/bench). Final: answered 201, or with the transfer's stored refusal. GetItem: the stack's GetItem calls during the run (the waits' reads of the record) per answer. A waited answer's extra Lambda duration is its round trip less the one without the header.

| request | answers | final | p50 | p99 | GetItem per answer |
|---|---:|---:|---:|---:|---:|
`, results[0].Clients, d); err != nil {
		return err
	}
	for _, r := range results {
		label := "no Prefer header"
		if r.Wait > 0 {
			label = fmt.Sprintf("Prefer: wait=%d", r.Wait)
		}
		perAnswer := 0.0
		if r.Requests > 0 {
			perAnswer = float64(r.Reads) / float64(r.Requests)
		}
		if _, err := fmt.Fprintf(w, "| %s | %d | %.1f%% (%d) | %s | %s | %.1f |\n", label, r.Requests, 100*r.Share(), r.Final,
			r.P50.Round(100*time.Microsecond), r.P99.Round(100*time.Microsecond), perAnswer); err != nil {
			return err
		}
	}
	return nil
}
