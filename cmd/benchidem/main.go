// Command benchidem runs the idempotency benchmark (internal/idembench):
// this project's idempotency library side by side with Powertools for
// AWS Lambda (Python)'s, on one DynamoDB Local it starts, each side in its
// own process; then the idempotency module's BenchmarkDo. It prints the
// results as markdown with each target's PASS or FAIL and writes them to
// bench/results/idempotency-<date>.md. Like cmd/bench, it exits 2 when
// the run is broken (a side fails, an answer is not the scenario's) and
// 1 when a target is missed.
//
//	go run ./cmd/benchidem -python .tools/powertools/bin/python [-rounds 5] [-requests 200] [-workers 1,8]
//
// With -worker-endpoint and -worker-table it is the Go side instead: it
// answers internal/idembench's commands on stdin and stdout.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/exactlyonce/transfers/internal/bench"
	"github.com/exactlyonce/transfers/internal/idembench"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
)

func main() {
	var cfg idembench.Config
	python := flag.String("python", ".tools/powertools/bin/python", "the Python of the Powertools virtual environment (make bench-idempotency makes it)")
	driver := flag.String("driver", "tools/powertools-bench/driver.py", "the Powertools side's driver")
	workers := flag.String("workers", "1,8", "the concurrencies, comma-separated")
	flag.IntVar(&cfg.Rounds, "rounds", 5, "interleaved rounds per figure")
	flag.IntVar(&cfg.Requests, "requests", 200, "requests per scenario, concurrency, side and round")
	flag.IntVar(&cfg.Warmup, "warmup", 20, "warm-up requests before each measurement")
	flag.IntVar(&cfg.Pool, "pool", 64, "keys a pooled scenario goes round")
	benchCount := flag.Int("bench-count", 3, "go test -count for BenchmarkDo; 0 skips it")
	goCmd := flag.String("go", "go", "the go command, for BenchmarkDo")
	out := flag.String("out", "bench/results", "directory for the report, relative to the module root")
	workerEndpoint := flag.String("worker-endpoint", "", "run as the Go side against this DynamoDB endpoint")
	workerTable := flag.String("worker-table", "", "the Go side's table")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *workerEndpoint != "" {
		side := idembench.NewGoSide(*workerEndpoint, *workerTable)
		if err := idembench.Serve(ctx, os.Stdin, os.Stdout, side.Hello(), side.Run); err != nil {
			fmt.Fprintln(os.Stderr, "benchidem worker:", err)
			os.Exit(1)
		}
		return
	}
	for _, w := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "benchidem: -workers %q: want positive integers, comma-separated\n", *workers)
			os.Exit(2)
		}
		cfg.Workers = append(cfg.Workers, n)
	}
	cfg.Progress = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "bench-idempotency: "+f+"\n", a...) }
	failed, err := run(ctx, cfg, *python, *driver, *goCmd, *out, *benchCount)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-idempotency:", err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "bench-idempotency: %d target(s) missed\n", failed)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg idembench.Config, python, driver, goCmd, out string, benchCount int) (failed int, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	root, err := ddblocal.ModuleRoot(wd)
	if err != nil {
		return 0, err
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	out, python, driver = abs(out), abs(python), abs(driver)
	if _, err := os.Stat(python); err != nil {
		return 0, fmt.Errorf("no Powertools virtual environment (%w): make bench-idempotency makes it in .tools/powertools", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	loadBefore := bench.LoadAverage()

	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	srv, err := ddblocal.Start(startCtx, ddblocal.Options{})
	cancel()
	if err != nil {
		return 0, err
	}
	defer srv.Stop()
	endpoint := srv.Endpoint()
	cfg.Progress("DynamoDB Local on %s", endpoint)
	const oursTable, ptTable = "idempotency-ours", "idempotency-powertools"
	if err := idembench.CreateTables(ctx, idembench.NewClient(endpoint), oursTable, ptTable); err != nil {
		return 0, err
	}
	env := []string{"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_EC2_METADATA_DISABLED=true"}
	ours, err := idembench.StartSide(ctx, idembench.Ours, []string{self, "-worker-endpoint", endpoint, "-worker-table", oursTable}, env)
	if err != nil {
		return 0, err
	}
	defer ours.Close()
	pt, err := idembench.StartSide(ctx, idembench.Powertools, []string{python, driver, "--endpoint", endpoint, "--table", ptTable},
		append(env, "PYTHONDONTWRITEBYTECODE=1"))
	if err != nil {
		return 0, err
	}
	defer pt.Close()
	cfg.Progress("sides: ours %v; Powertools %v", ours.Hello.Versions, pt.Hello.Versions)

	res, err := idembench.Measure(ctx, cfg, ours, pt)
	if err != nil {
		return 0, err
	}
	res.Versions[idembench.Ours] = ours.Hello.Versions
	res.Versions[idembench.Powertools] = pt.Hello.Versions
	if err := ours.Close(); err != nil {
		return 0, err
	}
	if err := pt.Close(); err != nil {
		return 0, err
	}
	if benchCount > 0 {
		cfg.Progress("BenchmarkDo, -count %d", benchCount)
		res.Bench, err = idembench.RunBenchDo(ctx, goCmd, filepath.Join(root, "idempotency"), benchCount,
			append(env, "AWS_ENDPOINT_URL_DYNAMODB="+endpoint))
		if err != nil {
			return 0, err
		}
	}

	machine := bench.DescribeMachine(root)
	machine.LoadBefore = loadBefore
	var report bytes.Buffer
	if err := res.Markdown(&report, machine); err != nil {
		return 0, err
	}
	os.Stdout.Write(report.Bytes())
	file := filepath.Join(out, "idempotency-"+res.Started.UTC().Format("2006-01-02")+".md")
	if err := os.WriteFile(file, report.Bytes(), 0o644); err != nil {
		return 0, err
	}
	cfg.Progress("wrote %s", file)
	for _, t := range res.Targets() {
		if !t.Pass() {
			failed++
		}
	}
	return failed, nil
}
