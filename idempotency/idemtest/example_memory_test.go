package idemtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// A MemoryStore counts the calls a function made idempotent costs, fails
// them on demand, and with a Clock, lets a test move time.
func ExampleMemoryStore() {
	ctx := context.Background()
	store := idemtest.NewMemoryStore()
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idem, _ := idempotency.New(idempotency.Config{Store: store, Clock: clock.Now, Retention: time.Hour})
	op := idempotency.Operation[string]{Scope: "alice", Key: "k1"}
	upper := func(_ context.Context, s string) (string, error) { return s + "!", nil }

	_, _ = idempotency.Do(ctx, idem, op, "hi", upper)
	_, _ = idempotency.Do(ctx, idem, op, "hi", upper)
	fmt.Println("acquire:", store.Calls(idemtest.OpAcquire), "settle:", store.Calls(idemtest.OpSettle))

	// Past the retention the key is free again; an acquire that never
	// reaches the store fails the call and runs nothing.
	clock.Advance(time.Hour)
	store.FailBefore(idemtest.OpAcquire, errors.New("throttled"))
	_, err := idempotency.Do(ctx, idem, op, "hi", upper)
	fmt.Println(err)
	res, _ := idempotency.Do(ctx, idem, op, "hi", upper)
	e, _ := store.Peek("alice", "k1")
	fmt.Println(res.Output, res.Replayed, e.Status, e.LeaseCount)
	// Output:
	// acquire: 2 settle: 1
	// idempotency: throttled
	// hi! false COMPLETED 2
}
