package asl

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWait follows the developer guide's "Wait workflow state"
// (https://docs.aws.amazon.com/step-functions/latest/dg/state-wait.html):
// Seconds, SecondsPath ("$.expiryseconds"), Timestamp and TimestampPath
// ("$.expirydate"). The waits go through the sleep hook at TimeScale 0.001
// (1 s -> 1 ms); the state passes its input on.
func TestWait(t *testing.T) {
	ms := time.Millisecond
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name     string
		fields   string
		input    string
		wantWait []time.Duration // nil: no wait; one negative value: any wait in (0, 3.6 s]
		wantOut  string
		wantErr  string
	}{
		{"Seconds", `"Seconds":10`, `{"a":1}`, []time.Duration{10 * ms}, `{"a":1}`, ""},
		{"Seconds zero", `"Seconds":0`, `{"a":1}`, nil, `{"a":1}`, ""},
		{"SecondsPath", `"SecondsPath":"$.expiryseconds"`, `{"expiryseconds":5}`, []time.Duration{5 * ms}, `{"expiryseconds":5}`, ""},
		{"SecondsPath after InputPath", `"InputPath":"$.w","SecondsPath":"$.s"`, `{"w":{"s":7}}`, []time.Duration{7 * ms}, `{"s":7}`, ""},
		{"Timestamp in the past", `"Timestamp":"2016-03-14T01:59:00Z"`, `{}`, nil, `{}`, ""},
		{"Timestamp in the future", `"Timestamp":"` + future + `"`, `{}`, []time.Duration{-1}, `{}`, ""},
		{"TimestampPath", `"TimestampPath":"$.expirydate"`, `{"expirydate":"` + future + `"}`, []time.Duration{-1}, `{"expirydate":"` + future + `"}`, ""},
		{"OutputPath", `"Seconds":1,"OutputPath":"$.a"`, `{"a":{"b":2}}`, []time.Duration{1 * ms}, `{"b":2}`, ""},
		{"SecondsPath missing", `"SecondsPath":"$.nope"`, `{}`, nil, "", ErrRuntime},
		{"SecondsPath not an integer", `"SecondsPath":"$.s"`, `{"s":"10"}`, nil, "", ErrRuntime},
		{"SecondsPath negative", `"SecondsPath":"$.s"`, `{"s":-1}`, nil, "", ErrRuntime},
		{"TimestampPath not a timestamp", `"TimestampPath":"$.s"`, `{"s":"soon"}`, nil, "", ErrRuntime},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := `{"StartAt":"W","States":{"W":{"Type":"Wait",` + tc.fields + `,"End":true}}}`
			m := mustLoad(t, def, nil, 0.001)
			rec := &sleepRecorder{}
			m.def.sleep = rec.sleep
			r := execute(t, context.Background(), m, tc.input)
			if tc.wantErr != "" {
				wantFailed(t, r, tc.wantErr, "")
				return
			}
			wantSucceeded(t, r, tc.wantOut)
			got := rec.recorded()
			if len(tc.wantWait) == 1 && tc.wantWait[0] < 0 {
				if len(got) != 1 || got[0] <= 0 || got[0] > 3600*ms {
					t.Fatalf("waits = %v, want one in (0, 3.6s]", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.wantWait) {
				t.Fatalf("waits = %v, want %v", got, tc.wantWait)
			}
			if types := r.types(); !reflect.DeepEqual(types, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateExited", "ExecutionSucceeded"}) {
				t.Fatalf("events = %v", types)
			}
		})
	}
}

