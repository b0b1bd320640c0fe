package idemtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// CountingClient is Client with a counter of the requests it sends to
// DynamoDB, each attempt of a call that the SDK retries included: for a
// test that asserts how many round trips a flow costs.
func CountingClient(t testing.TB, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *atomic.Int64) {
	t.Helper()
	n := &atomic.Int64{}
	count := func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("idemtest.count",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					n.Add(1)
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
	return Client(t, append(optFns, count)...), n
}
