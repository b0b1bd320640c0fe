package plot

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// Curve is one line of a throughput figure: the requests per second one
// implementation served at each number of concurrent clients measured.
type Curve struct {
	Name   string
	Points []Point
}

// Point is the throughput measured with Clients concurrent clients.
type Point struct {
	Clients   int
	PerSecond float64
}

// Throughput writes to path a PNG figure of each curve's throughput: x is
// the number of concurrent clients on a log scale, base 2, with a tick at
// each client count of any curve, y the requests per second from zero.
// Each curve is a line through its points, marked, with its own colour,
// dash pattern and marker, named in the legend. Points may come in any
// order.
//
// A curve with no points is left out of the figure and its legend, the
// others are drawn and keep the look their position gives them; it is an
// error if curves is empty or if no curve has a point. A point's client
// count must be positive and its rate finite and not negative; a curve may
// have one point per client count.
func Throughput(path, title string, curves []Curve) error {
	return Rate(path, title, "requests/s", curves)
}

// Rate is Throughput with another unit on the y axis (transfers/s, say):
// yLabel names it.
func Rate(path, title, yLabel string, curves []Curve) error {
	if len(curves) == 0 {
		return errors.New("plot: throughput: no curves to draw")
	}
	p := newPlot(title, "concurrent clients (log scale)", yLabel)
	leg := newLegend()
	var clients []int
	top := 0.0
	for i, c := range curves {
		if len(c.Points) == 0 {
			continue
		}
		pts := slices.Clone(c.Points)
		slices.SortFunc(pts, func(a, b Point) int { return cmp.Compare(a.Clients, b.Clients) })
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			switch {
			case pt.Clients < 1:
				return fmt.Errorf("plot: throughput: curve %q: %d clients: not a positive count", c.Name, pt.Clients)
			case math.IsNaN(pt.PerSecond) || math.IsInf(pt.PerSecond, 0) || pt.PerSecond < 0:
				return fmt.Errorf("plot: throughput: curve %q: %v requests/s at %d clients: want a finite rate, at least 0", c.Name, pt.PerSecond, pt.Clients)
			case j > 0 && pts[j-1].Clients == pt.Clients:
				return fmt.Errorf("plot: throughput: curve %q: two points at %d clients", c.Name, pt.Clients)
			}
			xys[j] = plotter.XY{X: float64(pt.Clients), Y: pt.PerSecond}
			clients = append(clients, pt.Clients)
			top = max(top, pt.PerSecond)
		}

		line, marks, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("plot: throughput: curve %q: %w", c.Name, err)
		}
		line.LineStyle = lineStyle(i)
		marks.Color = line.Color
		marks.Radius = vg.Points(3.5)
		marks.Shape = glyphs[i%len(glyphs)]
		p.Add(line, marks)
		leg.Add(c.Name, line, marks)
	}
	if len(clients) == 0 {
		return fmt.Errorf("plot: throughput: none of the %d curves has a point", len(curves))
	}

	slices.Sort(clients)
	clients = slices.Compact(clients)
	p.X.Scale = gplot.LogScale{}
	p.X.Min, p.X.Max = float64(clients[0]), float64(clients[len(clients)-1])
	if len(clients) == 1 { // one octave either side, not a zero-width axis
		p.X.Min, p.X.Max = p.X.Min/2, p.X.Max*2
	}
	fitX := func(width vg.Length) {
		p.X.Tick.Marker = clientTicks(clients, p.X.Min, p.X.Max, width, p.X.Tick.Label)
	}
	p.Y.Min = 0
	p.Y.Max, p.Y.Tick.Marker = linearAxis(top)
	return save(p, leg, path, fitX)
}

// clientTicks returns a tick at each of clients (ascending, on a log axis
// over [lo, hi] width long), labelled unless its label would overlap the
// previous one: 30 next to 32 gets a tick mark but no label. The first and
// last are always labelled.
func clientTicks(clients []int, lo, hi float64, width vg.Length, sty text.Style) gplot.ConstantTicks {
	ticks := make(gplot.ConstantTicks, len(clients))
	for i, n := range clients {
		ticks[i] = gplot.Tick{Value: float64(n), Label: strconv.Itoa(n)}
	}
	fits := func(i, j int) bool {
		return apart(ticks[i], ticks[j], logFraction(lo, hi, ticks[i].Value), logFraction(lo, hi, ticks[j].Value), width, sty)
	}
	labelled := []int{0}
	for i := 1; i < len(ticks)-1; i++ {
		if fits(labelled[len(labelled)-1], i) {
			labelled = append(labelled, i)
		} else {
			ticks[i].Label = ""
		}
	}
	// The last label wins over those before it that it would overlap.
	last := len(ticks) - 1
	for j := len(labelled) - 1; last > 0 && j > 0 && !fits(labelled[j], last); j-- {
		ticks[labelled[j]].Label = ""
	}
	return ticks
}

// linearAxis returns the top and ticks of a linear axis from zero showing
// values up to top: five to ten ticks at a round step (1, 2 or 5 × 10^k),
// the top the first tick at least 5 % above top, so that the highest point
// does not touch the frame.
func linearAxis(top float64) (axisMax float64, ticks gplot.ConstantTicks) {
	if top <= 0 {
		top = 1 // all zero: still an axis from 0 to 1
	}
	want := top * 1.05
	e := int(math.Floor(math.Log10(want / 5)))
	var step float64
	for _, m := range []float64{1, 2, 5, 10} {
		if step = pow10(m, e); want/step <= 10 {
			break
		}
	}
	n := int(math.Ceil(want / step))
	// Labels with as many decimals as the step has.
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	for i := range n + 1 {
		v := float64(i) * step
		ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', prec, 64)})
	}
	return float64(n) * step, ticks
}
