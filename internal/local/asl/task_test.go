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

// named builds a named task error.
func named(name string) error { return &Error{Name: name, Cause: name + " happened"} }

// sleepRecorder replaces the retry wait of a machine: it records the
// requested (scaled) durations and returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func TestRetry(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		retry     string
		invoke    invokeFunc
		wantCalls int
		wantWaits []time.Duration // at TimeScale 0.001: 1 s -> 1 ms
		wantError string          // "" for success
	}{
		{"defaults: 3 retries, interval 1, backoff 2", `[{"ErrorEquals":["States.ALL"]}]`,
			fails(named("Boom")), 4, []time.Duration{1 * ms, 2 * ms, 4 * ms}, "Boom"},
		{"succeeds after two failures", `[{"ErrorEquals":["Boom"],"IntervalSeconds":3}]`,
			failsThen(`{"ok":true}`, named("Boom"), named("Boom")), 3, []time.Duration{3 * ms, 6 * ms}, ""},
		{"max attempts zero never retries", `[{"ErrorEquals":["Boom"],"MaxAttempts":0}]`,
			fails(named("Boom")), 1, nil, "Boom"},
		{"backoff and max delay", `[{"ErrorEquals":["Boom"],"IntervalSeconds":2,"BackoffRate":3,"MaxAttempts":4,"MaxDelaySeconds":20}]`,
			fails(named("Boom")), 5, []time.Duration{2 * ms, 6 * ms, 18 * ms, 20 * ms}, "Boom"},
		{"fractional backoff", `[{"ErrorEquals":["Boom"],"IntervalSeconds":4,"BackoffRate":1.5,"MaxAttempts":3}]`,
			fails(named("Boom")), 4, []time.Duration{4 * ms, 6 * ms, 9 * ms}, "Boom"},
		{"non-matching error is not retried", `[{"ErrorEquals":["Other"]}]`,
			fails(named("Boom")), 1, nil, "Boom"},
		{"counters are per retrier", `[{"ErrorEquals":["A"],"MaxAttempts":1},{"ErrorEquals":["B"],"MaxAttempts":2,"IntervalSeconds":5}]`,
			failsThen(`{}`, named("A"), named("B"), named("B"), named("A")), 4, []time.Duration{1 * ms, 5 * ms, 10 * ms}, "A"},
		{"first matching retrier is used even when exhausted", `[{"ErrorEquals":["A"],"MaxAttempts":1},{"ErrorEquals":["States.ALL"],"MaxAttempts":5}]`,
			fails(named("A")), 2, []time.Duration{1 * ms}, "A"},
		{"task failed matches custom errors", `[{"ErrorEquals":["States.TaskFailed"],"MaxAttempts":1}]`,
			fails(named("Lambda.ServiceException")), 2, []time.Duration{1 * ms}, "Lambda.ServiceException"},
		{"plain errors are States.TaskFailed", `[{"ErrorEquals":["States.TaskFailed"],"MaxAttempts":2}]`,
			fails(errors.New("connection reset")), 3, []time.Duration{1 * ms, 2 * ms}, ErrTaskFailed},
		{"runtime errors are never retried", `[{"ErrorEquals":["States.ALL"]}]`,
			returns(`{not json`), 1, nil, ErrRuntime},
		{"runtime errors are not retried by name either", `[{"ErrorEquals":["States.Runtime"]}]`,
			returns(`{not json`), 1, nil, ErrRuntime},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := newInvoker(map[string]invokeFunc{"r": tc.invoke})
			m := mustLoad(t, taskDef(`"Retry":`+tc.retry), inv, 0.001)
			rec := &sleepRecorder{}
			m.def.sleep = rec.sleep
			r := execute(t, context.Background(), m, `{}`)
			if got := len(inv.invocations()); got != tc.wantCalls {
				t.Errorf("calls = %d, want %d", got, tc.wantCalls)
			}
			if got := rec.recorded(); !reflect.DeepEqual(got, tc.wantWaits) {
				t.Errorf("waits = %v, want %v", got, tc.wantWaits)
			}
			if tc.wantError == "" {
				wantSucceeded(t, r, `{"ok":true}`)
			} else {
				wantFailed(t, r, tc.wantError, "")
			}
		})
	}
}

