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
			got, ok := callerScope(tt.rc, false)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("callerScope = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// ScopeBySession=true: an assumed-role session is its own scope; other
// callers are scoped as without it.
func TestCallerScopeBySession(t *testing.T) {
	identity := func(arn string) events.APIGatewayProxyRequestContext {
		return events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{UserArn: arn}}
	}
	tests := []struct {
		name      string
		rc        events.APIGatewayProxyRequestContext
		bySession bool
		want      string
	}{
		{"session, by role", identity("arn:aws:sts::123456789012:assumed-role/Payments/svc-a"), false,
			"iam:arn:aws:iam::123456789012:role/Payments"},
		{"session, by session", identity("arn:aws:sts::123456789012:assumed-role/Payments/svc-a"), true,
			"iam:arn:aws:sts::123456789012:assumed-role/Payments/svc-a"},
		{"another session of the role, by session", identity("arn:aws:sts::123456789012:assumed-role/Payments/svc-b"), true,
			"iam:arn:aws:sts::123456789012:assumed-role/Payments/svc-b"},
		{"IAM user, by session", identity("arn:aws:iam::123456789012:user/alice"), true,
			"iam:arn:aws:iam::123456789012:user/alice"},
		{"Lambda authorizer, by session", events.APIGatewayProxyRequestContext{Authorizer: map[string]any{"principalId": "client-7"}}, true,
			"authorizer:client-7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := callerScope(tt.rc, tt.bySession); got != tt.want || !ok {
				t.Fatalf("callerScope = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}
