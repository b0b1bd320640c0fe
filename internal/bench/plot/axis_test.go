package plot

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/exactlyonce/transfers/internal/percentile"
)

// The downsampled CDF has at most maxPoints points, rises, starts at the
// minimum and ends at the maximum, and has the percentiles the benchmark
// reports at their exact value, whatever the number of latencies.
func TestCDFKeepsMinMaxAndPercentiles(t *testing.T) {
	for _, n := range []int{1, 2, 10, 999, 1000, 1001, 1234, 4321, 100_000, 1_000_000} {
		t.Run(fmt.Sprint(n, " latencies"), func(t *testing.T) {
			sorted := logNormal(uint64(n), n, 10*time.Millisecond, 0.8)
			slices.Sort(sorted)
			xys := cdf(sorted, maxPoints)

			if len(xys) > maxPoints {
				t.Errorf("%d points, want at most %d", len(xys), maxPoints)
			}
			if n+1 <= maxPoints && len(xys) != n+1 {
				t.Errorf("%d points for %d latencies, want every one and the start", len(xys), n)
			}
			for i := 1; i < len(xys); i++ {
				if xys[i].X < xys[i-1].X || xys[i].Y <= xys[i-1].Y {
					t.Fatalf("points %d and %d do not rise: %v, %v", i-1, i, xys[i-1], xys[i])
				}
			}
			if first := xys[0]; first.X != millis(sorted[0]) || first.Y != 0 {
				t.Errorf("first point %v, want the minimum %v at 0", first, millis(sorted[0]))
			}
			if second := xys[1%len(xys)]; n > 1 && (second.X != millis(sorted[0]) || second.Y != 1/float64(n)) {
				t.Errorf("second point %v, want the minimum %v at 1/n", second, millis(sorted[0]))
			}
			if last := xys[len(xys)-1]; last.X != millis(sorted[n-1]) || last.Y != 1 {
				t.Errorf("last point %v, want the maximum %v at 1", last, millis(sorted[n-1]))
			}
			for _, pm := range keptPermille {
				i := percentile.Rank(n, pm)
				want := plotter.XY{X: millis(sorted[i]), Y: float64(i+1) / float64(n)}
				if !slices.Contains(xys, want) {
					t.Errorf("p%g (%v at %v) not among the points", float64(pm)/10, want.X, want.Y)
				}
			}
		})
	}
}

// cdfRanks agrees with cmd/load's nearest rank: of 1..1000 ms, p99 is the
// 990th and p99.9 the 999th; and the tail is drawn in detail: of 100,000
// latencies, more points above p99 than evenly spread points would give.
func TestCDFRanks(t *testing.T) {
	if i := percentile.Rank(1000, 990); i != 989 {
		t.Errorf("p99 of 1000 at index %d, want 989", i)
	}
	if i := percentile.Rank(1000, 999); i != 998 {
		t.Errorf("p99.9 of 1000 at index %d, want 998", i)
	}
	ranks := cdfRanks(100_000, maxPoints)
	p99 := percentile.Rank(100_000, 990)
	above := len(ranks) - slices.Index(ranks, p99) - 1
	if above < 100 {
		t.Errorf("%d of %d points above p99, want at least 100", above, len(ranks))
	}
	if top := ranks[len(ranks)-10:]; top[0] != 100_000-10 {
		t.Errorf("the 10 slowest latencies are not all kept: ranks %v", top)
	}
}

// labels returns the labels of ticks' labelled ticks, in order.
func labels(ticks gplot.ConstantTicks) string {
	var ls []string
	for _, t := range ticks {
		if t.Label != "" {
			ls = append(ls, t.Label)
		}
	}
	return strings.Join(ls, " ")
}

