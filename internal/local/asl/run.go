package asl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Step Functions quotas the runtime enforces.
const (
	maxPayloadBytes  = 256 * 1024 // state input/output
	maxHistoryEvents = 25000      // events in one execution's history
)

// errMachineTimeout is the cancellation cause of a run whose machine-level
// TimeoutSeconds elapsed; errTaskTimeout that of a task attempt whose
// TimeoutSeconds elapsed; errHeartbeatTimeout that of a task attempt that
// ran longer than its HeartbeatSeconds.
var (
	errMachineTimeout   = errors.New("state machine TimeoutSeconds elapsed")
	errTaskTimeout      = errors.New("task TimeoutSeconds elapsed")
	errHeartbeatTimeout = errors.New("task HeartbeatSeconds elapsed without a heartbeat")
)

// errInterrupted stands for a state that stopped because the run was
// aborted or timed out; the run reports that outcome instead.
var errInterrupted = &Error{Name: ErrRuntime, Cause: "the execution was interrupted"}

// runner is the state of one execution.
type runner struct {
	m     *Machine
	def   *definition
	ro    RunOptions
	exec  Execution
	start time.Time
	input any // the execution input, for $$.Execution.Input

	mu     sync.Mutex // guards events and serializes OnEvent (branches run concurrently)
	events int
}

func (m *Machine) run(parent context.Context, exec Execution, rawInput json.RawMessage, ro RunOptions) Result {
	r := &runner{m: m, def: m.def, ro: ro, exec: exec, start: exec.StartTime}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if m.def.timeoutSeconds > 0 {
		ctx, cancel = context.WithTimeoutCause(parent, r.scale(float64(m.def.timeoutSeconds)), errMachineTimeout)
	} else {
		ctx, cancel = context.WithCancel(parent)
	}
	defer cancel()

	if len(bytes.TrimSpace(rawInput)) == 0 {
		rawInput = json.RawMessage("{}")
	}
	input, err := decodeValue(rawInput)
	if err != nil {
		// The event must stay valid JSON: the input is left out.
		r.emit(HistoryEvent{Type: "ExecutionStarted"})
		return r.failed(newError(ErrRuntime, "the execution input is not valid JSON: %v", err))
	}
	r.emit(HistoryEvent{Type: "ExecutionStarted", Input: rawInput})
	if len(rawInput) > maxPayloadBytes {
		return r.failed(newError(ErrDataLimitExceeded, "the execution input has %d bytes, more than the limit of %d", len(rawInput), maxPayloadBytes))
	}
	r.input = input

	_, raw, serr := r.runStates(ctx, m.def, input, newVarScope(nil))
	if serr != nil {
		if res, done := r.interrupted(ctx); done {
			return res
		}
		return r.failed(serr)
	}
	r.emit(HistoryEvent{Type: "ExecutionSucceeded", Output: raw})
	return Result{Status: StatusSucceeded, Output: raw}
}

// runStates runs the states of def (the machine, a Parallel branch or a
// Map iteration) from its StartAt until one ends it, and returns the final
// output. An interrupted run gives errInterrupted.
func (r *runner) runStates(ctx context.Context, def *definition, input any, vars *varScope) (any, json.RawMessage, *Error) {
	name := def.startAt
	var rawInput json.RawMessage // the encoded input, once known
	for {
		if ctx.Err() != nil {
			return nil, nil, errInterrupted
		}
		if r.eventCount() >= maxHistoryEvents {
			return nil, nil, newError(ErrRuntime, "the execution history reached the limit of %d events", maxHistoryEvents)
		}
		st := def.states[name]
		out, raw, next, serr := r.runState(ctx, st, input, rawInput, vars)
		if serr != nil {
			return nil, nil, serr
		}
		if next == "" {
			return out, raw, nil
		}
		// A state's encoded output is the next state's encoded input.
		input, rawInput, name = out, raw, next
	}
}

// interrupted reports the outcome of a run whose context ended: TIMED_OUT
// for the machine's TimeoutSeconds, ABORTED for the caller's cancellation.
func (r *runner) interrupted(ctx context.Context) (Result, bool) {
	if ctx.Err() == nil {
		return Result{}, false
	}
	if errors.Is(context.Cause(ctx), errMachineTimeout) {
		cause := fmt.Sprintf("The execution exceeded the state machine's TimeoutSeconds (%d).", r.def.timeoutSeconds)
		r.emit(HistoryEvent{Type: "ExecutionTimedOut", Error: ErrTimeout, Cause: cause})
		return Result{Status: StatusTimedOut, Error: ErrTimeout, Cause: cause}, true
	}
	r.emit(HistoryEvent{Type: "ExecutionAborted"})
	return Result{Status: StatusAborted}, true
}

