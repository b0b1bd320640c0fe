package sfnlocal

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

var (
	uuidPattern      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	eventTimePattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
)

// envelopeKeys and detailKeys are the members of a status change event.
var (
	envelopeKeys = []string{"account", "detail", "detail-type", "id", "region", "resources", "source", "time", "version"}
	detailKeys   = []string{
		"cause", "error", "executionArn", "input", "inputDetails", "name", "output", "outputDetails",
		"redriveCount", "redriveDate", "redriveStatus", "redriveStatusReason",
		"startDate", "stateMachineArn", "status", "stopDate",
	}
)

// anyCause accepts the cause the engine reports, whatever its wording.
type anyCause struct{}

func TestStatusChangeEvents(t *testing.T) {
	env := newTestEnv(t, map[string]string{
		"Pass": passMachine, "Fail": failMachine, "Block": blockMachine, "Timeout": timeoutMachine,
	}, nil)
	ctx := testContext(t)

	tests := []struct {
		name    string
		machine string
		input   string
		// act runs the execution to its end.
		act        func(t *testing.T, arn string)
		wantStatus string
		wantOutput any // nil: null
		wantError  any
		wantCause  any
	}{
		{
			name: "succeeded", machine: "Pass", input: `{"amount":1}`,
			wantStatus: "SUCCEEDED", wantOutput: `{"amount":1,"mark":"marked"}`,
		},
		{
			name: "failed", machine: "Fail", input: `{}`,
			wantStatus: "FAILED", wantError: "Transfer.Rejected", wantCause: "limit exceeded",
		},
		{
			name: "aborted", machine: "Block", input: `{}`,
			act: func(t *testing.T, arn string) {
				env.blocker.awaitStart(t)
				if _, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Error: aws.String("Ops.Stop"), Cause: aws.String("stopped by operator")}); err != nil {
					t.Fatalf("StopExecution: %v", err)
				}
			},
			wantStatus: "ABORTED", wantError: "Ops.Stop", wantCause: "stopped by operator",
		},
		{
			// TimeoutSeconds 1 at the test time scale; the task blocks.
			name: "timed out", machine: "Timeout", input: `{}`,
			wantStatus: "TIMED_OUT", wantError: "States.Timeout", wantCause: anyCause{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arn := env.start(t, tc.machine, "", tc.input)
			if tc.act != nil {
				tc.act(t, arn)
			}
			info := env.wait(t, arn)
			if info.Status != tc.wantStatus {
				t.Fatalf("status = %s, want %s", info.Status, tc.wantStatus)
			}
			events := env.pub.eventsFor(t, arn)
			if len(events) != 2 {
				t.Fatalf("%d events published, want RUNNING and %s", len(events), tc.wantStatus)
			}
			checkStatusEvent(t, events[0], info, "RUNNING")
			ev := checkStatusEvent(t, events[1], info, tc.wantStatus)
			detail := ev["detail"].(map[string]any)
			if detail["input"] != tc.input {
				t.Errorf("input = %#v, want %s", detail["input"], tc.input)
			}
			if tc.wantOutput == nil {
				if detail["output"] != nil || detail["outputDetails"] != nil {
					t.Errorf("output %#v outputDetails %#v, want null", detail["output"], detail["outputDetails"])
				}
			} else {
				out, _ := detail["output"].(string)
				assertJSONEqual(t, "output", out, tc.wantOutput.(string))
				if od, _ := detail["outputDetails"].(map[string]any); od["included"] != true {
					t.Errorf("outputDetails = %#v", detail["outputDetails"])
				}
			}
			wantCause := tc.wantCause
			if _, ok := wantCause.(anyCause); ok {
				// The engine words the cause; it is reported as given.
				wantCause = any(nil)
				if info.Cause != "" {
					wantCause = info.Cause
				}
			}
			if detail["error"] != tc.wantError || detail["cause"] != wantCause {
				t.Errorf("error %#v cause %#v, want %#v %#v", detail["error"], detail["cause"], tc.wantError, tc.wantCause)
			}
			if want := float64(info.StopDate.UnixMilli()); detail["stopDate"] != want {
				t.Errorf("stopDate = %#v, want %v (epoch ms)", detail["stopDate"], want)
			}
			if ev["time"] != info.StopDate.UTC().Format("2006-01-02T15:04:05Z") {
				t.Errorf("time = %v, want the stop date %v", ev["time"], info.StopDate.UTC())
			}
		})
	}
}

