package lambdaproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// fnPath is the test function (testdata/fn) built for this machine.
var fnPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambdaproc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fnPath = filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-o", fnPath, "./testdata/fn")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/fn: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is an io.Writer the tests read while processes write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newFunction returns a Function of the test function, closed at the end
// of the test, and the buffer its processes write to.
func newFunction(t *testing.T, cfg Config) (*Function, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	cfg.Bootstrap = fnPath
	if cfg.Name == "" {
		cfg.Name = "fn"
	}
	if cfg.Output == nil && cfg.Logger == nil {
		cfg.Output = out
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f, out
}

// register registers f in a new registry as function name.
func register(t *testing.T, name string, timeout time.Duration, newHandler func() lambda.Handler) *lambdarun.Registry {
	t.Helper()
	r := &lambdarun.Registry{}
	if err := r.Register(&lambdarun.Function{Name: name, Timeout: timeout, NewHandler: newHandler}); err != nil {
		t.Fatal(err)
	}
	return r
}

type report struct {
	Env         map[string]string `json:"env"`
	Dir         string            `json:"dir"`
	Pid         int               `json:"pid"`
	RequestID   string            `json:"requestId"`
	ARN         string            `json:"arn"`
	DeadlineMs  int64             `json:"deadlineMs"`
	TraceID     string            `json:"traceId"`
	Invocations int               `json:"invocations"`
}

func envReport(t *testing.T, h lambda.Handler, ctx context.Context) report {
	t.Helper()
	out, err := h.Invoke(ctx, []byte(`{"op":"env"}`))
	if err != nil {
		t.Fatalf("invoke: %v", err)
	}
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("answer %s: %v", out, err)
	}
	return r
}

// TestProcessEnvironment: the process gets the function's variables, its
// credentials and Lambda's, nothing else of the caller's environment but
// PATH; the invocation's request id, ARN and deadline; and it runs from
// the bootstrap's directory.
func TestProcessEnvironment(t *testing.T) {
	t.Setenv("LAMBDAPROC_TEST_OUTSIDE", "leaked")
	creds := credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "token")
	f, _ := newFunction(t, Config{
		Name: "Transfers-Credit", Region: "eu-west-1", MemoryMB: 256, Version: "7",
		Env:         map[string]string{"LEDGER_TABLE": "ledger", "AWS_REGION": "ignored", "AWS_ACCESS_KEY_ID": "ignored"},
		Credentials: creds,
	})
	h := f.NewHandler()
	deadline := time.Now().Add(5 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	arn := "arn:aws:lambda:eu-west-1:123456789012:function:Transfers-Credit:live"
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1", InvokedFunctionArn: arn})
	r := envReport(t, h, ctx)

	want := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"LEDGER_TABLE":                    "ledger",
		"AWS_ACCESS_KEY_ID":               "AKIDTEST",
		"AWS_SECRET_ACCESS_KEY":           "secret",
		"AWS_SESSION_TOKEN":               "token",
		"AWS_LAMBDA_FUNCTION_NAME":        "Transfers-Credit",
		"AWS_LAMBDA_FUNCTION_VERSION":     "7",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_REGION":                      "eu-west-1",
	}
	for k, v := range want {
		if r.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, r.Env[k], v)
		}
	}
	if !strings.HasPrefix(r.Env["AWS_LAMBDA_RUNTIME_API"], "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API=%q, want 127.0.0.1:PORT", r.Env["AWS_LAMBDA_RUNTIME_API"])
	}
	// aws-lambda-go sets _X_AMZN_TRACE_ID itself, from the invocation.
	for k := range r.Env {
		if _, ok := want[k]; !ok && k != "AWS_LAMBDA_RUNTIME_API" && k != "_X_AMZN_TRACE_ID" {
			t.Errorf("unexpected variable %s=%q in the process's environment", k, r.Env[k])
		}
	}
	if r.RequestID != "req-1" || r.ARN != arn || r.DeadlineMs != deadline.UnixMilli() {
		t.Errorf("invocation %q %q deadline %d, want req-1 %s %d", r.RequestID, r.ARN, r.DeadlineMs, arn, deadline.UnixMilli())
	}
	if !strings.HasPrefix(r.TraceID, "Root=1-") || r.Env["_X_AMZN_TRACE_ID"] != r.TraceID {
		t.Errorf("trace header %q (_X_AMZN_TRACE_ID %q), want Root=1-...", r.TraceID, r.Env["_X_AMZN_TRACE_ID"])
	}
	if want := filepath.Dir(fnPath); r.Dir != want {
		t.Errorf("working directory %s, want %s", r.Dir, want)
	}
}

