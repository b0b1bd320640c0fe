package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// Kinds of FailedInvocation.
const (
	// FailedOnFailure is an event Lambda sent to a function's on-failure
	// destination after its asynchronous invocation failed for good.
	FailedOnFailure = "on-failure"
	// FailedDeadLetter is an event a rule could not deliver and sent to
	// its dead-letter queue.
	FailedDeadLetter = "dead-letter"
)

// FailedInvocation is an event that left the normal flow: locally, what
// would have reached an SQS queue (an on-failure destination or a
// dead-letter queue) is recorded here and logged as an error.
type FailedInvocation struct {
	// Kind is FailedOnFailure or FailedDeadLetter.
	Kind string
	// Function is the function the event was for; Rule the rule that
	// routed it.
	Function string
	Rule     string
	// Destination is the ARN of the destination or dead-letter queue; ""
	// when none is configured (on AWS the event would be lost).
	Destination string
	Event       []byte
	// Attempts is how many times the invocation or delivery was tried.
	Attempts int
	// Err is the last failure.
	Err error
	At  time.Time
}

// Lambda's asynchronous invocation retry waits: one minute before the
// first retry, two before the second.
var asyncRetryDelays = []time.Duration{time.Minute, 2 * time.Minute}

// asyncThrottleDelay is the wait before an event whose invocation was
// throttled (the function's reserved concurrency was in use) is tried
// again. Lambda keeps such an event in its queue and retries it until
// the event's maximum age, without counting a throttle as an attempt.
const asyncThrottleDelay = time.Second

// asyncConfig is the effective EventInvokeConfig of a function.
type asyncConfig struct {
	retries       int
	maxAge        time.Duration
	onFailure     string // destination ARN
	onFailureType string // SQS, SNS, Lambda, EventBridge
	// authorizeSend checks that the function's role may send to the
	// destination, as Lambda sends with it; nil checks nothing.
	authorizeSend func(destinationType, arn string) error
}

func newAsyncConfig(c *cfn.EventInvokeConfig) asyncConfig {
	if c == nil {
		return asyncConfig{retries: cfn.DefaultAsyncMaximumRetryAttempts, maxAge: cfn.DefaultAsyncMaximumEventAgeInSeconds * time.Second}
	}
	a := asyncConfig{retries: c.MaximumRetryAttempts, maxAge: time.Duration(c.MaximumEventAgeInSeconds) * time.Second}
	if c.OnFailure != nil {
		a.onFailure, a.onFailureType = c.OnFailure.Destination, c.OnFailure.Type
	}
	return a
}

// errAsyncClosed reports an event offered after the stack began closing.
var errAsyncClosed = errors.New("stack: asynchronous invocations stopped")

// asyncInvoker runs asynchronous invocations the way Lambda does: the event
// is accepted at once, the function runs in the background, a failure is
// retried per the function's EventInvokeConfig with Lambda's waits (scaled
// by the stack's TimeScale), and the event goes to the on-failure
// destination after the last failure.
type asyncInvoker struct {
	functions *lambdarun.Registry
	scale     float64
	log       *slog.Logger
	failed    func(FailedInvocation)

	mu     sync.Mutex
	closed bool
	n      int
	idle   chan struct{} // closed when n drops to zero

	ctx    context.Context // ends when the stack stops
	cancel context.CancelFunc
}

func newAsyncInvoker(functions *lambdarun.Registry, scale float64, log *slog.Logger, failed func(FailedInvocation)) *asyncInvoker {
	if scale <= 0 {
		scale = 1
	}
	a := &asyncInvoker{functions: functions, scale: scale, log: log, failed: failed}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a
}

// invoke accepts an event for function (its registered name). It fails
// only when the function does not exist or the invoker is closed, which
// EventBridge sees as a failed delivery.
func (a *asyncInvoker) invoke(function, rule string, cfg asyncConfig, event []byte) error {
	if _, err := a.functions.Lookup(function); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errAsyncClosed
	}
	if a.n == 0 {
		a.idle = make(chan struct{})
	}
	a.n++
	event = append([]byte(nil), event...)
	go func() {
		defer a.done()
		a.run(function, rule, cfg, event)
	}()
	return nil
}

func (a *asyncInvoker) done() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n--
	if a.n == 0 {
		close(a.idle)
	}
}

