package fault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// LambdaFaultKind is what a Lambda fault does to an invocation.
type LambdaFaultKind int

const (
	// Fail answers without running the handler, with Error (default
	// "Lambda.ServiceException"). An Error of the form "Lambda.X" other
	// than "Lambda.Unknown" is a Lambda service error (the Step Functions
	// task fails with that name); anything else, such as
	// "Sandbox.Timedout" or "Lambda.Unknown", is a function error of that
	// type.
	Fail LambdaFaultKind = iota
	// Hang never answers: it blocks until the caller's context ends (a
	// task's TimeoutSeconds then fires States.Timeout) or the function
	// timeout passes, when it answers Sandbox.Timedout as Lambda does. The
	// handler does not run.
	Hang
	// LoseResponse runs the handler to completion through the normal
	// invocation path (its writes commit), then answers with Error as Fail
	// does, instead of its result.
	LoseResponse
	// Detach answers at once with Error as Fail does, and runs the handler
	// in the background once Release is closed (at once when Release is
	// nil), with a context the caller cannot cancel: a commit that lands
	// after the caller gave up. The outcome goes to Done.
	Detach
)

var lambdaCountNames = map[LambdaFaultKind]string{
	Fail: CountLambdaFail, Hang: CountLambdaHang, LoseResponse: CountLambdaLoseResponse, Detach: CountLambdaDetach,
}

// LambdaFault is a fault applied to invocations of one function.
type LambdaFault struct {
	// Function is the function name as registered (locally, the
	// template's logical ID, e.g. "DebitFunction").
	Function string
	Kind     LambdaFaultKind
	// Times is how many matching invocations the fault applies to; 0 is
	// every one.
	Times int
	// Prob, when > 0, is the probability (drawn from the Injector's seeded
	// source) that the fault applies to a matching invocation.
	Prob float64
	// Error is the error type answered by Fail, LoseResponse and Detach;
	// see Fail.
	Error string
	// Match, when set, filters invocations by payload, e.g. on its
	// "transferId".
	Match func(payload []byte) bool
	// Release, for Detach, holds the background run until it is closed.
	Release <-chan struct{}
	// Done, for Detach, receives the outcome of the background run. It
	// should be buffered; the send does not block (an outcome nobody can
	// take is dropped). May be nil.
	Done chan<- LateOutcome
}

// LateOutcome is the outcome of a detached invocation.
type LateOutcome struct {
	// Result is the handler's result when it succeeded.
	Result []byte
	// Err is the function error (*lambdarun.FunctionError) or the
	// invocation error.
	Err error
}

// detached is a background run of a Detach fault.
type detached struct {
	release <-chan struct{}
	done    chan struct{}
}

// Lambda arms a Lambda fault.
func (in *Injector) Lambda(f LambdaFault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.lambdas = append(in.lambdas, &armed[LambdaFault]{f: f, times: f.Times, prob: f.Prob})
}

// Interceptor returns the hook that applies the Lambda faults, for
// lambdarun.Registry.SetInterceptor.
func (in *Injector) Interceptor() lambdarun.Interceptor { return in.intercept }

func (in *Injector) intercept(ctx context.Context, function string, payload []byte, next lambdarun.Invoke) ([]byte, *lambdarun.FunctionError, error) {
	in.mu.Lock()
	f, ok := take(in, &in.lambdas, func(f LambdaFault) bool {
		return f.Function == function && (f.Match == nil || f.Match(payload))
	})
	if ok {
		in.counts[lambdaCountNames[f.Kind]]++
	}
	in.mu.Unlock()
	if !ok {
		return next(ctx, payload)
	}
	switch f.Kind {
	case Hang:
		// Lambda ends the invocation at the function timeout, so a hang
		// ends there too even when nobody waits for it (an asynchronous
		// invocation).
		var timedOut <-chan time.Time
		timeout, limited := lambdarun.FunctionTimeout(ctx)
		if limited {
			t := time.NewTimer(timeout)
			defer t.Stop()
			timedOut = t.C
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("fault: %s hung until its caller gave up: %w", function, context.Cause(ctx))
		case <-timedOut:
			return nil, lambdarun.TimeoutError(timeout), nil
		}
	case LoseResponse:
		if _, _, err := next(ctx, payload); err != nil && ctx.Err() != nil {
			return nil, nil, err
		}
	case Detach:
		in.detach(ctx, f, payload, next)
	}
	return lambdaFailure(function, f.Kind, f.Error)
}

// detach runs the handler in the background once f.Release is closed.
func (in *Injector) detach(ctx context.Context, f LambdaFault, payload []byte, next lambdarun.Invoke) {
	d := &detached{release: f.Release, done: make(chan struct{})}
	in.mu.Lock()
	in.detached = append(in.detached, d)
	in.mu.Unlock()
	late := context.WithoutCancel(ctx)
	payload = append([]byte(nil), payload...)
	go func() {
		defer func() {
			in.mu.Lock()
			for i, x := range in.detached {
				if x == d {
					in.detached = append(in.detached[:i:i], in.detached[i+1:]...)
					break
				}
			}
			in.mu.Unlock()
		}()
		defer close(d.done)
		if f.Release != nil {
			<-f.Release
		}
		out, fnErr, err := next(late, payload)
		o := LateOutcome{Result: out, Err: err}
		if fnErr != nil {
			o = LateOutcome{Err: fnErr}
		}
		if f.Done != nil {
			select {
			case f.Done <- o:
			default:
			}
		}
	}()
}

// lambdaFailure is the answer of a Fail, LoseResponse or Detach fault.
func lambdaFailure(function string, kind LambdaFaultKind, errorType string) ([]byte, *lambdarun.FunctionError, error) {
	if errorType == "" {
		errorType = defaultLambdaServiceError
	}
	msg := fmt.Sprintf("%s: %s of %s", errInjected, lambdaCountNames[kind], function)
	if strings.HasPrefix(errorType, lambdaServiceErrorPrefix) && errorType != lambdaUnknownFunctionError {
		return nil, nil, &lambdarun.ServiceError{Type: errorType, Message: msg}
	}
	return nil, &lambdarun.FunctionError{Type: errorType, Message: msg}, nil
}