func TestRetryWaitsForReal(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": failsThen(`{}`, named("Boom"), named("Boom"))})
	// TimeScale 0.01: intervals of 1 s and 2 s become 10 ms and 20 ms.
	m := mustLoad(t, taskDef(`"Retry":[{"ErrorEquals":["Boom"],"IntervalSeconds":1,"BackoffRate":2}]`), inv, 0.01)
	r := execute(t, context.Background(), m, `{}`)
	wantSucceeded(t, r, `{}`)
	calls := inv.invocations()
	if len(calls) != 3 {
		t.Fatalf("calls = %d, want 3", len(calls))
	}
	for i, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		if gap := calls[i+1].at.Sub(calls[i].at); gap < want {
			t.Errorf("gap before retry %d = %v, want >= %v", i+1, gap, want)
		}
	}
}

func TestRetryCountInContext(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": failsThen(`{}`, named("Boom"), named("Boom"))})
	def := taskDef(`"Parameters":{"n.$":"$$.State.RetryCount"},"Retry":[{"ErrorEquals":["Boom"]}]`)
	wantSucceeded(t, runDef(t, def, inv, `{}`), `{}`)
	var got []string
	for _, c := range inv.invocations() {
		got = append(got, c.params)
	}
	if want := []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("parameters = %v, want %v", got, want)
	}
}

// catchDef builds a Task that fails as the invoker says, with the given
// Catch, and one Pass state per catcher target returning its name. The
// Route state only keeps every target reachable.
func catchDef(fields string) string {
	return `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"r",` + fields + `,"Next":"Route"},
	  "Route":{"Type":"Choice","Choices":[
	    {"Variable":"$.route","StringEquals":"A","Next":"A"},
	    {"Variable":"$.route","StringEquals":"B","Next":"B"},
	    {"Variable":"$.route","StringEquals":"C","Next":"C"}],"Default":"Done"},
	  "Done":{"Type":"Succeed"},
	  "A":{"Type":"Pass","Parameters":{"at":"A","in.$":"$"},"End":true},
	  "B":{"Type":"Pass","Parameters":{"at":"B","in.$":"$"},"End":true},
	  "C":{"Type":"Pass","Parameters":{"at":"C","in.$":"$"},"End":true}}}`
}

