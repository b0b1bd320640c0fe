package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"
)

func TestStartDescribeExecution(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine, "Block": blockMachine}, nil)
	ctx := testContext(t)

	tests := []struct {
		name       string
		machine    string
		input      *string
		wantInput  string
		wantOutput string
	}{
		{name: "explicit input", machine: "Pass", input: aws.String(`{"amount":10}`), wantInput: `{"amount":10}`, wantOutput: `{"amount":10,"mark":"marked"}`},
		{name: "omitted input is {}", machine: "Pass", wantInput: `{}`, wantOutput: `{"mark":"marked"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().Add(-time.Second)
			out, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN(tc.machine)), Input: tc.input})
			if err != nil {
				t.Fatalf("StartExecution: %v", err)
			}
			arn := aws.ToString(out.ExecutionArn)
			if !strings.HasPrefix(arn, "arn:aws:states:us-east-1:123456789012:execution:"+tc.machine+":") {
				t.Errorf("executionArn = %s, want the %s execution prefix", arn, tc.machine)
			}
			if out.StartDate == nil || out.StartDate.Before(before) {
				t.Errorf("startDate = %v, want about now", out.StartDate)
			}
			env.wait(t, arn)

			desc, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
			if err != nil {
				t.Fatalf("DescribeExecution: %v", err)
			}
			if desc.Status != types.ExecutionStatusSucceeded {
				t.Errorf("status = %s, want SUCCEEDED", desc.Status)
			}
			if got := aws.ToString(desc.Input); got != tc.wantInput {
				t.Errorf("input = %s, want %s", got, tc.wantInput)
			}
			assertJSONEqual(t, "output", aws.ToString(desc.Output), tc.wantOutput)
			if aws.ToString(desc.StateMachineArn) != env.smARN(tc.machine) {
				t.Errorf("stateMachineArn = %s", aws.ToString(desc.StateMachineArn))
			}
			if desc.StopDate == nil || desc.StopDate.Before(*desc.StartDate) {
				t.Errorf("stopDate = %v, startDate = %v", desc.StopDate, desc.StartDate)
			}
			if !desc.StartDate.Equal(*out.StartDate) {
				t.Errorf("described startDate %v != started %v", desc.StartDate, out.StartDate)
			}
			if desc.InputDetails == nil || !desc.InputDetails.Included || desc.OutputDetails == nil || !desc.OutputDetails.Included {
				t.Errorf("inputDetails/outputDetails = %+v / %+v, want included", desc.InputDetails, desc.OutputDetails)
			}
			// Unnamed executions get a UUID.
			name := aws.ToString(desc.Name)
			if len(name) != 36 || strings.Count(name, "-") != 4 || !strings.HasSuffix(arn, ":"+name) {
				t.Errorf("name = %q, want a UUID ending the ARN %s", name, arn)
			}
		})
	}

	t.Run("running execution has no stop date or output", func(t *testing.T) {
		arn := env.start(t, "Block", "running", `{"n":1}`)
		env.blocker.awaitStart(t)
		desc, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
		if err != nil {
			t.Fatalf("DescribeExecution: %v", err)
		}
		if desc.Status != types.ExecutionStatusRunning || desc.StopDate != nil || desc.Output != nil {
			t.Errorf("status %s stopDate %v output %v, want RUNNING without stop date or output", desc.Status, desc.StopDate, desc.Output)
		}
		env.blocker.unblock()
		if info := env.wait(t, arn); info.Status != StatusSucceeded {
			t.Errorf("after release status = %s, want SUCCEEDED", info.Status)
		}
	})

	t.Run("metadata only", func(t *testing.T) {
		arn := env.start(t, "Pass", "metadata-only", `{"secret":1}`)
		env.wait(t, arn)
		desc, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn), IncludedData: types.IncludedDataMetadataOnly})
		if err != nil {
			t.Fatalf("DescribeExecution: %v", err)
		}
		if desc.Input != nil || desc.Output != nil || desc.Status != types.ExecutionStatusSucceeded {
			t.Errorf("input %v output %v status %s, want no data and SUCCEEDED", desc.Input, desc.Output, desc.Status)
		}
	})
}

func TestStopExecution(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Block": blockMachine, "Pass": passMachine}, nil)
	ctx := testContext(t)

	tests := []struct {
		name      string
		error     *string
		cause     *string
		wantError string
		wantCause string
	}{
		{name: "with error and cause", error: aws.String("Operator.Cancelled"), cause: aws.String("customer asked"), wantError: "Operator.Cancelled", wantCause: "customer asked"},
		{name: "without error and cause"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arn := env.start(t, "Block", "", "")
			env.blocker.awaitStart(t)
			out, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Error: tc.error, Cause: tc.cause})
			if err != nil {
				t.Fatalf("StopExecution: %v", err)
			}
			if out.StopDate == nil {
				t.Fatal("StopExecution returned no stopDate")
			}
			// The status is ABORTED as soon as StopExecution returns.
			desc, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
			if err != nil {
				t.Fatalf("DescribeExecution: %v", err)
			}
			if desc.Status != types.ExecutionStatusAborted || aws.ToString(desc.Error) != tc.wantError || aws.ToString(desc.Cause) != tc.wantCause {
				t.Errorf("status %s error %q cause %q, want ABORTED %q %q", desc.Status, aws.ToString(desc.Error), aws.ToString(desc.Cause), tc.wantError, tc.wantCause)
			}
			if desc.StopDate == nil || !desc.StopDate.Equal(*out.StopDate) {
				t.Errorf("described stopDate %v != returned %v", desc.StopDate, out.StopDate)
			}
			info := env.wait(t, arn)
			if info.Status != StatusAborted {
				t.Errorf("after the run ended status = %s, want ABORTED", info.Status)
			}
			events := history(t, env, arn, false)
			last := events[len(events)-1]
			if last.Type != types.HistoryEventTypeExecutionAborted || last.ExecutionAbortedEventDetails == nil {
				t.Fatalf("last event = %s %+v, want ExecutionAborted with details", last.Type, last.ExecutionAbortedEventDetails)
			}
			if got := last.ExecutionAbortedEventDetails; aws.ToString(got.Error) != tc.wantError || aws.ToString(got.Cause) != tc.wantCause {
				t.Errorf("ExecutionAborted details = %q %q, want %q %q", aws.ToString(got.Error), aws.ToString(got.Cause), tc.wantError, tc.wantCause)
			}
		})
	}

	t.Run("closed execution is left as is", func(t *testing.T) {
		arn := env.start(t, "Pass", "", "")
		info := env.wait(t, arn)
		out, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(arn), Error: aws.String("Late")})
		if err != nil {
			t.Fatalf("StopExecution: %v", err)
		}
		if !out.StopDate.Equal(info.StopDate.Truncate(time.Millisecond)) {
			t.Errorf("stopDate = %v, want the original %v", out.StopDate, info.StopDate)
		}
		if after, _ := env.srv.Describe(arn); after.Status != StatusSucceeded || after.Error != "" {
			t.Errorf("after stop: %s %q, want SUCCEEDED without error", after.Status, after.Error)
		}
	})
}

func TestIdempotentStart(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Block": blockMachine}, nil)
	ctx := testContext(t)
	start := func(name, input string) (*sfn.StartExecutionOutput, error) {
		return env.client.StartExecution(ctx, &sfn.StartExecutionInput{
			StateMachineArn: aws.String(env.smARN("Block")), Name: aws.String(name), Input: aws.String(input),
		})
	}

	first, err := start("transfer-1", `{"amount":5}`)
	if err != nil {
		t.Fatalf("first start: %v", err)
	}
	env.blocker.awaitStart(t)

	steps := []struct {
		name      string
		input     string
		wantSame  bool // same executionArn and startDate
		wantExist bool // ExecutionAlreadyExists
	}{
		{name: "same name and input while running", input: `{"amount":5}`, wantSame: true},
		{name: "same name, different input while running", input: `{"amount":6}`, wantExist: true},
		{name: "same name, semantically equal but different input text", input: `{ "amount": 5 }`, wantExist: true},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			out, err := start("transfer-1", tc.input)
			checkStart(t, first, out, err, tc.wantSame, tc.wantExist)
		})
	}
	if calls := len(env.lambda.recorded()); calls != 1 {
		t.Errorf("the function ran %d times, want once", calls)
	}

	env.blocker.unblock()
	env.wait(t, aws.ToString(first.ExecutionArn))
	t.Run("same name and input once closed", func(t *testing.T) {
		out, err := start("transfer-1", `{"amount":5}`)
		checkStart(t, first, out, err, false, true)
	})
}

func checkStart(t *testing.T, first, out *sfn.StartExecutionOutput, err error, wantSame, wantExist bool) {
	t.Helper()
	if wantExist {
		if !errorAs[*types.ExecutionAlreadyExists](err) {
			t.Fatalf("err = %v, want *types.ExecutionAlreadyExists", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if wantSame && (aws.ToString(out.ExecutionArn) != aws.ToString(first.ExecutionArn) || !out.StartDate.Equal(*first.StartDate)) {
		t.Errorf("got %s at %v, want the original %s at %v", aws.ToString(out.ExecutionArn), out.StartDate, aws.ToString(first.ExecutionArn), first.StartDate)
	}
}

func TestExecutionNames(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine}, nil)
	ctx := testContext(t)

	tests := []struct {
		name    string
		exec    string
		invalid bool
	}{
		{name: "80 characters", exec: strings.Repeat("a", 80)},
		{name: "80 multibyte characters", exec: strings.Repeat("ü", 80)},
		{name: "letters digits dash underscore", exec: "Transfer_2024-01"},
		{name: "dot at plus equals", exec: "a.b@c+d=e"},
		{name: "81 characters", exec: strings.Repeat("a", 81), invalid: true},
		{name: "empty", exec: "", invalid: true},
		{name: "space", exec: "a b", invalid: true},
		{name: "tab", exec: "a\tb", invalid: true},
		{name: "no-break space", exec: "a\u00a0b", invalid: true},
		{name: "NUL", exec: "a\x00b", invalid: true},
		{name: "U+001F", exec: "a\x1fb", invalid: true},
		{name: "DEL", exec: "a\x7fb", invalid: true},
		{name: "U+009F", exec: "a\u009fb", invalid: true},
	}
	for _, c := range "<>{}[]?*\"#%\\^|~`$&,;:/" {
		tests = append(tests, struct {
			name    string
			exec    string
			invalid bool
		}{name: "character " + string(c), exec: "a" + string(c) + "b", invalid: true})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN("Pass")), Name: aws.String(tc.exec)})
			if tc.invalid {
				if !errorAs[*types.InvalidName](err) {
					t.Fatalf("err = %v, want *types.InvalidName", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("StartExecution: %v", err)
			}
			if want := env.srv.executionARN("Pass", tc.exec); aws.ToString(out.ExecutionArn) != want {
				t.Errorf("executionArn = %s, want %s", aws.ToString(out.ExecutionArn), want)
			}
			env.wait(t, aws.ToString(out.ExecutionArn))
		})
	}
}

