package plot

import (
	"flag"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// keep names a directory to keep the figures the tests draw in, for a
// person to look at: go test ./internal/bench/plot/ -keep /tmp/figures
var keep = flag.String("keep", "", "directory to keep the figures drawn in, for review")

// figurePath returns where the test t draws a figure: in -keep's directory
// under the test's name when set, else in a directory removed after t.
func figurePath(t *testing.T) string {
	t.Helper()
	if *keep == "" {
		return filepath.Join(t.TempDir(), "figure.png")
	}
	if err := os.MkdirAll(*keep, 0o755); err != nil {
		t.Fatal(err)
	}
	name := strings.NewReplacer("/", "-", " ", "_", ",", "").Replace(t.Name())
	return filepath.Join(*keep, name+".png")
}

// logNormal returns n latencies whose logarithm is normal: median median,
// spread sigma (of the natural logarithm), from a fixed seed.
func logNormal(seed uint64, n int, median time.Duration, sigma float64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
	}
	return ds
}

// decode reads the PNG at path and checks its size.
func decode(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 1000 || b.Dy() != 600 {
		t.Fatalf("%s is %d×%d px, want 1000×600", path, b.Dx(), b.Dy())
	}
	return img
}

// checkImage checks that img is a drawn figure, not a blank page: many
// colours (anti-aliasing makes more), the black of text and axes, and for
// each line its colour from the palette (the solid middle of the line or
// of its legend thumbnail), drawn when want[i], absent otherwise.
func checkImage(t *testing.T, img image.Image, want []bool) {
	t.Helper()
	b := img.Bounds()
	rgba := image.NewRGBA(b)
	draw.Draw(rgba, b, img, b.Min, draw.Src)

	colours := map[[3]uint8]bool{}
	targets := []color.Color{color.Black}
	for i := range want {
		targets = append(targets, palette[i%len(palette)])
	}
	near := make([]int, len(targets))
	const tolerance = 24 // per channel, of 255
	for p := 0; p < len(rgba.Pix); p += 4 {
		px := [3]uint8(rgba.Pix[p : p+3])
		colours[px] = true
		for k, c := range targets {
			r, g, bl, _ := c.RGBA()
			if absDiff(px[0], r>>8) <= tolerance && absDiff(px[1], g>>8) <= tolerance && absDiff(px[2], bl>>8) <= tolerance {
				near[k]++
			}
		}
	}
	if len(colours) < 10 {
		t.Errorf("%d distinct colours: a blank figure?", len(colours))
	}
	if near[0] < 200 {
		t.Errorf("%d black pixels: no text or axes?", near[0])
	}
	for i, drawn := range want {
		switch n := near[i+1]; {
		case drawn && n < 20:
			t.Errorf("line %d: %d pixels of its colour, want a line", i, n)
		case !drawn && n != 0:
			t.Errorf("line %d: %d pixels of its colour, want none: it has no data", i, n)
		}
	}
}

func absDiff(a uint8, b uint32) uint32 {
	return max(uint32(a), b) - min(uint32(a), b)
}

func TestLatencyCDF(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		series []Series
	}{
		{"four series", []Series{
			{"ours new", logNormal(1, 3000, 8*ms, 0.5)},
			{"baseline new", logNormal(2, 3000, 14*ms, 0.6)},
			{"ours duplicate", logNormal(3, 3000, 3*ms, 0.4)},
			{"baseline duplicate", logNormal(4, 3000, 11*ms, 0.6)},
		}},
		{"one series", []Series{{"ours new", logNormal(5, 500, 5*ms, 0.3)}}},
		{"one latency", []Series{{"ours new", []time.Duration{7 * ms}}}},
		{"equal latencies on a tick", []Series{{"ours new", slices.Repeat([]time.Duration{2 * ms}, 50)}}},
		{"zero and negative latencies", []Series{{"ours new", []time.Duration{-ms, 0, 0, ms, 3 * ms}}}},
		{"microseconds to minutes", []Series{
			{"ours new", logNormal(6, 2000, 50*time.Microsecond, 1)},
			{"baseline new", logNormal(7, 2000, 20*time.Second, 1)},
		}},
		{"series without latencies skipped", []Series{
			{"ours new", logNormal(8, 1000, 8*ms, 0.5)},
			{"baseline new", nil},
			{"ours duplicate", logNormal(9, 1000, 3*ms, 0.4)},
			{"baseline duplicate", []time.Duration{}},
		}},
		{"100,000 latencies per series", []Series{
			{"ours new", logNormal(10, 100_000, 8*ms, 0.5)},
			{"baseline new", logNormal(11, 100_000, 14*ms, 0.6)},
			{"ours duplicate", logNormal(12, 100_000, 3*ms, 0.4)},
			{"baseline duplicate", logNormal(13, 100_000, 11*ms, 0.6)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := figurePath(t)
			start := time.Now()
			if err := LatencyCDF(path, "Latency, "+tt.name, tt.series); err != nil {
				t.Fatal(err)
			}
			t.Logf("drawn in %v", time.Since(start))
			want := make([]bool, len(tt.series))
			for i, s := range tt.series {
				want[i] = len(s.Latencies) > 0
			}
			checkImage(t, decode(t, path), want)
		})
	}
}

func TestLatencyCDFErrors(t *testing.T) {
	tests := []struct {
		name   string
		series []Series
		want   string
	}{
		{"no series", nil, "no series"},
		{"no latency in any series", []Series{{"ours new", nil}, {"baseline new", []time.Duration{}}}, "none of the 2 series"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "latency.png")
			err := LatencyCDF(path, "Latency", tt.series)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s written despite the error (stat: %v)", path, err)
			}
		})
	}
}