func TestCatch(t *testing.T) {
	timeout := waitsForCtx
	tests := []struct {
		name      string
		fields    string
		invoke    invokeFunc
		wantOut   string // "" when the execution must fail
		wantError string
	}{
		{"exact name", `"Catch":[{"ErrorEquals":["InsufficientFunds"],"Next":"A"}]`, fails(named("InsufficientFunds")),
			`{"at":"A","in":{"Error":"InsufficientFunds","Cause":"InsufficientFunds happened"}}`, ""},
		{"first matching catcher wins", `"Catch":[{"ErrorEquals":["X"],"Next":"A"},{"ErrorEquals":["Boom","Y"],"Next":"B"},{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			fails(named("Boom")), `{"at":"B","in":{"Error":"Boom","Cause":"Boom happened"}}`, ""},
		{"falls through to States.ALL", `"Catch":[{"ErrorEquals":["X"],"Next":"A"},{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			fails(named("Boom")), `{"at":"C","in":{"Error":"Boom","Cause":"Boom happened"}}`, ""},
		{"States.TaskFailed catches custom errors", `"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"}]`,
			fails(named("Boom")), `{"at":"A","in":{"Error":"Boom","Cause":"Boom happened"}}`, ""},
		{"plain error is States.TaskFailed with its text", `"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"}]`,
			fails(errors.New("dial tcp: refused")), `{"at":"A","in":{"Error":"States.TaskFailed","Cause":"dial tcp: refused"}}`, ""},
		{"wrapped named error keeps its name", `"Catch":[{"ErrorEquals":["Boom"],"Next":"A"}]`,
			fails(fmt.Errorf("calling: %w", named("Boom"))), `{"at":"A","in":{"Error":"Boom","Cause":"Boom happened"}}`, ""},
		{"States.TaskFailed does not catch States.Timeout", `"TimeoutSeconds":1,"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"},{"ErrorEquals":["States.Timeout"],"Next":"B"}]`,
			timeout, `{"at":"B","in":{"Error":"States.Timeout","Cause":"The task did not complete within its TimeoutSeconds (1)."}}`, ""},
		{"States.ALL catches States.Timeout", `"TimeoutSeconds":1,"Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			timeout, `{"at":"C","in":{"Error":"States.Timeout","Cause":"The task did not complete within its TimeoutSeconds (1)."}}`, ""},
		{"uncaught timeout fails", `"TimeoutSeconds":1,"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"}]`,
			timeout, "", ErrTimeout},
		{"States.ALL does not catch States.Runtime", `"Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			returns(`not json`), "", ErrRuntime},
		{"States.Runtime cannot be caught by name", `"Catch":[{"ErrorEquals":["States.Runtime"],"Next":"C"}]`,
			returns(`not json`), "", ErrRuntime},
		// Recorded on AWS with a Lambda task, against the developer guide
		// ("Handling errors in Step Functions workflows"), which says
		// States.ALL does not match States.DataLimitExceeded.
		{"States.ALL catches States.DataLimitExceeded (recorded)", `"Catch":[{"ErrorEquals":["States.ALL"],"Next":"C"}]`,
			returns(`"` + strings.Repeat("x", maxPayloadBytes) + `"`),
			`{"at":"C","in":{"Error":"States.DataLimitExceeded","Cause":"the task result has 262146 bytes, more than the limit of 262144"}}`, ""},
		{"States.TaskFailed does not catch States.DataLimitExceeded", `"Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"A"}]`,
			returns(`"` + strings.Repeat("x", maxPayloadBytes) + `"`), "", ErrDataLimitExceeded},
		{"States.DataLimitExceeded caught by name", `"Catch":[{"ErrorEquals":["States.DataLimitExceeded"],"Next":"A"}]`,
			returns(`"` + strings.Repeat("x", maxPayloadBytes) + `"`),
			`{"at":"A","in":{"Error":"States.DataLimitExceeded","Cause":"the task result has 262146 bytes, more than the limit of 262144"}}`, ""},
		{"no catcher matches", `"Catch":[{"ErrorEquals":["X"],"Next":"A"}]`, fails(named("Boom")), "", "Boom"},
		{"retry then catch", `"Retry":[{"ErrorEquals":["Boom"],"MaxAttempts":2}],"Catch":[{"ErrorEquals":["Boom"],"Next":"A"}]`,
			fails(named("Boom")), `{"at":"A","in":{"Error":"Boom","Cause":"Boom happened"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := newInvoker(map[string]invokeFunc{"r": tc.invoke})
			r := runDef(t, catchDef(tc.fields), inv, `{"transfer":"t1"}`)
			if tc.wantOut != "" {
				wantSucceeded(t, r, tc.wantOut)
			} else {
				wantFailed(t, r, tc.wantError, "")
			}
		})
	}
}

func TestCatchResultPath(t *testing.T) {
	tests := []struct {
		name       string
		resultPath string // the catcher's ResultPath field, "" to omit it
		want       string
	}{
		{"default replaces the input", ``, `{"Error":"Boom","Cause":"Boom happened"}`},
		{"nested path keeps the input", `"ResultPath":"$.failure.detail",`, `{"transfer":"t1","failure":{"detail":{"Error":"Boom","Cause":"Boom happened"}}}`},
		{"null discards the error", `"ResultPath":null,`, `{"transfer":"t1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := newInvoker(map[string]invokeFunc{"r": fails(named("Boom"))})
			// InputPath and OutputPath do not apply to the catcher's output:
			// it is built on the raw state input.
			def := `{"StartAt":"T","States":{
			  "T":{"Type":"Task","Resource":"r","InputPath":"$.transfer","OutputPath":"$.nothing",
			       "Catch":[{"ErrorEquals":["Boom"],` + tc.resultPath + `"Next":"Out"}],"End":true},
			  "Out":{"Type":"Succeed"}}}`
			wantSucceeded(t, runDef(t, def, inv, `{"transfer":"t1"}`), tc.want)
		})
	}
}

func TestCatchResultPathFailure(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": fails(named("Boom"))})
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"r","Catch":[{"ErrorEquals":["Boom"],"ResultPath":"$.a.b","Next":"Out"}],"End":true},
	  "Out":{"Type":"Succeed"}}}`
	wantFailed(t, runDef(t, def, inv, `{"a":1}`), ErrResultPathMatchFailure, "$.a is number, not an object")
}

func TestTaskTimeout(t *testing.T) {
	var mu sync.Mutex
	var deadlines []time.Duration
	slow := func(ctx context.Context, call int, _ json.RawMessage) (json.RawMessage, error) {
		d, ok := ctx.Deadline()
		mu.Lock()
		if ok {
			deadlines = append(deadlines, time.Until(d))
		}
		mu.Unlock()
		if call == 1 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return json.RawMessage(`{"done":true}`), nil
	}
	inv := newInvoker(map[string]invokeFunc{"r": slow})
	// TimeScale 0.01: TimeoutSeconds 20 gives each attempt a 200 ms deadline.
	m := mustLoad(t, taskDef(`"TimeoutSeconds":20,"Retry":[{"ErrorEquals":["States.Timeout"],"MaxAttempts":1}]`), inv, 0.01)
	r := execute(t, context.Background(), m, `{}`)
	wantSucceeded(t, r, `{"done":true}`)
	mu.Lock()
	defer mu.Unlock()
	if len(deadlines) != 2 {
		t.Fatalf("attempts with a deadline = %d, want 2", len(deadlines))
	}
	for _, d := range deadlines {
		if d > 200*time.Millisecond {
			t.Errorf("deadline in %v, want within 200ms", d)
		}
	}
	wantTypes := []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskTimedOut", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}
	if got := r.types(); !reflect.DeepEqual(got, wantTypes) {
		t.Fatalf("events = %v\nwant     %v", got, wantTypes)
	}
	if ev := r.events[4]; ev.Error != ErrTimeout || ev.Resource != "r" {
		t.Fatalf("TaskTimedOut event = %+v", ev)
	}
}

func TestTaskTimeoutWhenInvokerIgnoresContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	stuck := func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{}`), nil
	}
	inv := newInvoker(map[string]invokeFunc{"r": stuck})
	m := mustLoad(t, taskDef(`"TimeoutSeconds":10`), inv, 0.001)
	start := time.Now()
	r := execute(t, context.Background(), m, `{}`)
	wantFailed(t, r, ErrTimeout, "TimeoutSeconds (10)")
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("the run took %v", elapsed)
	}
}