// TestEnvironmentReused: an environment's process answers its invocations
// one after another, and a second environment has its own process.
func TestEnvironmentReused(t *testing.T) {
	f, _ := newFunction(t, Config{Timeout: 5 * time.Second})
	h1, h2 := f.NewHandler(), f.NewHandler()
	ctx := context.Background()
	a, b := envReport(t, h1, ctx), envReport(t, h1, ctx)
	if a.Pid != b.Pid || a.Invocations != 1 || b.Invocations != 2 {
		t.Errorf("two invocations: pids %d, %d and counts %d, %d; want one process answering both", a.Pid, b.Pid, a.Invocations, b.Invocations)
	}
	if a.RequestID == "" || a.RequestID == b.RequestID {
		t.Errorf("request ids %q, %q: want distinct ids", a.RequestID, b.RequestID)
	}
	if want := lambdarun.FunctionARN(lambdarun.DefaultRegion, lambdarun.DefaultAccountID, "fn"); a.ARN != want {
		t.Errorf("invoked ARN %q, want %q", a.ARN, want)
	}
	if c := envReport(t, h2, ctx); c.Pid == a.Pid || c.Invocations != 1 {
		t.Errorf("second environment: pid %d (first %d), count %d; want its own process", c.Pid, a.Pid, c.Invocations)
	}
	s := f.Stats()
	if s.Starts != 2 || s.Ready != 2 || s.Invocations != 3 || s.Errors != 0 || s.Exits != 0 || s.InitTime <= 0 {
		t.Errorf("stats %+v, want 2 starts, 2 ready, 3 invocations", s)
	}
}

// inProcess is the test function's fail, error and panic ops as an
// in-process handler, for comparison.
func inProcess(_ context.Context, ev struct{ Op, Type, Message string }) (any, error) {
	switch ev.Op {
	case "fail":
		return nil, messages.InvokeResponse_Error{Type: ev.Type, Message: ev.Message}
	case "error":
		return nil, errors.New(ev.Message)
	case "panic":
		panic(ev.Message)
	}
	return nil, fmt.Errorf("unknown op %q", ev.Op)
}