func TestLogAxis(t *testing.T) {
	sty := gplot.New().X.Tick.Label
	sty.Font = sans(10)
	tests := []struct {
		name     string
		lo, hi   float64
		width    vg.Length
		min, max float64
		labels   string
	}{
		{"one decade", 3.2, 9.7, 400, 3, 10, "3 4 5 6 7 8 9 10"},
		{"bench range", 0.7, 180, 400, 0.5, 200, "0.5 1 2 5 10 20 50 100 200"},
		{"on ticks", 1, 100, 400, 1, 100, "1 2 5 10 20 50 100"},
		{"one value on a tick", 2, 2, 400, 1.5, 3, "1.5 2 3"},
		{"one value", 7, 7, 400, 6, 8, "6 7 8"},
		{"five decades", 0.05, 3000, 400, 0.03, 3000, "0.03 0.1 0.3 1 3 10 30 100 300 1000 3000"},
		{"narrow axis", 0.7, 180, 150, 0.1, 1000, "0.1 1 10 100 1000"},
		{"microseconds to minutes", 0.001, 500_000, 300, 0.0001, 1_000_000, "0.0001 0.01 1 100 10000 1000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ticks := logAxis(tt.lo, tt.hi, tt.width, sty)
			if lo != tt.min || hi != tt.max {
				t.Errorf("range [%v, %v], want [%v, %v]", lo, hi, tt.min, tt.max)
			}
			if got := labels(ticks); got != tt.labels {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
			checkApart(t, ticks, func(v float64) float64 { return logFraction(lo, hi, v) }, tt.width, sty)
		})
	}
}

// checkApart checks that no two labels of ticks overlap on an axis width
// long, norm giving a value's fraction of it.
func checkApart(t *testing.T, ticks gplot.ConstantTicks, norm func(float64) float64, width vg.Length, sty text.Style) {
	t.Helper()
	var prev *gplot.Tick
	for _, tick := range ticks {
		if tick.Label == "" {
			continue
		}
		if norm(tick.Value) < -1e-9 || norm(tick.Value) > 1+1e-9 {
			t.Errorf("tick %v outside the axis", tick.Value)
		}
		if prev != nil && !apart(*prev, tick, norm(prev.Value), norm(tick.Value), width, sty) {
			t.Errorf("labels %q and %q overlap", prev.Label, tick.Label)
		}
		prev = &tick
	}
}

func TestClientTicks(t *testing.T) {
	sty := gplot.New().X.Tick.Label
	sty.Font = sans(10)
	tests := []struct {
		name    string
		clients []int
		width   vg.Length
		labels  string
	}{
		{"three counts", []int{1, 8, 32}, 400, "1 8 32"},
		{"powers of two", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, 400, "1 2 4 8 16 32 64 128 256 512 1024"},
		{"close counts", []int{1, 2, 30, 31, 32, 256}, 400, "1 2 30 256"},
		{"close to the last", []int{1, 8, 250, 256}, 400, "1 8 256"},
		{"narrow axis", []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, 60, "1 8 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi := float64(tt.clients[0]), float64(tt.clients[len(tt.clients)-1])
			ticks := clientTicks(tt.clients, lo, hi, tt.width, sty)
			if len(ticks) != len(tt.clients) {
				t.Errorf("%d ticks for %d client counts", len(ticks), len(tt.clients))
			}
			if got := labels(ticks); got != tt.labels {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
			checkApart(t, ticks, func(v float64) float64 { return logFraction(lo, hi, v) }, tt.width, sty)
		})
	}
}

func TestLinearAxis(t *testing.T) {
	tests := []struct {
		top    float64
		max    float64
		labels string
	}{
		{2650, 3000, "0 500 1000 1500 2000 2500 3000"},
		{3000, 3500, "0 500 1000 1500 2000 2500 3000 3500"},
		{95, 100, "0 10 20 30 40 50 60 70 80 90 100"},
		{0.5, 0.6, "0.0 0.1 0.2 0.3 0.4 0.5 0.6"},
		{0, 1.2, "0.0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{1_234_567, 1_400_000, "0 200000 400000 600000 800000 1000000 1200000 1400000"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("top ", tt.top), func(t *testing.T) {
			max, ticks := linearAxis(tt.top)
			if math.Abs(max-tt.max) > 1e-9 {
				t.Errorf("axis to %v, want %v", max, tt.max)
			}
			if max < tt.top*1.05 {
				t.Errorf("axis to %v, less than 5 %% above %v", max, tt.top)
			}
			if got := labels(ticks); got != tt.labels {
				t.Errorf("labels %q, want %q", got, tt.labels)
			}
		})
	}
}