// TestWaitAborted: cancelling the run during a Wait aborts it.
func TestWaitAborted(t *testing.T) {
	m := mustLoad(t, `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":100,"End":true}}}`, nil, 1)
	ctx, cancel := context.WithCancel(context.Background())
	m.def.sleep = func(ctx context.Context, _ time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	if r := execute(t, ctx, m, `{}`); r.Status != StatusAborted {
		t.Fatalf("status = %s, want ABORTED", r.Status)
	}
}

// addSub are the Lambda functions of the developer guide's Parallel
// example ("Parallel workflow state",
// https://docs.aws.amazon.com/step-functions/latest/dg/state-parallel.html):
// given {"a":3,"b":2}, Add gives 5 and Subtract gives 1, and the state's
// output is [5, 1].
func addSub() map[string]invokeFunc {
	op := func(f func(a, b int) int) invokeFunc {
		return func(_ context.Context, _ int, params json.RawMessage) (json.RawMessage, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(params, &in); err != nil {
				return nil, err
			}
			b, _ := json.Marshal(f(in.A, in.B))
			return b, nil
		}
	}
	return map[string]invokeFunc{
		"add": op(func(a, b int) int { return a + b }),
		"sub": op(func(a, b int) int { return a - b }),
	}
}

func TestParallel(t *testing.T) {
	branches := `"Branches":[
	  {"StartAt":"Add","States":{"Add":{"Type":"Task","Resource":"add","End":true}}},
	  {"StartAt":"Subtract","States":{"Subtract":{"Type":"Task","Resource":"sub","End":true}}}]`
	tests := []struct {
		name    string
		fields  string
		input   string
		fns     map[string]invokeFunc
		wantOut string
		wantErr string
	}{
		{"guide example: results in branch order", branches, `{"a":3,"b":2}`, addSub(), `[5,1]`, ""},
		{"ResultPath", branches + `,"ResultPath":"$.results"`, `{"a":3,"b":2}`, addSub(), `{"a":3,"b":2,"results":[5,1]}`, ""},
		{"InputPath, Parameters and ResultSelector", branches + `,"InputPath":"$.in","Parameters":{"a.$":"$.x","b":1},"ResultSelector":{"sum.$":"$[0]","diff.$":"$[1]"}`,
			`{"in":{"x":10}}`, addSub(), `{"sum":11,"diff":9}`, ""},
		{"branch of several states", `"Branches":[{"StartAt":"A","States":{"A":{"Type":"Pass","Result":{"n":1},"Next":"B"},"B":{"Type":"Pass","InputPath":"$.n","End":true}}},
		  {"StartAt":"C","States":{"C":{"Type":"Succeed"}}}]`, `{"x":true}`, nil, `[1,{"x":true}]`, ""},
		{"nested Parallel", `"Branches":[{"StartAt":"In","States":{"In":{"Type":"Parallel","Branches":[{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}],"End":true}}}]`,
			`{"v":1}`, nil, `[[{"v":1}]]`, ""},
		{"failing branch fails the state with its error", `"Branches":[{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"bad"}}},{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}]`,
			`{}`, nil, "", "Boom"},
		{"Catch on the whole", `"Branches":[{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"bad"}}}],"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.err","Next":"Caught"}]`,
			`{"a":1}`, nil, `{"a":1,"err":{"Error":"Boom","Cause":"bad"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := `{"StartAt":"Par","States":{"Par":{"Type":"Parallel",` + tc.fields + `,"End":true},"Caught":{"Type":"Pass","End":true}}}`
			if !strings.Contains(tc.fields, "Caught") {
				def = `{"StartAt":"Par","States":{"Par":{"Type":"Parallel",` + tc.fields + `,"End":true}}}`
			}
			var inv TaskInvoker
			if tc.fns != nil {
				inv = newInvoker(tc.fns)
			}
			r := runDef(t, def, inv, tc.input)
			if tc.wantErr != "" {
				wantFailed(t, r, tc.wantErr, "")
				return
			}
			wantSucceeded(t, r, tc.wantOut)
		})
	}
}

// TestParallelFailureCancelsBranches: when a branch fails, the branches
// still running are stopped (their task's context ends) and the state fails
// with the branch's error.
func TestParallelFailureCancelsBranches(t *testing.T) {
	started, cancelled := make(chan struct{}), make(chan struct{})
	inv := newInvoker(map[string]invokeFunc{
		"block": func(ctx context.Context, _ int, _ json.RawMessage) (json.RawMessage, error) {
			close(started)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		},
		"boom": func(context.Context, int, json.RawMessage) (json.RawMessage, error) {
			<-started // fail once the other branch is running
			return nil, named("Boom")
		},
	})
	def := `{"StartAt":"Par","States":{"Par":{"Type":"Parallel","Branches":[
	  {"StartAt":"B","States":{"B":{"Type":"Task","Resource":"block","End":true}}},
	  {"StartAt":"F","States":{"F":{"Type":"Task","Resource":"boom","End":true}}}],"End":true}}}`
	r := runDef(t, def, inv, `{}`)
	wantFailed(t, r, "Boom", "Boom happened")
	<-cancelled // the blocked branch's context ended
}

// TestParallelRetry: Retry applies to the whole state; every branch runs
// again.
func TestParallelRetry(t *testing.T) {
	inv := newInvoker(map[string]invokeFunc{
		"flaky": failsThen(`"ok"`, named("Flaky")),
		"echo":  echo,
	})
	def := `{"StartAt":"Par","States":{"Par":{"Type":"Parallel","Branches":[
	  {"StartAt":"A","States":{"A":{"Type":"Task","Resource":"flaky","End":true}}},
	  {"StartAt":"B","States":{"B":{"Type":"Task","Resource":"echo","End":true}}}],
	  "Retry":[{"ErrorEquals":["Flaky"],"MaxAttempts":1}],"End":true}}}`
	r := runDef(t, def, inv, `{"x":1}`)
	wantSucceeded(t, r, `["ok",{"x":1}]`)
	// The retry runs the whole state again: the flaky branch twice. The
	// other branch runs on the retry, and on the first try too unless the
	// failing branch cancelled it before it began.
	count := map[string]int{}
	for _, c := range inv.invocations() {
		count[c.resource]++
	}
	if count["flaky"] != 2 || count["echo"] < 1 || count["echo"] > 2 {
		t.Fatalf("invocations %v, want flaky twice and echo once or twice", count)
	}
}

// mapInput is the input of the developer guide's inline Map examples
// ("Map state in Inline mode",
// https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html).
const mapInput = `{"ship-date":"2016-03-14T01:59:00Z","detail":{"delivery-partner":"UQS","shipped":[
  {"prod":"R31","dest-code":9511,"quantity":1344},
  {"prod":"S39","dest-code":9511,"quantity":40},
  {"prod":"R31","dest-code":9833,"quantity":12}]}}`

func TestMap(t *testing.T) {
	pass := `{"StartAt":"Validate","States":{"Validate":{"Type":"Pass","End":true}}}`
	tests := []struct {
		name    string
		fields  string
		input   string
		wantOut string
		wantErr string
	}{
		{"guide example: ItemsPath and ItemSelector with $$.Map.Item.Value",
			`"ItemsPath":"$.detail.shipped","ItemSelector":{"parcel.$":"$$.Map.Item.Value","courier.$":"$.detail.delivery-partner"},"ItemProcessor":` + pass,
			mapInput, `[{"parcel":{"prod":"R31","dest-code":9511,"quantity":1344},"courier":"UQS"},
			  {"parcel":{"prod":"S39","dest-code":9511,"quantity":40},"courier":"UQS"},
			  {"parcel":{"prod":"R31","dest-code":9833,"quantity":12},"courier":"UQS"}]`, ""},
		{"guide example: $$.Map.Item.Index and Value",
			`"ItemsPath":"$.detail.shipped","ItemSelector":{"ContextIndex.$":"$$.Map.Item.Index","ContextValue.$":"$$.Map.Item.Value.prod"},"ItemProcessor":` + pass,
			mapInput, `[{"ContextIndex":0,"ContextValue":"R31"},{"ContextIndex":1,"ContextValue":"S39"},{"ContextIndex":2,"ContextValue":"R31"}]`, ""},
		{"legacy Iterator and Parameters",
			`"ItemsPath":"$.detail.shipped","Parameters":{"i.$":"$$.Map.Item.Index"},"Iterator":` + pass,
			mapInput, `[{"i":0},{"i":1},{"i":2}]`, ""},
		{"no ItemsPath: the input is the array", `"ItemProcessor":` + pass, `[1,"two",{"three":3}]`, `[1,"two",{"three":3}]`, ""},
		{"empty array", `"ItemProcessor":` + pass, `[]`, `[]`, ""},
		{"ResultPath and ResultSelector", `"ItemsPath":"$.xs","ResultSelector":{"n.$":"States.ArrayLength($)"},"ResultPath":"$.count","ItemProcessor":` + pass,
			`{"xs":[1,2,3]}`, `{"xs":[1,2,3],"count":{"n":3}}`, ""},
		{"explicit INLINE mode", `"ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`, `[1]`, `[1]`, ""},
		{"ItemsPath not an array", `"ItemsPath":"$.x","ItemProcessor":` + pass, `{"x":{}}`, "", ErrRuntime},
		{"a failing iteration fails the state",
			`"ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$","NumericGreaterThan":1,"Next":"F"}],"Default":"S"},"F":{"Type":"Fail","Error":"TooBig"},"S":{"Type":"Succeed"}}}`,
			`[1,2,0]`, "", "TooBig"},
		{"failures within ToleratedFailureCount",
			`"ToleratedFailureCount":1,"ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$","NumericGreaterThan":1,"Next":"F"}],"Default":"S"},"F":{"Type":"Fail","Error":"TooBig","Cause":"c"},"S":{"Type":"Succeed"}}}`,
			`[1,2,0]`, `[1,{"Error":"TooBig","Cause":"c"},0]`, ""},
		{"failures over ToleratedFailureCount",
			`"ToleratedFailureCount":1,"ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$","NumericGreaterThan":1,"Next":"F"}],"Default":"S"},"F":{"Type":"Fail","Error":"TooBig"},"S":{"Type":"Succeed"}}}`,
			`[1,2,3]`, "", "States.ExceedToleratedFailureThreshold"},
		{"failures within ToleratedFailurePercentage",
			`"ToleratedFailurePercentage":50,"ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$","NumericGreaterThan":1,"Next":"F"}],"Default":"S"},"F":{"Type":"Fail","Error":"TooBig","Cause":"c"},"S":{"Type":"Succeed"}}}`,
			`[1,2,3,0]`, `[1,{"Error":"TooBig","Cause":"c"},{"Error":"TooBig","Cause":"c"},0]`, ""},
		{"failures over ToleratedFailurePercentagePath",
			`"ItemsPath":"$.xs","ToleratedFailurePercentagePath":"$.pct","ItemProcessor":{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$","NumericGreaterThan":1,"Next":"F"}],"Default":"S"},"F":{"Type":"Fail","Error":"TooBig"},"S":{"Type":"Succeed"}}}`,
			`{"xs":[1,2,3,0],"pct":25}`, "", "States.ExceedToleratedFailureThreshold"},
		{"Catch on the whole",
			`"ItemProcessor":{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Boom","Cause":"bad"}}},"Catch":[{"ErrorEquals":["Boom"],"Next":"Caught"}]`,
			`[1]`, `{"Error":"Boom","Cause":"bad"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := `{"StartAt":"Map","States":{"Map":{"Type":"Map",` + tc.fields + `,"End":true},"Caught":{"Type":"Pass","End":true}}}`
			if !strings.Contains(tc.fields, "Caught") {
				def = `{"StartAt":"Map","States":{"Map":{"Type":"Map",` + tc.fields + `,"End":true}}}`
			}
			r := runDef(t, def, nil, tc.input)
			if tc.wantErr != "" {
				wantFailed(t, r, tc.wantErr, "")
				return
			}
			wantSucceeded(t, r, tc.wantOut)
		})
	}
}

// concurrency is a task that records the highest number of invocations
// running at once; each waits until limit are running or all have started.
type concurrency struct {
	mu             sync.Mutex
	running, peak  int
	started, total int
	limit          int
	cond           *sync.Cond
}

func newConcurrency(limit, total int) *concurrency {
	c := &concurrency{limit: limit, total: total}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *concurrency) invoke(_ context.Context, _ int, params json.RawMessage) (json.RawMessage, error) {
	c.mu.Lock()
	c.running++
	c.started++
	if c.running > c.peak {
		c.peak = c.running
	}
	c.cond.Broadcast()
	for c.running < c.limit && c.started < c.total {
		c.cond.Wait()
	}
	c.running--
	c.cond.Broadcast()
	c.mu.Unlock()
	return params, nil
}

// TestMapMaxConcurrency: MaxConcurrency (or MaxConcurrencyPath) bounds the
// iterations running at once, and results stay in item order.
func TestMapMaxConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field string
		limit int
	}{
		{"MaxConcurrency 1", `"MaxConcurrency":1`, 1},
		{"MaxConcurrency 2", `"MaxConcurrency":2`, 2},
		{"MaxConcurrencyPath 3", `"MaxConcurrencyPath":"$.limit"`, 3},
		// Step Functions accepts a numeric string there too.
		{"MaxConcurrencyPath to a numeric string", `"MaxConcurrencyPath":"$.limitText"`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConcurrency(tc.limit, 6)
			inv := newInvoker(map[string]invokeFunc{"r": c.invoke})
			def := `{"StartAt":"Map","States":{"Map":{"Type":"Map","ItemsPath":"$.xs",` + tc.field + `,
			  "ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"r","End":true}}},"End":true}}}`
			r := runDef(t, def, inv, `{"limit":3,"limitText":"2","xs":[0,1,2,3,4,5]}`)
			wantSucceeded(t, r, `[0,1,2,3,4,5]`)
			if c.peak != tc.limit {
				t.Fatalf("peak concurrency %d, want %d", c.peak, tc.limit)
			}
		})
	}
}
