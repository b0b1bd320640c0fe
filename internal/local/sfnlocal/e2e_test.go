package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
)

// TestEndToEnd runs the sample transfer machine through the SDK client: the
// execution completes and its status change event reaches the publisher.
func TestEndToEnd(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Transfer": transferMachine}, nil)
	env.lambda.handle("debit", func(_ context.Context, payload []byte) ([]byte, *FunctionError, error) {
		var in struct {
			Amount int `json:"amount"`
			Meta   struct {
				Channel string `json:"channel"`
			} `json:"meta"`
		}
		if err := json.Unmarshal(payload, &in); err != nil {
			return nil, nil, err
		}
		status := "APPROVED"
		if in.Amount > 100 || in.Meta.Channel != "api" {
			status = "DECLINED"
		}
		return []byte(`{"status":"` + status + `"}`), nil, nil
	})
	ctx := testContext(t)

	tests := []struct {
		name       string
		input      string
		wantStatus types.ExecutionStatus
		wantOutput string
		wantError  string
	}{
		{
			name: "approved", input: `{"transferId":"t-1","amount":40}`, wantStatus: types.ExecutionStatusSucceeded,
			wantOutput: `{"transferId":"t-1","amount":40,"meta":{"channel":"api"},"debit":"<lambda output>"}`,
		},
		{
			name: "declined", input: `{"transferId":"t-2","amount":400}`, wantStatus: types.ExecutionStatusFailed,
			wantError: "Transfer.Rejected",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start, err := env.client.StartExecution(ctx, &sfn.StartExecutionInput{
				StateMachineArn: aws.String(env.smARN("Transfer")),
				Name:            aws.String(tc.name),
				Input:           aws.String(tc.input),
			})
			if err != nil {
				t.Fatalf("StartExecution: %v", err)
			}
			arn := aws.ToString(start.ExecutionArn)
			env.wait(t, arn)

			desc, err := env.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
			if err != nil {
				t.Fatalf("DescribeExecution: %v", err)
			}
			if desc.Status != tc.wantStatus || aws.ToString(desc.Error) != tc.wantError {
				t.Fatalf("status %s error %q, want %s %q (cause %q)", desc.Status, aws.ToString(desc.Error), tc.wantStatus, tc.wantError, aws.ToString(desc.Cause))
			}
			if tc.wantOutput != "" {
				var out map[string]any
				if err := json.Unmarshal([]byte(aws.ToString(desc.Output)), &out); err != nil {
					t.Fatalf("output %q: %v", aws.ToString(desc.Output), err)
				}
				debit, _ := out["debit"].(map[string]any)
				if debit["StatusCode"] != float64(200) || debit["ExecutedVersion"] != "$LATEST" {
					t.Errorf("debit = %v, want the lambda:invoke output", debit)
				}
				out["debit"] = "<lambda output>"
				got, _ := json.Marshal(out)
				assertJSONEqual(t, "output", string(got), tc.wantOutput)
			}

			events := env.pub.eventsFor(t, arn)
			if len(events) == 0 {
				t.Fatal("no status change event published")
			}
			last := events[len(events)-1]
			detail, _ := last["detail"].(map[string]any)
			if last["detail-type"] != "Step Functions Execution Status Change" || last["source"] != "aws.states" ||
				detail["status"] != string(tc.wantStatus) || detail["executionArn"] != arn || detail["input"] != tc.input {
				t.Errorf("last event = %v", last)
			}

			calls := env.lambda.recorded()
			if last := calls[len(calls)-1]; last.Function != "debit" || !strings.Contains(last.Payload, `"channel":"api"`) {
				t.Errorf("last call = %+v, want debit with the Pass state's output", last)
			}
		})
	}
}

// transferLedgerMachine debits an account in DynamoDB and catches an
// insufficient balance.
const transferLedgerMachine = `{
  "StartAt": "Debit",
  "States": {
    "Debit": {
      "Type": "Task",
      "Resource": "arn:aws:states:::dynamodb:updateItem",
      "Parameters": {
        "TableName.$": "$.table",
        "Key": {"pk": {"S.$": "$.account"}},
        "UpdateExpression": "SET balance = balance - :amt",
        "ConditionExpression": "balance >= :amt",
        "ExpressionAttributeValues": {":amt": {"N.$": "$.amount"}},
        "ReturnValues": "UPDATED_NEW"
      },
      "ResultSelector": {"balance.$": "$.Attributes.balance.N"},
      "ResultPath": "$.debit",
      "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "ResultPath": "$.error", "Next": "Insufficient"}],
      "End": true
    },
    "Insufficient": {"Type": "Fail", "Error": "InsufficientFunds", "Cause": "balance too low"}
  }
}`

