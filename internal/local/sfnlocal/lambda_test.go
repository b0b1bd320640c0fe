package sfnlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/exactlyonce/transfers/internal/local/asl"
)

func TestCheckResource(t *testing.T) {
	tasks := NewTasks(Config{Logger: quietLogger()})
	tests := []struct {
		name     string
		resource string
		wantErr  string // substring; "" accepts
	}{
		{name: "lambda invoke", resource: "arn:aws:states:::lambda:invoke"},
		{name: "dynamodb getItem", resource: "arn:aws:states:::dynamodb:getItem"},
		{name: "dynamodb putItem", resource: "arn:aws:states:::dynamodb:putItem"},
		{name: "dynamodb updateItem", resource: "arn:aws:states:::dynamodb:updateItem"},
		{name: "dynamodb deleteItem", resource: "arn:aws:states:::dynamodb:deleteItem"},
		{name: "lambda callback", resource: "arn:aws:states:::lambda:invoke.waitForTaskToken", wantErr: ".waitForTaskToken"},
		{name: "sync job", resource: "arn:aws:states:::states:startExecution.sync", wantErr: ".sync"},
		{name: "sync:2 job", resource: "arn:aws:states:::states:startExecution.sync:2", wantErr: ".sync"},
		{name: "bare lambda ARN", resource: "arn:aws:lambda:us-east-1:123456789012:function:debit", wantErr: "lambda:invoke"},
		{name: "dynamodb query", resource: "arn:aws:states:::dynamodb:query", wantErr: "unsupported"},
		{name: "sdk integration", resource: "arn:aws:states:::aws-sdk:dynamodb:transactWriteItems", wantErr: "unsupported"},
		{name: "activity", resource: "arn:aws:states:us-east-1:123456789012:activity:approve", wantErr: "unsupported"},
		{name: "wrong case", resource: "arn:aws:states:::dynamodb:GetItem", wantErr: "unsupported"},
		{name: "empty", resource: "", wantErr: "unsupported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tasks.CheckResource(tc.resource)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckResource: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"`+tc.resource+`"`) {
				t.Fatalf("err = %v, want one naming %q and mentioning %q", err, tc.resource, tc.wantErr)
			}
		})
	}
}