func TestAPIErrors(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine}, nil)
	ctx := testContext(t)
	done := env.start(t, "Pass", "done", "")
	env.wait(t, done)
	missingSM := "arn:aws:states:us-east-1:123456789012:stateMachine:Missing"
	missingExec := "arn:aws:states:us-east-1:123456789012:execution:Pass:missing"

	tests := []struct {
		name  string
		call  func() error
		check func(error) bool
		want  string
	}{
		{
			name: "start on unknown state machine",
			call: func() error {
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(missingSM)})
				return err
			},
			check: errorAs[*types.StateMachineDoesNotExist], want: "StateMachineDoesNotExist",
		},
		{
			name: "start on state machine of another account",
			call: func() error {
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("arn:aws:states:us-east-1:999999999999:stateMachine:Pass")})
				return err
			},
			check: errorAs[*types.StateMachineDoesNotExist], want: "StateMachineDoesNotExist",
		},
		{
			name: "start with malformed ARN",
			call: func() error {
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String("Pass")})
				return err
			},
			check: errorAs[*types.InvalidArn], want: "InvalidArn",
		},
		{
			name: "start with an execution ARN",
			call: func() error {
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(done)})
				return err
			},
			check: errorAs[*types.InvalidArn], want: "InvalidArn",
		},
		{
			name: "input is not JSON",
			call: func() error {
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN("Pass")), Input: aws.String(`{"amount":`)})
				return err
			},
			check: errorAs[*types.InvalidExecutionInput], want: "InvalidExecutionInput",
		},
		{
			name: "input over 256 KiB",
			call: func() error {
				big := `"` + strings.Repeat("x", maxInputBytes-1) + `"`
				_, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN("Pass")), Input: aws.String(big)})
				return err
			},
			check: errorAs[*types.InvalidExecutionInput], want: "InvalidExecutionInput",
		},
		{
			name: "describe unknown execution",
			call: func() error {
				_, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(missingExec)})
				return err
			},
			check: errorAs[*types.ExecutionDoesNotExist], want: "ExecutionDoesNotExist",
		},
		{
			name: "describe with a state machine ARN",
			call: func() error {
				_, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(env.smARN("Pass"))})
				return err
			},
			check: errorAs[*types.InvalidArn], want: "InvalidArn",
		},
		{
			name: "stop unknown execution",
			call: func() error {
				_, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(missingExec)})
				return err
			},
			check: errorAs[*types.ExecutionDoesNotExist], want: "ExecutionDoesNotExist",
		},
		{
			name: "stop with an error over 256 characters",
			call: func() error {
				_, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(done), Error: aws.String(strings.Repeat("e", 257))})
				return err
			},
			check: errorAs[*types.ValidationException], want: "ValidationException",
		},
		{
			name: "history of unknown execution",
			call: func() error {
				_, err := env.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(missingExec)})
				return err
			},
			check: errorAs[*types.ExecutionDoesNotExist], want: "ExecutionDoesNotExist",
		},
		{
			name: "history with a garbage token",
			call: func() error {
				_, err := env.client.GetExecutionHistory(ctx, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(done), NextToken: aws.String("not-a-token")})
				return err
			},
			check: errorAs[*types.InvalidToken], want: "InvalidToken",
		},
		{
			name: "list with unknown status filter",
			call: func() error {
				_, err := env.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(env.smARN("Pass")), StatusFilter: "DONE"})
				return err
			},
			check: errorAs[*types.ValidationException], want: "ValidationException",
		},
		{
			name: "list of unknown state machine",
			call: func() error {
				_, err := env.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(missingSM)})
				return err
			},
			check: errorAs[*types.StateMachineDoesNotExist], want: "StateMachineDoesNotExist",
		},
		{
			name:  "list without state machine",
			call:  func() error { _, err := env.client.ListExecutions(ctx, &sfn.ListExecutionsInput{}); return err },
			check: errorAs[*types.ValidationException], want: "ValidationException",
		},
		{
			name: "list with a too large page",
			call: func() error {
				_, err := env.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(env.smARN("Pass")), MaxResults: 1001})
				return err
			},
			check: errorAs[*types.ValidationException], want: "ValidationException",
		},
		{
			name: "describe unknown state machine",
			call: func() error {
				_, err := env.client.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(missingSM)})
				return err
			},
			check: errorAs[*types.StateMachineDoesNotExist], want: "StateMachineDoesNotExist",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !tc.check(err) {
				t.Fatalf("err = %v (%T), want %s", err, err, tc.want)
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.want || apiErr.ErrorMessage() == "" {
				t.Errorf("err = %v, want API error code %s with a message", err, tc.want)
			}
		})
	}
}

