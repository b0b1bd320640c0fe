package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/internal/bench/e2e"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		lat  []time.Duration
		pm   int
		want time.Duration
	}{
		{"empty", nil, 500, 0},
		{"one", ms(7), 999, 7 * time.Millisecond},
		{"median of four is the second", ms(4, 1, 3, 2), 500, 2 * time.Millisecond},
		{"p99 of a hundred is the 99th", ms(seq(100)...), 990, 99 * time.Millisecond},
		{"p99.9 of a hundred is the maximum", ms(seq(100)...), 999, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Sample{Latencies: tt.lat}).Percentile(tt.pm); got != tt.want {
				t.Errorf("Percentile(%d) = %v, want %v", tt.pm, got, tt.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - i // reversed: Quantile sorts
	}
	return out
}

func TestDrive(t *testing.T) {
	t.Run("every request is measured once", func(t *testing.T) {
		var n atomic.Int64
		seen := make(chan int, 1<<16)
		s, err := drive(context.Background(), 4, 50*time.Millisecond, func(_ context.Context, _, seq int) error {
			n.Add(1)
			seen <- seq
			time.Sleep(time.Millisecond)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		close(seen)
		if int64(s.Requests()) != n.Load() || s.Requests() == 0 {
			t.Fatalf("%d latencies for %d requests", s.Requests(), n.Load())
		}
		unique := map[int]bool{}
		for q := range seen {
			if unique[q] {
				t.Fatalf("request number %d given twice", q)
			}
			unique[q] = true
		}
		if s.Elapsed < 50*time.Millisecond {
			t.Errorf("elapsed %v, shorter than the run", s.Elapsed)
		}
	})
	t.Run("an error stops the run", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := drive(context.Background(), 2, time.Minute, func(_ context.Context, _, seq int) error {
			if seq == 5 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
}

func TestRewrite(t *testing.T) {
	item := map[string]types.AttributeValue{
		"k": &types.AttributeValueMemberS{Value: "old"},
		"n": &types.AttributeValueMemberN{Value: "1"},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"a": &types.AttributeValueMemberS{Value: "old"}}},
		"s": &types.AttributeValueMemberS{Value: "kept"},
	}
	got := rewrite(item, map[string]string{"old": "new"})
	if v := got["k"].(*types.AttributeValueMemberS).Value; v != "new" {
		t.Errorf("k = %q", v)
	}
	if v := got["m"].(*types.AttributeValueMemberM).Value["a"].(*types.AttributeValueMemberS).Value; v != "new" {
		t.Errorf("m.a = %q", v)
	}
	if v := got["s"].(*types.AttributeValueMemberS).Value; v != "kept" {
		t.Errorf("s = %q", v)
	}
	if v := item["k"].(*types.AttributeValueMemberS).Value; v != "old" {
		t.Errorf("the original changed: k = %q", v)
	}
}

func TestTargetPass(t *testing.T) {
	tests := []struct {
		name string
		t    Target
		want bool
	}{
		{"at least, above", Target{Measured: 0.5, Threshold: 0.45}, true},
		{"at least, equal", Target{Measured: 0.45, Threshold: 0.45}, true},
		{"at least, below", Target{Measured: 0.44, Threshold: 0.45}, false},
		{"at most, below", Target{Measured: 0.05, Threshold: 0.1, Max: true}, true},
		{"at most, above", Target{Measured: 0.11, Threshold: 0.1, Max: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.Pass(); got != tt.want {
				t.Errorf("Pass() = %t, want %t", got, tt.want)
			}
		})
	}
}

// TestRun runs the whole benchmark briefly against a local stack: every
// implementation, request kind and concurrency is measured, each with
// exactly its budget of remote calls, and the report and plots are
// written.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts DynamoDB Local and the local stack; skipped with -short")
	}
	if err := flag.Set("test.benchtime", "20x"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	probe := e2e.NewProbe()
	st, err := stack.Start(ctx, probe.Options(stack.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	res, err := Run(ctx, st, Config{Clients: []int{1, 3}, Cell: 40 * time.Millisecond, Rounds: 2, Warmup: 20 * time.Millisecond,
		Probe: probe, E2ESlice: 300 * time.Millisecond, E2ERounds: 1, ColdStarts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, clients := range []int{1, 3} {
		for _, own := range []bool{true, false} {
			for _, kind := range []string{New, Duplicate} {
				for _, impl := range []string{Ours, Baseline, Raw} {
					p, ok := res.Path(impl, own, kind, clients)
					if !ok {
						t.Errorf("%s ownership %t %s at %d clients: not measured", impl, own, kind, clients)
						continue
					}
					if p.Sample.Requests() == 0 {
						t.Errorf("%s ownership %t %s at %d clients: no requests", impl, own, kind, clients)
					}
					if got := p.Sample.BudgetedCallsPerRequest(); got != float64(p.Budget) {
						t.Errorf("%s ownership %t %s: %.2f calls per request, want %d", impl, own, kind, got, p.Budget)
					}
				}
			}
		}
	}
	wantBudget := map[string]int{"ours new": 2, "ours duplicate": 1, "baseline new": 3, "baseline duplicate": 2}
	for name, want := range wantBudget {
		impl, kind, _ := strings.Cut(name, " ")
		if p, _ := res.Path(impl, false, kind, 1); p.Budget != want {
			t.Errorf("%s without ownership: budget %d, want %d", name, p.Budget, want)
		}
	}
	if len(res.CPU) != 12 {
		t.Errorf("%d CPU figures, want 12", len(res.CPU))
	}
	allocs := map[string]int64{}
	for _, c := range res.CPU {
		if c.CPUNs <= 0 || c.Allocs <= 0 {
			t.Errorf("CPU figure %+v: want positive time and allocations", c)
		}
		allocs[fmt.Sprintf("%s %t %s", c.Impl, c.Ownership, c.Kind)] = c.Allocs
	}
	// Ours makes its calls and does its own work; a new key's calls are
	// two, a duplicate's one.
	for _, own := range []bool{true, false} {
		calls := func(kind string) int64 { return allocs[fmt.Sprintf("%s %t %s", Calls, own, kind)] }
		for _, kind := range []string{New, Duplicate} {
			if ours := allocs[fmt.Sprintf("%s %t %s", Ours, own, kind)]; calls(kind) >= ours {
				t.Errorf("ownership %t %s: ours's calls alone allocate %d times, ours %d", own, kind, calls(kind), ours)
			}
		}
		// The reservation alone allocates less for a new key than for a
		// taken one, which returns the record.
		if calls(New) <= calls(Duplicate) {
			t.Errorf("ownership %t: a new key's calls allocate %d times, a duplicate's one call %d: StartExecution is missing", own, calls(New), calls(Duplicate))
		}
	}

	if len(res.Functions) != 5 || res.Hello.Ready <= 0 {
		t.Errorf("cold starts: %d functions, hello ready in %v; want 5 and a time", len(res.Functions), res.Hello.Ready)
	}

	if len(res.E2E) != 2 {
		t.Errorf("end to end at %d concurrencies, want 2", len(res.E2E))
	}
	for _, c := range res.E2E {
		if c.E2E.Completed == 0 || c.Replay.Transfers == 0 || c.Replay.ConditionFailures != 0 {
			t.Errorf("end to end at %d clients: %d completed, %d replayed, %d replayed conditions failed", c.E2E.Clients, c.E2E.Completed, c.Replay.Transfers, c.Replay.ConditionFailures)
		}
	}

	// The owner reads beside ours's reservations: at most one per
	// request, and only with ownership enforced.
	for _, p := range res.Paths {
		if reads := p.Sample.OwnerReadsPerRequest(); reads > 1 || (reads > 0 && (p.Impl != Ours || !p.Ownership)) {
			t.Errorf("%s ownership %t %s at %d clients: %.3f owner reads per request", p.Impl, p.Ownership, p.Kind, p.Clients, reads)
		}
	}

	dir := t.TempDir()
	plots, err := res.Plots(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(plots) != 4 || plots[0] != "test-throughput.png" {
		t.Errorf("plots %v, want 4, the default configuration's throughput first", plots)
	}
	for _, name := range plots {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		f.Close()
	}
	var md bytes.Buffer
	if err := res.Markdown(&md, DescribeMachine("."), plots); err != nil {
		t.Fatal(err)
	}
	targets := res.Targets()
	if len(targets) == 0 {
		t.Fatal("no targets checked")
	}
	for _, tg := range targets {
		if !strings.Contains(md.String(), "| "+tg.Name+" | "+tg.At+" |") {
			t.Errorf("report lacks target %q at %q", tg.Name, tg.At)
		}
	}
	for _, name := range plots {
		if !strings.Contains(md.String(), "]("+name+")") {
			t.Errorf("report does not link %s", name)
		}
	}
}
