package asl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// runRetrying executes a Task, Parallel or Map state with its Retry and
// Catch policy and returns its output and next state.
func (r *runner) runRetrying(ctx context.Context, st *state, input any, entered time.Time, vars *varScope) (any, json.RawMessage, string, map[string]any, *Error) {
	attempts := make([]int64, len(st.retry)) // retries used, per retrier
	retryCount := 0
	for {
		var out any
		var raw json.RawMessage
		var assigned map[string]any
		var err *Error
		switch st.typ {
		case typeParallel:
			out, raw, assigned, err = r.parallelAttempt(ctx, st, input, entered, retryCount, vars)
		case typeMap:
			out, raw, assigned, err = r.mapAttempt(ctx, st, input, entered, retryCount, vars)
		default:
			out, raw, assigned, err = r.taskAttempt(ctx, st, input, entered, retryCount, vars)
		}
		if err == nil {
			return out, raw, st.next, assigned, nil
		}
		if ctx.Err() != nil || err.Name == ErrRuntime {
			return nil, nil, "", nil, err
		}
		if i := matchRetrier(st.retry, err.Name); i >= 0 && attempts[i] < st.retry[i].maxAttempts {
			d := r.scale(st.retry[i].delaySeconds(attempts[i]))
			if st.retry[i].fullJitter {
				d = r.m.jitter(d)
			}
			attempts[i]++
			retryCount++
			if r.sleep(ctx, d) != nil {
				return nil, nil, "", nil, errInterrupted
			}
			continue
		}
		for _, c := range st.catch {
			if !errorMatches(c.errorEquals, err.Name) {
				continue
			}
			// The catcher's Assign reads the error output; the state's own
			// Assign does not apply.
			errorOutput := map[string]any{"Error": err.Name, "Cause": err.Cause}
			assigned, perr := evalAssign(c.assign, errorOutput, r.contextObject(st, entered, retryCount, vars))
			if perr != nil {
				return nil, nil, "", nil, inState(st, perr)
			}
			out, perr := applyResultPath(c.resultPath, input, errorOutput)
			if perr != nil {
				return nil, nil, "", nil, inState(st, perr)
			}
			raw, perr := encodeOutput(out)
			if perr != nil {
				return nil, nil, "", nil, inState(st, perr)
			}
			return out, raw, c.next, assigned, nil
		}
		return nil, nil, "", nil, err
	}
}

// matchRetrier returns the index of the first retrier whose ErrorEquals
// matches name, or -1.
func matchRetrier(retry []retrier, name string) int {
	for i, rt := range retry {
		if errorMatches(rt.errorEquals, name) {
			return i
		}
	}
	return -1
}

// delaySeconds is the wait before retry number attempt+1:
// IntervalSeconds * BackoffRate^attempt, capped by MaxDelaySeconds.
func (rt retrier) delaySeconds(attempt int64) float64 {
	d := float64(rt.intervalSeconds) * math.Pow(rt.backoffRate, float64(attempt))
	if rt.maxDelaySeconds > 0 && d > float64(rt.maxDelaySeconds) {
		d = float64(rt.maxDelaySeconds)
	}
	return d
}