func TestRawProtocol(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine}, nil)

	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		wantStatus int
		wantType   string
		wantKeys   []string // for successes: response members
	}{
		{name: "unknown operation", method: http.MethodPost, target: "AWSStepFunctions.CreateStateMachine", body: `{}`, wantStatus: 400, wantType: "UnknownOperationException"},
		{name: "other service", method: http.MethodPost, target: "DynamoDB_20120810.GetItem", body: `{}`, wantStatus: 400, wantType: "UnknownOperationException"},
		{name: "no target", method: http.MethodPost, body: `{}`, wantStatus: 400, wantType: "UnknownOperationException"},
		{name: "GET", method: http.MethodGet, target: "AWSStepFunctions.ListExecutions", wantStatus: 405, wantType: "UnknownOperationException"},
		{name: "malformed body", method: http.MethodPost, target: "AWSStepFunctions.StartExecution", body: `{"stateMachineArn":`, wantStatus: 400, wantType: "SerializationException"},
		{name: "missing stateMachineArn", method: http.MethodPost, target: "AWSStepFunctions.StartExecution", body: `{}`, wantStatus: 400, wantType: "ValidationException"},
		{name: "start", method: http.MethodPost, target: "AWSStepFunctions.StartExecution", body: `{"stateMachineArn":"` + env.smARN("Pass") + `","name":"raw"}`, wantStatus: 200, wantKeys: []string{"executionArn", "startDate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(testContext(t), tc.method, env.url+"/", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			if tc.target != "" {
				req.Header.Set("X-Amz-Target", tc.target)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
				t.Errorf("Content-Type = %q", ct)
			}
			if resp.Header.Get("X-Amzn-Requestid") == "" {
				t.Error("no x-amzn-RequestId header")
			}
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("body is not JSON: %s", body)
			}
			if tc.wantType != "" {
				if doc["__type"] != tc.wantType || doc["message"] == "" || doc["message"] == nil {
					t.Errorf("body = %s, want __type %s and a message", body, tc.wantType)
				}
				return
			}
			for _, k := range tc.wantKeys {
				if _, ok := doc[k]; !ok {
					t.Errorf("response %s lacks %s", body, k)
				}
			}
			// Timestamps are epoch seconds (a JSON number), not strings.
			if _, ok := doc["startDate"].(float64); !ok {
				t.Errorf("startDate = %#v, want a number of seconds", doc["startDate"])
			}
			env.wait(t, doc["executionArn"].(string))
		})
	}
}

