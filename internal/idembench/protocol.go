// Package idembench measures this project's idempotency library
// (github.com/exactlyonce/transfers/idempotency, idempotency.Do over
// DynamoDBPersistence) side by side with Powertools for AWS Lambda
// (Python)'s idempotency utility (idempotent_function over
// DynamoDBPersistenceLayer), on one DynamoDB Local, in one run:
// remote calls per request, latency and requests/s for each scenario
// (Scenarios). cmd/benchidem runs it; `make bench-idempotency` runs
// cmd/benchidem.
//
// Each side runs in its own process and answers the same commands, one
// JSON line each way: the Go side is cmd/benchidem itself, started again
// as a worker (Serve, GoSide), and the Powertools side is
// tools/powertools-bench/driver.py in its own virtual environment. Both
// count their calls to DynamoDB in their SDK (one per operation, before
// the SDK's retries: an Initialize middleware in Go, botocore's
// before-call event in Python) and their handler's runs, and check every
// answer against the scenario's expected outcome: a run with an
// unexpected answer is broken, not slow.
package idembench

import (
	"fmt"
	"slices"
)

// Scenario names.
const (
	// New: a key never seen, the handler succeeds.
	New = "new"
	// Duplicate: a key whose call completed, without a local cache.
	Duplicate = "duplicate"
	// Cached: the same, served from the local cache of settled records.
	Cached = "cached"
	// InFlight: a key another call holds while its handler runs.
	InFlight = "in-flight"
	// HandlerError: a key never seen, the handler fails (an error worth
	// retrying: Powertools deletes the record, ours releases it).
	HandlerError = "error"
	// RetryAfterError: a retry of a key whose handler failed, failing
	// again. Each request has a key of its own, failed beforehand: two
	// retries of one key at once would find it in progress.
	RetryAfterError = "retry-error"
	// Mismatch: a completed key sent again with another payload.
	Mismatch = "mismatch"
	// PermanentError: ours only, a key never seen whose handler fails
	// with idempotency.Permanent: the failure is stored.
	PermanentError = "permanent"
	// RetryAfterPermanent: ours only, a retry of a key whose permanent
	// failure is stored: replayed without running the handler.
	RetryAfterPermanent = "retry-permanent"
)

// Scenario describes one scenario of the run.
type Scenario struct {
	Name string
	// What says it in words, for the report.
	What string
	// Powertools is whether the Powertools side runs it.
	Powertools bool
	// Against is the Powertools scenario that ours is compared with: the
	// scenario itself when Powertools runs it.
	Against string
	// Handler is how many times a request runs the handler: 1 or 0.
	Handler int
	// Pool: the requests reuse a pool of keys made ready beforehand
	// (completed, held, failed), rather than each taking a new key.
	Pool bool
	// FailedFirst: each request takes a key of its own whose handler
	// failed once beforehand.
	FailedFirst bool
	// Calls is the calls per request that ours makes by design, and
	// PowertoolsCalls Powertools', as its code reads (0 when it does not
	// run it): the tests hold each side to them.
	Calls, PowertoolsCalls int
}

// Scenarios are the scenarios of a run, in the report's order.
var Scenarios = []Scenario{
	{Name: New, What: "new key", Powertools: true, Against: New, Handler: 1, Calls: 2, PowertoolsCalls: 2},
	{Name: Duplicate, What: "duplicate of a completed key", Powertools: true, Against: Duplicate, Pool: true, Calls: 1, PowertoolsCalls: 1},
	{Name: Cached, What: "duplicate from the local cache", Powertools: true, Against: Cached, Pool: true, Calls: 0, PowertoolsCalls: 0},
	{Name: InFlight, What: "duplicate while the first call runs", Powertools: true, Against: InFlight, Pool: true, Calls: 1, PowertoolsCalls: 1},
	{Name: HandlerError, What: "handler error", Powertools: true, Against: HandlerError, Handler: 1, Calls: 2, PowertoolsCalls: 2},
	{Name: RetryAfterError, What: "retry after a handler error, failing again", Powertools: true, Against: RetryAfterError, Handler: 1, FailedFirst: true, Calls: 2, PowertoolsCalls: 2},
	{Name: Mismatch, What: "completed key, another payload", Powertools: true, Against: Mismatch, Pool: true, Calls: 1, PowertoolsCalls: 1},
	{Name: PermanentError, What: "handler error marked Permanent (ours only)", Against: HandlerError, Handler: 1, Calls: 2},
	{Name: RetryAfterPermanent, What: "retry after a Permanent error (ours only)", Against: RetryAfterError, Pool: true, Calls: 1},
}

// ScenarioNamed returns the scenario called name.
func ScenarioNamed(name string) (Scenario, bool) {
	i := slices.IndexFunc(Scenarios, func(s Scenario) bool { return s.Name == name })
	if i < 0 {
		return Scenario{}, false
	}
	return Scenarios[i], true
}

// Command asks a side to run one scenario: prepare its pool of keys
// (not measured), send Warmup requests (not measured), then Requests
// requests from Workers closed-loop workers, each sending its next
// request as soon as its last is answered.
type Command struct {
	Scenario string `json:"scenario"`
	Workers  int    `json:"workers"`
	Requests int    `json:"requests"`
	Warmup   int    `json:"warmup"`
	// Pool is how many keys a pooled scenario's requests go round.
	Pool int `json:"pool"`
	// Prefix starts every key of the command, so that no two commands
	// share a key.
	Prefix string `json:"prefix"`
}

// Validate checks c.
func (c Command) Validate() error {
	if _, ok := ScenarioNamed(c.Scenario); !ok {
		return fmt.Errorf("unknown scenario %q", c.Scenario)
	}
	if c.Workers < 1 || c.Requests < 1 || c.Warmup < 0 || c.Pool < 1 || c.Prefix == "" {
		return fmt.Errorf("command %+v: workers, requests and pool must be positive, warmup not negative, prefix set", c)
	}
	return nil
}

// Result is a side's answer to a Command: the measured requests only.
type Result struct {
	Scenario string `json:"scenario"`
	// LatenciesNs are the requests' latencies, in nanoseconds.
	LatenciesNs []int64 `json:"latencies_ns"`
	// ElapsedNs is the wall time from the first request's start to the
	// last one's answer.
	ElapsedNs int64 `json:"elapsed_ns"`
	// Calls counts the calls to DynamoDB by operation.
	Calls map[string]int64 `json:"calls"`
	// HandlerRuns is how many times the handler ran.
	HandlerRuns int64 `json:"handler_runs"`
	// Error is why the command failed; "" when it did not.
	Error string `json:"error,omitempty"`
}

// TotalCalls is the sum of r.Calls.
func (r Result) TotalCalls() int64 {
	var n int64
	for _, c := range r.Calls {
		n += c
	}
	return n
}

// Hello is the first line a side writes: its name and the versions it
// runs.
type Hello struct {
	Side     string            `json:"side"`
	Versions map[string]string `json:"versions"`
}

// Key is the key of request i of a command: the pool's key i % pool in
// a pooled scenario, else a key of its own.
func Key(prefix string, pooled bool, pool, i int) string {
	if pooled {
		return fmt.Sprintf("%s-p%d", prefix, i%pool)
	}
	return fmt.Sprintf("%s-%d", prefix, i)
}
