package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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

// Plots writes the run's figures into dir, named after date, and returns
// their names, the default configuration (ownership enforced) first:
//
//   - <date>-throughput.png: request-path requests/s against concurrency,
//     ownership enforced: ours, the baseline and the raw database call,
//     for new and duplicate requests;
//   - <date>-latency-cdf.png: the latency CDF of ours and the baseline at
//     8 clients, ownership enforced;
//   - <date>-throughput-off.png: as the first, ownership off;
//   - <date>-end-to-end.png: completed transfers/s end to end against
//     their DynamoDB operations alone, on an axis of their own.
//
// Each names in its legend what every curve does, and its title says who
// wins and by how much, so that the picture reads on its own.
func (r *Result) Plots(dir, date string) ([]string, error) {
	var names []string
	tput := func(own bool, name string) error {
		var curves []plot.Curve
		for _, kind := range []string{New, Duplicate} {
			for _, impl := range []string{Ours, Baseline, Raw} {
				var c plot.Curve
				for _, clients := range r.Config.Clients {
					if p, ok := r.Path(impl, own, kind, clients); ok {
						c.Name = curveName(impl, own, kind, p.Budget)
						c.Points = append(c.Points, plot.Point{Clients: clients, PerSecond: p.Sample.PerSecond()})
					}
				}
				if len(c.Points) > 0 {
					curves = append(curves, c)
				}
			}
		}
		if len(curves) == 0 {
			return nil
		}
		title := fmt.Sprintf("Request path, %s: requests/s (higher is better)\n%s\n%s", configurationLabel(own), r.wins(own), callsLine(own))
		if err := plot.Throughput(filepath.Join(dir, name), title, curves); err != nil {
			return fmt.Errorf("plot throughput: %w", err)
		}
		names = append(names, name)
		return nil
	}
	if err := tput(true, date+"-throughput.png"); err != nil {
		return nil, err
	}

	cdfName := date + "-latency-cdf.png"
	at := r.cdfClients()
	var series []plot.Series
	var p50 []string
	for _, kind := range []string{New, Duplicate} {
		ours, okO := r.Path(Ours, true, kind, at)
		base, okB := r.Path(Baseline, true, kind, at)
		for _, x := range []struct {
			impl string
			p    Path
			ok   bool
		}{{Ours, ours, okO}, {Baseline, base, okB}} {
			if x.ok {
				series = append(series, plot.Series{Name: curveName(x.impl, true, kind, x.p.Budget), Latencies: slices.Clone(x.p.Sample.Latencies)})
			}
		}
		if okO && okB && ours.Sample.Percentile(500) > 0 {
			p50 = append(p50, fmt.Sprintf("%s p50 %.1f ms vs %.1f", kind, ms(ours.Sample.Percentile(500)), ms(base.Sample.Percentile(500))))
		}
	}
	if len(series) > 0 {
		title := fmt.Sprintf("Request latency at %d clients, %s\n(further left is better) ours against the baseline: %s\n%s", at, configurationLabel(true), strings.Join(p50, "; "), callsLine(true))
		if err := plot.LatencyCDF(filepath.Join(dir, cdfName), title, series); err != nil {
			return nil, fmt.Errorf("plot latency: %w", err)
		}
		names = append(names, cdfName)
	}

	if err := tput(false, date+"-throughput-off.png"); err != nil {
		return nil, err
	}

	if len(r.E2E) > 0 {
		name := date + "-end-to-end.png"
		done := plot.Curve{Name: "end to end: POST to COMPLETED"}
		replay := plot.Curve{Name: "its DynamoDB operations alone"}
		var at8 string
		for _, c := range r.E2E {
			done.Points = append(done.Points, plot.Point{Clients: c.E2E.Clients, PerSecond: c.E2E.PerSecond})
			replay.Points = append(replay.Points, plot.Point{Clients: c.E2E.Clients, PerSecond: c.Replay.PerSecond})
			if c.E2E.Clients == cdfClients {
				at8 = fmt.Sprintf(": %.0f %% of the database's own rate at %d clients", 100*c.Ratio, c.E2E.Clients)
			}
		}
		title := "Completed transfers/s end to end, " + configurationLabel(true) + "\nthe whole stack (API, orchestrator, workflow, legs) against\nits DynamoDB operations sent alone" + at8
		if err := plot.Rate(filepath.Join(dir, name), title, "completed transfers/s", []plot.Curve{done, replay}); err != nil {
			return nil, fmt.Errorf("plot end to end: %w", err)
		}
		names = append(names, name)
	}
	return names, nil
}

// curveName names an implementation's curve for a request kind, with
// its calls; the figure's subtitle says what the calls are.
func curveName(impl string, own bool, kind string, budget int) string {
	return fmt.Sprintf("%s, %s (%d call%s)", impl, kind, budget, plural(budget))
}

// callsLine says, for a figure's title, what the baseline and raw curves
// are.
func callsLine(own bool) string {
	if own {
		return "baseline: owner GetItem + conditional PutItem + StartExecution + UpdateItem\n" +
			"    (duplicate: owner GetItem + failing PutItem + GetItem)\n" +
			"raw: the database's single call, the conditional PutItem ours makes"
	}
	return "baseline: conditional PutItem + StartExecution + UpdateItem\n" +
		"    (duplicate: failing PutItem + GetItem)\n" +
		"raw: the database's single call, the conditional PutItem ours makes"
}

// wins says, for a figure's title, how ours compares with the baseline
// and with the raw call at the largest concurrency measured.
func (r *Result) wins(own bool) string {
	at := slices.Max(r.Config.Clients)
	var parts []string
	for _, kind := range []string{New, Duplicate} {
		ours, ok1 := r.Path(Ours, own, kind, at)
		base, ok2 := r.Path(Baseline, own, kind, at)
		raw, ok3 := r.Path(Raw, own, kind, at)
		if !ok1 || !ok2 || !ok3 || base.Sample.PerSecond() == 0 || raw.Sample.PerSecond() == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f× baseline, %.0f %% of raw", kind,
			ours.Sample.PerSecond()/base.Sample.PerSecond(), 100*ours.Sample.PerSecond()/raw.Sample.PerSecond()))
	}
	return fmt.Sprintf("at %d clients, ours: %s", at, strings.Join(parts, "; "))
}