func TestEpochSeconds(t *testing.T) {
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{name: "milliseconds", t: time.UnixMilli(1551225146847), want: "1551225146.847"},
		{name: "whole seconds", t: time.Unix(1551225146, 0), want: "1551225146"},
		{name: "sub-millisecond dropped", t: time.Unix(1551225146, 123456789), want: "1551225146.123"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(epochSeconds(tc.t))
			if err != nil || string(got) != tc.want {
				t.Errorf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestGetExecutionHistory(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Transfer": transferMachine}, nil)
	env.lambda.handle("debit", func(_ context.Context, payload []byte) ([]byte, *FunctionError, error) {
		return []byte(`{"status":"APPROVED"}`), nil, nil
	})
	arn := env.start(t, "Transfer", "history", `{"amount":10}`)
	env.wait(t, arn)
	all := history(t, env, arn, false)

	t.Run("event shapes", func(t *testing.T) {
		if all[0].Type != types.HistoryEventTypeExecutionStarted || all[len(all)-1].Type != types.HistoryEventTypeExecutionSucceeded {
			t.Fatalf("history runs %s .. %s, want ExecutionStarted .. ExecutionSucceeded", all[0].Type, all[len(all)-1].Type)
		}
		for i, ev := range all {
			if ev.Id != int64(i+1) || ev.PreviousEventId != int64(i) || ev.Timestamp == nil || ev.Timestamp.IsZero() {
				t.Errorf("event %d: id %d previous %d timestamp %v", i, ev.Id, ev.PreviousEventId, ev.Timestamp)
			}
		}
		started := all[0].ExecutionStartedEventDetails
		if started == nil || aws.ToString(started.Input) != `{"amount":10}` || aws.ToString(started.RoleArn) == "" {
			t.Errorf("executionStartedEventDetails = %+v", started)
		}
		sched := findEvent(t, all, types.HistoryEventTypeTaskScheduled).TaskScheduledEventDetails
		if sched == nil || aws.ToString(sched.ResourceType) != "lambda" || aws.ToString(sched.Resource) != "invoke" || aws.ToString(sched.Region) != "us-east-1" {
			t.Fatalf("taskScheduledEventDetails = %+v, want lambda / invoke / us-east-1", sched)
		}
		var params map[string]any
		if err := json.Unmarshal([]byte(aws.ToString(sched.Parameters)), &params); err != nil || params["FunctionName"] != "arn:aws:lambda:us-east-1:123456789012:function:debit" {
			t.Errorf("parameters = %s", aws.ToString(sched.Parameters))
		}
		succ := findEvent(t, all, types.HistoryEventTypeTaskSucceeded).TaskSucceededEventDetails
		if succ == nil || aws.ToString(succ.ResourceType) != "lambda" || !strings.Contains(aws.ToString(succ.Output), `"APPROVED"`) {
			t.Errorf("taskSucceededEventDetails = %+v", succ)
		}
		entered := findEvent(t, all, types.HistoryEventTypePassStateEntered).StateEnteredEventDetails
		if entered == nil || aws.ToString(entered.Name) != "Prepare" || aws.ToString(entered.Input) != `{"amount":10}` {
			t.Errorf("stateEnteredEventDetails = %+v", entered)
		}
		exited := findEvent(t, all, types.HistoryEventTypePassStateExited).StateExitedEventDetails
		if exited == nil || aws.ToString(exited.Name) != "Prepare" || !strings.Contains(aws.ToString(exited.Output), `"channel"`) {
			t.Errorf("stateExitedEventDetails = %+v", exited)
		}
		done := all[len(all)-1].ExecutionSucceededEventDetails
		if done == nil || !strings.Contains(aws.ToString(done.Output), `"debit"`) {
			t.Errorf("executionSucceededEventDetails = %+v", done)
		}
	})

	t.Run("pages", func(t *testing.T) {
		tests := []struct {
			name    string
			reverse bool
			page    int32
		}{
			{name: "forward by 2", page: 2},
			{name: "reverse by 3", reverse: true, page: 3},
			{name: "forward, one page", page: 1000},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var ids []int64
				var token *string
				pages := 0
				for {
					out, err := env.client.GetExecutionHistory(testContext(t), &sfn.GetExecutionHistoryInput{
						ExecutionArn: aws.String(arn), MaxResults: tc.page, ReverseOrder: tc.reverse, NextToken: token,
					})
					if err != nil {
						t.Fatalf("GetExecutionHistory: %v", err)
					}
					if len(out.Events) > int(tc.page) {
						t.Fatalf("page of %d events, max %d", len(out.Events), tc.page)
					}
					for _, ev := range out.Events {
						ids = append(ids, ev.Id)
					}
					pages++
					if token = out.NextToken; token == nil {
						break
					}
				}
				want := make([]int64, len(all))
				for i := range all {
					want[i] = int64(i + 1)
				}
				if tc.reverse {
					slices.Reverse(want)
				}
				if !slices.Equal(ids, want) {
					t.Errorf("ids = %v, want %v", ids, want)
				}
				if wantPages := (len(all) + int(tc.page) - 1) / int(tc.page); pages != wantPages {
					t.Errorf("%d pages, want %d", pages, wantPages)
				}
			})
		}
	})

	t.Run("token of another ordering is rejected", func(t *testing.T) {
		out, err := env.client.GetExecutionHistory(testContext(t), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1})
		if err != nil || out.NextToken == nil {
			t.Fatalf("first page: %v, token %v", err, out.NextToken)
		}
		_, err = env.client.GetExecutionHistory(testContext(t), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), MaxResults: 1, ReverseOrder: true, NextToken: out.NextToken})
		if !errorAs[*types.InvalidToken](err) {
			t.Errorf("err = %v, want *types.InvalidToken", err)
		}
	})

	t.Run("without execution data", func(t *testing.T) {
		out, err := env.client.GetExecutionHistory(testContext(t), &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), IncludeExecutionData: aws.Bool(false)})
		if err != nil {
			t.Fatal(err)
		}
		if d := out.Events[0].ExecutionStartedEventDetails; d == nil || d.Input != nil {
			t.Errorf("executionStartedEventDetails = %+v, want no input", d)
		}
	})
}