// TestEndToEndDynamoDB runs a DynamoDB task through an execution against
// DynamoDB Local, including a caught conditional check failure.
func TestEndToEndDynamoDB(t *testing.T) {
	endpoint := requireDynamoDB(t)
	table := createTable(t, endpoint)
	env := newTestEnv(t, map[string]string{"Ledger": transferLedgerMachine}, func(c *Config) {
		c.DynamoDB = DynamoDBConfig{Endpoint: endpoint}
	})
	if _, err := env.srv.tasks.Invoke(testContext(t), ResourceDynamoDBPutItem, json.RawMessage(
		`{"TableName":"`+table+`","Item":{"pk":{"S":"acct-1"},"balance":{"N":"50"}}}`)); err != nil {
		t.Fatalf("seed account: %v", err)
	}

	tests := []struct {
		name       string
		amount     string
		wantStatus string
		wantError  string
		wantOutput string // debit member of the output
	}{
		{name: "debit", amount: "20", wantStatus: StatusSucceeded, wantOutput: `{"balance":"30"}`},
		{name: "insufficient", amount: "31", wantStatus: StatusFailed, wantError: "InsufficientFunds"},
		{name: "exact-balance", amount: "30", wantStatus: StatusSucceeded, wantOutput: `{"balance":"0"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arn := env.start(t, "Ledger", tc.name, `{"table":"`+table+`","account":"acct-1","amount":"`+tc.amount+`"}`)
			info := env.wait(t, arn)
			if info.Status != tc.wantStatus || info.Error != tc.wantError {
				t.Fatalf("status %s error %q cause %q, want %s %q", info.Status, info.Error, info.Cause, tc.wantStatus, tc.wantError)
			}
			if tc.wantOutput != "" {
				var out map[string]json.RawMessage
				if err := json.Unmarshal([]byte(info.Output), &out); err != nil {
					t.Fatalf("output %q: %v", info.Output, err)
				}
				assertJSONEqual(t, "debit", string(out["debit"]), tc.wantOutput)
			}
		})
	}
}

// lambdaErrorsMachine calls the function named in the input, retrying
// Lambda service errors and catching InsufficientFunds.
const lambdaErrorsMachine = `{
  "StartAt": "Call",
  "States": {
    "Call": {
      "Type": "Task",
      "Resource": "arn:aws:states:::lambda:invoke",
      "Parameters": {"FunctionName.$": "$.fn", "Payload.$": "$"},
      "ResultSelector": {"result.$": "$.Payload"},
      "ResultPath": "$.call",
      "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 2}],
      "Catch": [{"ErrorEquals": ["InsufficientFunds"], "ResultPath": "$.error", "Next": "Declined"}],
      "End": true
    },
    "Declined": {"Type": "Pass", "End": true}
  }
}`

// TestEndToEndLambdaErrors checks that the lambda:invoke error names drive
// the machine's Retry and Catch as they do on AWS.
func TestEndToEndLambdaErrors(t *testing.T) {
	env := newTestEnv(t, map[string]string{"Call": lambdaErrorsMachine}, nil)
	var flakyCalls atomic.Int32
	env.lambda.handle("flaky", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		if flakyCalls.Add(1) == 1 {
			return nil, nil, errors.New("connection reset by peer")
		}
		return []byte(`{"ok":true}`), nil, nil
	})
	env.lambda.handle("poor", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		return nil, &FunctionError{Type: "InsufficientFunds", Message: "balance 5 < 10"}, nil
	})

	tests := []struct {
		name       string
		fn         string
		wantStatus string
		wantError  string
		check      func(t *testing.T, output map[string]any)
	}{
		{
			name: "service error is retried", fn: "flaky", wantStatus: StatusSucceeded,
			check: func(t *testing.T, out map[string]any) {
				if call, _ := out["call"].(map[string]any); call["result"] == nil || flakyCalls.Load() != 2 {
					t.Errorf("call = %v after %d calls, want the second call's result", out["call"], flakyCalls.Load())
				}
			},
		},
		{
			name: "function error is caught by its type", fn: "poor", wantStatus: StatusSucceeded,
			check: func(t *testing.T, out map[string]any) {
				e, _ := out["error"].(map[string]any)
				cause, _ := e["Cause"].(string)
				if e["Error"] != "InsufficientFunds" || cause != `{"errorMessage":"balance 5 < 10","errorType":"InsufficientFunds"}` {
					t.Errorf("error = %v", out["error"])
				}
			},
		},
		{name: "unknown function fails the execution", fn: "missing", wantStatus: StatusFailed, wantError: "Lambda.ResourceNotFoundException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := env.wait(t, env.start(t, "Call", "", `{"fn":"`+tc.fn+`"}`))
			if info.Status != tc.wantStatus || info.Error != tc.wantError {
				t.Fatalf("status %s error %q cause %q, want %s %q", info.Status, info.Error, info.Cause, tc.wantStatus, tc.wantError)
			}
			if tc.check != nil {
				var out map[string]any
				if err := json.Unmarshal([]byte(info.Output), &out); err != nil {
					t.Fatalf("output %q: %v", info.Output, err)
				}
				tc.check(t, out)
			}
		})
	}
}
