package fault_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/lambdarun"
)

// TestLambdaFaults invokes a real registered function through the
// injector's interceptor, one fault armed per case, and checks the answer
// of each invocation and how often the handler really ran.
func TestLambdaFaults(t *testing.T) {
	type answer struct {
		out     string // result, or
		fnType  string // function error type, or
		svcType string // service error type
	}
	ok := func(id string) answer { return answer{out: `{"ran":"` + id + `"}`} }
	svc := answer{svcType: "Lambda.ServiceException"}
	tests := []struct {
		name     string
		faults   []fault.LambdaFault
		payloads []string // ids
		want     []answer
		wantRuns int64
		wantHits map[string]int
	}{
		{"fail once, default error", []fault.LambdaFault{{Function: "Fn", Kind: fault.Fail, Times: 1}},
			[]string{"a", "b"}, []answer{svc, ok("b")}, 1, map[string]int{"lambda.fail": 1}},
		{"fail with a named service error", []fault.LambdaFault{{Function: "Fn", Kind: fault.Fail, Times: 1, Error: "Lambda.TooManyRequestsException"}},
			[]string{"a"}, []answer{{svcType: "Lambda.TooManyRequestsException"}}, 0, map[string]int{"lambda.fail": 1}},
		{"fail as a function timeout", []fault.LambdaFault{{Function: "Fn", Kind: fault.Fail, Error: "Sandbox.Timedout"}},
			[]string{"a", "b"}, []answer{{fnType: "Sandbox.Timedout"}, {fnType: "Sandbox.Timedout"}}, 0, map[string]int{"lambda.fail": 2}},
		{"fail as Lambda.Unknown is a function error", []fault.LambdaFault{{Function: "Fn", Kind: fault.Fail, Times: 1, Error: "Lambda.Unknown"}},
			[]string{"a"}, []answer{{fnType: "Lambda.Unknown"}}, 0, map[string]int{"lambda.fail": 1}},
		{"lose response: the handler ran", []fault.LambdaFault{{Function: "Fn", Kind: fault.LoseResponse, Times: 1}},
			[]string{"a", "b"}, []answer{svc, ok("b")}, 2, map[string]int{"lambda.lose-response": 1}},
		{"other function untouched", []fault.LambdaFault{{Function: "Other", Kind: fault.Fail}},
			[]string{"a"}, []answer{ok("a")}, 1, map[string]int{}},
		{"match on the payload", []fault.LambdaFault{{Function: "Fn", Kind: fault.Fail, Match: func(p []byte) bool { return field(p, "id") == "b" }}},
			[]string{"a", "b", "c", "b"}, []answer{ok("a"), svc, ok("c"), svc}, 2, map[string]int{"lambda.fail": 2}},
		{"consumed in the order armed", []fault.LambdaFault{
			{Function: "Fn", Kind: fault.Fail, Times: 1, Error: "First"},
			{Function: "Fn", Kind: fault.Fail, Times: 2, Error: "Second"},
		}, []string{"a", "b", "c", "d"}, []answer{{fnType: "First"}, {fnType: "Second"}, {fnType: "Second"}, ok("d")}, 1, map[string]int{"lambda.fail": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := fault.New(1)
			for _, f := range tc.faults {
				in.Lambda(f)
			}
			reg, c := newRegistry(t, in)
			for i, id := range tc.payloads {
				out, fnErr, err := reg.InvokeFunction(testContext(t), "Fn", []byte(`{"id":"`+id+`"}`))
				var got answer
				switch se, isSvc := errors.AsType[*lambdarun.ServiceError](err); {
				case isSvc:
					got.svcType = se.Type
				case err != nil:
					t.Fatalf("invocation %d: %v", i, err)
				case fnErr != nil:
					got.fnType = fnErr.Type
				default:
					got.out = string(out)
				}
				if got != tc.want[i] {
					t.Errorf("invocation %d (%s): %+v, want %+v", i, id, got, tc.want[i])
				}
			}
			if runs := c.runs.Load(); runs != tc.wantRuns {
				t.Errorf("handler ran %d times, want %d", runs, tc.wantRuns)
			}
			assertCounts(t, in, tc.wantHits)
		})
	}
}

func assertCounts(t *testing.T, in *fault.Injector, want map[string]int) {
	t.Helper()
	got := in.Counts()
	if len(got) != len(want) {
		t.Errorf("Counts() = %v, want %v", got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Counts() = %v, want %v", got, want)
			return
		}
	}
}

func TestLambdaFaultProbability(t *testing.T) {
	// With a fixed seed the same invocations fail, and about Prob of them.
	failures := func(seed uint64) []int {
		in := fault.New(seed)
		in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Fail, Prob: 0.3})
		reg, _ := newRegistry(t, in)
		var failed []int
		for i := range 200 {
			if _, _, err := reg.InvokeFunction(testContext(t), "Fn", []byte(`{}`)); err != nil {
				failed = append(failed, i)
			}
		}
		return failed
	}
	a, b := failures(7), failures(7)
	if len(a) < 40 || len(a) > 80 {
		t.Errorf("%d of 200 invocations failed with Prob 0.3", len(a))
	}
	if len(a) != len(b) || len(a) > 0 && a[0] != b[0] {
		t.Errorf("same seed, different failures: %v and %v", a, b)
	}
}

func TestLambdaHang(t *testing.T) {
	in := fault.New(1)
	in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Hang, Times: 1})
	reg, c := newRegistry(t, in)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() {
		_, _, err := reg.InvokeFunction(ctx, "Fn", []byte(`{}`))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a hung invocation answered: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the caller's cancellation", err)
	}
	if c.runs.Load() != 0 {
		t.Error("the handler of a hung invocation ran")
	}
	assertCounts(t, in, map[string]int{"lambda.hang": 1})
}