// TestFunctionErrorsAsInProcess: the registry reports the process's
// errors as it reports those of the same handler in-process: a named
// error (what Step Functions' Catch matches), a plain error, a panic.
func TestFunctionErrorsAsInProcess(t *testing.T) {
	f, _ := newFunction(t, Config{Timeout: 5 * time.Second})
	procs := register(t, "fn", 5*time.Second, f.NewHandler)
	local := register(t, "fn", 5*time.Second, func() lambda.Handler { return lambda.NewHandler(inProcess) })
	for _, payload := range []string{
		`{"op":"fail","type":"CurrencyMismatch","message":"credit t-1: the destination account's currency is USD"}`,
		`{"op":"error","message":"refused"}`,
		`{"op":"panic","message":"boom"}`,
	} {
		_, got, err := procs.InvokeFunction(context.Background(), "fn", []byte(payload))
		if err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
		_, want, err := local.InvokeFunction(context.Background(), "fn", []byte(payload))
		if err != nil {
			t.Fatalf("%s in-process: %v", payload, err)
		}
		if got == nil || got.Type != want.Type || got.Message != want.Message {
			t.Errorf("%s: function error %+v, want %s: %s as in-process", payload, got, want.Type, want.Message)
			continue
		}
		if (len(got.StackTrace) > 0) != (len(want.StackTrace) > 0) {
			t.Errorf("%s: stack trace %q, in-process %q", payload, got.StackTrace, want.StackTrace)
		}
	}
	// The runtime exits after reporting the panic: the next invocation
	// starts another process, and is answered.
	out, fnErr, err := procs.InvokeFunction(context.Background(), "fn", []byte(`{"op":"sleep","ms":1}`))
	if err != nil || fnErr != nil || string(out) != `{"slept":1}` {
		t.Fatalf("after the panic: %s, %+v, %v; want an answer", out, fnErr, err)
	}
	if s := f.Stats(); s.Starts != 2 || s.Invocations != 4 || s.Errors != 3 || s.Exits != 1 {
		t.Errorf("stats %+v, want 2 starts, 4 invocations, 3 errors, 1 exit", s)
	}
}

// TestProcessExit: a process that exits during an invocation fails it
// with Runtime.ExitError; the next invocation starts a new process.
func TestProcessExit(t *testing.T) {
	f, out := newFunction(t, Config{Timeout: 5 * time.Second})
	h := f.NewHandler()
	first := envReport(t, h, context.Background())
	_, err := h.Invoke(context.Background(), []byte(`{"op":"exit","code":7,"message":"disk full"}`))
	var ive messages.InvokeResponse_Error
	if !errors.As(err, &ive) || ive.Type != ErrorTypeExit || !strings.Contains(ive.Message, "Runtime exited with error: exit status 7") ||
		!strings.HasPrefix(ive.Message, "RequestId: ") {
		t.Fatalf("error %v, want %s: RequestId: ... Error: Runtime exited with error: exit status 7", err, ErrorTypeExit)
	}
	if !strings.Contains(out.String(), "disk full") {
		t.Errorf("output %q lacks the process's last words", out)
	}
	if next := envReport(t, h, context.Background()); next.Pid == first.Pid || next.Invocations != 1 {
		t.Errorf("after the exit: pid %d (before %d), count %d; want a new process", next.Pid, first.Pid, next.Invocations)
	}
}

