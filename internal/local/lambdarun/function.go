// Package lambdarun runs Lambda handlers in-process, the way the Lambda
// service and the aws-lambda-go runtime run them: the payload travels as JSON
// bytes, the handler context carries the function timeout as its deadline and
// a lambdacontext.LambdaContext, and errors, panics and timeouts come back as
// the same error documents Lambda returns to its callers.
package lambdarun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

const (
	// DefaultTimeout is the timeout of a Function whose Timeout is zero,
	// Lambda's default.
	DefaultTimeout = 3 * time.Second
	// MaxTimeout is the longest timeout Lambda accepts.
	MaxTimeout = 15 * time.Minute

	// DefaultRegion and DefaultAccountID build the ARN of a Function
	// registered without one.
	DefaultRegion    = "us-east-1"
	DefaultAccountID = "123456789012"

	// ErrorTypeTimeout is the errorType Lambda reports when an invocation
	// runs past the function timeout.
	ErrorTypeTimeout = "Sandbox.Timedout"
	// ErrorTypeExit is the errorType Lambda reports when the runtime exits
	// before answering; here, when the handler goroutine ends through
	// runtime.Goexit.
	ErrorTypeExit = "Runtime.ExitError"
	// ErrorTypeTooManyRequests is the ServiceError type of a throttled
	// invocation (Lambda's TooManyRequestsException, named as Step
	// Functions names it).
	ErrorTypeTooManyRequests = "Lambda.TooManyRequestsException"
)

var (
	// ErrInvalidRequestContent reports a payload that is not JSON, which the
	// Lambda Invoke API rejects before running the function.
	ErrInvalidRequestContent = errors.New("lambdarun: invalid request content")
	// ErrInvalidFunction reports a Function that cannot run (no handler,
	// bad name, ARN or timeout).
	ErrInvalidFunction = errors.New("lambdarun: invalid function")
)

// FunctionError is a function error as Lambda reports it to the caller of
// Invoke: the JSON document {"errorMessage","errorType","stackTrace"}.
// StackTrace frames are rendered as "<path>:<line> <function>", path and
// function trimmed the way aws-lambda-go trims them.
type FunctionError struct {
	Message    string   `json:"errorMessage"`
	Type       string   `json:"errorType"`
	StackTrace []string `json:"stackTrace,omitempty"`
}

func (e *FunctionError) Error() string {
	return e.Type + ": " + e.Message
}

// Function is one Lambda function.
//
// Lambda runs each invocation in an execution environment that handles one
// request at a time; concurrent invocations get separate environments.
// Function models that. With NewHandler set, every environment gets its own
// handler from it, idle environments are reused, and concurrent invocations
// run in parallel. With only Handler set there is a single environment, so
// invocations of the function run one after another.
//
// The single environment is the safe default because a handler made by
// lambda.NewHandler is not safe for concurrent Invoke calls in
// aws-lambda-go v1.55.1: Invoke returns a slice of a pooled buffer that it
// has already put back in the pool, so a concurrent invocation overwrites
// it. Invoke copies the result before the environment takes another request.
// Set NewHandler (for example func() lambda.Handler { return
// lambda.NewHandler(fn) }) to exercise a handler under concurrency.
//
// With NewHandler, an environment whose handler panicked or timed out is
// discarded, as Lambda resets it. A handler cannot be stopped in-process:
// after a timeout it goes on in its goroutine until it returns, and with a
// single environment the next invocation waits for that (bounded by the
// caller's context). The function timeout counts from the start of the
// handler, not from the wait for an environment.
//
// A Function must not be copied after first use.
type Function struct {
	// Name is the function name, 1-64 characters of [A-Za-z0-9_-].
	Name string
	// ARN is the unqualified function ARN. Empty means
	// arn:aws:lambda:us-east-1:123456789012:function:<Name>.
	ARN string
	// Timeout is the function timeout; zero means DefaultTimeout.
	Timeout time.Duration
	// Handler serves every invocation from a single environment; see the
	// type documentation. Usually built with lambda.NewHandler.
	Handler lambda.Handler
	// NewHandler, when set, builds the handler of each new execution
	// environment and Handler is not used.
	NewHandler func() lambda.Handler
	// Reserved, when set, is the function's reserved concurrency: at most
	// *Reserved invocations run at once, and one more is throttled at
	// once with a *ServiceError of type ErrorTypeTooManyRequests, as
	// Lambda throttles a synchronous invocation (it does not queue it).
	// 0 throttles every invocation. nil: no limit.
	Reserved *int

	initOnce sync.Once
	running  atomic.Int64  // invocations holding an environment (Reserved)
	single   chan struct{} // single-environment mode: a token while idle
	mu       sync.Mutex
	idle     []lambda.Handler // NewHandler mode: idle environments
}

// FunctionARN returns the unqualified ARN of a function.
func FunctionARN(region, accountID, name string) string {
	return "arn:aws:lambda:" + region + ":" + accountID + ":function:" + name
}

