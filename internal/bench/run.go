// Package bench is the project's benchmark: one run measures the
// request path of the orchestrator against the conventional pattern and
// against the database call it stands on, at several concurrencies,
// end-to-end transfers against a replay of their database operations,
// the orchestrator's own CPU per request, and each function's cold
// start. It checks the project's targets (ratios measured in the same
// run, never absolute times) and renders the results as markdown and
// plots. cmd/bench runs it; `make bench` runs cmd/bench.
package bench

import (
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/exactlyonce/transfers/internal/bench/coldstart"
	"github.com/exactlyonce/transfers/internal/bench/e2e"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// Config sizes a run.
type Config struct {
	// Clients are the concurrencies measured; default 1, 8, 32.
	Clients []int
	// Cell is how long each request-path measurement runs per round,
	// and Rounds how many interleaved rounds add up to a figure; default
	// 400 ms and 8: short turns, many of them, so that a burst of noise
	// or DynamoDB Local's drift as its tables grow falls on every
	// implementation alike.
	Cell   time.Duration
	Rounds int
	// Warmup runs every request kind before measuring, so that DynamoDB
	// Local's JIT has compiled its paths; default 300 ms per kind.
	Warmup time.Duration
	// Probe, when set, runs the end-to-end stage: the stack must have
	// been started with its Options (e2e.Probe.Options). E2ESlice and
	// E2ERounds size it per concurrency; default 2 s and 4.
	Probe     *e2e.Probe
	E2ESlice  time.Duration
	E2ERounds int
	// ColdStarts is how many times each function is started for its
	// cold-start medians; default 20, negative skips the stage.
	ColdStarts int
	// CPUProfile, when set, receives a CPU profile of the CPU-per-request
	// stage: the orchestrator and the SDK alone.
	CPUProfile io.Writer
	// Progress receives a line per step; nil is silent.
	Progress func(format string, args ...any)
}

func (c *Config) defaults() {
	if len(c.Clients) == 0 {
		c.Clients = []int{1, 8, 32}
	}
	if c.Cell <= 0 {
		c.Cell = 400 * time.Millisecond
	}
	if c.Rounds <= 0 {
		c.Rounds = 8
	}
	if c.Warmup <= 0 {
		c.Warmup = 300 * time.Millisecond
	}
	if c.E2ESlice <= 0 {
		c.E2ESlice = 2 * time.Second
	}
	if c.E2ERounds <= 0 {
		c.E2ERounds = 4
	}
	if c.ColdStarts == 0 {
		c.ColdStarts = 20
	}
	if c.Progress == nil {
		c.Progress = func(string, ...any) {}
	}
}

// Path is one request-path figure: an implementation, a request kind, a
// concurrency.
type Path struct {
	Impl      string
	Ownership bool
	Kind      string
	Clients   int
	// Budget is the number of remote calls the implementation makes for
	// the kind.
	Budget int
	Sample Sample
}

// Result is a whole run.
type Result struct {
	Started time.Time
	Config  Config
	Paths   []Path
	CPU     []CPU
	// E2E holds, per concurrency, the end-to-end transfers against the
	// replay of their DynamoDB operations; Mix is the operations.
	E2E []e2e.Comparison
	Mix e2e.Mix
	// Hello, Floor and Functions are the cold starts: a minimal
	// aws-lambda-go handler, the same with a DynamoDB client
	// (coldstart.FloorPackage), and each of the project's functions.
	Hello     coldstart.Result
	Floor     coldstart.Result
	Functions []coldstart.Result
}

// Path returns the figure of impl/ownership/kind at clients.
func (r *Result) Path(impl string, ownership bool, kind string, clients int) (Path, bool) {
	i := slices.IndexFunc(r.Paths, func(p Path) bool {
		return p.Impl == impl && p.Ownership == ownership && p.Kind == kind && p.Clients == clients
	})
	if i < 0 {
		return Path{}, false
	}
	return r.Paths[i], true
}

// Run measures everything on st, a local stack it may add to.
func Run(ctx context.Context, st *stack.Stack, cfg Config) (*Result, error) {
	cfg.defaults()
	if slices.Max(cfg.Clients) > maxClients {
		return nil, fmt.Errorf("bench: at most %d clients", maxClients)
	}
	res := &Result{Started: time.Now(), Config: cfg}
	cfg.Progress("request path: set up the implementations")
	p, err := newPaths(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if res.Paths, err = p.measure(ctx, cfg); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg.Progress("CPU per request")
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	for _, c := range []struct {
		impl      string
		ownership bool
	}{{Ours, true}, {Ours, false}, {Baseline, true}, {Baseline, false}, {Calls, true}, {Calls, false}} {
		for _, kind := range []string{New, Duplicate} {
			cpu, err := p.cpu(ctx, c.impl, c.ownership, kind)
			if err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
			res.CPU = append(res.CPU, cpu)
		}
	}
	if cfg.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if cfg.Probe != nil {
		if err := res.endToEnd(ctx, st, cfg); err != nil {
			return nil, fmt.Errorf("bench: end to end: %w", err)
		}
	}
	if cfg.ColdStarts > 0 {
		cfg.Progress("cold starts: %d per function", cfg.ColdStarts)
		fns, err := coldstart.ProjectFunctions(coldstart.ProjectConfig{
			IdempotencyTable: st.Tables["IdempotencyTable"], LedgerTable: st.Tables["LedgerTable"],
			StateMachineARN:  st.StateMachines["TransferStateMachine"],
			DynamoDBEndpoint: st.DynamoDBEndpoint, SFNEndpoint: st.SFNEndpoint, Region: stack.Region,
		})
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		floor := coldstart.Floor()
		var all []coldstart.Result
		if res.Hello, all, err = coldstart.Measure(ctx, coldstart.Options{Functions: append(fns, floor), Starts: cfg.ColdStarts}); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		res.Functions, res.Floor = all[:len(fns)], all[len(fns)]
	}
	return res, nil
}

// endToEnd compares completed transfers with the replay of their
// database operations at each concurrency, one account pair per client.
func (r *Result) endToEnd(ctx context.Context, st *stack.Stack, cfg Config) error {
	pairs, err := e2e.SeedPairs(ctx, st, slices.Max(cfg.Clients), e2e.DefaultCaller, 1<<50)
	if err != nil {
		return err
	}
	cfg.Progress("end to end: capture one transfer's operations")
	if r.Mix, err = cfg.Probe.Capture(ctx, st, e2e.CaptureConfig{Pair: pairs[0]}); err != nil {
		return err
	}
	for _, clients := range cfg.Clients {
		cfg.Progress("end to end: %d clients, %d rounds of %s", clients, cfg.E2ERounds, cfg.E2ESlice)
		c, err := cfg.Probe.Compare(ctx, st, r.Mix, e2e.CompareConfig{Config: e2e.Config{Clients: clients, Duration: cfg.E2ESlice, Pairs: pairs}, Rounds: cfg.E2ERounds})
		if err != nil {
			return err
		}
		r.E2E = append(r.E2E, c)
	}
	return nil
}

// measure runs every implementation and request kind at every
// concurrency, in rounds: within a round the implementations of one kind
// and concurrency run back to back, in an order that rotates from round
// to round, so that they share the machine's noise.
func (p *paths) measure(ctx context.Context, cfg Config) ([]Path, error) {
	type cell struct {
		im      *impl
		kind    string
		clients int
	}
	for _, im := range p.impls {
		for _, kind := range []string{New, Duplicate} {
			if _, err := drive(ctx, 8, cfg.Warmup, im.op[kind]); err != nil {
				return nil, fmt.Errorf("warm up %s %s: %w", im.name, kind, err)
			}
		}
	}
	samples := map[cell]*Sample{}
	for round := range cfg.Rounds {
		for _, clients := range cfg.Clients {
			for _, kind := range []string{New, Duplicate} {
				cfg.Progress("round %d/%d: %d clients, %s", round+1, cfg.Rounds, clients, kind)
				for i := range p.impls {
					im := p.impls[(i+round)%len(p.impls)]
					im.calls.n.Store(0)
					im.calls.reads.Store(0)
					s, err := drive(ctx, clients, cfg.Cell, im.op[kind])
					if err != nil {
						return nil, fmt.Errorf("%s (ownership %t) %s at %d clients: %w", im.name, im.ownership, kind, clients, err)
					}
					s.Calls, s.OwnerReads = im.calls.n.Load(), im.calls.reads.Load()
					k := cell{im, kind, clients}
					if samples[k] == nil {
						samples[k] = &Sample{}
					}
					samples[k].Add(s)
				}
			}
		}
	}
	var out []Path
	for _, clients := range cfg.Clients {
		for _, kind := range []string{New, Duplicate} {
			for _, im := range p.impls {
				s := samples[cell{im, kind, clients}]
				if got, budget := s.BudgetedCallsPerRequest(), im.budget[kind]; got > float64(budget) {
					return nil, fmt.Errorf("%s (ownership %t) %s: %.2f remote calls per request, budget %d", im.name, im.ownership, kind, got, budget)
				}
				if reads := s.OwnerReadsPerRequest(); reads > 1 {
					return nil, fmt.Errorf("%s (ownership %t) %s: %.2f owner reads per request, at most 1", im.name, im.ownership, kind, reads)
				}
				out = append(out, Path{Impl: im.name, Ownership: im.ownership, Kind: kind, Clients: clients, Budget: im.budget[kind], Sample: *s})
			}
		}
	}
	return out, nil
}