func (r *runner) failed(e *Error) Result {
	r.emit(HistoryEvent{Type: "ExecutionFailed", Error: e.Name, Cause: e.Cause})
	return Result{Status: StatusFailed, Error: e.Name, Cause: e.Cause}
}

func (r *runner) emit(ev HistoryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events++
	if r.ro.OnEvent != nil {
		r.ro.OnEvent(ev)
	}
}

func (r *runner) eventCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events
}

// scale converts seconds named by the definition to a duration, applying
// Options.TimeScale.
func (r *runner) scale(seconds float64) time.Duration {
	s := r.m.opts.TimeScale
	if s == 0 {
		s = 1
	}
	ns := seconds * s * float64(time.Second)
	if ns > float64(1<<62) {
		return time.Duration(1 << 62)
	}
	return time.Duration(math.Round(ns))
}

// noRetryCount is the retryCount of the states whose $$.State has no
// RetryCount: on AWS a Pass state's $$.State is only {Name, EnteredTime}.
const noRetryCount = -1

// contextObject builds $$ for a state. retryCount noRetryCount leaves
// RetryCount out of $$.State.
func (r *runner) contextObject(st *state, entered time.Time, retryCount int, vars *varScope) *evalEnv {
	stateObj := map[string]any{
		"Name":        st.name,
		"EnteredTime": formatTime(entered),
	}
	if retryCount != noRetryCount {
		stateObj["RetryCount"] = intNumber(int64(retryCount))
	}
	return &evalEnv{vars: vars, m: r.m, ctx: map[string]any{
		"Execution": map[string]any{
			"Id":        r.exec.ID,
			"Name":      r.exec.Name,
			"StartTime": formatTime(r.start),
			"Input":     r.input,
			"RoleArn":   r.exec.RoleArn,
			// 0 on a first run, as Step Functions records it; the local
			// runtime does not redrive, so it stays 0.
			"RedriveCount": intNumber(0),
		},
		"State": stateObj,
		"StateMachine": map[string]any{
			"Id":   r.exec.StateMachineID,
			"Name": r.exec.StateMachineName,
		},
	}}
}

// formatTime renders a time as Step Functions does in the context object:
// ISO 8601 in UTC with milliseconds.
func formatTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// runState executes one state on its raw input and returns its output
// (decoded and encoded) and the next state ("" when the execution ends
// successfully). rawIn is the input encoded, nil when not encoded yet.
func (r *runner) runState(ctx context.Context, st *state, input any, rawIn json.RawMessage, vars *varScope) (any, json.RawMessage, string, *Error) {
	entered := time.Now()
	if rawIn == nil {
		rawIn, _ = encodeValue(input)
	}
	r.emit(HistoryEvent{Type: st.typ + "StateEntered", StateName: st.name, Input: rawIn})

	var out any
	var rawOut json.RawMessage
	var next string
	var assigned map[string]any
	var err *Error
	switch st.typ {
	case typeTask, typeParallel, typeMap:
		// These check their output size themselves: the error is catchable.
		out, rawOut, next, assigned, err = r.runRetrying(ctx, st, input, entered, vars)
		if err != nil {
			return nil, nil, "", err
		}
	case typePass:
		out, assigned, err = r.runPass(st, input, entered, vars)
		next = st.next
	case typeChoice:
		out, next, assigned, err = r.runChoice(st, input, entered, vars)
	case typeSucceed:
		ctxObj := r.contextObject(st, entered, 0, vars)
		if out, err = applyPath(st.inputPath, input, ctxObj, "InputPath"); err == nil {
			out, err = applyPath(st.outputPath, out, ctxObj, "OutputPath")
		}
	case typeFail:
		return nil, nil, "", r.runFail(st, input, entered, vars)
	case typeWait:
		out, assigned, err = r.runWait(ctx, st, input, entered, vars)
		next = st.next
	}
	if err == nil && rawOut == nil {
		rawOut, err = encodeOutput(out)
	}
	if err == nil {
		// The state's assignments take effect once it has completed.
		err = vars.assign(assigned)
	}
	if err != nil {
		return nil, nil, "", inState(st, err)
	}
	r.emit(HistoryEvent{Type: st.typ + "StateExited", StateName: st.name, Output: rawOut})
	return out, rawOut, next, nil
}