func TestMachineTimeout(t *testing.T) {
	sawCancel := make(chan struct{})
	var once sync.Once
	block := func(ctx context.Context, _ int, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		once.Do(func() { close(sawCancel) })
		return nil, ctx.Err()
	}
	inv := newInvoker(map[string]invokeFunc{"r": block})
	def := `{"StartAt":"T","TimeoutSeconds":20,"States":{"T":{"Type":"Task","Resource":"r",
	  "Retry":[{"ErrorEquals":["States.ALL"]}],"Catch":[{"ErrorEquals":["States.ALL"],"Next":"Done"}],"End":true},
	  "Done":{"Type":"Succeed"}}}`
	m := mustLoad(t, def, inv, 0.001) // 20 s -> 20 ms
	r := execute(t, context.Background(), m, `{}`)
	if r.Status != StatusTimedOut || r.Error != ErrTimeout {
		t.Fatalf("result = %+v, want TIMED_OUT with States.Timeout", r.Result)
	}
	select {
	case <-sawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the running task's context was not cancelled")
	}
	if got := r.types(); got[len(got)-1] != "ExecutionTimedOut" {
		t.Fatalf("events = %v, want ExecutionTimedOut last", got)
	}
	if n := len(inv.invocations()); n != 1 {
		t.Fatalf("invocations = %d, want 1 (no retry after the machine timed out)", n)
	}
}