func TestLambdaInvokeOutput(t *testing.T) {
	fake := newFakeLambda()
	fake.handle("debit", func(_ context.Context, payload []byte) ([]byte, *FunctionError, error) {
		return []byte(`{"status":"APPROVED","echo":` + string(payload) + `}`), nil, nil
	})
	fake.handle("nothing", func(context.Context, []byte) ([]byte, *FunctionError, error) { return nil, nil, nil })
	fake.handle("text", func(context.Context, []byte) ([]byte, *FunctionError, error) { return []byte("plain text"), nil, nil })
	tasks := NewTasks(Config{Lambda: fake, Logger: quietLogger()})

	tests := []struct {
		name         string
		params       string
		wantFunction string
		wantPayload  string // what the function received
		wantResult   string // Payload member of the output
		wantVersion  string
	}{
		{
			name:         "name",
			params:       `{"FunctionName":"debit","Payload":{"amount":5}}`,
			wantFunction: "debit", wantPayload: `{"amount":5}`, wantResult: `{"status":"APPROVED","echo":{"amount":5}}`, wantVersion: "$LATEST",
		},
		{
			name:         "ARN",
			params:       `{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:debit","Payload":[1,2]}`,
			wantFunction: "debit", wantPayload: `[1,2]`, wantResult: `{"status":"APPROVED","echo":[1,2]}`, wantVersion: "$LATEST",
		},
		{
			name:         "ARN with alias",
			params:       `{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:debit:live","Payload":"x"}`,
			wantFunction: "debit", wantPayload: `"x"`, wantResult: `{"status":"APPROVED","echo":"x"}`, wantVersion: "$LATEST",
		},
		{
			name:         "name with version qualifier",
			params:       `{"FunctionName":"debit:7","Payload":1}`,
			wantFunction: "debit", wantPayload: `1`, wantResult: `{"status":"APPROVED","echo":1}`, wantVersion: "7",
		},
		{
			name:         "partial ARN and Qualifier parameter",
			params:       `{"FunctionName":"123456789012:function:debit","Qualifier":"3","InvocationType":"RequestResponse","Payload":null}`,
			wantFunction: "debit", wantPayload: `null`, wantResult: `{"status":"APPROVED","echo":null}`, wantVersion: "3",
		},
		{
			name:         "omitted payload is {}",
			params:       `{"FunctionName":"debit"}`,
			wantFunction: "debit", wantPayload: `{}`, wantResult: `{"status":"APPROVED","echo":{}}`, wantVersion: "$LATEST",
		},
		{
			name:         "empty result is null",
			params:       `{"FunctionName":"nothing"}`,
			wantFunction: "nothing", wantPayload: `{}`, wantResult: `null`, wantVersion: "$LATEST",
		},
		{
			name:         "non-JSON result is a string",
			params:       `{"FunctionName":"text"}`,
			wantFunction: "text", wantPayload: `{}`, wantResult: `"plain text"`, wantVersion: "$LATEST",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.recorded())
			out, err := tasks.Invoke(testContext(t), ResourceLambdaInvoke, json.RawMessage(tc.params))
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			calls := fake.recorded()[before:]
			if len(calls) != 1 || calls[0].Function != tc.wantFunction {
				t.Fatalf("calls = %+v, want one call of %s", calls, tc.wantFunction)
			}
			assertJSONEqual(t, "function payload", calls[0].Payload, tc.wantPayload)

			var got struct {
				ExecutedVersion string
				Payload         json.RawMessage
				SdkHttpMetadata struct {
					AllHttpHeaders map[string][]string
					HttpHeaders    map[string]string
					HttpStatusCode int
				}
				SdkResponseMetadata struct{ RequestId string }
				StatusCode          int
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("output is not JSON: %v: %s", err, out)
			}
			var members map[string]json.RawMessage
			_ = json.Unmarshal(out, &members)
			if keys := sortedKeys(anyMap(members)); strings.Join(keys, ",") != "ExecutedVersion,Payload,SdkHttpMetadata,SdkResponseMetadata,StatusCode" {
				t.Errorf("output members = %v", keys)
			}
			assertJSONEqual(t, "Payload", string(got.Payload), tc.wantResult)
			if got.ExecutedVersion != tc.wantVersion || got.StatusCode != 200 || got.SdkHttpMetadata.HttpStatusCode != 200 {
				t.Errorf("ExecutedVersion %q StatusCode %d HttpStatusCode %d", got.ExecutedVersion, got.StatusCode, got.SdkHttpMetadata.HttpStatusCode)
			}
			id := got.SdkResponseMetadata.RequestId
			if !uuidPattern.MatchString(id) || got.SdkHttpMetadata.HttpHeaders["x-amzn-RequestId"] != id {
				t.Errorf("RequestId %q, header %q", id, got.SdkHttpMetadata.HttpHeaders["x-amzn-RequestId"])
			}
			for _, h := range []string{"Content-Type", "Content-Length", "Date", "X-Amz-Executed-Version", "x-amzn-RequestId", "X-Amzn-Trace-Id"} {
				if all := got.SdkHttpMetadata.AllHttpHeaders[h]; len(all) != 1 || all[0] != got.SdkHttpMetadata.HttpHeaders[h] {
					t.Errorf("header %s: all %v, single %q", h, all, got.SdkHttpMetadata.HttpHeaders[h])
				}
			}
			if v := got.SdkHttpMetadata.HttpHeaders["X-Amz-Executed-Version"]; v != tc.wantVersion {
				t.Errorf("X-Amz-Executed-Version = %q, want %q", v, tc.wantVersion)
			}
		})
	}
}

