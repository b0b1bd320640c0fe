package api

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// callerScope is the authenticated caller of a request, taken from what
// API Gateway put in the request context, never from the body: a Lambda
// authorizer's principalId, a Cognito user pool's subject, a Cognito
// identity, or the IAM principal of a SigV4-signed request. Every
// Idempotency-Key and every transfer belongs to this scope.
//
// An assumed-role session is scoped to its role, not to the session: a
// client that re-assumes its role between retries keeps its keys, and
// every session of the role shares its keys and its accounts. With
// bySession (ScopeBySession=true) the scope is the session's own ARN
// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION), so two services that
// assume one role under different session names are two callers; a client
// must then keep its session name across retries to keep its keys.
//
// The scope is also what owns an account (ledger.Account.Owner).
func callerScope(rc events.APIGatewayProxyRequestContext, bySession bool) (string, bool) {
	if p, ok := rc.Authorizer["principalId"].(string); ok && p != "" {
		return "authorizer:" + p, true
	}
	if claims, ok := rc.Authorizer["claims"].(map[string]any); ok {
		if sub, ok := claims["sub"].(string); ok && sub != "" {
			return "cognito-user:" + sub, true
		}
	}
	if id := rc.Identity.CognitoIdentityID; id != "" {
		return "cognito-identity:" + id, true
	}
	if arn := rc.Identity.UserArn; arn != "" {
		if bySession {
			return "iam:" + arn, true
		}
		return IAMScope(arn), true
	}
	return "", false
}

// IAMScope is the caller scope of a SigV4-signed request whose principal
// is arn, with the default scoping (ScopeBySession=false): an assumed-role
// session counts as its role. Clients that need to know their own scope
// (the owner of the accounts they may debit) compute it with this.
func IAMScope(arn string) string { return "iam:" + principalOf(arn) }

// principalOf turns an assumed-role session ARN
// (arn:aws:sts::123456789012:assumed-role/Role/session) into its role ARN
// (arn:aws:iam::123456789012:role/Role); other ARNs are returned as they are.
func principalOf(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" {
		return arn
	}
	res, ok := strings.CutPrefix(parts[5], "assumed-role/")
	if !ok {
		return arn
	}
	role, _, _ := strings.Cut(res, "/")
	return "arn:" + parts[1] + ":iam::" + parts[4] + ":role/" + role
}