func TestMachineTimeoutInPassLoop(t *testing.T) {
	def := `{"StartAt":"A","TimeoutSeconds":10,"States":{
	  "A":{"Type":"Pass","Next":"B"},
	  "B":{"Type":"Choice","Choices":[{"Variable":"$.stop","IsPresent":true,"Next":"End"}],"Default":"A"},
	  "End":{"Type":"Succeed"}}}`
	m := mustLoad(t, def, nil, 0.0001) // 10 s -> 1 ms, long before the history limit
	r := execute(t, context.Background(), m, `{}`)
	if r.Status != StatusTimedOut && !(r.Status == StatusFailed && strings.Contains(r.Cause, "history")) {
		t.Fatalf("result = %+v, want TIMED_OUT (or the history limit)", r.Result)
	}
}

func TestHistoryLimit(t *testing.T) {
	def := `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A"}}}`
	r := runDef(t, def, nil, `{}`)
	wantFailed(t, r, ErrRuntime, "limit of 25000 events")
	if len(r.events) > maxHistoryEvents+5 {
		t.Fatalf("%d events, want about %d", len(r.events), maxHistoryEvents)
	}
}

func TestAbort(t *testing.T) {
	t.Run("during a task", func(t *testing.T) {
		started := make(chan struct{})
		release := make(chan struct{})
		defer close(release)
		// The invoker ignores its context: the run must still end promptly.
		stuck := func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-release
			return json.RawMessage(`{}`), nil
		}
		inv := newInvoker(map[string]invokeFunc{"r": stuck})
		m := mustLoad(t, taskDef(`"Catch":[{"ErrorEquals":["States.ALL"],"Next":"T"}]`), inv, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-started
			cancel()
		}()
		r := execute(t, ctx, m, `{}`)
		if r.Status != StatusAborted {
			t.Fatalf("result = %+v, want ABORTED", r.Result)
		}
		if got := r.types(); got[len(got)-1] != "ExecutionAborted" {
			t.Fatalf("events = %v, want ExecutionAborted last", got)
		}
	})
	t.Run("during a retry wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		failAndCancel := func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
			cancel()
			return nil, named("Boom")
		}
		inv := newInvoker(map[string]invokeFunc{"r": failAndCancel})
		// TimeScale 1 and a 1000 s interval: only the cancellation can end the wait.
		m := mustLoad(t, taskDef(`"Retry":[{"ErrorEquals":["Boom"],"IntervalSeconds":1000}]`), inv, 1)
		start := time.Now()
		r := execute(t, ctx, m, `{}`)
		if r.Status != StatusAborted {
			t.Fatalf("result = %+v, want ABORTED", r.Result)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Fatalf("abort took %v", elapsed)
		}
		if n := len(inv.invocations()); n != 1 {
			t.Fatalf("invocations = %d, want 1", n)
		}
	})
	t.Run("before the first state", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		inv := newInvoker(map[string]invokeFunc{"r": echo})
		r := execute(t, ctx, mustLoad(t, taskDef(""), inv, 1), `{}`)
		if r.Status != StatusAborted || len(inv.invocations()) != 0 {
			t.Fatalf("result = %+v, invocations %d; want ABORTED without invoking", r.Result, len(inv.invocations()))
		}
	})
}

func TestInvokerPanicIsTaskFailure(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
		panic("nil map")
	}})
	wantFailed(t, runDef(t, taskDef(""), inv, `{}`), ErrTaskFailed, "the task invoker panicked: nil map")
}