// history returns the full history of an execution.
func history(t *testing.T, env *testEnv, arn string, reverse bool) []types.HistoryEvent {
	t.Helper()
	var events []types.HistoryEvent
	p := sfn.NewGetExecutionHistoryPaginator(env.client, &sfn.GetExecutionHistoryInput{ExecutionArn: aws.String(arn), ReverseOrder: reverse})
	for p.HasMorePages() {
		out, err := p.NextPage(testContext(t))
		if err != nil {
			t.Fatalf("GetExecutionHistory: %v", err)
		}
		events = append(events, out.Events...)
	}
	if len(events) == 0 {
		t.Fatal("empty history")
	}
	return events
}

func findEvent(t *testing.T, events []types.HistoryEvent, typ types.HistoryEventType) types.HistoryEvent {
	t.Helper()
	for _, ev := range events {
		if ev.Type == typ {
			return ev
		}
	}
	t.Fatalf("no %s event in history", typ)
	return types.HistoryEvent{}
}

func TestListExecutions(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine, "Block": blockMachine}, nil)
	ctx := testContext(t)
	// Executions whose input asks to hold stay running until released.
	env.lambda.handle("block", func(ctx context.Context, payload []byte) ([]byte, *FunctionError, error) {
		if strings.Contains(string(payload), "hold") {
			return env.blocker.handler(ctx, payload)
		}
		return []byte(`{}`), nil, nil
	})
	for _, name := range []string{"one", "two", "three"} {
		env.wait(t, env.start(t, "Block", name, ""))
	}
	running := env.start(t, "Block", "four", `{"hold":true}`)
	env.blocker.awaitStart(t)
	aborted := env.start(t, "Block", "five", `{"hold":true}`)
	env.blocker.awaitStart(t)
	if _, err := env.client.StopExecution(ctx, &sfn.StopExecutionInput{ExecutionArn: aws.String(aborted)}); err != nil {
		t.Fatalf("StopExecution: %v", err)
	}
	env.wait(t, aborted)

	tests := []struct {
		name    string
		machine string
		status  types.ExecutionStatus
		page    int32
		want    []string // names, newest first
	}{
		{name: "all", machine: "Block", want: []string{"five", "four", "three", "two", "one"}},
		{name: "running", machine: "Block", status: types.ExecutionStatusRunning, want: []string{"four"}},
		{name: "succeeded", machine: "Block", status: types.ExecutionStatusSucceeded, want: []string{"three", "two", "one"}},
		{name: "aborted", machine: "Block", status: types.ExecutionStatusAborted, want: []string{"five"}},
		{name: "failed", machine: "Block", status: types.ExecutionStatusFailed, want: nil},
		{name: "pages of 2", machine: "Block", page: 2, want: []string{"five", "four", "three", "two", "one"}},
		{name: "succeeded, pages of 1", machine: "Block", status: types.ExecutionStatusSucceeded, page: 1, want: []string{"three", "two", "one"}},
		{name: "other machine", machine: "Pass", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := sfn.NewListExecutionsPaginator(env.client, &sfn.ListExecutionsInput{
				StateMachineArn: aws.String(env.smARN(tc.machine)), StatusFilter: tc.status, MaxResults: tc.page,
			})
			var names []string
			pages := 0
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatalf("ListExecutions: %v", err)
				}
				pages++
				if tc.page > 0 && len(out.Executions) > int(tc.page) {
					t.Fatalf("page of %d, max %d", len(out.Executions), tc.page)
				}
				for _, item := range out.Executions {
					names = append(names, aws.ToString(item.Name))
					if aws.ToString(item.StateMachineArn) != env.smARN(tc.machine) || item.StartDate == nil {
						t.Errorf("item %+v", item)
					}
					if (item.Status == types.ExecutionStatusRunning) != (item.StopDate == nil) {
						t.Errorf("%s: status %s with stopDate %v", aws.ToString(item.Name), item.Status, item.StopDate)
					}
					if aws.ToString(item.Name) == "four" && aws.ToString(item.ExecutionArn) != running {
						t.Errorf("executionArn = %s, want %s", aws.ToString(item.ExecutionArn), running)
					}
				}
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("names = %v, want %v", names, tc.want)
			}
			if tc.page > 0 && len(tc.want) > 0 {
				if wantPages := (len(tc.want) + int(tc.page) - 1) / int(tc.page); pages != wantPages {
					t.Errorf("%d pages, want %d", pages, wantPages)
				}
			}
		})
	}
}

func TestDescribeStateMachine(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Pass": passMachine}, nil)
	out, err := env.client.DescribeStateMachine(testContext(t), &sfn.DescribeStateMachineInput{StateMachineArn: aws.String(env.smARN("Pass"))})
	if err != nil {
		t.Fatalf("DescribeStateMachine: %v", err)
	}
	checks := []struct {
		name      string
		got, want string
	}{
		{"arn", aws.ToString(out.StateMachineArn), "arn:aws:states:us-east-1:123456789012:stateMachine:Pass"},
		{"name", aws.ToString(out.Name), "Pass"},
		{"definition", aws.ToString(out.Definition), passMachine},
		{"type", string(out.Type), "STANDARD"},
		{"status", string(out.Status), "ACTIVE"},
		{"role", aws.ToString(out.RoleArn), "arn:aws:iam::123456789012:role/PassRole"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
			}
		})
	}
	if out.CreationDate == nil || out.CreationDate.IsZero() {
		t.Error("no creationDate")
	}
}