// EffectiveARN returns ARN, or the default ARN built from Name when ARN is
// empty.
func (f *Function) EffectiveARN() string {
	if f.ARN != "" {
		return f.ARN
	}
	return FunctionARN(DefaultRegion, DefaultAccountID, f.Name)
}

func (f *Function) timeout() time.Duration {
	if f.Timeout == 0 {
		return DefaultTimeout
	}
	return f.Timeout
}

// validate reports what keeps the function from running.
func (f *Function) validate() error {
	if !validFunctionName(f.Name) {
		return fmt.Errorf("%w: name %q must be 1-64 characters of [A-Za-z0-9_-]", ErrInvalidFunction, f.Name)
	}
	if f.Handler == nil && f.NewHandler == nil {
		return fmt.Errorf("%w: %s has neither Handler nor NewHandler", ErrInvalidFunction, f.Name)
	}
	if f.Timeout < 0 || f.Timeout > MaxTimeout {
		return fmt.Errorf("%w: %s timeout %s is outside 0-%s", ErrInvalidFunction, f.Name, f.Timeout, MaxTimeout)
	}
	if f.ARN != "" {
		ref, ok := parseARN(f.ARN)
		if !ok || ref.qualifier != "" {
			return fmt.Errorf("%w: %s ARN %q is not an unqualified Lambda function ARN", ErrInvalidFunction, f.Name, f.ARN)
		}
		if ref.name != f.Name {
			return fmt.Errorf("%w: ARN %q names function %q, not %q", ErrInvalidFunction, f.ARN, ref.name, f.Name)
		}
	}
	return nil
}

// Invoke runs the function synchronously with payload, as the Lambda Invoke
// API with RequestResponse does. A handler error, panic or timeout comes back
// as fnErr; err reports an invocation that did not run to an answer: an
// invalid function or payload, or ctx ending first. When ctx ends the handler
// goes on running, as a Lambda invocation goes on when its caller hangs up.
//
// An empty payload is sent as {}.
func (f *Function) Invoke(ctx context.Context, payload []byte) (result []byte, fnErr *FunctionError, err error) {
	return f.invoke(ctx, payload, f.EffectiveARN())
}

type outcome struct {
	result []byte
	fnErr  *FunctionError
}

func (f *Function) invoke(ctx context.Context, payload []byte, invokedARN string) ([]byte, *FunctionError, error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	if len(bytes.TrimSpace(payload)) == 0 {
		payload = []byte("{}")
	} else if !json.Valid(payload) {
		return nil, nil, fmt.Errorf("%w: invoke %s: payload is not valid JSON", ErrInvalidRequestContent, f.Name)
	}
	payload = bytes.Clone(payload) // the caller may reuse its buffer while the handler runs

	// The invocation holds its place in the reserved concurrency until
	// it answers or times out (when Lambda stops its environment),
	// whichever comes first.
	var unreserve func()
	if f.Reserved != nil {
		if f.running.Add(1) > int64(*f.Reserved) {
			f.running.Add(-1)
			return nil, nil, &ServiceError{Type: ErrorTypeTooManyRequests, Message: "Rate Exceeded."}
		}
		unreserve = sync.OnceFunc(func() { f.running.Add(-1) })
	} else {
		unreserve = func() {}
	}
	handler, err := f.acquire(ctx)
	if err != nil {
		unreserve()
		return nil, nil, fmt.Errorf("lambdarun: invoke %s: waiting for an execution environment: %w", f.Name, err)
	}

	timeout := f.timeout()
	requestID := NewRequestID()
	lc := &lambdacontext.LambdaContext{AwsRequestID: requestID, InvokedFunctionArn: invokedARN}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	hctx = lambdacontext.NewContext(hctx, lc)

	done := make(chan outcome, 1)
	var abandoned atomic.Bool
	go func() {
		var o outcome
		discard, finished := true, false
		defer func() {
			if !finished {
				// runtime.Goexit ended the handler goroutine.
				o = outcome{fnErr: &FunctionError{Type: ErrorTypeExit, Message: "RequestId: " + requestID + " Error: handler exited without a response"}}
			}
			// Release before answering, so that a caller invoking again
			// finds the environment idle; cancel after answering, so that
			// the waiter never mistakes the cancellation for the deadline.
			f.release(handler, discard || abandoned.Load())
			unreserve()
			done <- o
			cancel()
		}()
		o, discard = runHandler(hctx, handler, payload)
		finished = true
	}()

	select {
	case o := <-done:
		return o.result, o.fnErr, nil
	case <-hctx.Done():
		select {
		case o := <-done: // answered at the deadline
			return o.result, o.fnErr, nil
		default:
		}
		abandoned.Store(true)
		unreserve()
		return nil, timeoutError(time.Now(), requestID, timeout), nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("lambdarun: invoke %s (request %s): %w", f.Name, requestID, context.Cause(ctx))
	}
}

func (f *Function) init() {
	f.initOnce.Do(func() {
		f.single = make(chan struct{}, 1)
		f.single <- struct{}{}
	})
}

