package fault_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/smithy-go"

	"github.com/exactlyonce/transfers/internal/local/fault"
)

// newTable creates a table with the string key "pk" on DynamoDB Local and
// returns its name.
func newTable(t *testing.T, client *dynamodb.Client) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "fault-" + hex.EncodeToString(b[:])
	_, err := client.CreateTable(testContext(t), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	return name
}

// awsConfig is the environment's configuration (DynamoDB Local) with the
// injector's middleware.
func awsConfig(t *testing.T, in *fault.Injector) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.APIOptions = append(cfg.APIOptions, in.APIOptions()...)
	return cfg
}

func exists(t *testing.T, client *dynamodb.Client, table, pk string) bool {
	t.Helper()
	out, err := client.GetItem(testContext(t), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

// TestSDKFaults puts an item through a real SDK client against DynamoDB
// Local with one fault armed, and checks what the caller saw, whether the
// item was written, and how many attempts the fault intercepted.
func TestSDKFaults(t *testing.T) {
	rejected := &smithy.GenericAPIError{Code: "ValidationException", Message: "injected"}
	tests := []struct {
		name      string
		fault     fault.SDKFault
		wantErr   bool
		wantItem  bool
		wantCount map[string]int
	}{
		{"before, once: the retry succeeds", fault.SDKFault{Service: "DynamoDB", Operation: "PutItem", When: fault.Before, Times: 1},
			false, true, map[string]int{"sdk.before": 1}},
		{"before, more times than attempts: the caller fails, nothing written", fault.SDKFault{Service: "DynamoDB", Operation: "PutItem", When: fault.Before, Times: 5},
			true, false, map[string]int{"sdk.before": 3}},
		{"after, non-retryable: the caller fails but the write happened", fault.SDKFault{Service: "DynamoDB", Operation: "PutItem", When: fault.After, Times: 1, Err: rejected},
			true, true, map[string]int{"sdk.after": 1}},
		{"after, retryable: the retry repeats the write", fault.SDKFault{Service: "DynamoDB", When: fault.After, Times: 1},
			false, true, map[string]int{"sdk.after": 1}},
		{"other operation untouched", fault.SDKFault{Service: "DynamoDB", Operation: "DeleteItem", When: fault.Before},
			false, true, map[string]int{}},
		{"other service untouched", fault.SDKFault{Service: "SFN", When: fault.Before},
			false, true, map[string]int{}},
		{"match on the input", fault.SDKFault{Service: "DynamoDB", When: fault.Before, Err: rejected, Match: func(in any) bool {
			p, ok := in.(*dynamodb.PutItemInput)
			return ok && p.Item["pk"].(*types.AttributeValueMemberS).Value == "k"
		}}, true, false, map[string]int{"sdk.before": 1}},
	}
	plain := dynamodb.NewFromConfig(awsConfig(t, fault.New(0)))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t, plain)
			in := fault.New(1)
			in.SDK(tc.fault)
			client := dynamodb.NewFromConfig(awsConfig(t, in))
			_, err := client.PutItem(testContext(t), &dynamodb.PutItemInput{
				TableName: aws.String(table),
				Item:      map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}},
			})
			if (err != nil) != tc.wantErr {
				t.Errorf("PutItem err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && tc.fault.Err == nil && !fault.IsInjected(err) {
				t.Errorf("err %v is not the injected connection error", err)
			}
			if err != nil && tc.fault.Err != nil && !errors.Is(err, tc.fault.Err) {
				t.Errorf("err %v does not wrap %v", err, tc.fault.Err)
			}
			if got := exists(t, plain, table, "k"); got != tc.wantItem {
				t.Errorf("item written: %v, want %v", got, tc.wantItem)
			}
			assertCounts(t, in, tc.wantCount)
		})
	}
}

// TestSDKFaultOnStepFunctions fails StartExecution before it reaches the
// endpoint: the caller sees the error and no execution exists.
func TestSDKFaultOnStepFunctions(t *testing.T) {
	env := newSFN(t, nil, `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`, nil)
	in := fault.New(1)
	in.SDK(fault.SDKFault{Service: "SFN", Operation: "StartExecution", When: fault.Before, Err: &smithy.GenericAPIError{Code: "InvalidToken"}})
	client := sfn.New(env.client.Options(), func(o *sfn.Options) { o.APIOptions = append(o.APIOptions, in.APIOptions()...) })
	ctx := testContext(t)
	_, err := client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(env.srv.StateMachineARN("M")), Name: aws.String("x")})
	if err == nil || !strings.Contains(err.Error(), "InvalidToken") {
		t.Fatalf("StartExecution err = %v, want the injected error", err)
	}
	list, err := env.client.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(env.srv.StateMachineARN("M"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Executions) != 0 {
		t.Errorf("%d executions exist although StartExecution never reached the endpoint", len(list.Executions))
	}
	assertCounts(t, in, map[string]int{"sdk.before": 1})
}
