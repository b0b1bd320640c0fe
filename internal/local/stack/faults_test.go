package stack_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/exactlyonce/transfers/internal/cfn"
	"github.com/exactlyonce/transfers/internal/local/ddblocal"
	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/stack"
)

// reaperAsync is what the template says of the reaper's asynchronous
// invocations: its attempts (1 + MaximumRetryAttempts, Lambda's default 2
// when absent) and on-failure destination.
func reaperAsync(t *testing.T) (attempts int, destination string) {
	t.Helper()
	root, err := ddblocal.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cfn.Load(root + "/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fns, err := tpl.Functions(cfn.Env{Region: stack.Region, AccountID: stack.AccountID})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fns {
		if f.LogicalID != "ReaperFunction" {
			continue
		}
		if c := f.EventInvokeConfig; c != nil {
			if c.OnFailure != nil {
				destination = c.OnFailure.Destination
			}
			return 1 + c.MaximumRetryAttempts, destination
		}
		return 1 + cfn.DefaultAsyncMaximumRetryAttempts, ""
	}
	t.Fatal("template has no ReaperFunction")
	return 0, ""
}

// TestStackWithFaults runs the template's stack with an injector: faults
// reach the functions' invocations, and the reaper, invoked by the status
// change rule, is retried as an asynchronous invocation and then sent to
// its on-failure destination, not to the rule's dead-letter queue.
func TestStackWithFaults(t *testing.T) {
	ctx := context.Background()
	in := fault.New(1)
	st, err := stack.Start(ctx, stack.Options{TimeScale: 0.005, Faults: in})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})

	t.Run("reaper failures go to the on-failure destination", func(t *testing.T) {
		in.Reset()
		wantAttempts, wantDest := reaperAsync(t)
		in.Lambda(fault.LambdaFault{Function: "ReaperFunction", Kind: fault.Fail, Error: "Reaper.Broken",
			Match: func(p []byte) bool { return strings.Contains(string(p), "t-async") }})
		// No record exists for this transfer: the execution fails and its
		// status change reaches the reaper's rule.
		input := `{"recordKey":"missing","transferId":"t-async","createdAt":"2026-01-01T00:00:00.000Z","request":{"sourceAccountId":"a","destinationAccountId":"b","amount":1,"currency":"EUR","reference":""}}`
		out, err := sfn.NewFromConfig(st.AWS).StartExecution(ctx, &sfn.StartExecutionInput{
			StateMachineArn: aws.String(st.StateMachines["TransferStateMachine"]),
			Name:            aws.String("t-async"),
			Input:           aws.String(input),
		})
		if err != nil {
			t.Fatal(err)
		}
		if info, err := st.SFN.Wait(ctx, aws.ToString(out.ExecutionArn)); err != nil || info.Status != "FAILED" {
			t.Fatalf("execution %+v, %v", info, err)
		}
		drain, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := st.Drain(drain); err != nil {
			t.Fatal(err)
		}
		failed := st.FailedInvocations()
		if len(failed) != 1 {
			t.Fatalf("failed invocations %+v, want 1", failed)
		}
		f := failed[0]
		if f.Kind != stack.FailedOnFailure || f.Function != "ReaperFunction" || f.Destination != wantDest || f.Attempts != wantAttempts ||
			!strings.Contains(f.Err.Error(), "Reaper.Broken") {
			t.Errorf("record %+v, want on-failure of ReaperFunction to %q after %d attempts", f, wantDest, wantAttempts)
		}
		if got := in.Counts()["lambda.fail"]; got != wantAttempts {
			t.Errorf("reaper invoked %d times, want %d", got, wantAttempts)
		}
	})

	t.Run("SDK faults reach the functions' clients", func(t *testing.T) {
		in.Reset()
		in.SDK(fault.SDKFault{Service: "DynamoDB", Operation: "GetItem", When: fault.Before, Times: 10})
		resp, err := httpGet(st.APIURL + "/accounts/nobody")
		if err != nil {
			t.Fatal(err)
		}
		if resp != 503 {
			t.Errorf("GET /accounts/nobody with DynamoDB failing: %d, want 503", resp)
		}
		if in.Counts()["sdk.before"] == 0 {
			t.Error("the orchestrator's GetItem never met the fault")
		}
		in.Reset()
		if resp, err := httpGet(st.APIURL + "/accounts/nobody"); err != nil || resp != 404 {
			t.Errorf("after Reset: %d, %v; want 404", resp, err)
		}
	})
}

// TestStackTTL checks that the stack's TTL emulator covers the template's
// tables with Time to Live: an expired idempotency record is deleted, a
// current one is kept.
func TestStackTTL(t *testing.T) {
	ctx := context.Background()
	st, err := stack.Start(ctx, stack.Options{TimeScale: 0.01, TTLLag: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	client := dynamodb.NewFromConfig(st.AWS)
	table := st.Tables["IdempotencyTable"]
	now := time.Now()
	for pk, exp := range map[string]time.Time{"old": now.Add(-time.Hour), "recent": now.Add(-time.Second), "current": now.Add(time.Hour)} {
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pk}, "expiresAt": &types.AttributeValueMemberN{Value: strconv.FormatInt(exp.Unix(), 10)},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.TTL.RunNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("deleted %d items, want 1 (only the one expired for more than the lag)", n)
	}
	for pk, want := range map[string]bool{"old": false, "recent": true, "current": true} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := out.Item != nil; got != want {
			t.Errorf("item %s present: %v, want %v", pk, got, want)
		}
	}
}

func httpGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