func TestEmptyTaskResultIsNull(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{"r": returns(``)})
	wantSucceeded(t, runDef(t, taskDef(`"ResultPath":"$.r"`), inv, `{"a":1}`), `{"a":1,"r":null}`)
}

func TestHistory(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{
		"debit": failsThen(`{"balance":90}`, named("Lambda.ServiceException")),
	})
	def := `{"StartAt":"Prepare","States":{
	  "Prepare":{"Type":"Pass","Result":{"amount":10},"ResultPath":"$.req","Next":"Check"},
	  "Check":{"Type":"Choice","Choices":[{"Variable":"$.req.amount","NumericGreaterThan":0,"Next":"Debit"}],"Default":"Reject"},
	  "Debit":{"Type":"Task","Resource":"debit","Parameters":{"amount.$":"$.req.amount"},"ResultPath":"$.debit",
	           "Retry":[{"ErrorEquals":["Lambda.ServiceException"]}],"Next":"Done"},
	  "Reject":{"Type":"Fail","Error":"Rejected","Cause":"amount"},
	  "Done":{"Type":"Succeed"}}}`
	r := runDef(t, def, inv, `{"id":"t1"}`)
	wantSucceeded(t, r, `{"id":"t1","req":{"amount":10},"debit":{"balance":90}}`)
	want := []HistoryEvent{
		{Type: "ExecutionStarted", Input: json.RawMessage(`{"id":"t1"}`)},
		{Type: "PassStateEntered", StateName: "Prepare", Input: json.RawMessage(`{"id":"t1"}`)},
		{Type: "PassStateExited", StateName: "Prepare", Output: json.RawMessage(`{"id":"t1","req":{"amount":10}}`)},
		{Type: "ChoiceStateEntered", StateName: "Check", Input: json.RawMessage(`{"id":"t1","req":{"amount":10}}`)},
		{Type: "ChoiceStateExited", StateName: "Check", Output: json.RawMessage(`{"id":"t1","req":{"amount":10}}`)},
		{Type: "TaskStateEntered", StateName: "Debit", Input: json.RawMessage(`{"id":"t1","req":{"amount":10}}`)},
		{Type: "TaskScheduled", StateName: "Debit", Resource: "debit", Input: json.RawMessage(`{"amount":10}`)},
		{Type: "TaskStarted", StateName: "Debit", Resource: "debit"},
		{Type: "TaskFailed", StateName: "Debit", Resource: "debit", Error: "Lambda.ServiceException", Cause: "Lambda.ServiceException happened"},
		{Type: "TaskScheduled", StateName: "Debit", Resource: "debit", Input: json.RawMessage(`{"amount":10}`)},
		{Type: "TaskStarted", StateName: "Debit", Resource: "debit"},
		{Type: "TaskSucceeded", StateName: "Debit", Resource: "debit", Output: json.RawMessage(`{"balance":90}`)},
		{Type: "TaskStateExited", StateName: "Debit", Output: json.RawMessage(`{"debit":{"balance":90},"id":"t1","req":{"amount":10}}`)},
		{Type: "SucceedStateEntered", StateName: "Done", Input: json.RawMessage(`{"debit":{"balance":90},"id":"t1","req":{"amount":10}}`)},
		{Type: "SucceedStateExited", StateName: "Done", Output: json.RawMessage(`{"debit":{"balance":90},"id":"t1","req":{"amount":10}}`)},
		{Type: "ExecutionSucceeded", Output: json.RawMessage(`{"debit":{"balance":90},"id":"t1","req":{"amount":10}}`)},
	}
	if len(r.events) != len(want) {
		t.Fatalf("events = %v\nwant     %d events", r.types(), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(r.events[i], want[i]) {
			t.Errorf("event %d = %+v\nwant       %+v", i, eventString(r.events[i]), eventString(want[i]))
		}
	}
}

func eventString(e HistoryEvent) string {
	return fmt.Sprintf("{%s state=%q res=%q in=%s out=%s err=%q cause=%q}", e.Type, e.StateName, e.Resource, e.Input, e.Output, e.Error, e.Cause)
}

