package plot

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/exactlyonce/transfers/internal/percentile"
)

// Series is one line of a latency CDF: the latencies of one kind of
// request, in any order.
type Series struct {
	Name      string
	Latencies []time.Duration
}

// maxPoints bounds the points drawn per CDF line. A thousand is more than
// an 800 px wide figure can show, and keeps a series of 100,000 latencies
// as fast to draw as one of a thousand.
const maxPoints = 1000

// floor is where latencies at or below zero (a clock that did not
// advance) are drawn: a log axis has no zero.
const floor = time.Microsecond

// LatencyCDF writes to path a PNG figure of the cumulative distribution of
// each series' latencies: x is the latency in milliseconds on a log scale,
// y the fraction of the series' requests that took at most x. Each series
// is one line, with its own colour and dash pattern, named in the legend.
//
// A series with no latencies is left out of the figure and its legend,
// the others are drawn and keep the look their position gives them; it is
// an error if series is empty or if no series has a latency. The caller's
// slices are not modified. A latency at or below zero is drawn at 1 µs.
//
// A line has at most a thousand points (maxPoints) however many latencies
// it draws: half spread evenly in y, the rest evenly in log(1-y) over the
// tail. The minimum, median, p90, p99, p99.9 and maximum are always among
// them, at their exact value, and so are all of the slowest latencies.
func LatencyCDF(path, title string, series []Series) error {
	if len(series) == 0 {
		return errors.New("plot: latency CDF: no series to draw")
	}
	p := newPlot(title, "latency (ms, log scale)", "fraction of requests ≤ latency")
	leg := newLegend()
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range series {
		if len(s.Latencies) == 0 {
			continue
		}
		sorted := slices.Clone(s.Latencies)
		slices.Sort(sorted)
		xys := cdf(sorted, maxPoints)
		lo = min(lo, xys[0].X)
		hi = max(hi, xys[len(xys)-1].X)

		line, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot: latency CDF: series %q: %w", s.Name, err)
		}
		// Steps, not slopes: the empirical CDF is flat between two
		// latencies, and a slope across a gap would draw latencies that
		// were never measured.
		line.StepStyle = plotter.PostStep
		line.LineStyle = lineStyle(i)
		p.Add(line)
		leg.Add(s.Name, line)
	}
	if math.IsInf(lo, 1) {
		return fmt.Errorf("plot: latency CDF: none of the %d series has a latency", len(series))
	}

	p.X.Scale = gplot.LogScale{}
	p.X.Min, p.X.Max = lo/2, hi*2 // for now: not zero wide, even if lo == hi
	fitX := func(width vg.Length) {
		p.X.Min, p.X.Max, p.X.Tick.Marker = logAxis(lo, hi, width, p.X.Tick.Label)
	}
	p.Y.Min, p.Y.Max = 0, 1
	ticks := make(gplot.ConstantTicks, 0, 11)
	for i := range 11 {
		y := float64(i) / 10
		ticks = append(ticks, gplot.Tick{Value: y, Label: strconv.FormatFloat(y, 'f', -1, 64)})
	}
	p.Y.Tick.Marker = ticks
	return save(p, leg, path, fitX)
}

// millis is d in milliseconds, at least floor.
func millis(d time.Duration) float64 {
	return float64(max(d, floor)) / float64(time.Millisecond)
}

// cdf returns the points of the empirical CDF of sorted (ascending, not
// empty): x the latency in milliseconds, y the fraction of the latencies
// at or below it. The first point, at the minimum and y = 0, draws the
// CDF's jump there, which is all there is to see of a single latency; the
// others are those at cdfRanks. At most limit points.
func cdf(sorted []time.Duration, limit int) plotter.XYs {
	n := len(sorted)
	ranks := cdfRanks(n, limit-1)
	xys := make(plotter.XYs, 0, len(ranks)+1)
	xys = append(xys, plotter.XY{X: millis(sorted[0]), Y: 0})
	for _, r := range ranks {
		xys = append(xys, plotter.XY{X: millis(sorted[r]), Y: float64(r+1) / float64(n)})
	}
	return xys
}

// keptPermille are the percentiles, per mille, whose points every CDF
// line has at their exact value: the ones the benchmark reports.
var keptPermille = []int{500, 900, 990, 999}

