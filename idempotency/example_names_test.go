package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// A fingerprint is the SHA-256 of the canonical request, in hex: the same
// bytes give the same fingerprint, any other bytes another.
func ExampleFingerprint() {
	a := idempotency.Fingerprint([]byte(`{"amount":100}`))
	b := idempotency.Fingerprint([]byte(`{"amount":100}`))
	c := idempotency.Fingerprint([]byte(`{"amount":101}`))
	fmt.Println(len(a), a == b, a == c)
	// Output:
	// 64 true false
}

// The table key keeps neither the scope nor the key in clear, and the
// same key in two scopes is two records.
func ExampleRecordKey() {
	alice := idempotency.RecordKey("alice", "order-42")
	bob := idempotency.RecordKey("bob", "order-42")
	fmt.Println(len(alice), alice == bob, alice == idempotency.RecordKey("alice", "order-42"))
	// Output:
	// 64 false true
}

// Each lease id is new: 32 hex digits of crypto/rand.
func ExampleNewLeaseID() {
	a, b := idempotency.NewLeaseID(), idempotency.NewLeaseID()
	fmt.Println(len(a), a == b)
	// Output:
	// 32 false
}

// Config.Retention says how long an outcome is replayed, Config.Lease how
// long a call holds its key when its context has no deadline.
func ExampleConfig() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := idemtest.NewMemoryStore()
	idem, err := idempotency.New(idempotency.Config{
		Store: store, Retention: time.Hour, Lease: 30 * time.Second, Clock: clock.Now,
	})
	if err != nil {
		panic(err)
	}
	op := idempotency.Operation[string]{Scope: "alice", Key: "k1"}
	_, _ = idempotency.Do(context.Background(), idem, op, "hi", func(context.Context, string) (string, error) { return "done", nil })
	e, _ := store.Peek("alice", "k1")
	fmt.Println(e.Status, e.ExpiresAt.Sub(clock.Now()))
	// Output:
	// COMPLETED 1h0m0s
}

// New refuses a configuration it cannot run.
func ExampleNew() {
	_, err := idempotency.New(idempotency.Config{})
	fmt.Println(err)
	_, err = idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Retention: -time.Second})
	fmt.Println(err)
	// Output:
	// idempotency: Config.Store is required
	// idempotency: Config.Retention, Lease and CacheSize may not be negative
}

// Disabled, or the Powertools variable set, runs every function directly.
func ExampleIdempotency() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Disabled: true})
	runs := 0
	op := idempotency.Operation[string]{Scope: "alice", Key: "k1"}
	for range 2 {
		_, _ = idempotency.Do(context.Background(), idem, op, "hi", func(context.Context, string) (string, error) { runs++; return "", nil })
	}
	fmt.Println(idem.Disabled(), runs)
	// Output:
	// true 2
}

// Payload picks what the fingerprint is taken of: here the amount and not
// the request's trace id, so a retry with a new trace id is a duplicate.
func ExampleOperation() {
	type charge struct {
		Key, TraceID string
		Amount       int
	}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[charge]{
		Scope:   "alice",
		KeyFunc: func(c charge) (string, error) { return c.Key, nil },
		Payload: func(c charge) ([]byte, error) { return fmt.Appendf(nil, "%d", c.Amount), nil },
	}
	run := func(_ context.Context, c charge) (int, error) { return c.Amount, nil }
	first, _ := idempotency.Do(context.Background(), idem, op, charge{"order-1", "trace-a", 5}, run)
	retry, _ := idempotency.Do(context.Background(), idem, op, charge{"order-1", "trace-b", 5}, run)
	fmt.Println(first.Replayed, retry.Replayed, retry.Output)
	// Output:
	// false true 5
}

// A replay from the local cache costs no call to the store.
func ExampleReplay() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 10})
	op := idempotency.Operation[string]{
		Scope: "alice", Key: "k1",
		OnReplay: func(_ context.Context, r idempotency.Replay) {
			fmt.Println("from the cache:", r.FromCache, "failed:", r.Failed)
		},
	}
	for range 2 {
		_, _ = idempotency.Do(context.Background(), idem, op, "hi", func(context.Context, string) (string, error) { return "ok", nil })
	}
	// Output:
	// from the cache: true failed: false
}

// A permanent failure is stored, and a retry gets it back as a
// *StoredFailureError without running the function.
func ExampleStoredFailureError() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[string]{Scope: "alice", Key: "k1"}
	declined := func(context.Context, string) (string, error) {
		return "", idempotency.Permanent(errors.New("card declined"))
	}
	_, err := idempotency.Do(context.Background(), idem, op, "hi", declined)
	var perm *idempotency.PermanentError
	fmt.Println(errors.As(err, &perm), err)
	_, err = idempotency.Do(context.Background(), idem, op, "hi", declined)
	var stored *idempotency.StoredFailureError
	fmt.Println(errors.As(err, &stored), stored.Message)
	// Output:
	// true card declined
	// true card declined
}

// PermanentError unwraps to the error it marks.
func ExamplePermanentError() {
	errDeclined := errors.New("card declined")
	err := idempotency.Permanent(fmt.Errorf("charge: %w", errDeclined))
	var perm *idempotency.PermanentError
	fmt.Println(errors.As(err, &perm), errors.Is(err, errDeclined))
	// Output:
	// true true
}

