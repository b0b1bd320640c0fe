package api

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func TestCallerScope(t *testing.T) {
	tests := []struct {
		name string
		rc   events.APIGatewayProxyRequestContext
		want string
		ok   bool
	}{
		{"IAM user", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws:iam::123456789012:user/alice"}},
			"iam:arn:aws:iam::123456789012:user/alice", true},
		{"assumed role scoped to its role", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws:sts::123456789012:assumed-role/Payments/session-1"}},
			"iam:arn:aws:iam::123456789012:role/Payments", true},
		{"assumed role in another partition", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: "arn:aws-cn:sts::123456789012:assumed-role/Payments/s"}},
			"iam:arn:aws-cn:iam::123456789012:role/Payments", true},
		{"Lambda authorizer", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": "client-7"},
			Identity: events.APIGatewayRequestIdentity{UserArn: "ignored"}}, "authorizer:client-7", true},
		{"Cognito user pool", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"claims": map[string]any{"sub": "abc-123"}}},
			"cognito-user:abc-123", true},
		{"Cognito identity", events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{CognitoIdentityID: "us-east-1:xyz"}},
			"cognito-identity:us-east-1:xyz", true},
		{"anonymous", events.APIGatewayProxyRequestContext{}, "", false},
		{"empty principal", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": ""}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := callerScope(tt.rc)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("callerScope = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
