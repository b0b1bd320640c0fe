package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// testFile is the name tests load definitions under.
const testFile = "test.asl.json"

// testExecution identifies the runs of the tests.
var testExecution = Execution{
	ID:               "arn:aws:states:us-east-1:123456789012:execution:transfer:exec-1",
	Name:             "exec-1",
	StartTime:        time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC),
	RoleArn:          "arn:aws:iam::123456789012:role/transfer",
	StateMachineID:   "arn:aws:states:us-east-1:123456789012:stateMachine:transfer",
	StateMachineName: "transfer",
}

// invokeFunc answers one invocation; call counts from 1 per resource.
type invokeFunc func(ctx context.Context, call int, params json.RawMessage) (json.RawMessage, error)

// invocation records one call of the fake invoker.
type invocation struct {
	resource string
	params   string
	at       time.Time
	deadline time.Time // zero when ctx had none
}

// fakeInvoker is a TaskInvoker serving resources from functions.
type fakeInvoker struct {
	fns map[string]invokeFunc

	mu    sync.Mutex
	calls []invocation
	count map[string]int
}

var errUnknownResource = errors.New("unknown resource")

func newInvoker(fns map[string]invokeFunc) *fakeInvoker {
	return &fakeInvoker{fns: fns, count: map[string]int{}}
}

func (f *fakeInvoker) CheckResource(resource string) error {
	if _, ok := f.fns[resource]; !ok {
		return fmt.Errorf("%w %q", errUnknownResource, resource)
	}
	return nil
}

func (f *fakeInvoker) Invoke(ctx context.Context, resource string, params json.RawMessage) (json.RawMessage, error) {
	inv := invocation{resource: resource, params: string(params), at: time.Now()}
	inv.deadline, _ = ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, inv)
	f.count[resource]++
	n := f.count[resource]
	f.mu.Unlock()
	return f.fns[resource](ctx, n, params)
}

func (f *fakeInvoker) invocations() []invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]invocation(nil), f.calls...)
}

// echo returns its parameters as the result.
func echo(_ context.Context, _ int, params json.RawMessage) (json.RawMessage, error) {
	return params, nil
}

// returns answers every call with the same JSON.
func returns(result string) invokeFunc {
	return func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(result), nil
	}
}

// fails answers every call with the same error.
func fails(err error) invokeFunc {
	return func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
		return nil, err
	}
}

// failsThen fails with errs in order, then succeeds with result.
func failsThen(result string, errs ...error) invokeFunc {
	return func(_ context.Context, call int, _ json.RawMessage) (json.RawMessage, error) {
		if call <= len(errs) {
			return nil, errs[call-1]
		}
		return json.RawMessage(result), nil
	}
}

// waitsForCtx blocks until the invocation's context ends.
func waitsForCtx(ctx context.Context, _ int, _ json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// mustLoad loads a definition that must be valid.
func mustLoad(t *testing.T, def string, inv TaskInvoker, scale float64) *Machine {
	t.Helper()
	m, err := Load(testFile, []byte(def), Options{Tasks: inv, TimeScale: scale})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m
}

// runResult is a run's outcome and history.
type runResult struct {
	Result
	events []HistoryEvent
}

// types lists the event types in order.
func (r runResult) types() []string {
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Type
	}
	return out
}

// execute runs m on input with the test execution and records events.
func execute(t *testing.T, ctx context.Context, m *Machine, input string) runResult {
	t.Helper()
	var rr runResult
	var mu sync.Mutex
	rr.Result = m.Run(ctx, testExecution, json.RawMessage(input), RunOptions{OnEvent: func(e HistoryEvent) {
		mu.Lock()
		rr.events = append(rr.events, e)
		mu.Unlock()
	}})
	// Every event must be encodable, as the history API serves them.
	for _, e := range rr.events {
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("event %s cannot be encoded: %v", e.Type, err)
		}
	}
	return rr
}

// runDef loads def (with a time scale that never sleeps for real intervals)
// and runs it on input.
func runDef(t *testing.T, def string, inv TaskInvoker, input string) runResult {
	t.Helper()
	return execute(t, context.Background(), mustLoad(t, def, inv, 0.0001), input)
}

// wantSucceeded checks a successful run and its output.
func wantSucceeded(t *testing.T, r runResult, wantOutput string) {
	t.Helper()
	if r.Status != StatusSucceeded {
		t.Fatalf("status = %s (%s: %s), want SUCCEEDED", r.Status, r.Error, r.Cause)
	}
	assertJSON(t, r.Output, wantOutput)
}

// wantFailed checks a failed run's error name and that its cause contains
// causePart.
func wantFailed(t *testing.T, r runResult, wantError, causePart string) {
	t.Helper()
	if r.Status != StatusFailed {
		t.Fatalf("status = %s (output %s), want FAILED", r.Status, r.Output)
	}
	if r.Error != wantError {
		t.Fatalf("error = %q (cause %q), want %q", r.Error, r.Cause, wantError)
	}
	if !strings.Contains(r.Cause, causePart) {
		t.Fatalf("cause = %q, want it to contain %q", r.Cause, causePart)
	}
}

// assertJSON compares JSON documents semantically.
func assertJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad expected JSON %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("output = %s\nwant     %s", got, want)
	}
}

// passDef builds a one-state machine: a Pass state with the given fields.
func passDef(fields string) string {
	return `{"StartAt":"P","States":{"P":{"Type":"Pass",` + fields + `,"End":true}}}`
}

// taskDef builds a one-state machine: a Task on resource "r" with the given
// extra fields (may be empty).
func taskDef(fields string) string {
	if fields != "" {
		fields = "," + fields
	}
	return `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","End":true` + fields + `}}}`
}