// An Entry is free for an acquisition once it is released, its lease has
// expired (for the same payload), or, settled, its retention has passed.
func ExampleEntry() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	held := idempotency.Entry{Status: idempotency.EntryInProgress, Fingerprint: "fp", LeaseUntil: now.Add(time.Minute)}
	fmt.Println(held.Free("fp", now), held.Free("fp", now.Add(time.Minute)), held.Free("other", now.Add(time.Minute)))
	done := idempotency.Entry{Status: idempotency.EntryCompleted, ExpiresAt: now.Add(time.Hour)}
	fmt.Println(done.Status.Settled(), done.Free("fp", now), done.Free("fp", now.Add(time.Hour)))
	// Output:
	// false true false
	// true false true
}

// EntryStatus tells settled records from the others.
func ExampleEntryStatus() {
	for _, s := range []idempotency.EntryStatus{idempotency.EntryInProgress, idempotency.EntryCompleted, idempotency.EntryFailed, idempotency.EntryReleased} {
		fmt.Println(s, s.Settled())
	}
	// Output:
	// IN_PROGRESS false
	// COMPLETED true
	// FAILED true
	// RELEASED false
}

// A Persistence used directly: acquire, settle under the lease, and a
// settle by a lease that lost the record writes nothing.
func ExamplePersistence() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var store idempotency.Persistence = idemtest.NewMemoryStore()
	in := idempotency.AcquireInput{
		Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	}
	first, acquired, _ := store.Acquire(ctx, in)
	fmt.Println(acquired, first.LeaseCount)

	// The first holder's lease expires; the next call takes over.
	in.Now, in.LeaseUntil = now.Add(time.Minute), now.Add(2*time.Minute)
	second, acquired, _ := store.Acquire(ctx, in)
	fmt.Println(acquired, second.LeaseCount)

	late := store.Settle(ctx, first.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`"late"`), ExpiresAt: now.Add(time.Hour)})
	fmt.Println(errors.Is(late, idempotency.ErrFenced))
	_ = store.Settle(ctx, second.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`"ok"`), ExpiresAt: now.Add(time.Hour)})
	e, _ := store.Get(ctx, "alice", "k1")
	fmt.Println(e.Status, string(e.Output))
	// Output:
	// true 1
	// true 2
	// true
	// COMPLETED "ok"
}

// AcquireInput carries the times the store judges expiries at, so that a
// store never reads a clock of its own.
func ExampleAcquireInput() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := idemtest.NewMemoryStore()
	e, acquired, err := store.Acquire(context.Background(), idempotency.AcquireInput{
		Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(24 * time.Hour),
	})
	fmt.Println(acquired, err, e.Status, e.LeaseUntil.Sub(now))
	// Output:
	// true <nil> IN_PROGRESS 1m0s
}

// A Lease names the acquisition that holds a record: a release by it
// marks the record RELEASED, keeping the lease counter.
func ExampleLease() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := idemtest.NewMemoryStore()
	in := idempotency.AcquireInput{Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	e, _, _ := store.Acquire(ctx, in)
	var lease idempotency.Lease = e.Lease()
	fmt.Println(store.Release(ctx, lease))
	again, acquired, _ := store.Acquire(ctx, in)
	fmt.Println(acquired, again.LeaseCount, again.LeaseID != lease.ID)
	// Output:
	// <nil>
	// true 2 true
}

// An Outcome is what a holder settles: a completed call's output or a
// failed call's error text, and when the record may go.
func ExampleOutcome() {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := idemtest.NewMemoryStore()
	e, _, _ := store.Acquire(ctx, idempotency.AcquireInput{Scope: "alice", Key: "k1", Fingerprint: "fp", Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
	err := store.Settle(ctx, e.Lease(), idempotency.Outcome{Status: idempotency.EntryFailed, Failure: "card declined", ExpiresAt: now.Add(24 * time.Hour)})
	got, _ := store.Get(ctx, "alice", "k1")
	fmt.Println(err, got.Status, got.Failure)
	// Output:
	// <nil> FAILED card declined
}

// A record that something else wrote under an Entry's table key is not
// an Entry: DynamoDBPersistence refuses it by name instead of guessing.
func ExampleFormatError() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	_, _ = client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item: map[string]types.AttributeValue{
			idempotency.AttrKey:    &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "k1")},
			idempotency.AttrStatus: &types.AttributeValueMemberS{Value: "RESERVED"},
		},
	})
	_, err := idempotency.NewDynamoDBPersistence(client, table).Get(ctx, "alice", "k1")
	var ferr *idempotency.FormatError
	fmt.Println(errors.As(err, &ferr), errors.Is(err, idempotency.ErrFormat), ferr.Format == "")
	// Output:
	// true true true
}

// PersistenceAPI is the part of the DynamoDB client DynamoDBPersistence
// calls: a client with middleware of its own (here one that counts the
// calls) serves as well as the plain one.
func ExamplePersistenceAPI() {
	ctx := context.Background()
	base, table := exampleTable(ctx)
	var client idempotency.PersistenceAPI = base
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	res, err := idempotency.Do(ctx, idem, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1, func(_ context.Context, n int) (int, error) { return n + 1, nil })
	fmt.Println(res.Output, err)
	// Output:
	// 2 <nil>
}

// A failed precondition names the condition, by its position, and
// matches ErrPreconditionFailed however it is wrapped.
func ExamplePreconditionError() {
	err := fmt.Errorf("acquire: %w", &idempotency.PreconditionError{Index: 0})
	var perr *idempotency.PreconditionError
	fmt.Println(errors.As(err, &perr), perr.Index, errors.Is(err, idempotency.ErrPreconditionFailed))
	// Output:
	// true 0 true
}