func TestFailState(t *testing.T) {
	tests := []struct {
		name        string
		fields      string
		input       string
		error       string
		cause       string
		exactCause  bool
		wantRuntime bool
	}{
		{"constant", `"Error":"TransferRejected","Cause":"insufficient funds"`, `{}`, "TransferRejected", "insufficient funds", true, false},
		{"no error or cause", ``, `{}`, "", "", true, false},
		{"paths", `"ErrorPath":"$.err.name","CausePath":"$.err.detail"`, `{"err":{"name":"E1","detail":"d1"}}`, "E1", "d1", true, false},
		{"intrinsic cause", `"Error":"E","CausePath":"States.Format('transfer {} failed', $.id)"`, `{"id":"t1"}`, "E", "transfer t1 failed", true, false},
		{"path to non-string", `"ErrorPath":"$.n"`, `{"n":1}`, ErrRuntime, "ErrorPath must give a string, got number", false, true},
		{"missing path", `"CausePath":"$.missing"`, `{}`, ErrRuntime, "could not be found", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields := tc.fields
			if fields != "" {
				fields = "," + fields
			}
			def := `{"StartAt":"F","States":{"F":{"Type":"Fail"` + fields + `}}}`
			r := runDef(t, def, nil, tc.input)
			wantFailed(t, r, tc.error, tc.cause)
			if tc.exactCause && r.Cause != tc.cause {
				t.Fatalf("cause = %q, want %q", r.Cause, tc.cause)
			}
			wantTypes := []string{"ExecutionStarted", "FailStateEntered", "ExecutionFailed"}
			if got := r.types(); !reflect.DeepEqual(got, wantTypes) {
				t.Fatalf("events = %v, want %v", got, wantTypes)
			}
			if last := r.events[2]; last.Error != r.Error || last.Cause != r.Cause {
				t.Fatalf("ExecutionFailed event = %+v, result %+v", last, r.Result)
			}
		})
	}
}

func TestStateOutputDataLimit(t *testing.T) {
	big := strings.Repeat("x", maxPayloadBytes)
	wantFailed(t, runDef(t, passDef(`"Result":"`+big+`"`), nil, `{}`), ErrDataLimitExceeded, "more than the limit of 262144")
}

func TestConcurrentRuns(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{
		// Every run fails its first attempt and succeeds on the retry.
		"debit": func(_ context.Context, _ int, params json.RawMessage) (json.RawMessage, error) {
			var p struct{ Retry int }
			if err := json.Unmarshal(params, &p); err != nil {
				return nil, err
			}
			if p.Retry == 0 {
				return nil, named("Lambda.ServiceException")
			}
			return params, nil
		},
	})
	def := `{"StartAt":"Prep","States":{
	  "Prep":{"Type":"Pass","Parameters":{"id.$":"$.id","exec.$":"$$.Execution.Name","uuid.$":"States.UUID()"},"ResultPath":"$.prep","Next":"Debit"},
	  "Debit":{"Type":"Task","Resource":"debit","Parameters":{"id.$":"$.id","Retry.$":"$$.State.RetryCount"},"ResultSelector":{"echo.$":"$.id"},"ResultPath":"$.debit",
	           "Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":5}],"Next":"Done"},
	  "Done":{"Type":"Succeed","OutputPath":"$.debit"}}}`
	m := mustLoad(t, def, inv, 0.0001)
	var wg sync.WaitGroup
	results := make([]Result, 40)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = m.Run(context.Background(), testExecution, json.RawMessage(fmt.Sprintf(`{"id":"t%d"}`, i)), RunOptions{})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != StatusSucceeded {
			t.Fatalf("run %d: %+v", i, r)
		}
		if want := fmt.Sprintf(`{"echo":"t%d"}`, i); string(r.Output) != want {
			t.Fatalf("run %d output = %s, want %s", i, r.Output, want)
		}
	}
}