// sleep waits between retries; it returns early with an error when ctx ends.
func (r *runner) sleep(ctx context.Context, d time.Duration) error {
	if r.def.sleep != nil {
		return r.def.sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// taskAttempt runs one attempt of a Task state: InputPath, Parameters, the
// invocation, ResultSelector, ResultPath and OutputPath.
func (r *runner) taskAttempt(ctx context.Context, st *state, input any, entered time.Time, retryCount int, vars *varScope) (any, json.RawMessage, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, retryCount, vars)
	params, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err == nil {
		params, err = applyTemplate(st.parameters, params, ctxObj)
	}
	var timeout, heartbeat int64
	if err == nil {
		timeout, heartbeat, err = r.taskTimeouts(st, input, ctxObj)
	}
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	rawParams, err := encodeOutput(params)
	if err != nil {
		return nil, nil, nil, inState(st, err)
	}
	r.emit(HistoryEvent{Type: "TaskScheduled", StateName: st.name, Resource: st.resource, Input: rawParams})
	r.emit(HistoryEvent{Type: "TaskStarted", StateName: st.name, Resource: st.resource})

	rawResult, err := r.invoke(ctx, st, rawParams, timeout, heartbeat)
	if err == errInterrupted {
		return nil, nil, nil, err
	}
	if err == nil && len(rawResult) > maxPayloadBytes {
		err = newError(ErrDataLimitExceeded, "the task result has %d bytes, more than the limit of %d", len(rawResult), maxPayloadBytes)
	}
	var result any
	if err == nil && len(bytes.TrimSpace(rawResult)) > 0 {
		var derr error
		if result, derr = decodeValue(rawResult); derr != nil {
			err = newError(ErrRuntime, "the task result is not valid JSON: %v", derr)
		}
	}
	if err != nil {
		typ := "TaskFailed"
		if err.Name == ErrTimeout || err.Name == ErrHeartbeatTimeout {
			typ = "TaskTimedOut"
		}
		r.emit(HistoryEvent{Type: typ, StateName: st.name, Resource: st.resource, Error: err.Name, Cause: err.Cause})
		return nil, nil, nil, err
	}
	rawResult, _ = encodeValue(result) // normalized: compact, null for an empty result
	r.emit(HistoryEvent{Type: "TaskSucceeded", StateName: st.name, Resource: st.resource, Output: rawResult})

	return r.finishResult(st, input, result, ctxObj)
}

// taskTimeouts resolves a task's TimeoutSeconds(Path) and
// HeartbeatSeconds(Path) against the state input after InputPath; 0 means
// none.
func (r *runner) taskTimeouts(st *state, input any, ctxObj *evalEnv) (timeout, heartbeat int64, err *Error) {
	timeout, heartbeat = st.timeoutSeconds, st.heartbeatSeconds
	if st.timeoutSecondsPath == nil && st.heartbeatSecondsPath == nil {
		return timeout, heartbeat, nil
	}
	eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err != nil {
		return 0, 0, err
	}
	if st.timeoutSecondsPath != nil {
		if timeout, err = positiveAt(st.timeoutSecondsPath, "TimeoutSecondsPath", eff, ctxObj); err != nil {
			return 0, 0, err
		}
	}
	if st.heartbeatSecondsPath != nil {
		if heartbeat, err = positiveAt(st.heartbeatSecondsPath, "HeartbeatSecondsPath", eff, ctxObj); err != nil {
			return 0, 0, err
		}
	}
	return timeout, heartbeat, nil
}

// positiveAt resolves a path that must give an integer from 1 to 99999999.
func positiveAt(p *refPath, field string, eff any, ctxObj *evalEnv) (int64, *Error) {
	v, ok := resolve(p, eff, ctxObj)
	n, isInt := asInteger(v)
	if !ok || !isInt || n < 1 || n > maxSeconds {
		return 0, newError(ErrRuntime, "%s '%s' must reference an integer from 1 to %d, got %s", field, p, maxSeconds, mustEncode(v))
	}
	return n, nil
}

type invokeResult struct {
	out json.RawMessage
	err error
}

// invoke runs the task invoker under the task's timeout and heartbeat
// timeout (seconds, 0 for none). It returns promptly when the run is
// cancelled or a timeout elapses, even if the invoker ignores its context.
//
// No task the local runtime runs can send a heartbeat: Lambda invocations
// (arn:aws:states:::lambda:invoke and bare function ARNs) and DynamoDB
// requests have no task token. So, as on AWS, an attempt that runs longer
// than HeartbeatSeconds fails with States.HeartbeatTimeout.
func (r *runner) invoke(ctx context.Context, st *state, params json.RawMessage, timeout, heartbeat int64) (json.RawMessage, *Error) {
	var actx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		actx, cancel = context.WithTimeoutCause(ctx, r.scale(float64(timeout)), errTaskTimeout)
	} else {
		actx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	if heartbeat > 0 {
		var hcancel context.CancelFunc
		actx, hcancel = context.WithTimeoutCause(actx, r.scale(float64(heartbeat)), errHeartbeatTimeout)
		defer hcancel()
	}

	done := make(chan invokeResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- invokeResult{err: fmt.Errorf("the task invoker panicked: %v", p)}
			}
		}()
		out, err := r.m.opts.Tasks.Invoke(actx, st.resource, params)
		done <- invokeResult{out: out, err: err}
	}()

	timedOut := func() *Error {
		if errors.Is(context.Cause(actx), errHeartbeatTimeout) {
			return newError(ErrHeartbeatTimeout, "The task sent no heartbeat within its HeartbeatSeconds (%d); %s cannot send heartbeats.", heartbeat, st.resource)
		}
		return newError(ErrTimeout, "The task did not complete within its TimeoutSeconds (%d).", timeout)
	}
	select {
	case res := <-done:
		switch {
		case res.err == nil:
			return res.out, nil
		case ctx.Err() != nil:
			return nil, errInterrupted
		case errors.Is(context.Cause(actx), errTaskTimeout), errors.Is(context.Cause(actx), errHeartbeatTimeout):
			return nil, timedOut()
		}
		var e *Error
		if errors.As(res.err, &e) && e.Name != "" {
			return nil, &Error{Name: e.Name, Cause: e.Cause}
		}
		return nil, &Error{Name: ErrTaskFailed, Cause: res.err.Error()}
	case <-actx.Done():
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, timedOut()
	}
}