// encodeOutput renders a state output, enforcing the payload size limit.
func encodeOutput(out any) (json.RawMessage, *Error) {
	raw, err := encodeValue(out)
	if err != nil {
		return nil, newError(ErrRuntime, "the state output cannot be encoded as JSON: %v", err)
	}
	if len(raw) > maxPayloadBytes {
		return nil, newError(ErrDataLimitExceeded, "the state output has %d bytes, more than the limit of %d", len(raw), maxPayloadBytes)
	}
	return raw, nil
}

// inState names the state in the cause of an error the runtime raised
// while executing it.
func inState(st *state, e *Error) *Error {
	return &Error{Name: e.Name, Cause: fmt.Sprintf("An error occurred while executing the state '%s'. %s", st.name, e.Cause)}
}

func (r *runner) runPass(st *state, input any, entered time.Time, vars *varScope) (any, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, noRetryCount, vars)
	result := st.result
	if !st.hasResult {
		eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
		if err != nil {
			return nil, nil, err
		}
		if eff, err = applyTemplate(st.parameters, eff, ctxObj); err != nil {
			return nil, nil, err
		}
		result = eff
	}
	assigned, err := evalAssign(st.assign, result, ctxObj)
	if err != nil {
		return nil, nil, err
	}
	out, err := applyResultPath(st.resultPath, input, result)
	if err != nil {
		return nil, nil, err
	}
	out, err = applyPath(st.outputPath, out, ctxObj, "OutputPath")
	return out, assigned, err
}

func (r *runner) runChoice(st *state, input any, entered time.Time, vars *varScope) (any, string, map[string]any, *Error) {
	ctxObj := r.contextObject(st, entered, 0, vars)
	eff, err := applyPath(st.inputPath, input, ctxObj, "InputPath")
	if err != nil {
		return nil, "", nil, err
	}
	// The Default takes the state's own Assign; a matching rule its own.
	next, assign := st.defaultNext, st.assign
	for _, rule := range st.choices {
		ok, rerr := rule.eval(eff, ctxObj)
		if rerr != nil {
			return nil, "", nil, asError(rerr)
		}
		if ok {
			next, assign = rule.next, rule.assign
			break
		}
	}
	if next == "" {
		return nil, "", nil, newError(ErrNoChoiceMatched, "No Choice rule matched the input and the state has no Default.")
	}
	assigned, err := evalAssign(assign, eff, ctxObj)
	if err != nil {
		return nil, "", nil, err
	}
	out, err := applyPath(st.outputPath, eff, ctxObj, "OutputPath")
	return out, next, assigned, err
}

func (r *runner) runFail(st *state, input any, entered time.Time, vars *varScope) *Error {
	e := &Error{Name: st.errorName, Cause: st.cause}
	ctxObj := r.contextObject(st, entered, 0, vars)
	for _, f := range []struct {
		t    template
		dst  *string
		name string
	}{{st.errorPath, &e.Name, "ErrorPath"}, {st.causePath, &e.Cause, "CausePath"}} {
		if f.t == nil {
			continue
		}
		v, err := f.t.eval(input, ctxObj)
		if err != nil {
			return inState(st, asError(err))
		}
		s, ok := v.(string)
		if !ok {
			return inState(st, newError(ErrRuntime, "%s must give a string, got %s", f.name, typeName(v)))
		}
		*f.dst = s
	}
	return e
}

// applyPath applies an InputPath or OutputPath: null gives {}, a path
// that matches nothing is a States.Runtime error.
func applyPath(p *refPath, v any, env *evalEnv, field string) (any, *Error) {
	if p == nil {
		return map[string]any{}, nil
	}
	out, ok := p.eval(v, env)
	if !ok {
		return nil, newError(ErrRuntime, "Invalid path '%s' for %s: No results for path: %s", p, field, p.canonical())
	}
	return out, nil
}

// applyTemplate evaluates Parameters or ResultSelector when present.
func applyTemplate(t template, v any, env *evalEnv) (any, *Error) {
	if t == nil {
		return v, nil
	}
	out, err := t.eval(v, env)
	if err != nil {
		return nil, asError(err)
	}
	return out, nil
}

// applyResultPath places result into the raw state input: null discards
// the result, "$" replaces the input.
func applyResultPath(p *refPath, input, result any) (any, *Error) {
	if p == nil {
		return input, nil
	}
	out, err := p.set(input, result)
	if err != nil {
		return nil, newError(ErrResultPathMatchFailure, "Unable to apply ResultPath '%s' to the input '%s': %v", p, mustEncode(input), err)
	}
	return out, nil
}

// asError converts an evaluation error to a named error.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(ErrRuntime, "%v", err)
}
