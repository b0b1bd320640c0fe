package idembench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/exactlyonce/transfers/internal/bench"
)

// Thresholds of the targets.
const (
	// MinRatio is ours's requests/s over Powertools' for new keys and
	// duplicates, at every concurrency.
	MinRatio = 1.5
	// MaxCachedOverheadNs is what Do may add to the bare handler for a
	// duplicate served from its cache (BenchmarkDo: cached less bare).
	MaxCachedOverheadNs = 2000
)

// Target is one target checked on a run: a comparison of two figures of
// the same run, as make bench's are.
type Target = bench.Target

// combined sums a side's samples of scenario over every concurrency.
func (r *Run) combined(scenario, side string) (*Sample, bool) {
	var out Sample
	found := false
	for _, w := range r.Config.Workers {
		s, ok := r.Sample(scenario, w, side)
		if !ok {
			continue
		}
		found = true
		out.Latencies = append(out.Latencies, s.Latencies...)
		out.Elapsed += s.Elapsed
		if out.Calls == nil {
			out.Calls = map[string]int64{}
		}
		for op, n := range s.Calls {
			out.Calls[op] += n
		}
	}
	return &out, found
}

// Targets checks the run's targets: for every scenario, ours's calls per
// request at most Powertools' (in its counterpart, for the scenarios
// Powertools has not); for new keys and duplicates at every
// concurrency, ours's requests/s at least MinRatio times Powertools';
// and, when BenchmarkDo ran, the cached duplicate's overhead over the
// bare handler at most MaxCachedOverheadNs.
func (r *Run) Targets() []Target {
	var out []Target
	for _, sc := range Scenarios {
		ours, ok1 := r.combined(sc.Name, Ours)
		pt, ok2 := r.combined(sc.Against, Powertools)
		if !ok1 || !ok2 {
			continue
		}
		at := sc.What
		if sc.Against != sc.Name {
			at += ", against Powertools' " + scenarioWhat(sc.Against)
		}
		out = append(out, Target{Name: "calls per request, ours ≤ Powertools'", At: at,
			Measured: ours.CallsPerRequest(), Threshold: pt.CallsPerRequest(), Max: true, Unit: "calls",
			Note: fmt.Sprintf("ours %s; Powertools %s; %d and %d requests", byOperation(ours.Calls), byOperation(pt.Calls), ours.Requests(), pt.Requests())})
	}
	for _, name := range []string{New, Duplicate} {
		for _, w := range r.Config.Workers {
			ours, ok1 := r.Sample(name, w, Ours)
			pt, ok2 := r.Sample(name, w, Powertools)
			if !ok1 || !ok2 || pt.PerSecond() == 0 {
				continue
			}
			out = append(out, Target{Name: "requests/s, ours / Powertools", At: fmt.Sprintf("%s, %d worker%s", scenarioWhat(name), w, plural(w)),
				Measured: ours.PerSecond() / pt.PerSecond(), Threshold: MinRatio, Unit: "×",
				Note: fmt.Sprintf("%.0f against %.0f requests/s", ours.PerSecond(), pt.PerSecond())})
		}
	}
	if r.Bench != nil {
		bare, ok1 := r.Bench.Median("bare")
		cached, ok2 := r.Bench.Median("cached")
		if ok1 && ok2 {
			out = append(out, Target{Name: "cached duplicate's overhead: BenchmarkDo cached less bare ns/op", At: "idempotency.Do, in-memory store",
				Measured: (cached - bare) / 1e3, Threshold: MaxCachedOverheadNs / 1e3, Max: true, Unit: "µs",
				Note: fmt.Sprintf("medians of %d: cached %.0f ns/op, bare handler %.1f ns/op", len(r.Bench.NsPerOp["cached"]), cached, bare)})
		}
	}
	return out
}

func scenarioWhat(name string) string {
	sc, ok := ScenarioNamed(name)
	if !ok {
		return name
	}
	return sc.What
}

