package iamgate

import (
	"reflect"
	"strings"
	"testing"
)

func TestChecks(t *testing.T) {
	a := arns{partition: "aws", region: "us-east-1", account: "123456789012"}
	table := "arn:aws:dynamodb:us-east-1:123456789012:table/"
	for _, tc := range []struct {
		name, target, body string
		want               []check
		err                string
	}{
		{"GetItem", "DynamoDB_20120810.GetItem", `{"TableName":"T"}`, []check{{"dynamodb:GetItem", table + "T"}}, ""},
		{"a table named by ARN", "DynamoDB_20120810.PutItem", `{"TableName":"` + table + `T"}`, []check{{"dynamodb:PutItem", table + "T"}}, ""},
		{"Query of an index", "DynamoDB_20120810.Query", `{"TableName":"T","IndexName":"I"}`, []check{{"dynamodb:Query", table + "T/index/I"}}, ""},
		{"Query of the table", "DynamoDB_20120810.Query", `{"TableName":"T"}`, []check{{"dynamodb:Query", table + "T"}}, ""},
		{"TransactWriteItems: each item's action", "DynamoDB_20120810.TransactWriteItems",
			`{"TransactItems":[{"ConditionCheck":{"TableName":"A"}},{"Put":{"TableName":"B"}},{"Update":{"TableName":"B"}},{"Delete":{"TableName":"C"}}]}`,
			[]check{{"dynamodb:ConditionCheckItem", table + "A"}, {"dynamodb:PutItem", table + "B"}, {"dynamodb:UpdateItem", table + "B"}, {"dynamodb:DeleteItem", table + "C"}}, ""},
		{"TransactGetItems", "DynamoDB_20120810.TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"A"}}]}`, []check{{"dynamodb:GetItem", table + "A"}}, ""},
		{"StartExecution", "AWSStepFunctions.StartExecution", `{"stateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:M"}`,
			[]check{{"states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:M"}}, ""},
		{"DescribeExecution", "AWSStepFunctions.DescribeExecution", `{"executionArn":"arn:aws:states:us-east-1:123456789012:execution:M:x"}`,
			[]check{{"states:DescribeExecution", "arn:aws:states:us-east-1:123456789012:execution:M:x"}}, ""},
		{"an unknown operation", "DynamoDB_20120810.ExportTableToPointInTime", `{}`, nil, "dynamodb:ExportTableToPointInTime is not known"},
		{"another service", "AmazonSQS.SendMessage", `{}`, nil, "knows DynamoDB and Step Functions requests only"},
		{"no operation", "DynamoDB_20120810", `{}`, nil, "names no operation"},
		{"no table", "DynamoDB_20120810.GetItem", `{}`, nil, "no TableName"},
		{"a body that is not JSON", "DynamoDB_20120810.GetItem", `{`, nil, "not a JSON object"},
		{"a transaction item of two operations", "DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"A"},"Update":{"TableName":"A"}}]}`, nil, "must hold one operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			service, op, err := target(tc.target)
			var got []check
			if err == nil {
				got, err = a.checks(service, op, []byte(tc.body))
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("checks %v, want %v", got, tc.want)
			}
		})
	}
}
