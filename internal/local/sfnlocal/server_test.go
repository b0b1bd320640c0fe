package sfnlocal

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"
)

func TestAddStateMachine(t *testing.T) {
	tests := []struct {
		name    string
		sm      StateMachine
		wantARN string
		wantErr []string // substrings of the error; nil for success
	}{
		{name: "by name", sm: StateMachine{Name: "Transfer", Definition: []byte(passMachine)}, wantARN: "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"},
		{
			name:    "by ARN",
			sm:      StateMachine{ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:Refund", Definition: []byte(passMachine)},
			wantARN: "arn:aws:states:us-east-1:123456789012:stateMachine:Refund",
		},
		{
			name:    "definition error names the file",
			sm:      StateMachine{Name: "Broken", FileName: "statemachine/broken.asl.json", Definition: []byte(`{"StartAt":"Nowhere","States":{}}`)},
			wantErr: []string{"statemachine/broken.asl.json"},
		},
		{
			name:    "not JSON names the file",
			sm:      StateMachine{Name: "Garbage", FileName: "statemachine/garbage.asl.json", Definition: []byte(`{`)},
			wantErr: []string{"statemachine/garbage.asl.json"},
		},
		{
			name: "unsupported resource",
			sm: StateMachine{Name: "Callback", FileName: "statemachine/callback.asl.json", Definition: []byte(`{"StartAt":"Wait","States":{"Wait":{
				"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"f"},"End":true}}}`)},
			wantErr: []string{"statemachine/callback.asl.json", "lambda:invoke.waitForTaskToken"},
		},
		{name: "invalid name", sm: StateMachine{Name: "a b", Definition: []byte(passMachine)}, wantErr: []string{"white space"}},
		{name: "no name", sm: StateMachine{Definition: []byte(passMachine)}, wantErr: []string{"1 to 80 characters"}},
		{
			name:    "ARN of another region",
			sm:      StateMachine{ARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:Other", Definition: []byte(passMachine)},
			wantErr: []string{"not in region us-east-1"},
		},
		{
			name:    "name and ARN disagree",
			sm:      StateMachine{Name: "One", ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:Two", Definition: []byte(passMachine)},
			wantErr: []string{"names state machine Two"},
		},
		{name: "malformed ARN", sm: StateMachine{ARN: "Transfer", Definition: []byte(passMachine)}, wantErr: []string{"Invalid Arn"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := New(Config{Logger: quietLogger()})
			t.Cleanup(func() { _ = srv.Close() })
			err := srv.AddStateMachine(tc.sm)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("AddStateMachine: %v", err)
				}
				if _, ok := srv.machines[tc.wantARN]; !ok {
					t.Errorf("no state machine registered as %s", tc.wantARN)
				}
				if err := srv.AddStateMachine(tc.sm); err == nil || !strings.Contains(err.Error(), "already exists") {
					t.Errorf("second add: err = %v, want already exists", err)
				}
				return
			}
			if err == nil {
				t.Fatal("AddStateMachine succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

func TestListen(t *testing.T) {
	srv := New(Config{Logger: quietLogger()})
	if err := srv.AddStateMachine(StateMachine{Name: "Pass", Definition: []byte(passMachine)}); err != nil {
		t.Fatal(err)
	}
	endpoint, err := srv.Listen("")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Errorf("endpoint = %s, want http://127.0.0.1:<port>", endpoint)
	}
	if _, err := srv.Listen(""); err == nil {
		t.Error("second Listen succeeded, want an error")
	}
	client := newSFNClient(endpoint, noRetries)
	ctx := testContext(t)
	out, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(srv.StateMachineARN("Pass"))})
	if err != nil {
		t.Fatalf("StartExecution over the listener: %v", err)
	}
	if info, err := srv.Wait(ctx, aws.ToString(out.ExecutionArn)); err != nil || info.Status != StatusSucceeded {
		t.Errorf("Wait = %+v, %v", info, err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := client.ListStateMachines(ctx, &sfn.ListStateMachinesInput{}); err == nil {
		t.Error("the endpoint still answers after Close")
	}
}

func TestShutdown(t *testing.T) {
	tests := []struct {
		name string
		// cancelled shuts down with an already cancelled context, which
		// aborts running executions; otherwise the execution is released
		// and Shutdown waits for it.
		cancelled  bool
		wantStatus string
		wantCause  string
		wantErr    bool
	}{
		{name: "waits for running executions", wantStatus: StatusSucceeded},
		{name: "aborts when the context ends", cancelled: true, wantStatus: StatusAborted, wantCause: shutdownCause, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, map[string]string{"Block": blockMachine}, nil)
			arn := env.start(t, "Block", "", "")
			env.blocker.awaitStart(t)

			ctx := testContext(t)
			if tc.cancelled {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			result := make(chan error, 1)
			go func() { result <- env.srv.Shutdown(ctx) }()
			if !tc.cancelled {
				// Shutdown returns only after the released execution
				// has finished.
				env.blocker.unblock()
			}
			err := <-result
			if (err != nil) != tc.wantErr {
				t.Errorf("Shutdown = %v, want error %v", err, tc.wantErr)
			}
			info, derr := env.srv.Describe(arn)
			if derr != nil {
				t.Fatal(derr)
			}
			if info.Status != tc.wantStatus || info.Cause != tc.wantCause {
				t.Errorf("after Shutdown: %s cause %q, want %s %q", info.Status, info.Cause, tc.wantStatus, tc.wantCause)
			}
			// An execution the runtime kills as it stops is lost, as a
			// crash loses it: no status change announces its end (an
			// ABORTED event with a cause would read as an operator's
			// abort, and have its transfer refunded).
			var statuses []string
			for _, ev := range env.pub.eventsFor(t, arn) {
				detail, _ := ev["detail"].(map[string]any)
				status, _ := detail["status"].(string)
				statuses = append(statuses, status)
			}
			want := []string{StatusRunning, StatusSucceeded}
			if tc.cancelled {
				want = []string{StatusRunning}
			}
			if !slices.Equal(statuses, want) {
				t.Errorf("status change events %v, want %v", statuses, want)
			}
			_, err = newSFNClient(env.url, noRetries).StartExecution(testContext(t), &sfn.StartExecutionInput{StateMachineArn: aws.String(env.smARN("Block"))})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ServiceUnavailable" {
				t.Errorf("start after Shutdown: err = %v, want ServiceUnavailable", err)
			}
		})
	}
}

func TestWaitErrors(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Block": blockMachine}, nil)
	arn := env.start(t, "Block", "", "")
	env.blocker.awaitStart(t)

	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	if _, err := env.srv.Wait(ctx, arn); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: err = %v, want context.Canceled", err)
	}
	missing := "arn:aws:states:us-east-1:123456789012:execution:Block:missing"
	var apiErr *APIError
	if _, err := env.srv.Wait(testContext(t), missing); !errors.As(err, &apiErr) || apiErr.Type != "ExecutionDoesNotExist" {
		t.Errorf("Wait for a missing execution: err = %v, want ExecutionDoesNotExist", err)
	}
	if _, err := env.srv.Describe("nonsense"); !errors.As(err, &apiErr) || apiErr.Type != "InvalidArn" {
		t.Errorf("Describe of a malformed ARN: err = %v, want InvalidArn", err)
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "one character", in: "a"},
		{name: "80 characters", in: strings.Repeat("x", 80)},
		{name: "80 runes of 3 bytes", in: strings.Repeat("€", 80)},
		{name: "81 characters", in: strings.Repeat("x", 81), wantErr: "1 to 80"},
		{name: "empty", in: "", wantErr: "1 to 80"},
		{name: "invalid UTF-8", in: "a\xffb", wantErr: "UTF-8"},
		{name: "newline", in: "a\nb", wantErr: "white space"},
		{name: "ideographic space", in: "a\u3000b", wantErr: "white space"},
		{name: "U+0001", in: "a\x01b", wantErr: "control"},
		{name: "U+0080", in: "a\u0080b", wantErr: "control"},
		{name: "U+009F", in: "a\u009fb", wantErr: "control"},
		{name: "U+00A1 is allowed", in: "a\u00a1b"},
		{name: "bracket", in: "a[b", wantErr: "brackets"},
		{name: "wildcard", in: "a*b", wantErr: "wildcard"},
		{name: "colon", in: "a:b", wantErr: "special"},
		{name: "backtick", in: "a`b", wantErr: "special"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateName(tc.in)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("validateName(%q) = %v, want %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

func TestARNs(t *testing.T) {
	tests := []struct {
		name      string
		arn       string
		execution bool
		wantErr   bool
	}{
		{name: "state machine", arn: "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer"},
		{name: "state machine version", arn: "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer:1"},
		{name: "execution", arn: "arn:aws:states:us-east-1:123456789012:execution:Transfer:t-1", execution: true},
		{name: "execution as state machine", arn: "arn:aws:states:us-east-1:123456789012:execution:Transfer:t-1", wantErr: true},
		{name: "state machine as execution", arn: "arn:aws:states:us-east-1:123456789012:stateMachine:Transfer", execution: true, wantErr: true},
		{name: "execution without name", arn: "arn:aws:states:us-east-1:123456789012:execution:Transfer", execution: true, wantErr: true},
		{name: "other service", arn: "arn:aws:lambda:us-east-1:123456789012:function:f", wantErr: true},
		{name: "other partition", arn: "arn:aws-cn:states:cn-north-1:123456789012:stateMachine:Transfer", wantErr: true},
		{name: "not an ARN", arn: "Transfer", wantErr: true},
		{name: "empty", arn: "", execution: true, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err *APIError
			if tc.execution {
				err = checkExecutionARN(tc.arn)
			} else {
				_, err = parseStateMachineARN(tc.arn)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && err.Type != "InvalidArn" {
				t.Errorf("type = %s, want InvalidArn", err.Type)
			}
		})
	}
}
