package idempotency

import (
	"context"
	"errors"
	"strconv"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// ErrNoTenant refuses a call that LambdaTenant scopes when the invocation
// carries no tenant id: the function does not run in Lambda's tenant
// isolation mode, or was invoked without one.
var ErrNoTenant = errors.New("idempotency: the invocation has no Lambda tenant id")

// LambdaTenant is an Operation.ScopeFunc that scopes each call to the
// tenant of its Lambda invocation (Lambda's tenant isolation mode: the
// tenant id the invoker passed, in lambdacontext.LambdaContext's
// TenantID), as tenant "<id>": the same key from two tenants is two
// records. A call without a tenant id fails with ErrNoTenant.
func LambdaTenant[In any](ctx context.Context, _ In) (string, error) {
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.TenantID == "" {
		return "", ErrNoTenant
	}
	return "tenant " + strconv.Quote(lc.TenantID), nil
}
