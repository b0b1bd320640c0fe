package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
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

// A record that Store.Reserve wrote is not an Entry: DynamoDBPersistence
// refuses it by name instead of guessing.
func ExampleFormatError() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	body := []byte(`{"amount":1}`)
	_, _, _ = idempotency.NewStore(client, table).Reserve(ctx, idempotency.Reservation{
		Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body,
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

// TimeToLiveInput turns on DynamoDB's deletion of expired records.
func ExampleTimeToLiveInput() {
	in := idempotency.TimeToLiveInput("idempotency")
	fmt.Println(aws.ToString(in.TableName), aws.ToString(in.TimeToLiveSpecification.AttributeName), aws.ToBool(in.TimeToLiveSpecification.Enabled))
	// Output:
	// idempotency expiresAt true
}

// NewStore with options: the retention of each record it reserves, and
// the clock (for tests).
func ExampleNewStore() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var opts []idempotency.Option = []idempotency.Option{
		idempotency.WithRetention(2 * time.Hour),
		idempotency.WithClock(func() time.Time { return at }),
	}
	store := idempotency.NewStore(client, table, opts...)
	body := []byte(`{}`)
	rec, _, _ := store.Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body})
	fmt.Println(rec.CreatedAt, rec.Retention())
	// Output:
	// 2026-03-01T12:00:00.000Z 2h0m0s
}

// WithClock fixes the store's time.
func ExampleWithClock() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewStore(client, table, idempotency.WithClock(func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }))
	body := []byte(`{}`)
	rec, _, _ := store.Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body})
	fmt.Println(rec.CreatedAt)
	// Output:
	// 2030-01-02T03:04:05.000Z
}

// WithRetention sets the retention stored in each record.
func ExampleWithRetention() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	store := idempotency.NewStore(client, table, idempotency.WithRetention(90*time.Minute))
	body := []byte(`{}`)
	rec, _, _ := store.Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body})
	fmt.Println(rec.RetentionSeconds)
	// Output:
	// 5400
}

// A Record's status says whether its operation has ended, and a settled
// record frees its key once its retention has passed.
func ExampleRecord() {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := idempotency.Record{Status: idempotency.StatusCompleted, Fingerprint: "fp", ExpiresAt: now.Add(time.Hour).Unix()}
	fmt.Println(rec.Reusable(now), rec.Reusable(now.Add(time.Hour)), rec.Matches("fp"), errors.Is(rec.Matches("other"), idempotency.ErrKeyReused))
	// Output:
	// false true <nil> true
}

// The statuses an operation's record moves through.
func ExampleStatus() {
	for _, s := range []idempotency.Status{idempotency.StatusReserved, idempotency.StatusInProgress, idempotency.StatusReconciling, idempotency.StatusCompleted, idempotency.StatusFailed} {
		fmt.Println(s, s.Terminal())
	}
	// Output:
	// RESERVED false
	// IN_PROGRESS false
	// RECONCILING false
	// COMPLETED true
	// FAILED true
}

// Attributes are stored beside the record's own, for the operation's
// later steps to condition on.
func ExampleReservation() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	body := []byte(`{"amount":5}`)
	_, created, err := idempotency.NewStore(client, table).Reserve(ctx, idempotency.Reservation{
		Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body,
		Attributes: map[string]types.AttributeValue{"source": &types.AttributeValueMemberS{Value: "acct-1"}},
	})
	out, _ := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table),
		Key:       map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: idempotency.RecordKey("alice", "k1")}},
	})
	fmt.Println(created, err, out.Item["source"].(*types.AttributeValueMemberS).Value)
	// Output:
	// true <nil> acct-1
}

// A failed precondition names the condition and stores nothing.
func ExamplePreconditionError() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	body := []byte(`{}`)
	_, _, err := idempotency.NewStore(client, table).Reserve(ctx, idempotency.Reservation{
		Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body,
		Require: []types.ConditionCheck{{
			TableName:           aws.String(table),
			Key:                 map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: "grant#acct-9"}},
			ConditionExpression: aws.String("attribute_exists(pk)"),
		}},
	})
	var perr *idempotency.PreconditionError
	fmt.Println(errors.As(err, &perr), perr.Index, errors.Is(err, idempotency.ErrPreconditionFailed))
	// Output:
	// true 0 true
}

// ListByScope pages a scope's records, newest first, from a Position.
func ExamplePosition() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := idempotency.NewStore(client, table, idempotency.WithClock(func() time.Time { at = at.Add(time.Second); return at }))
	for _, k := range []string{"k1", "k2", "k3"} {
		body := []byte(k)
		_, _, _ = store.Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: k, Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-" + k, Request: body})
	}
	var after *idempotency.Position
	for {
		page, next, err := store.ListByScope(ctx, "alice", 2, after)
		if err != nil {
			panic(err)
		}
		ids := make([]string, len(page))
		for i, r := range page {
			ids[i] = r.ResourceID
		}
		fmt.Println(strings.Join(ids, " "))
		if next == nil {
			break
		}
		after = next
	}
	// Output:
	// t-k3 t-k2
	// t-k1
}

// AttemptIs fences an operation's own writes: a step of an earlier
// attempt commits nothing once the record has moved on.
func ExampleAttemptIs() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	body := []byte(`{}`)
	rec, _, _ := idempotency.NewStore(client, table).Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body})
	step := func(attempt int64) error {
		expr, err := expression.NewBuilder().
			WithCondition(idempotency.AttemptIs(attempt)).
			WithUpdate(expression.Set(expression.Name("note"), expression.Value(fmt.Sprint("attempt ", attempt)))).
			Build()
		if err != nil {
			return err
		}
		_, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(table),
			Key:                       map[string]types.AttributeValue{idempotency.AttrKey: &types.AttributeValueMemberS{Value: rec.Key}},
			ConditionExpression:       expr.Condition(),
			UpdateExpression:          expr.Update(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		})
		return err
	}
	var ccf *types.ConditionalCheckFailedException
	fmt.Println(step(0), errors.As(step(1), &ccf))
	// Output:
	// <nil> true
}

// API is the part of the DynamoDB client the Store calls.
func ExampleAPI() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	var api idempotency.API = client
	body := []byte(`{}`)
	_, created, err := idempotency.NewStore(api, table).Reserve(ctx, idempotency.Reservation{Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint(body), ResourceID: "t-1", Request: body})
	fmt.Println(created, err)
	// Output:
	// true <nil>
}
