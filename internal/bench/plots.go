package bench

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/exactlyonce/transfers/internal/bench/plot"
)

// cdfClients is the concurrency whose latencies the CDF plot shows,
// when the run measured it (else its largest below).
const cdfClients = 8

func (r *Result) cdfClients() int {
	at := r.Config.Clients[0]
	for _, c := range r.Config.Clients {
		if c <= cdfClients && c > at {
			at = c
		}
	}
	return at
}

// Plots writes the run's figures into dir, named after date: the latency
// CDF of new and duplicate requests, ours and the baseline, at 8
// clients, and requests/s against concurrency, both with ownership
// enforced, as deployed by default. It returns the files' names.
func (r *Result) Plots(dir, date string) ([]string, error) {
	cdfName := date + "-latency-cdf.png"
	at := r.cdfClients()
	var series []plot.Series
	for _, kind := range []string{New, Duplicate} {
		for _, impl := range []string{Ours, Baseline} {
			if p, ok := r.Path(impl, true, kind, at); ok {
				series = append(series, plot.Series{Name: fmt.Sprintf("%s %s", impl, kind), Latencies: slices.Clone(p.Sample.Latencies)})
			}
		}
	}
	if err := plot.LatencyCDF(filepath.Join(dir, cdfName),
		fmt.Sprintf("Request latency at %d clients (ownership enforced)", at), series); err != nil {
		return nil, fmt.Errorf("plot latency: %w", err)
	}
	tputName := date + "-throughput.png"
	var curves []plot.Curve
	for _, kind := range []string{New, Duplicate} {
		for _, impl := range []string{Ours, Baseline, Raw} {
			c := plot.Curve{Name: fmt.Sprintf("%s %s", impl, kind)}
			for _, clients := range r.Config.Clients {
				if p, ok := r.Path(impl, true, kind, clients); ok {
					c.Points = append(c.Points, plot.Point{Clients: clients, PerSecond: p.Sample.PerSecond()})
				}
			}
			if len(c.Points) > 0 {
				curves = append(curves, c)
			}
		}
	}
	if len(r.E2E) > 0 {
		done := plot.Curve{Name: "end to end, completed transfers"}
		replay := plot.Curve{Name: "their DynamoDB operations alone"}
		for _, c := range r.E2E {
			done.Points = append(done.Points, plot.Point{Clients: c.E2E.Clients, PerSecond: c.E2E.PerSecond})
			replay.Points = append(replay.Points, plot.Point{Clients: c.E2E.Clients, PerSecond: c.Replay.PerSecond})
		}
		curves = append(curves, done, replay)
	}
	if err := plot.Throughput(filepath.Join(dir, tputName), "Throughput against clients (ownership on)", curves); err != nil {
		return nil, fmt.Errorf("plot throughput: %w", err)
	}
	return []string{cdfName, tputName}, nil
}