// TestInitFailures: a process that exits during init fails the invocation
// with Runtime.ExitError; one that reports an init error fails it with
// that error, and is killed.
func TestInitFailures(t *testing.T) {
	t.Run("exit", func(t *testing.T) {
		f, out := newFunction(t, Config{Env: map[string]string{"FN_MODE": "initexit"}})
		_, err := f.NewHandler().Invoke(context.Background(), []byte(`{"op":"env"}`))
		var ive messages.InvokeResponse_Error
		if !errors.As(err, &ive) || ive.Type != ErrorTypeExit || !strings.Contains(ive.Message, "exit status 3") {
			t.Fatalf("error %v, want %s with exit status 3", err, ErrorTypeExit)
		}
		if !strings.Contains(out.String(), "TABLE is required") {
			t.Errorf("output %q lacks the init failure", out)
		}
		if s := f.Stats(); s.Starts != 1 || s.Ready != 0 || s.Exits != 1 {
			t.Errorf("stats %+v, want 1 start, none ready, 1 exit", s)
		}
	})
	t.Run("init error", func(t *testing.T) {
		f, _ := newFunction(t, Config{Env: map[string]string{"FN_MODE": "initerror"}, Timeout: 10 * time.Second})
		start := time.Now()
		_, err := f.NewHandler().Invoke(context.Background(), []byte(`{"op":"env"}`))
		var ive messages.InvokeResponse_Error
		if !errors.As(err, &ive) || ive.Type != "Config.Missing" || ive.Message != "no table" {
			t.Fatalf("error %v, want Config.Missing: no table", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the init error took %v to report, want it at once", d)
		}
	})
}

// TestTimeout: an invocation past its deadline fails with Sandbox.Timedout
// and its process is killed; the environment's next invocation gets a new
// process. Through the registry, the timed-out environment is dropped.
func TestTimeout(t *testing.T) {
	f, _ := newFunction(t, Config{Timeout: 300 * time.Millisecond})
	h := f.NewHandler()
	// The reports have a deadline of their own: a cold start on a busy
	// machine may take longer than the function timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := envReport(t, h, ctx)
	start := time.Now()
	_, err := h.Invoke(context.Background(), []byte(`{"op":"sleep","ms":5000}`))
	var ive messages.InvokeResponse_Error
	if !errors.As(err, &ive) || ive.Type != lambdarun.ErrorTypeTimeout || !strings.Contains(ive.Message, "Task timed out after 0.30 seconds") {
		t.Fatalf("error %v, want %s after 0.30 seconds", err, lambdarun.ErrorTypeTimeout)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("timed out after %v, want about 300ms", d)
	}
	if next := envReport(t, h, ctx); next.Pid == first.Pid {
		t.Errorf("after the timeout: same process %d, want a new one", next.Pid)
	}
	if alive(first.Pid) {
		t.Errorf("the timed-out process %d is still running", first.Pid)
	}

	r := register(t, "fn", 300*time.Millisecond, f.NewHandler)
	_, fnErr, err := r.InvokeFunction(context.Background(), "fn", []byte(`{"op":"sleep","ms":5000}`))
	if err != nil || fnErr == nil || fnErr.Type != lambdarun.ErrorTypeTimeout {
		t.Fatalf("through the registry: %+v, %v; want %s", fnErr, err, lambdarun.ErrorTypeTimeout)
	}
}

// TestCloseStopsProcesses: concurrent invocations run in separate
// environments, each its own process; Close stops them all and later
// invocations fail.
func TestCloseStopsProcesses(t *testing.T) {
	f, err := New(Config{Name: "fn", Bootstrap: fnPath, Timeout: 5 * time.Second, StopGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := register(t, "fn", 5*time.Second, f.NewHandler)
	const n = 4
	pids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, fnErr, err := r.InvokeFunction(context.Background(), "fn", []byte(`{"op":"env"}`))
			if err != nil || fnErr != nil {
				t.Errorf("invoke: %+v, %v", fnErr, err)
				return
			}
			var rep report
			_ = json.Unmarshal(out, &rep)
			pids[i] = rep.Pid
		})
	}
	wg.Wait()
	distinct := slices.Compact(slices.Sorted(slices.Values(pids)))
	if s := f.Stats(); len(distinct) < 2 || s.Starts != int64(len(distinct)) {
		t.Errorf("%d concurrent invocations ran in processes %v (stats %+v), want several processes, one per environment", n, pids, s)
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, pid := range distinct {
		if alive(pid) {
			t.Errorf("process %d still running after Close", pid)
		}
	}
	if s := f.Stats(); s.Exits != 0 {
		t.Errorf("stats %+v: Close's stops counted as exits", s)
	}
	_, fnErr, err := r.InvokeFunction(context.Background(), "fn", []byte(`{"op":"env"}`))
	if err != nil || fnErr == nil || fnErr.Type != "wrapError" || !strings.Contains(fnErr.Message, ErrClosed.Error()) {
		t.Errorf("invoke after Close: %+v, %v; want the error %v", fnErr, err, ErrClosed)
	}
}

// alive reports whether the process pid is running (and not a zombie:
// the processes are reaped by their handler).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// recorder keeps the records logged to it.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func (r *recorder) lines(stream string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "stream" && a.Value.String() == stream {
				out = append(out, rec.Message)
			}
			return true
		})
	}
	return out
}

