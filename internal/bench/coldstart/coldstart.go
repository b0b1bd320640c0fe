// Package coldstart measures the cold start of each Lambda function of
// the project against the smallest aws-lambda-go function (hello, in
// ./hello), both built the way `make build` builds the deployed
// bootstraps:
//
//   - SizeArm64: the size of the bootstrap for linux/arm64, built exactly
//     as the Makefile's build target does (CGO_ENABLED=0, -trimpath
//     -ldflags "-s -w" -tags lambda.norpc);
//   - Ready: from just before the process is started to its runtime's
//     first GET /2018-06-01/runtime/invocation/next, the moment Lambda
//     considers the function initialised;
//   - FirstInvoke: from handing out the first event (the answer to that
//     GET) to the runtime's response or error POST.
//
// The times are measured on binaries built with the same flags for the
// host (they must run here), each started against a minimal Lambda
// Runtime API served by this package on 127.0.0.1, with the environment
// Lambda gives a function plus the caller's (tables, endpoints,
// credentials). Each start is a fresh process, killed and reaped once it
// has answered its first event. The figures are medians over
// Options.Starts starts; the functions and hello are started in turn,
// round by round, so that whatever else the machine does is shared
// between them.
//
// The project's targets (Check): each function's Ready at most
// MaxReadyRatio times hello's, measured in the same run, and each arm64
// bootstrap at most MaxSizeArm64 bytes.
package coldstart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets of the project, checked by Check.
const (
	// MaxSizeArm64 is the largest accepted linux/arm64 bootstrap: 12 MiB
	// (12<<20 bytes, not 12,000,000).
	MaxSizeArm64 = 12 << 20
	// MaxReadyRatio bounds a function's median Ready by this multiple of
	// hello's median Ready in the same run.
	MaxReadyRatio = 1.5
)

// HelloPackage is the main package of the reference function.
const HelloPackage = "github.com/exactlyonce/transfers/internal/bench/coldstart/hello"

// HelloName is the reference function's Result.Name.
const HelloName = "hello"

// FloorPackage is the main package of the floor: hello with the AWS SDK
// for Go v2's DynamoDB client linked in and its packages initialised,
// which every function of the project needs, and no client built.
// FloorName is its Result.Name. No function of the project can start
// faster than the floor; the floor's ready over hello's is the share of
// MaxReadyRatio that the SDK's client takes before any code of the
// project runs.
const (
	FloorPackage = "github.com/exactlyonce/transfers/internal/bench/coldstart/floor"
	FloorName    = "floor"
)

// Floor is the floor as a Function.
func Floor() Function { return Function{Name: FloorName, Package: FloorPackage} }

// Function is one function to measure.
type Function struct {
	// Name names the function in its Result and is its
	// AWS_LAMBDA_FUNCTION_NAME.
	Name string
	// Package is its main package, as `go build` takes it from the module
	// root: "./functions/orchestrator" or an import path. The binaries of
	// one Measure must have distinct last path elements.
	Package string
	// Env is added to the environment Lambda gives every function (and
	// overrides it): tables, endpoints, credentials, region.
	Env map[string]string
	// Event returns the payload of the first invoke of start n (0 to
	// Starts-1); it is called before the process starts, outside the
	// measured times, so it may prepare what the invoke needs. nil
	// sends {}.
	Event func(ctx context.Context, n int) ([]byte, error)
	// After, when set, is called after each start, outside the measured
	// times, with the first invoke's answer: its response payload, or
	// its error payload when failed. An error ends Measure. It can check
	// that the invoke did the work it was given, or wait for work the
	// invoke set off so that it does not overlap the next start.
	After func(ctx context.Context, n int, payload []byte, failed bool) error
}

// Result is a function's figures.
type Result struct {
	Name string
	// SizeArm64 is the size in bytes of its linux/arm64 bootstrap.
	SizeArm64 int64
	// Ready and FirstInvoke are medians over Samples starts.
	Ready, FirstInvoke time.Duration
	Samples            int
	// Errors counts the starts whose first invoke answered with an error
	// (POST .../error); each still counts as an invoke.
	Errors int
	// Spans counts the OpenTelemetry spans the first invokes sent to the
	// OTLP collector, over all starts: each function runs as deployed with
	// the ADOT collector layer, and each event comes with a sampled trace,
	// so a traced function sends one span per invocation and per AWS call.
	Spans int
}

