// Package plot draws the benchmark's figures as PNG images: the latency CDF
// of each request kind, ours against the baseline, and throughput against
// the number of concurrent clients. It wraps gonum.org/v1/plot with the
// choices both figures share: the size (1000×600 px), a colour-blind safe
// palette, a dash pattern per line so that a figure stays readable in
// grey, grid lines, and a legend outside the data area, where it can hide
// no line whatever the data.
//
// A figure is drawn and encoded in memory before its file is written: a
// call that fails on its data does not touch path.
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Size of a figure: 10×6 inches at 100 dots per inch is 1000×600 pixels.
const (
	width  = 10 * vg.Inch
	height = 6 * vg.Inch
	dpi    = 100
)

// margin is the white space around a figure; legendGap separates the data
// area from the legend on its right.
const (
	margin    = vg.Length(8)
	legendGap = vg.Length(12)
)

// palette is Okabe and Ito's colour-blind safe palette, most distinct
// first and without its yellow, which is unreadable on white.
var palette = []color.Color{
	color.RGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	color.RGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	color.RGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
	color.RGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	color.RGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}, // orange
	color.RGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	color.RGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xFF}, // black
}

// dashes are the line patterns, in points: solid, dashed, dotted,
// dash-dot, long dash. Their count is prime to the palette's, so that
// lines past the first seven still differ from each other.
var dashes = [][]vg.Length{
	nil,
	{6, 3},
	{1.5, 2.5},
	{7, 2.5, 1.5, 2.5},
	{12, 4},
}

// glyphs mark the points of a throughput curve, one shape per curve:
// filled shapes first, which stand out best on a line.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{},
	draw.BoxGlyph{},
	draw.PyramidGlyph{},
	draw.RingGlyph{},
	draw.SquareGlyph{},
	draw.TriangleGlyph{},
	draw.CrossGlyph{},
	draw.PlusGlyph{},
}

// lineStyle is the style of the i-th line of a figure. The index is the
// line's position in the caller's slice, skipped lines included, so that a
// name keeps its look when another line has no data.
func lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{
		Color:  palette[i%len(palette)],
		Width:  vg.Points(1.75),
		Dashes: dashes[i%len(dashes)],
	}
}

// newPlot returns a plot with the figures' title, axis labels, fonts and
// grid. Its legend stays empty: save draws the caller's legend outside the
// data area instead.
func newPlot(title, xLabel, yLabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(14)
	p.X.Label.TextStyle.Font = sans(12)
	p.Y.Label.TextStyle.Font = sans(12)
	p.X.Tick.Label.Font = sans(10)
	p.Y.Tick.Label.Font = sans(10)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Label.Padding = vg.Points(4)
	p.Y.Label.Padding = vg.Points(4)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 0xD0}
	grid.Horizontal.Color = color.Gray{Y: 0xD0}
	p.Add(grid)
	return p
}

// newLegend returns an empty legend in the figures' style: thumbnails long
// enough to show a dash pattern.
func newLegend() gplot.Legend {
	l := gplot.NewLegend()
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(36)
	l.Padding = vg.Points(4)
	l.TextStyle.Font = sans(11)
	return l
}

// sans is Liberation Sans at size points: gonum's default is the serif
// face, harder to read in small labels.
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// save draws p, with leg in a column on its right aligned with the top of
// the data area, and writes the PNG to path. Before drawing, it calls
// fitX, if not nil, with the width of the data area, for the x axis to
// choose ticks whose labels fit: p's x range must already cover the data.
// The image is encoded in memory first, so that a failure to draw it
// leaves path untouched.
func save(p *gplot.Plot, leg gplot.Legend, path string, fitX func(width vg.Length)) error {
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
	c := draw.Crop(draw.New(img), margin, -margin, margin, -margin)

	// The title spans the whole figure, left-aligned, above the data
	// area and the legend: a title of several lines (a summary under
	// the name) is not cut to the data area's width.
	if title := p.Title.Text; title != "" {
		sty := p.Title.TextStyle
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
		c.FillText(sty, vg.Point{X: c.Min.X, Y: c.Max.Y}, title)
		c = draw.Crop(c, 0, 0, 0, -(sty.Height(title) + p.Title.Padding))
		p.Title.Text = ""
		defer func() { p.Title.Text = title }()
	}

	legendWidth := leg.Rectangle(c).Size().X
	pc := draw.Crop(c, 0, -(legendWidth + legendGap), 0, 0)
	if fitX != nil {
		fitX(p.DataCanvas(pc).Size().X)
	}
	p.Draw(pc)
	data := p.DataCanvas(pc)
	leg.Draw(draw.Canvas{
		Canvas: c.Canvas,
		Rectangle: vg.Rectangle{
			Min: vg.Point{X: pc.Max.X + legendGap, Y: c.Min.Y},
			Max: vg.Point{X: c.Max.X, Y: data.Max.Y},
		},
	})

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return fmt.Errorf("plot: encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// labelGap is the least white space between two tick labels.
const labelGap = vg.Length(8)

// apart reports whether the labels of ticks a and b, at fractions na and
// nb of an axis width long, drawn in sty, leave labelGap between them.
func apart(a, b gplot.Tick, na, nb float64, width vg.Length, sty text.Style) bool {
	need := (sty.Width(a.Label)+sty.Width(b.Label))/2 + labelGap
	return vg.Length(nb-na)*width >= need
}

// logFraction is the fraction of a log axis over [lo, hi] at which v is.
func logFraction(lo, hi, v float64) float64 {
	return math.Log(v/lo) / math.Log(hi/lo)
}
