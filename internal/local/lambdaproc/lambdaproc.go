// Package lambdaproc runs a Lambda function's bootstrap executable the way
// Lambda runs a function on a provided runtime (provided.al2023): as a
// child process that fetches its invocations from the Lambda Runtime API
// (Server) and posts its answers back, one process per execution
// environment, reused across invocations.
//
// A Function's handlers (NewHandler) implement lambda.Handler, so that the
// local Lambda registry (package lambdarun) invokes a function's shipped
// binary as it invokes an in-process handler: each execution environment
// the registry creates gets its own process, started on its first
// invocation. A function error the process reports comes back as the
// messages.InvokeResponse_Error it posted, which lambdarun reports as it
// reports an in-process handler's, so Step Functions' Retry and Catch match
// the same error names. A bootstrap built for another architecture than
// the host's (linux/arm64 on an amd64 machine) runs under QEMU's
// user-mode emulator (Command).
package lambdaproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

const (
	// DefaultVersion is the function version a process is told
	// (AWS_LAMBDA_FUNCTION_VERSION) when Config.Version is empty.
	DefaultVersion = "$LATEST"
	// DefaultMemoryMB is the memory size a process is told
	// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE) when Config.MemoryMB is zero,
	// Lambda's default.
	DefaultMemoryMB = 128
	// DefaultStopGrace is how long Close waits for a process to exit
	// after SIGTERM before it kills it.
	DefaultStopGrace = 500 * time.Millisecond

	// ErrorTypeExit is the errorType of an invocation whose process
	// exited before answering (lambdarun.ErrorTypeExit, Lambda's).
	ErrorTypeExit = lambdarun.ErrorTypeExit
	// ErrorTypeInvalidEntrypoint is the errorType of an invocation whose
	// bootstrap could not be started.
	ErrorTypeInvalidEntrypoint = "Runtime.InvalidEntrypoint"
	// ErrorTypeUnknown is the errorType of an invocation that failed
	// for a reason of the runtime around the process (its Runtime API,
	// its credentials).
	ErrorTypeUnknown = "Runtime.Unknown"
	// ErrorTypeUnhandled is the errorType of an error document that
	// names none.
	ErrorTypeUnhandled = "Unhandled"

	outputTailBytes = 4 << 10
)

// ErrClosed is returned by the Invoke of a handler whose Function is
// closed.
var ErrClosed = errors.New("lambdaproc: function closed")

// Config describes a function whose bootstrap a Function runs.
type Config struct {
	// Bootstrap is the path of the function's executable. It runs with
	// its directory as working directory, as Lambda runs it from
	// /var/task.
	Bootstrap string
	// Name is the function name (AWS_LAMBDA_FUNCTION_NAME); required.
	Name string
	// ARN is the function's unqualified ARN, handed to the runtime as
	// the invoked function ARN when the invocation's context carries no
	// lambdacontext.LambdaContext; "" is built from Region, Name and
	// lambdarun.DefaultAccountID.
	ARN string
	// Version (AWS_LAMBDA_FUNCTION_VERSION); "" is DefaultVersion.
	Version string
	// MemoryMB (AWS_LAMBDA_FUNCTION_MEMORY_SIZE); 0 is DefaultMemoryMB.
	MemoryMB int
	// Region (AWS_REGION); "" is lambdarun.DefaultRegion.
	Region string
	// Timeout is the function timeout, the deadline of an invocation
	// whose context has none; 0 is lambdarun.DefaultTimeout.
	Timeout time.Duration
	// Env is the function's environment. A process gets nothing else
	// from the caller's environment but PATH; the variables Lambda
	// reserves (AWS_LAMBDA_RUNTIME_API, AWS_LAMBDA_FUNCTION_NAME,
	// AWS_LAMBDA_FUNCTION_VERSION, AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
	// AWS_REGION) are set from the other fields and override Env's.
	Env map[string]string
	// Credentials, when set, are retrieved for every process start and
	// given to it as AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
	// AWS_SESSION_TOKEN (the function role's credentials), overriding
	// Env's.
	Credentials aws.CredentialsProvider
	// Output receives the processes' stdout and stderr. When nil, Logger
	// gets each line as a record (message the line, attribute stream);
	// with neither, the output is discarded.
	Output io.Writer
	// Logger receives the processes' starts and unexpected exits, and
	// their output when Output is nil; nil discards.
	Logger *slog.Logger
	// StopGrace is how long Close waits after SIGTERM before it kills a
	// process; 0 is DefaultStopGrace.
	StopGrace time.Duration
}