// Options configure Measure.
type Options struct {
	// ModuleRoot is the directory of the project's go.mod; "" looks for
	// it from the working directory up.
	ModuleRoot string
	// Functions are measured with hello.
	Functions []Function
	// Starts per function; default 20.
	Starts int
	// Dir receives the binaries; "" is a temporary directory, removed
	// afterwards. Builds into a kept Dir are incremental.
	Dir string
	// Timeout bounds each start, from the process start to its answer,
	// and is the first invoke's deadline; default 30 s.
	Timeout time.Duration
	// Go is the go command; default "go".
	Go string
	// Progress, when set, receives a line per step.
	Progress func(format string, args ...any)
}

// Measure builds hello and the functions, measures them and returns
// their results, fns in the order of opts.Functions.
func Measure(ctx context.Context, opts Options) (hello Result, fns []Result, err error) {
	if opts.Starts <= 0 {
		opts.Starts = 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if opts.ModuleRoot == "" {
		if opts.ModuleRoot, err = moduleRoot(); err != nil {
			return Result{}, nil, err
		}
	}
	all := append([]Function{{Name: HelloName, Package: HelloPackage}}, opts.Functions...)
	if err := checkFunctions(all); err != nil {
		return Result{}, nil, err
	}
	if opts.Dir == "" {
		dir, err := os.MkdirTemp("", "coldstart-")
		if err != nil {
			return Result{}, nil, fmt.Errorf("coldstart: %w", err)
		}
		defer os.RemoveAll(dir)
		opts.Dir = dir
	}

	progress("coldstart: build %d binaries for linux/arm64 and %s/%s", len(all), runtime.GOOS, runtime.GOARCH)
	armBins, err := build(ctx, opts, all, "linux", "arm64")
	if err != nil {
		return Result{}, nil, err
	}
	hostBins, err := build(ctx, opts, all, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return Result{}, nil, err
	}
	results := make([]Result, len(all))
	for i, f := range all {
		fi, err := os.Stat(armBins[i])
		if err != nil {
			return Result{}, nil, fmt.Errorf("coldstart: size of %s: %w", f.Name, err)
		}
		results[i] = Result{Name: f.Name, SizeArm64: fi.Size()}
	}

	ready := make([][]time.Duration, len(all))
	invoke := make([][]time.Duration, len(all))
	for round := range opts.Starts {
		progress("coldstart: round %d of %d", round+1, opts.Starts)
		// Each round starts at the next function, so none always runs
		// right after the same neighbour.
		for k := range all {
			i := (round + k) % len(all)
			s, err := measureOne(ctx, all[i], hostBins[i], round, opts.Timeout)
			if err != nil {
				return Result{}, nil, err
			}
			ready[i] = append(ready[i], s.ready)
			invoke[i] = append(invoke[i], s.firstInvoke)
			if s.answer.failed {
				results[i].Errors++
			}
			results[i].Spans += s.spans
		}
	}
	for i := range all {
		results[i].Ready = median(ready[i])
		results[i].FirstInvoke = median(invoke[i])
		results[i].Samples = len(ready[i])
	}
	return results[0], results[1:], nil
}

// measureOne is start n of f: its event, the start, its After.
func measureOne(ctx context.Context, f Function, bin string, n int, timeout time.Duration) (sample, error) {
	event := []byte("{}")
	if f.Event != nil {
		var err error
		if event, err = f.Event(ctx, n); err != nil {
			return sample{}, fmt.Errorf("coldstart: %s: event %d: %w", f.Name, n, err)
		}
	}
	env, region := lambdaEnv(f)
	s, err := startOnce(ctx, bin, f.Name, region, env, event, timeout)
	if err != nil {
		return sample{}, fmt.Errorf("coldstart: start %d: %w", n, err)
	}
	if f.After != nil {
		if err := f.After(ctx, n, s.answer.payload, s.answer.failed); err != nil {
			return sample{}, fmt.Errorf("coldstart: %s: start %d: %w", f.Name, n, err)
		}
	}
	return s, nil
}

// lambdaEnv is the environment Lambda gives a function on the
// provided.al2023 runtime with tracing active, overridden and completed
// by f.Env; it does not inherit this process's environment. It returns
// the region too. The start adds the addresses of its Runtime API and
// OTLP collector.
func lambdaEnv(f Function) ([]string, string) {
	vars := map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        f.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": defaultMemoryMiB,
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.Name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + randomHex(16),
		"AWS_LAMBDA_LOG_FORMAT":           "JSON",
		"AWS_LAMBDA_LOG_LEVEL":            "INFO",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      defaultRegion,
		"AWS_DEFAULT_REGION":              defaultRegion,
		"LAMBDA_TASK_ROOT":                "/var/task",
		"LAMBDA_RUNTIME_DIR":              "/var/runtime",
		"_HANDLER":                        "bootstrap",
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
	}
	for k, v := range f.Env {
		vars[k] = v
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env, vars["AWS_REGION"]
}

// checkFunctions refuses what Measure cannot build or tell apart.
func checkFunctions(fns []Function) error {
	names := map[string]bool{}
	bins := map[string]string{}
	for _, f := range fns {
		if f.Name == "" || f.Package == "" {
			return fmt.Errorf("coldstart: function %q: Name and Package are required", f.Name)
		}
		if names[f.Name] {
			return fmt.Errorf("coldstart: two functions named %q", f.Name)
		}
		names[f.Name] = true
		bin := path.Base(f.Package)
		if other, ok := bins[bin]; ok {
			return fmt.Errorf("coldstart: %s and %s both build to a binary named %s", other, f.Package, bin)
		}
		bins[bin] = f.Package
	}
	return nil
}

// build builds every package for goos/goarch with the Makefile's flags,
// in one go build, and returns each binary's path in fns' order.
func build(ctx context.Context, opts Options, fns []Function, goos, goarch string) ([]string, error) {
	dir := filepath.Join(opts.Dir, goos+"_"+goarch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("coldstart: %w", err)
	}
	args := []string{"build", "-trimpath", "-ldflags", "-s -w", "-tags", "lambda.norpc", "-o", dir + string(filepath.Separator)}
	bins := make([]string, len(fns))
	for i, f := range fns {
		args = append(args, f.Package)
		bins[i] = filepath.Join(dir, path.Base(f.Package))
		if goos == "windows" {
			bins[i] += ".exe"
		}
	}
	cmd := exec.CommandContext(ctx, opts.Go, args...)
	cmd.Dir = opts.ModuleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("coldstart: build for %s/%s: %w: %s", goos, goarch, err, strings.TrimSpace(out.String()))
	}
	return bins, nil
}

// moduleRoot is the nearest directory from the working directory up that
// holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("coldstart: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("coldstart: no go.mod in the working directory or above it")
		}
		dir = parent
	}
}

// median of ds; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Check returns an error naming each function over a target: an arm64
// bootstrap larger than MaxSizeArm64, or a median Ready above
// MaxReadyRatio times hello's. hello is held to the size target too.
func Check(hello Result, fns []Result) error {
	var errs []error
	for _, r := range append([]Result{hello}, fns...) {
		if r.SizeArm64 > MaxSizeArm64 {
			errs = append(errs, fmt.Errorf("%s: arm64 bootstrap is %d bytes (%.1f MiB), over the %d MiB target",
				r.Name, r.SizeArm64, float64(r.SizeArm64)/(1<<20), MaxSizeArm64>>20))
		}
	}
	for _, r := range fns {
		if float64(r.Ready) > MaxReadyRatio*float64(hello.Ready) {
			errs = append(errs, fmt.Errorf("%s: ready in %v (median), over %g× hello world's %v",
				r.Name, r.Ready, MaxReadyRatio, hello.Ready))
		}
	}
	return errors.Join(errs...)
}
