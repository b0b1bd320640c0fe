package asl

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// projectDefinition is the state machine the stack deploys; the local
// runtime must execute it as is.
var projectDefinition = filepath.Join("..", "..", "..", "statemachine", "transfer.asl.json")

// projectTasks fakes the integrations the project definition uses. debit
// and credit answer the Lambda functions by the FunctionName parameter,
// dynamo every DynamoDB call.
func projectTasks(debit, credit, dynamo invokeFunc) *fakeInvoker {
	lambda := func(ctx context.Context, call int, params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			FunctionName string
			Payload      json.RawMessage
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
		fn := echo
		switch {
		case strings.Contains(p.FunctionName, "Debit"):
			fn = debit
		case strings.Contains(p.FunctionName, "Credit"):
			fn = credit
		}
		out, err := fn(ctx, call, p.Payload)
		if err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"Payload": out, "StatusCode": 200})
	}
	return newInvoker(map[string]invokeFunc{
		"arn:aws:states:::lambda:invoke":       lambda,
		"arn:aws:states:::dynamodb:updateItem": dynamo,
		"arn:aws:states:::dynamodb:getItem":    dynamo,
		"arn:aws:states:::dynamodb:putItem":    dynamo,
		"arn:aws:states:::dynamodb:deleteItem": dynamo,
	})
}

func TestProjectDefinition(t *testing.T) {
	def, err := os.ReadFile(projectDefinition)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s is not present", projectDefinition)
	}
	if err != nil {
		t.Fatal(err)
	}
	input := `{"transferId":"t1","recordKey":"TRANSFER#t1","createdAt":"2026-01-02T03:04:05.000Z","retentionSeconds":86400,"scope":"iam:arn:aws:iam::123456789012:user/payments-app","attempt":0,
	  "request":{"sourceAccountId":"a","destinationAccountId":"b","amount":"10.00","currency":"EUR","reference":"rent"}}`
	// The debit worker answers a refusal instead of failing.
	rejected := returns(`{"rejected":{"code":"InsufficientFunds","detail":"balance too low"},"expiresAt":1767409445}`)
	fenced := fails(&Error{Name: "DynamoDB.ConditionalCheckFailedException", Cause: "The conditional request failed"})
	tests := []struct {
		name       string
		debit      invokeFunc
		credit     invokeFunc
		dynamo     invokeFunc
		wantError  string // execution error; "" when it must succeed
		wantStatus string // the transfer's status in the output
		wantCode   string // the transfer's failure code
	}{
		{"completed", returns(`{"entry":"d","expiresAt":1767409445}`), returns(`{"entry":"c","expiresAt":1767409445}`), returns(`{}`), "", "COMPLETED", ""},
		{"debit rejected", rejected, returns(`{}`), returns(`{}`), "", "FAILED", "InsufficientFunds"},
		{"fenced", returns(`{}`), returns(`{}`), fenced, "TransferFenced", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := projectTasks(tc.debit, tc.credit, tc.dynamo)
			m, err := Load(filepath.Base(projectDefinition), def, Options{Tasks: inv, TimeScale: 0.0001})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			r := execute(t, context.Background(), m, input)
			if tc.wantError != "" {
				wantFailed(t, r, tc.wantError, "")
				return
			}
			if r.Status != StatusSucceeded {
				t.Fatalf("status %s: %s: %s", r.Status, r.Error, r.Cause)
			}
			var out struct {
				Status  string
				Failure struct{ Code string }
			}
			if err := json.Unmarshal(r.Output, &out); err != nil {
				t.Fatal(err)
			}
			if out.Status != tc.wantStatus || out.Failure.Code != tc.wantCode {
				t.Fatalf("output = %s, want status %s and failure code %q", r.Output, tc.wantStatus, tc.wantCode)
			}
		})
	}
}