// Stats counts what a Function's processes did.
type Stats struct {
	// Starts counts the processes started.
	Starts int64
	// Ready counts the processes that asked for an invocation, and
	// InitTime sums the time each took to, from its start: the cold
	// start of the runtime (the emulator's included).
	Ready    int64
	InitTime time.Duration
	// Invocations counts the invocations a process answered, Errors
	// those it answered with an error document.
	Invocations int64
	Errors      int64
	// Exits counts the processes that exited on their own (or were
	// killed after an init error), not those stopped by Close or killed
	// at an invocation's deadline.
	Exits int64
}

// Function runs one function's bootstrap: every handler from NewHandler
// is an execution environment with its own process. Close stops them.
type Function struct {
	cfg  Config
	argv []string
	log  *slog.Logger
	out  io.Writer // shared by the processes; nil: per-process lineLoggers

	starts, ready, initNanos, invocations, errors, exits atomic.Int64

	mu     sync.Mutex
	closed bool
	envs   []*Handler
}

// New returns the Function of cfg. It fails when the bootstrap cannot run
// on this host (see Command; an error matching ErrNoEmulator when it
// needs an emulator that is not installed).
func New(cfg Config) (*Function, error) {
	if cfg.Name == "" {
		return nil, errors.New("lambdaproc: Config.Name is required")
	}
	argv, err := Command(cfg.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", cfg.Name, err)
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = DefaultMemoryMB
	}
	if cfg.Region == "" {
		cfg.Region = lambdarun.DefaultRegion
	}
	if cfg.ARN == "" {
		cfg.ARN = lambdarun.FunctionARN(cfg.Region, lambdarun.DefaultAccountID, cfg.Name)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = lambdarun.DefaultTimeout
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	cfg.Env = maps.Clone(cfg.Env)
	f := &Function{cfg: cfg, argv: argv, log: cfg.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Output != nil {
		f.out = &lockedWriter{w: cfg.Output}
	}
	return f, nil
}

// Argv is the command line that runs the bootstrap.
func (f *Function) Argv() []string { return slices.Clone(f.argv) }

// NewHandler returns a new execution environment; its process starts on
// its first Invoke. It fits lambdarun.Function.NewHandler.
func (f *Function) NewHandler() lambda.Handler {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := &Handler{f: f, env: len(f.envs) + 1, closed: f.closed}
	if !f.closed {
		f.envs = append(f.envs, h)
	}
	return h
}

// Stats returns the counts so far.
func (f *Function) Stats() Stats {
	return Stats{
		Starts: f.starts.Load(), Ready: f.ready.Load(), InitTime: time.Duration(f.initNanos.Load()),
		Invocations: f.invocations.Load(), Errors: f.errors.Load(), Exits: f.exits.Load(),
	}
}

// Close stops every environment's process: SIGTERM, then SIGKILL after
// Config.StopGrace or when ctx ends, whichever comes first; it returns
// once they have exited. Later invocations fail with ErrClosed.
func (f *Function) Close(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	envs := f.envs
	f.envs = nil
	f.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(envs))
	for i, h := range envs {
		wg.Go(func() { errs[i] = h.close(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// environ is a process's environment: PATH, Config.Env, the credentials
// and the variables Lambda sets, with the Runtime API at api.
func (f *Function) environ(ctx context.Context, api string) ([]string, error) {
	vars := map[string]string{}
	if path, ok := os.LookupEnv("PATH"); ok {
		vars["PATH"] = path
	}
	maps.Copy(vars, f.cfg.Env)
	if f.cfg.Credentials != nil {
		creds, err := f.cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return nil, fmt.Errorf("retrieve the function's credentials: %w", err)
		}
		vars["AWS_ACCESS_KEY_ID"], vars["AWS_SECRET_ACCESS_KEY"] = creds.AccessKeyID, creds.SecretAccessKey
		delete(vars, "AWS_SESSION_TOKEN")
		if creds.SessionToken != "" {
			vars["AWS_SESSION_TOKEN"] = creds.SessionToken
		}
	}
	vars["AWS_LAMBDA_RUNTIME_API"] = api
	vars["AWS_LAMBDA_FUNCTION_NAME"] = f.cfg.Name
	vars["AWS_LAMBDA_FUNCTION_VERSION"] = f.cfg.Version
	vars["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(f.cfg.MemoryMB)
	vars["AWS_REGION"] = f.cfg.Region
	env := make([]string, 0, len(vars))
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+"="+vars[k])
	}
	return env, nil
}

// dir is the processes' working directory.
func (f *Function) dir() string { return filepath.Dir(f.cfg.Bootstrap) }
