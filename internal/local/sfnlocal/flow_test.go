package sfnlocal

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// flowMachine uses Wait, Parallel and an inline Map, with Lambda tasks
// inside the Map, as a team would write it for AWS.
const flowMachine = `{
  "StartAt": "Pause",
  "States": {
    "Pause": {"Type": "Wait", "Seconds": 1, "Next": "Fan"},
    "Fan": {
      "Type": "Parallel",
      "Branches": [
        {"StartAt": "Each", "States": {"Each": {
          "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 2,
          "ItemSelector": {"index.$": "$$.Map.Item.Index", "value.$": "$$.Map.Item.Value"},
          "ItemProcessor": {"StartAt": "Double", "States": {"Double": {
            "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "double", "Payload.$": "$"},
            "ResultSelector": {"doubled.$": "$.Payload"}, "End": true}}},
          "End": true}}},
        {"StartAt": "Count", "States": {"Count": {"Type": "Pass", "Parameters": {"n.$": "States.ArrayLength($.items)"}, "End": true}}}
      ],
      "ResultSelector": {"doubled.$": "$[0]", "count.$": "$[1].n"},
      "End": true
    }
  }
}`

// TestWaitParallelMapThroughEndpoint runs a definition using Wait,
// Parallel and Map unchanged through the Step Functions endpoint and the
// SDK client.
func TestWaitParallelMapThroughEndpoint(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Flow": flowMachine}, nil)
	env.lambda.handle("double", func(_ context.Context, payload []byte) ([]byte, *FunctionError, error) {
		var in struct{ Index, Value int }
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, nil, err
		}
		out, err := json.Marshal(in.Value * 2)
		return out, nil, err
	})
	arn := env.start(t, "Flow", "flow-1", `{"items":[1,2,3]}`)
	env.wait(t, arn)
	out, err := env.client.DescribeExecution(testContext(t), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if out.Status != types.ExecutionStatusSucceeded {
		t.Fatalf("status %s: %s %s", out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
	}
	assertJSONEqual(t, "output", aws.ToString(out.Output), `{"doubled":[{"doubled":2},{"doubled":4},{"doubled":6}],"count":3}`)
}

// assignHeartbeatMachine keeps data in variables and calls a Lambda
// function with a heartbeat, as a team would write it for AWS; a Lambda
// task sends no heartbeats, so a call that lasts longer than
// HeartbeatSeconds times out, and the catcher's Assign records the error.
const assignHeartbeatMachine = `{
  "StartAt": "Remember",
  "States": {
    "Remember": {"Type": "Pass", "Assign": {"transferId.$": "$.transfer", "attempt": 1}, "Next": "Call"},
    "Call": {
      "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName": "block", "Payload": {"transfer.$": "$transferId"}},
      "HeartbeatSeconds": 1, "TimeoutSeconds": 60,
      "Assign": {"outcome": "answered"},
      "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "Assign": {"outcome.$": "$.Error"}, "ResultPath": null, "Next": "Report"}],
      "Next": "Report"
    },
    "Report": {"Type": "Pass", "Parameters": {"transfer.$": "$transferId", "attempt.$": "$attempt", "outcome.$": "$outcome"}, "End": true}
  }
}`

// TestAssignAndHeartbeatThroughEndpoint runs a definition with variables
// and a Lambda task with HeartbeatSeconds unchanged through the Step
// Functions endpoint: the call outlasts the heartbeat, the catcher sees
// States.HeartbeatTimeout and assigns it, and the history has the
// TaskTimedOut event.
func TestAssignAndHeartbeatThroughEndpoint(t *testing.T) {
	env := newTestEnv(t, map[string]string{"AssignHeartbeat": assignHeartbeatMachine}, nil)
	arn := env.start(t, "AssignHeartbeat", "hb-1", `{"transfer":"t1"}`)
	if payload := env.blocker.awaitStart(t); payload != `{"transfer":"t1"}` {
		t.Errorf("the function got %s, want the transfer read from the variable", payload)
	}
	env.wait(t, arn)
	out, err := env.client.DescribeExecution(testContext(t), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	if out.Status != types.ExecutionStatusSucceeded {
		t.Fatalf("status %s: %s %s", out.Status, aws.ToString(out.Error), aws.ToString(out.Cause))
	}
	assertJSONEqual(t, "output", aws.ToString(out.Output), `{"transfer":"t1","attempt":1,"outcome":"States.HeartbeatTimeout"}`)
	ev := findEvent(t, history(t, env, arn, false), types.HistoryEventTypeTaskTimedOut)
	if d := ev.TaskTimedOutEventDetails; d == nil || aws.ToString(d.Error) != "States.HeartbeatTimeout" {
		t.Fatalf("TaskTimedOut details = %+v", d)
	}
}