// checkStatusEvent checks the parts of a status change event common to
// every status, and returns it.
func checkStatusEvent(t *testing.T, ev map[string]any, info ExecutionInfo, status string) map[string]any {
	t.Helper()
	if got := sortedKeys(ev); !slices.Equal(got, envelopeKeys) {
		t.Errorf("envelope members = %v, want %v", got, envelopeKeys)
	}
	fixed := map[string]any{
		"version": "0", "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"account": "123456789012", "region": "us-east-1",
	}
	for k, want := range fixed {
		if ev[k] != want {
			t.Errorf("%s = %#v, want %#v", k, ev[k], want)
		}
	}
	if id, _ := ev["id"].(string); !uuidPattern.MatchString(id) {
		t.Errorf("id = %#v, want a UUID", ev["id"])
	}
	if tm, _ := ev["time"].(string); !eventTimePattern.MatchString(tm) {
		t.Errorf("time = %#v, want yyyy-mm-ddThh:mm:ssZ", ev["time"])
	}
	if res, _ := ev["resources"].([]any); len(res) != 1 || res[0] != info.ExecutionARN {
		t.Errorf("resources = %#v, want [%s]", ev["resources"], info.ExecutionARN)
	}
	detail, ok := ev["detail"].(map[string]any)
	if !ok {
		t.Fatalf("detail = %#v", ev["detail"])
	}
	if got := sortedKeys(detail); !slices.Equal(got, detailKeys) {
		t.Errorf("detail members = %v, want %v", got, detailKeys)
	}
	want := map[string]any{
		"executionArn": info.ExecutionARN, "stateMachineArn": info.StateMachineARN, "name": info.Name,
		"status": status, "startDate": float64(info.StartDate.UnixMilli()), "redriveCount": float64(0),
	}
	for k, w := range want {
		if detail[k] != w {
			t.Errorf("detail.%s = %#v, want %#v", k, detail[k], w)
		}
	}
	if d, _ := detail["inputDetails"].(map[string]any); d["included"] != true {
		t.Errorf("inputDetails = %#v", detail["inputDetails"])
	}
	wantRedrive := "NOT_REDRIVABLE"
	if status == "FAILED" || status == "ABORTED" || status == "TIMED_OUT" {
		wantRedrive = "REDRIVABLE"
	}
	if detail["redriveStatus"] != wantRedrive {
		t.Errorf("redriveStatus = %#v, want %s", detail["redriveStatus"], wantRedrive)
	}
	if status == "RUNNING" {
		for _, k := range []string{"stopDate", "output", "outputDetails", "error", "cause"} {
			if detail[k] != nil {
				t.Errorf("RUNNING event: %s = %#v, want null", k, detail[k])
			}
		}
	}
	return ev
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestPublishFailureDoesNotFailExecution(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine}, nil)
	env.pub.err = errors.New("event bus down")
	arn := env.start(t, "Pass", "", "")
	if info := env.wait(t, arn); info.Status != StatusSucceeded {
		t.Errorf("status = %s, want SUCCEEDED despite the publishing failure", info.Status)
	}
	if n := len(env.pub.eventsFor(t, arn)); n != 2 {
		t.Errorf("%d publish attempts, want 2", n)
	}
}

func TestStatusChangeEventTimes(t *testing.T) {
	start := time.Date(2024, 2, 29, 23, 59, 59, 999_000_000, time.UTC)
	srv := New(Config{Now: func() time.Time { return start }, Logger: quietLogger()})
	raw, err := srv.statusChangeEventJSON(ExecutionInfo{
		ExecutionARN: "arn:aws:states:us-east-1:123456789012:execution:M:e", StateMachineARN: "arn:aws:states:us-east-1:123456789012:stateMachine:M",
		Name: "e", Status: StatusSucceeded, StartDate: start, StopDate: start.Add(2 * time.Millisecond), Input: "{}", Output: `"ok"`,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"time":"2024-03-01T00:00:00Z"`, `"startDate":1709251199999`, `"stopDate":1709251200001`, `"output":"\"ok\""`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("event %s lacks %s", raw, want)
		}
	}
}
