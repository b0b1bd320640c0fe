package fault_test

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/internal/local/fault"
	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
)

// TestIntegrationFaults runs a dynamodb:putItem task against DynamoDB Local
// through the injector's transport and checks the execution's outcome and
// whether the item was written.
func TestIntegrationFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      fault.IntegrationFault
		wantStatus string
		wantItem   bool
		wantCount  map[string]int
	}{
		{"before: nothing written", fault.IntegrationFault{Operation: "PutItem", When: fault.Before},
			"FAILED", false, map[string]int{"ddb-integration.before": 1}},
		{"after: written, yet the task failed", fault.IntegrationFault{Operation: "PutItem", When: fault.After},
			"FAILED", true, map[string]int{"ddb-integration.after": 1}},
		{"other operation untouched", fault.IntegrationFault{Operation: "UpdateItem", When: fault.Before},
			"SUCCEEDED", true, map[string]int{}},
		{"match on the body", fault.IntegrationFault{When: fault.Before, Match: func(b []byte) bool { return strings.Contains(string(b), `"k"`) }},
			"FAILED", false, map[string]int{"ddb-integration.before": 1}},
		{"body not matched", fault.IntegrationFault{When: fault.Before, Match: func(b []byte) bool { return strings.Contains(string(b), `"other"`) }},
			"SUCCEEDED", true, map[string]int{}},
	}
	plain := dynamodb.NewFromConfig(awsConfig(t, fault.New(0)))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := newTable(t, plain)
			in := fault.New(1)
			in.Integration(tc.fault)
			def := `{"StartAt":"Put","States":{"Put":{"Type":"Task","Resource":"arn:aws:states:::dynamodb:putItem",` +
				`"Parameters":{"TableName":"` + table + `","Item":{"pk":{"S":"k"}}},"End":true}}}`
			env := newSFN(t, nil, def, func(c *sfnlocal.Config) {
				c.DynamoDB = sfnlocal.DynamoDBConfig{
					Endpoint:   os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"),
					HTTPClient: &http.Client{Transport: in.Transport(nil)},
				}
			})
			info := env.run(t, `{}`)
			if info.Status != tc.wantStatus {
				t.Fatalf("execution %s %s (%s), want %s", info.Status, info.Error, info.Cause, tc.wantStatus)
			}
			if tc.wantStatus == "FAILED" && (info.Error != "DynamoDB.AmazonDynamoDBException" || !strings.Contains(info.Cause, "connection reset")) {
				t.Errorf("error %s (%s), want DynamoDB.AmazonDynamoDBException with a connection reset", info.Error, info.Cause)
			}
			if got := exists(t, plain, table, "k"); got != tc.wantItem {
				t.Errorf("item written: %v, want %v", got, tc.wantItem)
			}
			assertCounts(t, in, tc.wantCount)
		})
	}
}