func (a *asyncInvoker) run(function, rule string, cfg asyncConfig, event []byte) {
	log := a.log.With("function", function, "rule", rule)
	var age time.Duration // Lambda time the event has waited
	var last error
	attempt := 0
	for {
		attempt++
		started := time.Now()
		_, fnErr, err := a.functions.InvokeFunction(a.ctx, function, event)
		age += time.Since(started)
		if err == nil && fnErr == nil {
			return
		}
		if a.ctx.Err() != nil {
			log.Warn("asynchronous invocation dropped: stack stopped", "attempts", attempt)
			return
		}
		last = err
		if fnErr != nil {
			last = fnErr
		}
		var se *lambdarun.ServiceError
		throttled := errors.As(err, &se) && se.Type == lambdarun.ErrorTypeTooManyRequests
		if throttled {
			attempt--
		} else if attempt > cfg.retries {
			break
		}
		delay := asyncThrottleDelay
		if !throttled {
			delay = asyncRetryDelays[min(attempt-1, len(asyncRetryDelays)-1)]
		}
		if age+delay > cfg.maxAge {
			last = fmt.Errorf("maximum event age %s exceeded: %w", cfg.maxAge, last)
			break
		}
		log.Debug("asynchronous invocation failed, retrying", "attempt", attempt, "delay", delay, "error", last)
		t := time.NewTimer(time.Duration(float64(delay) * a.scale))
		select {
		case <-t.C:
			age += delay
		case <-a.ctx.Done():
			t.Stop()
			log.Warn("asynchronous invocation dropped: stack stopped during retry wait", "attempts", attempt)
			return
		}
	}
	if cfg.onFailure != "" && cfg.authorizeSend != nil {
		// Lambda sends with the function's execution role: a role that
		// may not send loses the event (DestinationDeliveryFailures).
		if err := cfg.authorizeSend(cfg.onFailureType, cfg.onFailure); err != nil {
			log.Error("asynchronous invocation failed, and the on-failure destination refused the event", "destination", cfg.onFailure, "error", err, "event", string(event))
			a.failed(FailedInvocation{Kind: FailedOnFailure, Function: function, Rule: rule,
				Event: event, Attempts: attempt, Err: fmt.Errorf("send to %s: %w (last failure: %v)", cfg.onFailure, err, last), At: time.Now()})
			return
		}
	}
	log.Error("asynchronous invocation failed: event sent to the on-failure destination",
		"destination", a.destinationName(cfg), "attempts", attempt, "error", last, "event", string(event))
	a.failed(FailedInvocation{Kind: FailedOnFailure, Function: function, Rule: rule, Destination: cfg.onFailure,
		Event: event, Attempts: attempt, Err: last, At: time.Now()})
}

func (a *asyncInvoker) destinationName(cfg asyncConfig) string {
	if cfg.onFailure == "" {
		return "(none: the event is lost)"
	}
	return cfg.onFailure
}

// isIdle reports whether no invocation is pending.
func (a *asyncInvoker) isIdle() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n == 0
}

// wait waits until no invocation is pending (retries included) or ctx
// ends.
func (a *asyncInvoker) wait(ctx context.Context) error {
	a.mu.Lock()
	if a.n == 0 {
		a.mu.Unlock()
		return nil
	}
	idle := a.idle
	a.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// close refuses new events, waits for pending ones until ctx ends, then
// abandons the rest.
func (a *asyncInvoker) close(ctx context.Context) error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	err := a.wait(ctx)
	a.cancel()
	if err != nil {
		return fmt.Errorf("stack: asynchronous invocations: %w", err)
	}
	return nil
}

// functionTarget is an EventBridge target that invokes a function
// asynchronously: the delivery succeeds once the invocation is accepted,
// and function errors are Lambda's to retry, not the rule's.
type functionTarget struct {
	async *asyncInvoker
	name  string
	rule  string
	cfg   asyncConfig
	// authorize checks that the function's resource policy lets the rule
	// invoke it; a refusal fails the delivery, which the rule's retry
	// policy and dead-letter queue then handle, as EventBridge does.
	authorize func() error
}

func (f functionTarget) Deliver(_ context.Context, event []byte) error {
	if f.authorize != nil {
		if err := f.authorize(); err != nil {
			return err
		}
	}
	return f.async.invoke(f.name, f.rule, f.cfg, event)
}
