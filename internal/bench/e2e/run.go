package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactlyonce/transfers/internal/local/stack"
	"github.com/exactlyonce/transfers/internal/reservation"
)

const statusCompleted = reservation.StatusCompleted

// DefaultTimeout bounds one transfer of Run and Capture, from its request
// to its record turning terminal.
const DefaultTimeout = 30 * time.Second

// Config is one end-to-end run.
type Config struct {
	// Clients is the concurrency: that many clients, each running one
	// transfer at a time. 0 is 1.
	Clients int
	// Duration and Count end the measurement: clients start transfers
	// until Duration has elapsed or Count transfers have started,
	// whichever comes first; the transfers started finish. At least one
	// must be set.
	Duration time.Duration
	Count    int
	// Warmup is the number of transfers each client runs before the
	// measurement starts (DynamoDB Local's JVM compiles its hot paths in
	// the first seconds).
	Warmup int
	// Pairs are the caller's accounts: client i moves money from
	// Pairs[i%len(Pairs)].Source to its Destination. Required; see the
	// package documentation for how many.
	Pairs []Pair
	// Caller is the local API caller (its bearer name) the pairs belong
	// to; "" is DefaultCaller.
	Caller string
	// Amount of each transfer in minor units of Currency; 0 is 1.
	Amount int64
	// Currency of the transfers; "" is DefaultCurrency.
	Currency string
	// Timeout bounds one transfer; 0 is DefaultTimeout.
	Timeout time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Caller == "" {
		c.Caller = DefaultCaller
	}
	if c.Amount == 0 {
		c.Amount = 1
	}
	if c.Currency == "" {
		c.Currency = DefaultCurrency
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Clients < 0:
		return c, fmt.Errorf("e2e: %d clients", c.Clients)
	case c.Duration <= 0 && c.Count <= 0:
		return c, errors.New("e2e: set a Duration or a Count")
	case c.Duration < 0 || c.Count < 0 || c.Warmup < 0 || c.Amount < 0 || c.Timeout < 0:
		return c, errors.New("e2e: Duration, Count, Warmup, Amount and Timeout may not be negative")
	case len(c.Pairs) == 0:
		return c, errors.New("e2e: no account pairs (SeedPairs opens them)")
	}
	return c, nil
}

// Result is what an end-to-end run measured.
type Result struct {
	Clients int
	// Completed is the number of measured transfers; each ended COMPLETED.
	Completed int
	// Elapsed is the wall time of the measurement, from its start until
	// every client has seen its last transfer settle; PerSecond is
	// Completed / Elapsed.
	Elapsed   time.Duration
	PerSecond float64
	// Latencies holds each transfer's time from its request to the
	// successful terminal write of its record, in completion order.
	Latencies []time.Duration
	// Accept holds each transfer's request round trip (the 202), in the
	// same order.
	Accept []time.Duration
}

// Run runs transfers end to end through the stack's REST API; see the
// package documentation. The stack must have been started with the
// probe's Options. Any transfer that is not answered 202 or does not
// end COMPLETED within the timeout ends the run with an error.
func (p *Probe) Run(ctx context.Context, st *stack.Stack, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	client := newAPIClient(st.APIURL, cfg.Caller, cfg.Clients)
	defer client.http.CloseIdleConnections()
	runID := time.Now().UnixNano()
	bodies := make([][]byte, len(cfg.Pairs))
	for i, pair := range cfg.Pairs {
		bodies[i], _ = json.Marshal(transferRequest{Source: pair.Source, Destination: pair.Destination, Amount: cfg.Amount, Currency: cfg.Currency}) // strings and a number: never fails
	}
	var mu sync.Mutex
	res := Result{Clients: cfg.Clients}
	one := func(ctx context.Context, c, n int, measured bool) error {
		key := fmt.Sprintf("e2e-%d-%d-%d", runID, c, n)
		_, accept, total, err := p.transfer(ctx, client, key, bodies[c%len(bodies)], cfg.Timeout)
		if err != nil {
			return err
		}
		if measured {
			mu.Lock()
			res.Latencies = append(res.Latencies, total)
			res.Accept = append(res.Accept, accept)
			mu.Unlock()
		}
		return nil
	}
	elapsed, err := loop(ctx, cfg.Clients, cfg.Warmup, cfg.Duration, cfg.Count, one)
	if err != nil {
		return Result{}, fmt.Errorf("e2e: run with %d clients: %w", cfg.Clients, err)
	}
	res.Completed, res.Elapsed = len(res.Latencies), elapsed
	res.PerSecond = perSecond(res.Completed, elapsed)
	return res, nil
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// loop runs clients concurrently, each calling one for its iterations:
// first warmup each, unmeasured; then, from a common start, measured ones
// until duration has elapsed or count have started (0: no bound of that
// kind). It returns the measured phase's wall time. The first error
// cancels every client and is returned.
func loop(ctx context.Context, clients, warmup int, duration time.Duration, count int, one func(ctx context.Context, client, n int, measured bool) error) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// phase numbers its iterations from first, so that the measured ones
	// follow the warm-up's (and get new idempotency keys).
	phase := func(first int, next func(i int) bool, measured bool) error {
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				for n := first; ctx.Err() == nil && next(n-first); n++ {
					if err := one(ctx, c, n, measured); err != nil {
						cancel(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return context.Cause(ctx)
	}
	if warmup > 0 {
		if err := phase(0, func(i int) bool { return i < warmup }, false); err != nil {
			return 0, fmt.Errorf("warm-up: %w", err)
		}
	}
	start := time.Now()
	var started atomic.Int64
	err := phase(warmup, func(int) bool {
		if duration > 0 && time.Since(start) >= duration {
			return false
		}
		return count <= 0 || started.Add(1) <= int64(count)
	}, true)
	return time.Since(start), err
}