// cdfRanks returns, ascending, the ranks (indexes into n sorted latencies)
// that draw their CDF in at most limit points: every rank when n <= limit.
// Otherwise half the points are spread evenly in y, which draws the body
// of the distribution, and the rest evenly in log(1-y) from p90 to the
// maximum: evenly in y, the slowest 1 % of 100,000 requests would get 5
// points and the tail, which is where ours and the baseline differ, would
// be drawn as a straight line. The first and last ranks and those of
// keptPermille are always kept, so that the figure agrees exactly with the
// percentiles printed next to it.
func cdfRanks(n, limit int) []int {
	if n <= limit {
		ranks := make([]int, n)
		for i := range ranks {
			ranks[i] = i
		}
		return ranks
	}
	body := limit / 2
	tail := limit - body - 1 - len(keptPermille) // room for rank 0 and the percentiles
	ranks := make([]int, 0, limit)
	ranks = append(ranks, 0)
	for j := 1; j <= body; j++ {
		// The nearest rank at y = j/body; the last is the maximum.
		ranks = append(ranks, (j*n+body-1)/body-1)
	}
	// above is the number of latencies above a tail point, from a tenth of
	// them down to one, log spaced: where it falls below its spacing, every
	// rank is kept.
	if top := float64(n) / 10; tail >= 2 && top > 1 {
		for k := range tail {
			above := int(math.Round(top * math.Pow(1/top, float64(k)/float64(tail-1))))
			ranks = append(ranks, n-1-above)
		}
	}
	for _, pm := range keptPermille {
		ranks = append(ranks, percentile.Rank(n, pm))
	}
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// logTickSet is one choice of ticks on a log axis: labelled ticks at the
// major mantissas and unlabelled ones at the minor mantissas of every
// decades-th decade, unlabelled ticks at the powers of ten in between.
type logTickSet struct {
	major, minor []float64
	decades      int
}

// logTickSets are the tick sets of a log axis, densest first. Past the
// last, logAxis labels every second, third… power of ten.
var logTickSets = []logTickSet{
	{major: []float64{1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}, decades: 1},
	{major: []float64{1, 2, 5}, minor: []float64{3, 4, 6, 7, 8, 9}, decades: 1},
	{major: []float64{1, 3}, minor: []float64{2, 4, 5, 6, 7, 8, 9}, decades: 1},
	{major: []float64{1}, minor: []float64{2, 3, 4, 5, 6, 7, 8, 9}, decades: 1},
}

// logAxis returns the range and ticks of a log axis showing [lo, hi]
// (0 < lo <= hi) on a data area width long, with labels drawn in sty: the
// densest tick set whose labels do not overlap, the range widened to the
// labelled ticks just outside the data so that both ends of the axis are
// labelled.
func logAxis(lo, hi float64, width vg.Length, sty text.Style) (axisMin, axisMax float64, ticks gplot.ConstantTicks) {
	for i := 0; ; i++ {
		set := logTickSet{major: []float64{1}, decades: i - len(logTickSets) + 2}
		if i < len(logTickSets) {
			set = logTickSets[i]
		}
		major, minor := set.ticks(lo, hi)
		// The labelled ticks at or just outside lo and hi.
		first := max(0, lastIndex(major, func(v float64) bool { return v <= lo }))
		last := slices.IndexFunc(major, func(v float64) bool { return v >= hi })
		if first == last { // lo == hi, on a tick
			first, last = first-1, last+1
		}
		major = major[first : last+1]
		axisMin, axisMax = major[0], major[len(major)-1]

		ticks = ticks[:0]
		for _, v := range major {
			ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
		fits := true
		for j := 1; j < len(ticks) && fits; j++ {
			fits = apart(ticks[j-1], ticks[j],
				logFraction(axisMin, axisMax, ticks[j-1].Value), logFraction(axisMin, axisMax, ticks[j].Value), width, sty)
		}
		if !fits && len(ticks) > 2 {
			continue
		}
		for _, v := range minor {
			if axisMin < v && v < axisMax {
				ticks = append(ticks, gplot.Tick{Value: v})
			}
		}
		return axisMin, axisMax, ticks
	}
}

// ticks returns, ascending, the values of the labelled and of the
// unlabelled ticks of s from the decade below lo to the one above hi.
func (s logTickSet) ticks(lo, hi float64) (major, minor []float64) {
	from := int(math.Floor(math.Log10(lo))) - s.decades
	to := int(math.Ceil(math.Log10(hi))) + s.decades
	for e := from; e <= to; e++ {
		if (e%s.decades+s.decades)%s.decades != 0 {
			minor = append(minor, pow10(1, e))
			continue
		}
		for _, m := range s.major {
			major = append(major, pow10(m, e))
		}
		for _, m := range s.minor {
			minor = append(minor, pow10(m, e))
		}
	}
	return major, minor
}

// pow10 is m×10^e, divided rather than multiplied when e is negative so
// that 0.5 is 0.5 and not 0.5000000000000001.
func pow10(m float64, e int) float64 {
	if e < 0 {
		return m / math.Pow10(-e)
	}
	return m * math.Pow10(e)
}

// lastIndex is the index of the last element of s satisfying f, or -1.
func lastIndex(s []float64, f func(float64) bool) int {
	for i := len(s) - 1; i >= 0; i-- {
		if f(s[i]) {
			return i
		}
	}
	return -1
}