func anyMap(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func TestLambdaInvokeErrors(t *testing.T) {
	fake := newFakeLambda()
	fake.handle("debit", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		return nil, &FunctionError{Type: "InsufficientFunds", Message: "balance 10 < 20", StackTrace: []string{"debit.go:10", "main.go:3"}}, nil
	})
	fake.handle("untyped", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		return nil, &FunctionError{Message: "boom"}, nil
	})
	fake.handle("broken", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		return nil, nil, errors.New("runtime crashed")
	})
	fake.handle("throttled", func(context.Context, []byte) ([]byte, *FunctionError, error) {
		return nil, nil, fmt.Errorf("invoke: %w", &ServiceError{Name: "Lambda.TooManyRequestsException", Message: "Rate Exceeded."})
	})
	tasks := NewTasks(Config{Lambda: fake, Logger: quietLogger()})

	tests := []struct {
		name      string
		params    string
		wantName  string
		wantCause string // exact when wantExact, else substring
		wantExact bool
		wantCalls int
	}{
		{
			name: "function error", params: `{"FunctionName":"debit","Payload":{}}`,
			wantName: "InsufficientFunds", wantExact: true, wantCalls: 1,
			wantCause: `{"errorMessage":"balance 10 < 20","errorType":"InsufficientFunds","stackTrace":["debit.go:10","main.go:3"]}`,
		},
		{
			name: "function error without type", params: `{"FunctionName":"untyped"}`,
			wantName: "Lambda.Unknown", wantExact: true, wantCalls: 1,
			wantCause: `{"errorMessage":"boom","errorType":""}`,
		},
		{
			name: "unknown function", params: `{"FunctionName":"nope"}`,
			wantName: "Lambda.ResourceNotFoundException", wantCalls: 1,
			wantCause: "Function not found: arn:aws:lambda:us-east-1:123456789012:function:nope (Service: Lambda, Status Code: 404, Request ID: ",
		},
		{
			name: "invoker failure", params: `{"FunctionName":"broken"}`,
			wantName: "Lambda.ServiceException", wantCalls: 1,
			wantCause: "runtime crashed (Service: Lambda, Status Code: 500, Request ID: ",
		},
		{
			name: "named service error", params: `{"FunctionName":"throttled"}`,
			wantName: "Lambda.TooManyRequestsException", wantCalls: 1,
			wantCause: "Rate Exceeded. (Service: Lambda, Status Code: 500, Request ID: ",
		},
		{
			name: "asynchronous invocation", params: `{"FunctionName":"debit","InvocationType":"Event"}`,
			wantName: "States.Runtime", wantCause: `InvocationType "Event" is not supported`,
		},
		{
			name: "dry run", params: `{"FunctionName":"debit","InvocationType":"DryRun"}`,
			wantName: "States.Runtime", wantCause: `InvocationType "DryRun" is not supported`,
		},
		{
			name: "missing function name", params: `{"Payload":{}}`,
			wantName: "States.Runtime", wantCause: "FunctionName is required",
		},
		{
			name: "function name not a string", params: `{"FunctionName":42}`,
			wantName: "States.Runtime", wantCause: "FunctionName must be a string",
		},
		{
			name: "unsupported parameter", params: `{"FunctionName":"debit","LogType":"Tail"}`,
			wantName: "States.Runtime", wantCause: "Parameters.LogType is not supported",
		},
		{
			name: "parameters not an object", params: `[1]`,
			wantName: "States.Runtime", wantCause: "must be a JSON object",
		},
		{
			name: "malformed function name", params: `{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:layer:x"}`,
			wantName: "Lambda.InvalidParameterValueException", wantCause: "functionName",
		},
		{
			name: "qualifier conflict", params: `{"FunctionName":"debit:live","Qualifier":"beta"}`,
			wantName: "Lambda.InvalidParameterValueException", wantCause: "does not match the specified qualifier",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(fake.recorded())
			out, err := tasks.Invoke(testContext(t), ResourceLambdaInvoke, json.RawMessage(tc.params))
			var aerr *asl.Error
			if !errors.As(err, &aerr) {
				t.Fatalf("Invoke = %s, %v; want *asl.Error %s", out, err, tc.wantName)
			}
			if aerr.Name != tc.wantName {
				t.Errorf("Name = %q, want %q", aerr.Name, tc.wantName)
			}
			if tc.wantExact && aerr.Cause != tc.wantCause || !tc.wantExact && !strings.Contains(aerr.Cause, tc.wantCause) {
				t.Errorf("Cause = %q, want %q", aerr.Cause, tc.wantCause)
			}
			if calls := len(fake.recorded()) - before; calls != tc.wantCalls {
				t.Errorf("%d function calls, want %d", calls, tc.wantCalls)
			}
		})
	}

	t.Run("no runtime configured", func(t *testing.T) {
		_, err := NewTasks(Config{Logger: quietLogger()}).Invoke(testContext(t), ResourceLambdaInvoke, json.RawMessage(`{"FunctionName":"debit"}`))
		var aerr *asl.Error
		if !errors.As(err, &aerr) || aerr.Name != "Lambda.ServiceException" {
			t.Errorf("err = %v, want Lambda.ServiceException", err)
		}
	})

	t.Run("cancelled context is not a task error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testContext(t))
		cancel()
		fake.handle("slow", func(ctx context.Context, _ []byte) ([]byte, *FunctionError, error) { return nil, nil, ctx.Err() })
		_, err := tasks.Invoke(ctx, ResourceLambdaInvoke, json.RawMessage(`{"FunctionName":"slow"}`))
		var aerr *asl.Error
		if !errors.Is(err, context.Canceled) || errors.As(err, &aerr) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})

	t.Run("unsupported resource at run time", func(t *testing.T) {
		_, err := tasks.Invoke(testContext(t), "arn:aws:states:::sqs:sendMessage", json.RawMessage(`{}`))
		var aerr *asl.Error
		if !errors.As(err, &aerr) || aerr.Name != "States.Runtime" || !strings.Contains(aerr.Cause, "sqs:sendMessage") {
			t.Errorf("err = %v, want States.Runtime naming the resource", err)
		}
	})
}

