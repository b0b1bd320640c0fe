package plot_test

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"time"

	"github.com/exactlyonce/transfers/internal/bench/plot"
)

// size prints the size of the PNG image at path.
func size(path string) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d×%d px\n", filepath.Base(path), cfg.Width, cfg.Height)
}

func ExampleLatencyCDF() {
	dir, err := os.MkdirTemp("", "figures")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ms := time.Millisecond
	path := filepath.Join(dir, "latency_cdf.png")
	err = plot.LatencyCDF(path, "POST /transfers latency", []plot.Series{
		{Name: "ours new", Latencies: []time.Duration{7 * ms, 4 * ms, 5 * ms, 30 * ms}},
		{Name: "baseline new", Latencies: []time.Duration{12 * ms, 9 * ms, 15 * ms, 80 * ms}},
		{Name: "ours duplicate"}, // no latencies: left out of the figure
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	size(path)
	// Output: latency_cdf.png: 1000×600 px
}

func ExampleThroughput() {
	dir, err := os.MkdirTemp("", "figures")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "throughput.png")
	err = plot.Throughput(path, "POST /transfers throughput", []plot.Curve{
		{Name: "ours", Points: []plot.Point{{Clients: 1, PerSecond: 108}, {Clients: 8, PerSecond: 790}, {Clients: 32, PerSecond: 2650}}},
		{Name: "baseline", Points: []plot.Point{{Clients: 1, PerSecond: 61}, {Clients: 8, PerSecond: 430}, {Clients: 32, PerSecond: 1120}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	size(path)
	// Output: throughput.png: 1000×600 px
}
