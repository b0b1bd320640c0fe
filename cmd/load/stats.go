package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/percentile"
)

// stats collects the answers of the load phase. It is safe for
// concurrent use.
type stats struct {
	mu sync.Mutex
	// answers counts answers by label: "202", "422 insufficient_funds",
	// "transport error".
	answers map[string]int
	// latency holds every request's latency by kind.
	latency [numOps][]time.Duration
	// unexpected lists answers that break the contract (first ones only).
	unexpected      []string
	unexpectedCount int
}

func newStats() *stats { return &stats{answers: map[string]int{}} }

// maxUnexpectedListed bounds the unexpected answers kept for the report.
const maxUnexpectedListed = 20

func (s *stats) add(kind op, label string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[label]++
	s.latency[kind] = append(s.latency[kind], d)
}

func (s *stats) addUnexpected(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unexpectedCount++
	if len(s.unexpected) < maxUnexpectedListed {
		s.unexpected = append(s.unexpected, what)
	}
}

// label names an answer for the histogram: the status and, for a
// problem, its code; "transport error" when there was no answer.
func label(status int, code string) string {
	if status == 0 {
		return "transport error"
	}
	if code == "" {
		return fmt.Sprint(status)
	}
	return fmt.Sprintf("%d %s", status, code)
}

// percentiles of a set of latencies, nearest rank.
type percentiles struct {
	N                        int
	P50, P90, P99, P999, Max time.Duration
}

func percentilesOf(ds []time.Duration) percentiles {
	if len(ds) == 0 {
		return percentiles{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return percentiles{
		N: len(s), P50: percentile.Of(s, 500), P90: percentile.Of(s, 900), P99: percentile.Of(s, 990), P999: percentile.Of(s, 999), Max: s[len(s)-1],
	}
}

// histogram is the answers sorted by label, with their counts.
type bucket struct {
	Label string
	Count int
}

func (s *stats) histogram() []bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []bucket
	for _, l := range slices.Sorted(maps.Keys(s.answers)) {
		out = append(out, bucket{l, s.answers[l]})
	}
	return out
}

func (s *stats) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.answers {
		n += c
	}
	return n
}

// serverErrors counts 5xx answers other than 503 (which asks for a retry).
func (s *stats) serverErrors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for l, c := range s.answers {
		if strings.HasPrefix(l, "5") && !strings.HasPrefix(l, "503") {
			n += c
		}
	}
	return n
}

// writeHistogram prints one line per answer with a bar scaled to the
// largest count.
func writeHistogram(w io.Writer, buckets []bucket) {
	most, width := 0, 0
	for _, b := range buckets {
		most = max(most, b.Count)
		width = max(width, len(b.Label))
	}
	for _, b := range buckets {
		n := 0
		if most > 0 {
			n = int(math.Ceil(40 * float64(b.Count) / float64(most)))
		}
		fmt.Fprintf(w, "  %-*s %7d  %s\n", width, b.Label, b.Count, strings.Repeat("#", n))
	}
}

func (s *stats) writeLatency(w io.Writer) {
	s.mu.Lock()
	var all []time.Duration
	rows := make([]percentiles, numOps)
	for k := range numOps {
		rows[k] = percentilesOf(s.latency[k])
		all = append(all, s.latency[k]...)
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "  %-13s %7s %9s %9s %9s %9s %9s\n", "", "n", "p50", "p90", "p99", "p99.9", "max")
	line := func(name string, p percentiles) {
		fmt.Fprintf(w, "  %-13s %7d %9s %9s %9s %9s %9s\n", name, p.N, ms(p.P50), ms(p.P90), ms(p.P99), ms(p.P999), ms(p.Max))
	}
	for k := range numOps {
		if rows[k].N > 0 {
			line(op(k).String(), rows[k])
		}
	}
	line("all", percentilesOf(all))
}

// ms prints a latency in milliseconds.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
