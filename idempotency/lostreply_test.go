package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// losingFirstReply is a client whose first call of operation op reaches
// DynamoDB and commits, while its answer is lost: the SDK retries it.
func losingFirstReply(t *testing.T, op string) (*dynamodb.Client, *atomic.Int64) {
	return idemtest.LoseFirstReply(t, op)
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