// The caller's latencies are left in their order: LatencyCDF sorts a copy.
func TestLatencyCDFLeavesLatenciesUnsorted(t *testing.T) {
	ds := []time.Duration{5, 3, 9, 1, 7}
	before := slices.Clone(ds)
	if err := LatencyCDF(filepath.Join(t.TempDir(), "latency.png"), "Latency", []Series{{"ours", ds}}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ds, before) {
		t.Errorf("latencies now %v, were %v", ds, before)
	}
}

func TestThroughput(t *testing.T) {
	tests := []struct {
		name   string
		curves []Curve
	}{
		{"two curves, three points", []Curve{
			{"ours", []Point{{1, 210}, {8, 1480}, {32, 3900}}},
			{"baseline", []Point{{1, 150}, {8, 900}, {32, 1700}}},
		}},
		{"points in any order", []Curve{{"ours", []Point{{32, 3900}, {1, 210}, {8, 1480}}}}},
		{"one point", []Curve{{"ours", []Point{{8, 1480}}}}},
		{"different client counts", []Curve{
			{"ours", []Point{{1, 210}, {4, 800}, {16, 2500}, {64, 5200}}},
			{"baseline", []Point{{2, 290}, {8, 900}, {32, 1700}}},
		}},
		{"zero and fractional rates", []Curve{{"ours", []Point{{1, 0}, {2, 0.25}, {4, 0.5}}}}},
		{"all rates zero", []Curve{{"ours", []Point{{1, 0}, {2, 0}}}}},
		{"six curves, new and duplicate requests", []Curve{
			{"ours new", []Point{{1, 108}, {8, 790}, {32, 2650}}},
			{"baseline new", []Point{{1, 61}, {8, 430}, {32, 1120}}},
			{"raw new", []Point{{1, 150}, {8, 1100}, {32, 3900}}},
			{"ours duplicate", []Point{{1, 200}, {8, 1500}, {32, 4700}}},
			{"baseline duplicate", []Point{{1, 90}, {8, 610}, {32, 1500}}},
			{"raw duplicate", []Point{{1, 210}, {8, 1550}, {32, 5100}}},
		}},
		{"curve without points skipped", []Curve{
			{"ours", []Point{{1, 210}, {8, 1480}, {32, 3900}}},
			{"baseline", nil},
			{"other", []Point{{1, 100}, {8, 700}, {32, 1100}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := figurePath(t)
			if err := Throughput(path, "Throughput, "+tt.name, tt.curves); err != nil {
				t.Fatal(err)
			}
			want := make([]bool, len(tt.curves))
			for i, c := range tt.curves {
				want[i] = len(c.Points) > 0
			}
			checkImage(t, decode(t, path), want)
		})
	}
}

func TestThroughputErrors(t *testing.T) {
	ok := []Point{{1, 100}}
	tests := []struct {
		name   string
		curves []Curve
		want   string
	}{
		{"no curves", nil, "no curves"},
		{"no point in any curve", []Curve{{"ours", nil}, {"baseline", []Point{}}}, "none of the 2 curves"},
		{"zero clients", []Curve{{"ours", ok}, {"baseline", []Point{{0, 100}}}}, `curve "baseline": 0 clients`},
		{"negative clients", []Curve{{"ours", []Point{{-4, 100}}}}, "-4 clients"},
		{"negative rate", []Curve{{"ours", []Point{{1, -1}}}}, "-1 requests/s"},
		{"rate not a number", []Curve{{"ours", []Point{{1, math.NaN()}}}}, "NaN requests/s"},
		{"infinite rate", []Curve{{"ours", []Point{{1, math.Inf(1)}}}}, "+Inf requests/s"},
		{"two points at one client count", []Curve{{"ours", []Point{{8, 100}, {1, 10}, {8, 120}}}}, "two points at 8 clients"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "throughput.png")
			err := Throughput(path, "Throughput", tt.curves)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s written despite the error (stat: %v)", path, err)
			}
		})
	}
}

// A path that cannot be written is an error naming it.
func TestUnwritablePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "figure.png")
	tests := []struct {
		name string
		draw func() error
	}{
		{"latency CDF", func() error {
			return LatencyCDF(path, "Latency", []Series{{"ours", []time.Duration{time.Millisecond}}})
		}},
		{"throughput", func() error {
			return Throughput(path, "Throughput", []Curve{{"ours", []Point{{1, 100}}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.draw(); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s", err, path)
			}
		})
	}
}

// The figures of a realistic run, for review: two CDF series of a few
// thousand log-normal latencies and a three-point throughput curve against
// a baseline.
func TestRealisticFigures(t *testing.T) {
	ms := time.Millisecond
	t.Run("latency CDF", func(t *testing.T) {
		path := figurePath(t)
		if err := LatencyCDF(path, "POST /transfers latency, 32 clients", []Series{
			{"ours new", logNormal(21, 4000, 9*ms, 0.45)},
			{"baseline new", logNormal(22, 4000, 16*ms, 0.6)},
		}); err != nil {
			t.Fatal(err)
		}
		checkImage(t, decode(t, path), []bool{true, true})
	})
	t.Run("throughput", func(t *testing.T) {
		path := figurePath(t)
		if err := Throughput(path, "POST /transfers throughput", []Curve{
			{"ours", []Point{{1, 108}, {8, 790}, {32, 2650}}},
			{"baseline", []Point{{1, 61}, {8, 430}, {32, 1120}}},
		}); err != nil {
			t.Fatal(err)
		}
		checkImage(t, decode(t, path), []bool{true, true})
	})
}