// TestOutputToLogger: without an Output, each line of the process's
// output is a log record.
func TestOutputToLogger(t *testing.T) {
	rec := &recorder{}
	f, _ := newFunction(t, Config{Logger: slog.New(rec), Timeout: 5 * time.Second})
	h := f.NewHandler()
	if _, err := h.Invoke(context.Background(), []byte(`{"op":"print","message":"posted entry 42"}`)); err != nil {
		t.Fatal(err)
	}
	// The output is copied as it comes; wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(rec.lines("stdout"), "posted entry 42") || !slices.Contains(rec.lines("stderr"), "posted entry 42") {
		if time.Now().After(deadline) {
			t.Fatalf("stdout lines %q, stderr lines %q: want the printed line in both", rec.lines("stdout"), rec.lines("stderr"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResponseTooLarge: a response over Lambda's 6 MiB limit is the
// function error Lambda reports for it.
func TestResponseTooLarge(t *testing.T) {
	f, _ := newFunction(t, Config{Timeout: 10 * time.Second})
	_, err := f.NewHandler().Invoke(context.Background(), fmt.Appendf(nil, `{"op":"big","size":%d}`, MaxResponseBytes))
	var ive messages.InvokeResponse_Error
	if !errors.As(err, &ive) || ive.Type != ErrorTypeResponseTooLarge {
		t.Fatalf("error %v, want %s", err, ErrorTypeResponseTooLarge)
	}
}

// TestCommand: an executable for the host runs as it is, as does a
// script; one for another architecture runs under qemu-<arch> from PATH,
// and without it New fails with ErrNoEmulator.
func TestCommand(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "bootstrap.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{fnPath, script} {
		if argv, err := Command(bin); err != nil || !slices.Equal(argv, []string{bin}) {
			t.Errorf("Command(%s) = %q, %v; want the executable itself", bin, argv, err)
		}
	}

	// An ELF header of the other architecture is enough to tell.
	foreign, qemu := elfHeader(0xb7), "qemu-aarch64" // EM_AARCH64
	if hostMachine() == 0xb7 {
		foreign, qemu = elfHeader(0x3e), "qemu-x86_64" // EM_X86_64
	}
	bin := filepath.Join(dir, "bootstrap")
	if err := os.WriteFile(bin, foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	emulators := filepath.Join(dir, "bin")
	if err := os.Mkdir(emulators, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emulators, qemu), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", emulators)
	if argv, err := Command(bin); err != nil || !slices.Equal(argv, []string{filepath.Join(emulators, qemu), bin}) {
		t.Errorf("Command(foreign) = %q, %v; want %s first", argv, err, qemu)
	}
	t.Setenv("PATH", dir)
	if _, err := New(Config{Name: "fn", Bootstrap: bin}); !errors.Is(err, ErrNoEmulator) || !strings.Contains(err.Error(), qemu) {
		t.Errorf("New without %s: %v, want ErrNoEmulator naming it", qemu, err)
	}
	if _, err := Command(filepath.Join(dir, "missing")); err == nil {
		t.Error("Command of a missing file: no error")
	}
}

// elfHeader is the 64-byte header of a little-endian 64-bit ELF executable
// for machine, with no sections.
func elfHeader(machine uint16) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = 2, 1, 1 // ELFCLASS64, little-endian, EV_CURRENT
	h[16] = 2                  // ET_EXEC
	h[18], h[19] = byte(machine), byte(machine>>8)
	h[20] = 1             // EV_CURRENT
	h[52], h[54] = 64, 56 // e_ehsize, e_phentsize
	h[58] = 64            // e_shentsize
	return h
}

// hostMachine is the ELF machine of the test function, built for the
// host.
func hostMachine() uint16 {
	b, err := os.ReadFile(fnPath)
	if err != nil || len(b) < 20 {
		return 0
	}
	return uint16(b[18]) | uint16(b[19])<<8
}