// byOperation lists the calls by operation, in name order.
func byOperation(calls map[string]int64) string {
	if len(calls) == 0 {
		return "no call"
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%d %s", calls[op], op))
	}
	return strings.Join(parts, ", ")
}

// perRequest lists calls by operation per request.
func perRequest(calls map[string]int64, requests int) string {
	if len(calls) == 0 || requests == 0 {
		return "—"
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", op, float64(calls[op])/float64(requests)))
	}
	return strings.Join(parts, ", ")
}

// Markdown writes r as a markdown report: the machine, the sides, the
// targets with PASS or FAIL, every scenario's figures, the rounds' raw
// requests/s and BenchmarkDo's output.
func (r *Run) Markdown(w io.Writer, m bench.Machine) error {
	p := &printer{w: w}
	cfg := r.Config
	p.f("# Idempotency benchmark, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	p.f("Made by `make bench-idempotency` (cmd/benchidem) in one run: this project's idempotency library and Powertools for AWS Lambda (Python)'s idempotency utility, each in its own process, against one DynamoDB Local over HTTP, a table each. Every ratio compares figures of the same run, interleaved, so that the noise of a shared machine falls on both sides.\n\n")
	p.f("**Machine:** %s, %d cores, %s memory; %s; %s; Java %s; DynamoDB Local %s (in memory, shared by both sides).\n\n",
		m.CPU, m.Cores, m.Memory, m.Kernel, m.Go, strings.TrimPrefix(m.Java, "openjdk version "), m.DynamoDBLocal)
	p.f("**Load average** (1, 5, 15 min), before the run: %s; after: %s. On %d cores, anything much above %d means other work shared the machine, and the absolute figures, more than the ratios, moved with it.\n\n", m.LoadBefore, m.LoadAfter, m.Cores, m.Cores)
	p.f("**Sides:**\n\n")
	p.f("- *ours*: `idempotency.Wrap` over `idempotency.NewDynamoDBPersistence` (%s), on a table of `idempotency.DefaultAttributes().TableInput`'s schema (the partition key `pk` alone) with its `TimeToLiveInput`; `Config{Retention: 1h, Lease: 1m}`, and `CacheSize: %d` in the cached scenario only. Workers are goroutines of one process.\n", versions(r.Versions[Ours]), CacheSize)
	p.f("- *Powertools*: `idempotent_function` with `DynamoDBPersistenceLayer` (%s), boto3 pointed at DynamoDB Local by `endpoint_url`, on a table with the partition key `id` (S) and Time to Live on `expiration`; `IdempotencyConfig(event_key_jmespath=\"id\", payload_validation_jmespath=\"@\", expires_after_seconds=3600)`, `use_local_cache=True, local_cache_max_items=%d` in the cached scenario only, and a fake Lambda context with 60 s remaining registered with `register_lambda_context`. Workers are threads of one process (`tools/powertools-bench/driver.py`).\n\n", versions(r.Versions[Powertools]), CacheSize)
	p.f("Both take the key from the input's `id` and check the whole payload (ours's fingerprint, Powertools' validation hash); the handler returns `{id, amount, status}` or fails. Calls are counted in each SDK, one per operation before its retries (an Initialize middleware; botocore's `before-call.dynamodb.*` event). Every answer is checked (the stored output, `ErrInProgress` / `IdempotencyAlreadyInProgressError`, the handler's error, `ErrStoredFailure`, `ErrKeyReused` / `IdempotencyValidationError`), and so is how many times the handler ran.\n\n")
	p.f("A handler error is not handled alike. Powertools deletes the record (`DeleteItem`), so a retry is a new call that runs the handler again. Ours, for an error worth retrying, marks the record released (`UpdateItem`), keeping its lease counter, and a retry runs the handler again; for an error marked `idempotency.Permanent`, it stores the failure (`UpdateItem`) and replays it to every retry in one call, without running the handler. Powertools has no such mode: those two rows of ours are compared with its handler error and its retry.\n\n")
	p.f("**Settings:** workers %v; %d rounds of %d requests per scenario, concurrency and side, after a warm-up round of %d not kept; each command also sends %d warm-up requests before it measures; pooled scenarios go round %d keys made ready beforehand (completed, failed permanently, or held by calls whose handler waits), and each retry after a handler error takes a key of its own that failed beforehand, outside the measurement. Each worker sends its next request as soon as the last is answered; the side that goes first alternates from one scenario to the next.\n\n",
		cfg.Workers, cfg.Rounds, cfg.Requests, cfg.Warmup, cfg.Warmup, cfg.Pool)

	p.f("## Targets\n\n%s", bench.TargetTable(r.Targets()))

	p.f("\n## Scenarios\n\n")
	p.f("Calls per request, latency and requests/s of each side, summed over the rounds. *ours / Powertools* is the ratio of requests/s; the scenarios Powertools has no counterpart of (a `Permanent` error) are compared with its nearest, named in the scenario.\n\n")
	p.f("| scenario | workers | side | calls/request | by operation | p50 ms | p99 ms | requests/s | ours / Powertools |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, sc := range Scenarios {
		for _, w := range cfg.Workers {
			ours, ok := r.Sample(sc.Name, w, Ours)
			if !ok {
				continue
			}
			pt, hasPT := r.Sample(sc.Against, w, Powertools)
			rel := "—"
			if hasPT && pt.PerSecond() > 0 {
				rel = fmt.Sprintf("%.2f×", ours.PerSecond()/pt.PerSecond())
			}
			what := sc.What
			if sc.Against != sc.Name {
				what += ", against Powertools' " + scenarioWhat(sc.Against)
			}
			p.f("| %s | %d | ours | %.2f | %s | %.2f | %.2f | %.0f | %s |\n", what, w, ours.CallsPerRequest(), perRequest(ours.Calls, ours.Requests()),
				ms(ours.Percentile(500)), ms(ours.Percentile(990)), ours.PerSecond(), rel)
			if sc.Powertools && hasPT {
				p.f("| %s | %d | Powertools | %.2f | %s | %.2f | %.2f | %.0f | |\n", what, w, pt.CallsPerRequest(), perRequest(pt.Calls, pt.Requests()),
					ms(pt.Percentile(500)), ms(pt.Percentile(990)), pt.PerSecond())
			}
		}
	}

	p.f("\n## Raw figures\n\n")
	p.f("Each round's requests/s (%d requests each), then the totals the figures above come from: requests, wall time summed over the rounds, calls and handler runs.\n\n", cfg.Requests)
	p.f("| scenario | workers | side | requests/s by round | requests | seconds | calls | handler runs |\n|---|---|---|---|---|---|---|---|\n")
	for _, sc := range Scenarios {
		for _, w := range cfg.Workers {
			for _, side := range []string{Ours, Powertools} {
				s, ok := r.Sample(sc.Name, w, side)
				if !ok {
					continue
				}
				rounds := make([]string, len(s.PerRound))
				for i, v := range s.PerRound {
					rounds[i] = fmt.Sprintf("%.0f", v)
				}
				var calls int64
				for _, n := range s.Calls {
					calls += n
				}
				p.f("| %s | %d | %s | %s | %d | %.3f | %d | %d |\n", sc.Name, w, side, strings.Join(rounds, ", "), s.Requests(), s.Elapsed.Seconds(), calls, s.HandlerRuns)
			}
		}
	}

	if r.Bench != nil {
		p.f("\n## BenchmarkDo\n\n")
		p.f("`idempotency.Do` on the module's in-memory store against the bare handler (`idempotency/do_bench_test.go`): a new key, a duplicate from the store, a duplicate from the cache. The target is the cached duplicate's ns/op less the bare handler's, medians of the runs.\n\n")
		p.f("```\n$ %s\n%s\n```\n", r.Bench.Command, r.Bench.Output)
	}
	return p.err
}

// versions lists a side's versions, in name order.
func versions(v map[string]string) string {
	if len(v) == 0 {
		return "versions unknown"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		parts = append(parts, k+" "+v[k])
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
