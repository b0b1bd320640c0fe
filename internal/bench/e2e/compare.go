package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/exactlyonce/transfers/internal/local/stack"
)

// CompareConfig is an interleaved comparison of Run and Replay: Config
// is each Run (its Duration or Count ends each slice, of Run and of
// Replay alike; the replay uses the same clients, warm-up and pairs), and
// Rounds the number of (Run, Replay) pairs; 0 is 1.
type CompareConfig struct {
	Config
	Rounds int
}

// Comparison is the sum of the rounds of a comparison.
type Comparison struct {
	// E2E and Replay add up their rounds: counts and elapsed times are
	// summed, latencies concatenated, PerSecond recomputed.
	E2E    Result
	Replay ReplayResult
	// Ratio is E2E.PerSecond / Replay.PerSecond.
	Ratio float64
}

// Compare runs Rounds short end-to-end runs and replays of mix, one after
// the other (Run, Replay, Run, Replay, ...), and adds them up. On a shared
// machine, whatever else runs slows both sides alike, so the ratio is
// steadier than that of one long run of each.
func (p *Probe) Compare(ctx context.Context, st *stack.Stack, mix Mix, cfg CompareConfig) (Comparison, error) {
	if cfg.Rounds < 0 {
		return Comparison{}, fmt.Errorf("e2e: compare: %d rounds", cfg.Rounds)
	}
	if cfg.Duration <= 0 && cfg.Count <= 0 {
		return Comparison{}, errors.New("e2e: compare: set a Duration or a Count")
	}
	rounds := max(cfg.Rounds, 1)
	run := cfg.Config
	replay := ReplayConfig{Clients: cfg.Clients, Duration: cfg.Duration, Count: cfg.Count, Warmup: cfg.Warmup, Pairs: cfg.Pairs}
	var c Comparison
	for i := range rounds {
		res, err := p.Run(ctx, st, run)
		if err != nil {
			return Comparison{}, fmt.Errorf("e2e: compare: round %d: %w", i+1, err)
		}
		rep, err := Replay(ctx, st, mix, replay)
		if err != nil {
			return Comparison{}, fmt.Errorf("e2e: compare: round %d: %w", i+1, err)
		}
		c.E2E = addResult(c.E2E, res)
		c.Replay = addReplay(c.Replay, rep)
	}
	if c.Replay.PerSecond > 0 {
		c.Ratio = c.E2E.PerSecond / c.Replay.PerSecond
	}
	return c, nil
}

func addResult(a, b Result) Result {
	a.Clients = b.Clients
	a.Completed += b.Completed
	a.Elapsed += b.Elapsed
	a.Latencies = append(a.Latencies, b.Latencies...)
	a.Accept = append(a.Accept, b.Accept...)
	a.PerSecond = perSecond(a.Completed, a.Elapsed)
	return a
}

func addReplay(a, b ReplayResult) ReplayResult {
	a.Clients, a.OpsPerTransfer, a.Kinds = b.Clients, b.OpsPerTransfer, b.Kinds
	a.Transfers += b.Transfers
	a.Elapsed += b.Elapsed
	a.Latencies = append(a.Latencies, b.Latencies...)
	a.Issued += b.Issued
	a.ConditionFailures += b.ConditionFailures
	if a.Failures == nil {
		a.Failures = map[string]int{}
	}
	for code, n := range maps.All(b.Failures) {
		a.Failures[code] += n
	}
	a.PerSecond = perSecond(a.Transfers, a.Elapsed)
	return a
}
