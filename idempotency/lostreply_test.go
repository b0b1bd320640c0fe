package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// lostReply is an error the SDK retries, standing for a reply lost on
// the way back after the service committed the call.
type lostReply struct{}

func (lostReply) Error() string        { return "connection reset after the request was sent" }
func (lostReply) RetryableError() bool { return true }

// losingFirstReply is a client whose first call of operation op reaches
// DynamoDB and commits, while its answer is lost: the SDK retries it.
func losingFirstReply(t *testing.T, op string) (*dynamodb.Client, *atomic.Int64) {
	t.Helper()
	attempts := &atomic.Int64{}
	client := idemtest.Client(t, func(o *dynamodb.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), 10*time.Millisecond)
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Finalize.Add(middleware.FinalizeMiddlewareFunc("loseFirstReply",
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
	})
	return client, attempts
}

// TestAcquireAnswerLost: an acquisition whose UpdateItem committed but
// whose answer was lost, retried by the SDK, finds the record under its
// own lease and holds it, instead of answering that the key is in
// progress (and leaving it held by nobody until the lease ends).
func TestAcquireAnswerLost(t *testing.T) {
	client, attempts := losingFirstReply(t, "UpdateItem")
	store := idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
	now := idemtest.Now()
	e, acquired, err := store.Acquire(context.Background(), idempotency.AcquireInput{
		Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	})
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d UpdateItem attempts, want 2 (the first answer lost)", n)
	}
	if err != nil || !acquired || e.LeaseCount != 1 || e.Status != idempotency.EntryInProgress {
		t.Fatalf("Acquire = %+v, %v, %v; want the record acquired under lease 1", e, acquired, err)
	}
	// The lease it answered is the one the record holds: it settles.
	if err := store.Settle(context.Background(), e.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`1`), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatalf("Settle under the answered lease: %v", err)
	}
	// Through Do, the call runs its function instead of failing as in
	// progress.
	client2, _ := losingFirstReply(t, "UpdateItem")
	idem, err := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client2, idemtest.Table(t, client2))})
	if err != nil {
		t.Fatal(err)
	}
	res, err := idempotency.Do(context.Background(), idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1,
		func(_ context.Context, n int) (int, error) { return n + 1, nil })
	if err != nil || res.Output != 2 || errors.Is(err, idempotency.ErrInProgress) {
		t.Fatalf("Do = %+v, %v; want the function run", res, err)
	}
}

// TestReserveAnswerLost: a reservation whose PutItem committed but whose
// answer was lost, retried by the SDK, is told it created the record (the
// record holds its own resource), and not that an earlier request holds
// the key.
func TestReserveAnswerLost(t *testing.T) {
	client, attempts := losingFirstReply(t, "PutItem")
	store := idempotency.NewStore(client, idemtest.Table(t, client))
	rec, created, err := store.Reserve(context.Background(), reservation("alice", "k1", `{"a":1}`, "t-1"))
	if n := attempts.Load(); n != 2 {
		t.Fatalf("%d PutItem attempts, want 2 (the first answer lost)", n)
	}
	if err != nil || !created || rec.ResourceID != "t-1" || rec.Status != idempotency.StatusReserved {
		t.Fatalf("Reserve = %+v, %v, %v; want the record created for t-1", rec, created, err)
	}
	// A later request with the same key is still a duplicate.
	rec, created, err = store.Reserve(context.Background(), reservation("alice", "k1", `{"a":1}`, "t-2"))
	if err != nil || created || rec.ResourceID != "t-1" {
		t.Fatalf("the duplicate = %+v, %v, %v; want t-1's record, not created", rec, created, err)
	}
}
