package lambdaproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// Handler is one execution environment of a Function: a Runtime API
// server and the process of the bootstrap, started on the first Invoke
// and again on the Invoke after it exited. It answers one invocation at a
// time; concurrent calls wait their turn.
type Handler struct {
	f   *Function
	env int // the environment's number within its Function, for the logs

	serial sync.Mutex // held for a whole invocation

	mu     sync.Mutex // guards what follows
	closed bool
	api    *Server
	proc   *process
}

var _ lambda.Handler = (*Handler)(nil)

// process is one run of the bootstrap.
type process struct {
	cmd     *exec.Cmd
	started time.Time
	out     *Tail
	// exited is closed once the process is reaped; err is then cmd.Wait's
	// error.
	exited chan struct{}
	err    error
	// stopping: the process is being stopped on purpose (Close, or a
	// timed-out invocation), so its exit is not reported as unexpected.
	stopping atomic.Bool
	// answered counts the invocations it answered; only the invocation
	// holding the environment's serial lock touches it.
	answered int
}

// Invoke hands payload to the environment's process as one invocation and
// returns the process's response. An error document the process posts
// comes back as the messages.InvokeResponse_Error it holds; a process that
// exits before answering, as a Runtime.ExitError (the next Invoke starts a
// new one). When ctx has a deadline, it is the runtime's deadline;
// without one, Config.Timeout is. When ctx ends, the process is killed (an
// environment is not reused after a timeout) and Invoke returns a
// Sandbox.Timedout error at the deadline, ctx's cause otherwise.
//
// The request id and invoked function ARN are those of ctx's
// lambdacontext.LambdaContext when it has one (lambdarun sets it).
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	h.serial.Lock()
	defer h.serial.Unlock()
	ev := Event{RequestID: lambdarun.NewRequestID(), InvokedFunctionARN: h.f.cfg.ARN, TraceID: newTraceHeader(), Payload: payload}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		if lc.AwsRequestID != "" {
			ev.RequestID = lc.AwsRequestID
		}
		if lc.InvokedFunctionArn != "" {
			ev.InvokedFunctionARN = lc.InvokedFunctionArn
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		var cancel context.CancelFunc
		deadline = time.Now().Add(h.f.cfg.Timeout)
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	ev.Deadline = deadline

	for retried := false; ; retried = true {
		p, err := h.start(ctx)
		if err != nil {
			return nil, err
		}
		ans, err := h.run(ctx, p, ev)
		if err == nil {
			p.answered++
			h.f.invocations.Add(1)
			if p.answered == 1 {
				h.f.ready.Add(1)
				h.f.initNanos.Add(int64(ans.HandedAt.Sub(p.started)))
			}
			if ans.Failed {
				h.f.errors.Add(1)
				return nil, errorDocument(ans.Payload, ans.ErrorType)
			}
			return ans.Payload, nil
		}
		var exit *exitCause
		if errors.As(err, &exit) && errors.Is(err, ErrNotDelivered) && p.answered > 0 && !retried {
			// It answered its last invocation, then exited before taking
			// this one (an aws-lambda-go runtime exits after reporting a
			// panic): Lambda starts a new one for it.
			continue
		}
		return nil, h.failure(ctx, p, ev, err)
	}
}

// run hands ev to p through the environment's Runtime API, until p
// answers, exits, reports an init error or ctx ends.
func (h *Handler) run(ctx context.Context, p *process, ev Event) (Answer, error) {
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-p.exited:
			cancel(&exitCause{err: p.err})
		case ie := <-h.api.InitErrors():
			// A runtime that reported an init error is not used.
			p.kill()
			cancel(&initCause{ie: ie})
		case <-ictx.Done():
		}
	}()
	return h.api.Invoke(ictx, ev)
}

// failure is the error of an invocation that got no answer.
func (h *Handler) failure(ctx context.Context, p *process, ev Event, err error) error {
	var exit *exitCause
	var ie *initCause
	switch {
	case errors.As(err, &ie):
		return errorDocument(ie.ie.Payload, ie.ie.ErrorType)
	case errors.As(err, &exit):
		reason := "Runtime exited without providing a reason"
		if exit.err != nil {
			reason = "Runtime exited with error: " + exit.err.Error()
		}
		return messages.InvokeResponse_Error{Type: ErrorTypeExit, Message: "RequestId: " + ev.RequestID + " Error: " + reason}
	}
	// ctx ended: Lambda does not reuse an environment after a timeout,
	// and a runtime whose answer is refused exits anyway.
	p.stopping.Store(true)
	p.kill()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		fe := lambdarun.TimeoutError(h.f.cfg.Timeout)
		return messages.InvokeResponse_Error{Type: fe.Type, Message: fe.Message}
	}
	return fmt.Errorf("lambdaproc: invoke %s (request %s): %w", h.f.cfg.Name, ev.RequestID, err)
}