// acquire returns the handler of an execution environment reserved for one
// invocation.
func (f *Function) acquire(ctx context.Context) (lambda.Handler, error) {
	f.init()
	if f.NewHandler == nil {
		select {
		case <-f.single:
			return f.Handler, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		h := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return h, nil
	}
	f.mu.Unlock()
	h := f.NewHandler()
	if h == nil {
		return nil, fmt.Errorf("%w: %s NewHandler returned nil", ErrInvalidFunction, f.Name)
	}
	return h, nil
}

// release ends the reservation of an environment once its handler has
// returned; discard drops the environment (panic, timeout).
func (f *Function) release(h lambda.Handler, discard bool) {
	if f.NewHandler == nil {
		f.single <- struct{}{}
		return
	}
	if discard {
		return
	}
	f.mu.Lock()
	f.idle = append(f.idle, h)
	f.mu.Unlock()
}

// runHandler calls the handler, converting its error or panic; discard
// reports a panic, after which Lambda replaces the environment.
func runHandler(ctx context.Context, h lambda.Handler, payload []byte) (o outcome, discard bool) {
	defer func() {
		if v := recover(); v != nil {
			o, discard = outcome{fnErr: panicError(v)}, true
		}
	}()
	out, err := h.Invoke(ctx, payload)
	if err != nil {
		return outcome{fnErr: errorResponse(err)}, false
	}
	// Copy before the environment takes another request: see Function.
	return outcome{result: bytes.Clone(out)}, false
}

// timeoutError is the error Lambda reports for an invocation that ran past
// the function timeout.
func timeoutError(at time.Time, requestID string, timeout time.Duration) *FunctionError {
	return &FunctionError{
		Type: ErrorTypeTimeout,
		Message: fmt.Sprintf("%s %s Task timed out after %s seconds",
			at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), requestID,
			strconv.FormatFloat(timeout.Seconds(), 'f', 2, 64)),
	}
}

// errorResponse converts a handler error as aws-lambda-go's
// lambdaErrorResponse does: a messages.InvokeResponse_Error value is kept as
// it is; any other error is named by its type (the element type for a
// pointer) with Error() as message.
func errorResponse(err error) *FunctionError {
	if ive, ok := err.(messages.InvokeResponse_Error); ok {
		return fromInvokeResponseError(ive)
	}
	return &FunctionError{Type: errorTypeName(err), Message: err.Error()}
}

// panicError converts a recovered panic value as aws-lambda-go's
// lambdaPanicResponse does, with the stack of the panic.
func panicError(v any) *FunctionError {
	if ive, ok := v.(messages.InvokeResponse_Error); ok {
		return fromInvokeResponseError(ive)
	}
	return &FunctionError{
		Type:       errorTypeName(v),
		Message:    fmt.Sprintf("%v", v),
		StackTrace: panicStack(),
	}
}

func fromInvokeResponseError(ive messages.InvokeResponse_Error) *FunctionError {
	fe := &FunctionError{Type: ive.Type, Message: ive.Message}
	for _, fr := range ive.StackTrace {
		if fr != nil {
			fe.StackTrace = append(fe.StackTrace, fmt.Sprintf("%s:%d %s", fr.Path, fr.Line, fr.Label))
		}
	}
	return fe
}

// errorTypeName is aws-lambda-go's getErrorType.
func errorTypeName(v any) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		return t.Elem().Name()
	}
	return t.Name()
}

const maxStackFrames = 32

// runHandlerName is where panic stacks stop: the frames below it are this
// package's.
var runHandlerName string

func init() {
	runHandlerName = runtime.FuncForPC(reflect.ValueOf(runHandler).Pointer()).Name()
}

// panicStack returns the stack of the panic being recovered, from the
// panicking function outwards. It must be called by panicError from the
// deferred function that recovered.
func panicStack() []string {
	pcs := make([]uintptr, maxStackFrames+8)
	// Skip runtime.Callers, panicStack, panicError and the deferred function.
	n := runtime.Callers(4, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var out []string
	inRuntime := true
	for {
		fr, more := frames.Next()
		// Drop the runtime's panic machinery (gopanic, sigpanic, ...).
		if inRuntime && strings.HasPrefix(fr.Function, "runtime.") {
			if !more {
				break
			}
			continue
		}
		inRuntime = false
		if fr.Function == runHandlerName {
			break
		}
		out = append(out, formatFrame(fr))
		if !more || len(out) == maxStackFrames {
			break
		}
	}
	return out
}

// formatFrame trims a frame the way aws-lambda-go's formatFrame does: the
// path keeps as many directories as the package path has, the function loses
// its package.
func formatFrame(fr runtime.Frame) string {
	path, label := fr.File, fr.Function
	i := len(path)
	for n, g := 0, strings.Count(label, "/")+2; n < g; n++ {
		i = strings.LastIndex(path[:i], "/")
		if i == -1 {
			break
		}
	}
	path = path[i+1:]
	label = label[strings.LastIndex(label, "/")+1:]
	label = label[strings.Index(label, ".")+1:]
	return fmt.Sprintf("%s:%d %s", path, fr.Line, label)
}

// NewRequestID returns a random (version 4) UUID, the form of Lambda request
// IDs.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
