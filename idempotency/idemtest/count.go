package idemtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
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

// lostReply is an error the SDK retries: a reply lost on the way back
// after the service committed the call.
type lostReply struct{}

func (lostReply) Error() string        { return "idemtest: connection reset after the request was sent" }
func (lostReply) RetryableError() bool { return true }

// LoseFirstReply is Client whose first call of the operation op
// ("PutItem", "UpdateItem", "TransactWriteItems"...) reaches DynamoDB and
// commits, while its answer is lost: the SDK retries the call at once,
// as it retries a connection reset. The counter holds the attempts of op
// sent so far. It shows what a store does when its own write committed
// and it cannot know.
func LoseFirstReply(t testing.TB, op string, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *atomic.Int64) {
	t.Helper()
	attempts := &atomic.Int64{}
	lose := func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), 10*time.Millisecond)
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("idemtest.loseFirstReply",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					out, md, err := next.HandleFinalize(ctx, in)
					if middleware.GetOperationName(ctx) != op {
						return out, md, err
					}
					if attempts.Add(1) == 1 && err == nil {
						return middleware.FinalizeOutput{}, md, lostReply{}
					}
					return out, md, err
				}), middleware.After)
		})
	}
	return Client(t, append(optFns, lose)...), attempts
}