// exitCause cancels an invocation whose process exited.
type exitCause struct{ err error }

func (e *exitCause) Error() string {
	if e.err == nil {
		return "the runtime exited"
	}
	return "the runtime exited: " + e.err.Error()
}

// initCause cancels an invocation whose process reported an init error.
type initCause struct{ ie InitError }

func (e *initCause) Error() string {
	return "the runtime reported an init error: " + string(e.ie.Payload)
}

// errorDocument is the function error of an error document.
func errorDocument(doc []byte, errorType string) messages.InvokeResponse_Error {
	var e messages.InvokeResponse_Error
	if err := json.Unmarshal(doc, &e); err != nil || (e.Type == "" && e.Message == "") {
		e = messages.InvokeResponse_Error{Message: string(doc)}
	}
	if e.Type == "" {
		e.Type = errorType
	}
	if e.Type == "" {
		e.Type = ErrorTypeUnhandled
	}
	return e
}

// start returns the environment's running process, starting one when it
// has none.
func (h *Handler) start(ctx context.Context) (*process, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("%w: %s", ErrClosed, h.f.cfg.Name)
	}
	if h.proc != nil {
		select {
		case <-h.proc.exited:
			h.proc = nil
		default:
			return h.proc, nil
		}
	}
	if h.api == nil {
		api, err := NewServer("")
		if err != nil {
			return nil, messages.InvokeResponse_Error{Type: ErrorTypeUnknown, Message: err.Error()}
		}
		h.api = api
	}
	select {
	case <-h.api.InitErrors(): // a previous process's
	default:
	}
	env, err := h.f.environ(ctx, h.api.Addr())
	if err != nil {
		return nil, messages.InvokeResponse_Error{Type: ErrorTypeUnknown, Message: err.Error()}
	}
	argv := h.f.argv
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, h.f.dir()
	p := &process{cmd: cmd, out: NewTail(outputTailBytes), exited: make(chan struct{})}
	var stdout, stderr *lineLogger
	if h.f.out != nil {
		w := io.MultiWriter(h.f.out, p.out)
		cmd.Stdout, cmd.Stderr = w, w
	} else {
		log := h.f.log.With("env", h.env)
		stdout, stderr = &lineLogger{log: log, stream: "stdout"}, &lineLogger{log: log, stream: "stderr"}
		cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, p.out), io.MultiWriter(stderr, p.out)
	}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, messages.InvokeResponse_Error{Type: ErrorTypeInvalidEntrypoint, Message: fmt.Sprintf("start %s: %v", h.f.cfg.Bootstrap, err)}
	}
	h.f.starts.Add(1)
	pid := cmd.Process.Pid
	h.f.log.Debug("process started", "env", h.env, "pid", pid, "argv", argv, "runtimeAPI", h.api.Addr())
	go func() {
		err := cmd.Wait()
		if stdout != nil {
			stdout.flush()
			stderr.flush()
		}
		p.err = err
		// Counted and logged before the invocation waiting on it learns
		// of the exit.
		if !p.stopping.Load() {
			h.f.exits.Add(1)
			h.f.log.Warn("process exited", "env", h.env, "pid", pid, "error", err, "after", time.Since(p.started), "output", p.out.String())
		}
		close(p.exited)
	}()
	h.proc = p
	return p, nil
}

// kill ends the process at once.
func (p *process) kill() { _ = p.cmd.Process.Kill() }

// stop ends the process: SIGTERM, then SIGKILL after grace or when ctx
// ends; it returns once the process is reaped.
func (p *process) stop(ctx context.Context, grace time.Duration) {
	p.stopping.Store(true)
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return
	case <-timer.C:
	case <-ctx.Done():
	}
	p.kill()
	<-p.exited
}

// close stops the environment's process and its Runtime API.
func (h *Handler) close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	p, api := h.proc, h.api
	h.mu.Unlock()
	if p != nil {
		p.stop(ctx, h.f.cfg.StopGrace)
	}
	if api != nil {
		return api.Close()
	}
	return nil
}

// newTraceHeader is an unsampled X-Ray trace header, as Lambda hands one to
// a function whose request was not sampled.
func newTraceHeader() string {
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), randomHex(12), randomHex(8))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