func TestLambdaDetach(t *testing.T) {
	in := fault.New(1)
	release := make(chan struct{})
	done := make(chan fault.LateOutcome, 1)
	in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Detach, Times: 1, Release: release, Done: done})
	reg, c := newRegistry(t, in)

	// The caller's context ends as soon as the answer is in: the late run
	// must not depend on it.
	ctx, cancel := context.WithCancel(testContext(t))
	_, _, err := reg.InvokeFunction(ctx, "Fn", []byte(`{"id":"late"}`))
	cancel()
	if se, ok := errors.AsType[*lambdarun.ServiceError](err); !ok || se.Type != "Lambda.ServiceException" {
		t.Fatalf("err = %v, want Lambda.ServiceException at once", err)
	}
	if c.runs.Load() != 0 {
		t.Fatal("the handler ran before Release")
	}
	if err := in.Wait(testContext(t)); err != nil {
		t.Fatalf("Wait with an unreleased detached run: %v", err)
	}
	close(release)
	if err := in.Wait(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if c.runs.Load() != 1 {
		t.Fatalf("handler ran %d times after Release and Wait, want 1", c.runs.Load())
	}
	select {
	case o := <-done:
		if o.Err != nil || string(o.Result) != `{"ran":"late"}` {
			t.Errorf("late outcome %s, %v", o.Result, o.Err)
		}
	default:
		t.Error("no late outcome on Done")
	}
	assertCounts(t, in, map[string]int{"lambda.detach": 1})
}

func TestReset(t *testing.T) {
	in := fault.New(1)
	in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Fail})
	reg, _ := newRegistry(t, in)
	if _, _, err := reg.InvokeFunction(testContext(t), "Fn", []byte(`{}`)); err == nil {
		t.Fatal("armed fault did not apply")
	}
	in.Reset()
	if _, _, err := reg.InvokeFunction(testContext(t), "Fn", []byte(`{}`)); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
	assertCounts(t, in, map[string]int{})
}

// TestTimeouts runs Hang faults under the Step Functions endpoint: a task
// whose function hangs fails with States.Timeout after its TimeoutSeconds,
// and a machine whose TimeoutSeconds elapses ends TIMED_OUT and publishes
// that status change.
func TestTimeouts(t *testing.T) {
	tests := []struct {
		name       string
		definition string
		wantStatus string
		wantError  string
	}{
		{"task TimeoutSeconds", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"Fn","Payload":{}},"TimeoutSeconds":2,"End":true}}}`,
			"FAILED", "States.Timeout"},
		{"machine TimeoutSeconds", `{"TimeoutSeconds":2,"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"Fn","Payload":{}},"End":true}}}`,
			"TIMED_OUT", "States.Timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := fault.New(1)
			in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Hang})
			reg, c := newRegistry(t, in)
			env := newSFN(t, reg, tc.definition, nil)
			info := env.run(t, `{}`)
			if info.Status != tc.wantStatus || info.Error != tc.wantError {
				t.Fatalf("execution %s %s (%s), want %s %s", info.Status, info.Error, info.Cause, tc.wantStatus, tc.wantError)
			}
			if c.runs.Load() != 0 {
				t.Error("the hung handler ran")
			}
			events := env.pub.recorded()
			last := events[len(events)-1]
			if !strings.Contains(last, `"status":"`+tc.wantStatus+`"`) || !strings.Contains(last, `"error":"States.Timeout"`) {
				t.Errorf("last status change event %s", last)
			}
		})
	}
}

// TestLambdaFaultsInTasks checks how the lambda:invoke task reports each
// Fail error: service errors by their name, function errors by their type.
func TestLambdaFaultsInTasks(t *testing.T) {
	const def = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"Fn","Payload":{}},"End":true}}}`
	for _, errType := range []string{"", "Lambda.TooManyRequestsException", "Sandbox.Timedout", "Lambda.Unknown"} {
		want := errType
		if want == "" {
			want = "Lambda.ServiceException"
		}
		t.Run(want, func(t *testing.T) {
			in := fault.New(1)
			in.Lambda(fault.LambdaFault{Function: "Fn", Kind: fault.Fail, Error: errType})
			reg, _ := newRegistry(t, in)
			info := newSFN(t, reg, def, nil).run(t, `{}`)
			if info.Status != "FAILED" || info.Error != want {
				t.Errorf("execution %s %s (%s), want FAILED %s", info.Status, info.Error, info.Cause, want)
			}
		})
	}
}

// A hang nobody waits for (an asynchronous invocation) still ends, at the
// function timeout, with the error Lambda reports for it.
func TestLambdaHangEndsAtTheFunctionTimeout(t *testing.T) {
	in := fault.New(1)
	in.Lambda(fault.LambdaFault{Function: "Short", Kind: fault.Hang, Times: 1})
	reg := &lambdarun.Registry{}
	c := &counter{}
	if err := reg.Register(&lambdarun.Function{Name: "Short", Timeout: 20 * time.Millisecond, NewHandler: c.handler}); err != nil {
		t.Fatal(err)
	}
	reg.SetInterceptor(in.Interceptor())
	_, fnErr, err := reg.InvokeFunction(context.Background(), "Short", []byte(`{}`))
	if err != nil || fnErr == nil || fnErr.Type != lambdarun.ErrorTypeTimeout {
		t.Fatalf("InvokeFunction = %v, %v; want a %s function error", fnErr, err, lambdarun.ErrorTypeTimeout)
	}
	if c.runs.Load() != 0 {
		t.Error("the handler of a hung invocation ran")
	}
}