func TestSplitFunctionName(t *testing.T) {
	tests := []struct {
		in, name, qualifier string
		ok                  bool
	}{
		{in: "debit", name: "debit", ok: true},
		{in: "debit:live", name: "debit", qualifier: "live", ok: true},
		{in: "debit:$LATEST", name: "debit", qualifier: "$LATEST", ok: true},
		{in: "arn:aws:lambda:us-east-1:123456789012:function:debit", name: "debit", ok: true},
		{in: "arn:aws:lambda:us-east-1:123456789012:function:debit:12", name: "debit", qualifier: "12", ok: true},
		{in: "123456789012:function:debit", name: "debit", ok: true},
		{in: "123456789012:function:debit:live", name: "debit", qualifier: "live", ok: true},
		{in: "", ok: false},
		{in: "debit:", ok: false},
		{in: "deb it", ok: false},
		{in: "arn:aws:lambda:us-east-1:123456789012:function:", ok: false},
		{in: "arn:aws:sqs:us-east-1:123456789012:function:debit", ok: false},
		{in: "arn:aws:lambda:us-east-1:123456789012:function:debit:live:extra", ok: false},
		{in: "a:b:c", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			name, qualifier, ok := splitFunctionName(tc.in)
			if ok != tc.ok || name != tc.name || qualifier != tc.qualifier {
				t.Errorf("splitFunctionName(%q) = %q, %q, %v; want %q, %q, %v", tc.in, name, qualifier, ok, tc.name, tc.qualifier, tc.ok)
			}
		})
	}
}
