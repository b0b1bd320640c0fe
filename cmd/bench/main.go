// Command bench runs the project's benchmark (internal/bench) on a local
// stack it starts, prints the results as markdown with each target's
// PASS or FAIL, and writes them, with the plots, under bench/results/:
// <date>.md, and the four PNGs of bench.Result.Plots (<date>-throughput.png,
// the default configuration's request path, first; then
// <date>-latency-cdf.png, <date>-throughput-off.png and
// <date>-end-to-end.png). It exits non-zero
// when a target fails.
//
//	go run ./cmd/bench [-cell 400ms] [-rounds 8] [-out bench/results]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/internal/bench"
	"github.com/exactlyonce/transfers/internal/bench/e2e"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

func main() {
	cell := flag.Duration("cell", 400*time.Millisecond, "how long each request-path measurement runs per round")
	rounds := flag.Int("rounds", 8, "interleaved rounds per figure")
	out := flag.String("out", "bench/results", "directory for the report and the plots, relative to the module root")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the CPU-per-request stage to this file")
	flag.Parse()
	failed, err := run(*cell, *rounds, *out, *cpuprofile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d target(s) missed\n", failed)
		os.Exit(1)
	}
}

func run(cell time.Duration, rounds int, out, cpuprofile string) (failed int, err error) {
	ctx := context.Background()
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	root, err := ddblocal.ModuleRoot(wd)
	if err != nil {
		return 0, err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	var prof io.Writer
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		prof = f
	}
	loadBefore := bench.LoadAverage()
	probe := e2e.NewProbe()
	st, err := stack.Start(ctx, probe.Options(stack.Options{APIOptions: []func(*middleware.Stack) error{countGetItems}}))
	if err != nil {
		return 0, err
	}
	defer st.Close(context.Background())
	res, err := bench.Run(ctx, st, bench.Config{Cell: cell, Rounds: rounds, CPUProfile: prof, Probe: probe, Progress: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...)
	}})
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "bench: Prefer: wait, %d clients\n", waitClients)
	waitSection, err := measureWait(ctx, st)
	if err != nil {
		return 0, err
	}
	date := res.Started.UTC().Format("2006-01-02")
	plots, err := res.Plots(out, date)
	if err != nil {
		return 0, err
	}
	var report bytes.Buffer
	machine := bench.DescribeMachine(root)
	machine.LoadBefore = loadBefore
	if err := res.Markdown(&report, machine, plots); err != nil {
		return 0, err
	}
	if err := waitSection(&report); err != nil {
		return 0, err
	}
	if err := appendProfiles(&report, filepath.Join(root, "bench", "profiles")); err != nil {
		return 0, err
	}
	os.Stdout.Write(report.Bytes())
	file := filepath.Join(out, date+".md")
	if err := os.WriteFile(file, report.Bytes(), 0o644); err != nil {
		return 0, err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s and %d plots\n", file, len(plots))
	for _, t := range res.Targets() {
		if !t.Pass() {
			failed++
		}
	}
	return failed, nil
}

// appendProfiles appends the profiles recorded by hand (bench/profiles/
// *.md: where the time went before and after a fix) to the report.
func appendProfiles(w *bytes.Buffer, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil || len(files) == 0 {
		return err
	}
	w.WriteString("\n# Profiles\n\nRecorded while finding where the time went, before and after each fix (bench/profiles/).\n")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		// One heading level down: the report's own sections come first.
		w.Write(bytes.ReplaceAll(append([]byte("\n"), b...), []byte("\n#"), []byte("\n##")))
	}
	return nil
}
