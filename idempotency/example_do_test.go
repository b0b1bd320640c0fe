package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

type payment struct {
	Key    string `json:"key"`
	Amount int    `json:"amount"`
}

type paid struct {
	ID string `json:"id"`
}

// A function runs once per key: a retry gets the stored output back
// without running it, and the same key with another payload is refused.
func ExampleDo() {
	ctx := context.Background()
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[payment]{
		Scope:   "alice",
		KeyFunc: func(p payment) (string, error) { return p.Key, nil },
	}
	charges := 0
	charge := func(_ context.Context, p payment) (paid, error) {
		charges++
		return paid{ID: fmt.Sprintf("pay-%d", charges)}, nil
	}
	res, err := idempotency.Do(ctx, idem, op, payment{"order-42", 100}, charge)
	fmt.Println(res.Output.ID, res.Replayed, err)
	res, err = idempotency.Do(ctx, idem, op, payment{"order-42", 100}, charge)
	fmt.Println(res.Output.ID, res.Replayed, err)
	_, err = idempotency.Do(ctx, idem, op, payment{"order-42", 999}, charge)
	fmt.Println(errors.Is(err, idempotency.ErrKeyReused), charges)
	// Output:
	// pay-1 false <nil>
	// pay-1 true <nil>
	// true 1
}

// Wrap makes a Lambda handler idempotent: pass the result to
// lambda.Start. OnReplay tells a replay apart.
func ExampleWrap() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 1000})
	handler := idempotency.Wrap(idem, idempotency.Operation[payment]{
		Scope:    "payments",
		KeyFunc:  func(p payment) (string, error) { return p.Key, nil },
		OnReplay: func(_ context.Context, r idempotency.Replay) { fmt.Println("replayed, from the cache:", r.FromCache) },
	}, func(_ context.Context, p payment) (paid, error) {
		return paid{ID: "pay-" + p.Key}, nil
	})
	for range 2 {
		out, err := handler(context.Background(), payment{"order-7", 5})
		fmt.Println(out.ID, err)
	}
	// Output:
	// pay-order-7 <nil>
	// replayed, from the cache: true
	// pay-order-7 <nil>
}

// A failure marked permanent is stored, and every retry gets it back
// without running the function; any other failure releases the key.
func ExamplePermanent() {
	ctx := context.Background()
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-9"}
	runs := 0
	charge := func(_ context.Context, p payment) (paid, error) {
		runs++
		return paid{}, idempotency.Permanent(errors.New("card declined"))
	}
	for range 3 {
		_, err := idempotency.Do(ctx, idem, op, payment{"order-9", 100}, charge)
		fmt.Println(err)
	}
	fmt.Println("runs:", runs)
	// Output:
	// card declined
	// idempotency key holds a stored failure: card declined
	// idempotency key holds a stored failure: card declined
	// runs: 1
}

// While a call holds the key, a duplicate is told how long its lease has
// left: the lease ends at the context's deadline (a Lambda's), or after
// Config.Lease without one.
func ExampleInProgressError() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Clock: clock.Now, Lease: time.Minute})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-1"}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(ctx context.Context, p payment) (paid, error) {
		clock.Advance(15 * time.Second)
		_, err := idempotency.Do(ctx, idem, op, p, func(context.Context, payment) (paid, error) { return paid{}, nil })
		var ip *idempotency.InProgressError
		if errors.As(err, &ip) {
			fmt.Println("in progress, retry after", ip.RetryAfter)
		}
		return paid{ID: "pay-1"}, nil
	})
	// Output:
	// in progress, retry after 45s
}

// Over DynamoDB: a table of TableInput's schema serves.
func ExampleNewDynamoDBPersistence() {
	ctx := context.Background()
	client, table := exampleTable(ctx)
	idem, _ := idempotency.New(idempotency.Config{Store: idempotency.NewDynamoDBPersistence(client, table)})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-42"}
	for range 2 {
		res, err := idempotency.Do(ctx, idem, op, payment{"order-42", 100}, func(context.Context, payment) (paid, error) {
			return paid{ID: "pay-1"}, nil
		})
		fmt.Println(res.Output.ID, res.Replayed, err)
	}
	e, _ := idempotency.NewDynamoDBPersistence(client, table).Get(ctx, "alice", "order-42")
	fmt.Println(e.Status, e.LeaseCount, string(e.Output))
	// Output:
	// pay-1 false <nil>
	// pay-1 true <nil>
	// COMPLETED 1 {"id":"pay-1"}
}

// An Observer is told of every call once, when it ends: here, a
// function that prints what it is told. Neither the key nor the scope is
// in the event, only the operation's name.
func ExampleObserverFunc() {
	idem, _ := idempotency.New(idempotency.Config{
		Store: idemtest.NewMemoryStore(),
		Observer: idempotency.ObserverFunc(func(_ context.Context, ev idempotency.Event) {
			fmt.Println(ev.Operation, ev.Outcome, "store calls:", ev.StoreCalls, "ran:", ev.Ran)
		}),
	})
	op := idempotency.Operation[payment]{Name: "charge", Scope: "alice", Key: "order-42"}
	charge := func(context.Context, payment) (paid, error) { return paid{ID: "pay-1"}, nil }
	for range 2 {
		_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-42", 100}, charge)
	}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-42", 5}, charge)
	// Output:
	// charge completed store calls: 2 ran: true
	// charge replayed store calls: 1 ran: false
	// charge key_reused store calls: 1 ran: false
}

// With Operation.Wait, a duplicate that finds the key in progress waits
// for the holder and replays its outcome, instead of failing at once.
func ExampleOperation_wait() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-1", Wait: 5 * time.Second}
	running, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(context.Context, payment) (paid, error) {
			close(running)
			time.Sleep(100 * time.Millisecond)
			return paid{ID: "pay-1"}, nil
		})
	}()
	<-running
	res, err := idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(context.Context, payment) (paid, error) {
		return paid{ID: "pay-2"}, nil
	})
	fmt.Println(res.Output.ID, res.Replayed, err)
	<-done
	// Output:
	// pay-1 true <nil>
}

// LeaseFor holds the key for a fixed time, whatever the context's
// deadline.
func ExampleLeaseFor() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := idemtest.NewMemoryStore()
	idem, _ := idempotency.New(idempotency.Config{Store: store, Clock: clock.Now})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-1", Lease: idempotency.LeaseFor(15 * time.Minute)}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(context.Context, payment) (paid, error) {
		e, _ := store.Peek("alice", "order-1")
		fmt.Println(op.Lease, "until", e.LeaseUntil.Format(time.TimeOnly))
		return paid{}, nil
	})
	// Output:
	// LeaseFor(15m0s) until 12:15:00
}

// LeaseFromDeadline, the default, ends the lease at the context's
// deadline, or after Config.Lease without one.
func ExampleLeaseFromDeadline() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	store := idemtest.NewMemoryStore()
	idem, _ := idempotency.New(idempotency.Config{Store: store, Clock: clock.Now, Lease: time.Minute})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-1", Lease: idempotency.LeaseFromDeadline()}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(context.Context, payment) (paid, error) {
		e, _ := store.Peek("alice", "order-1")
		fmt.Println(op.Lease, "until", e.LeaseUntil.Format(time.TimeOnly))
		return paid{}, nil
	})
	// Output:
	// LeaseFromDeadline() until 12:01:00
}

// LeaseUntilSettled holds the key until the call settles: a duplicate
// an hour later still finds it in progress, until the record's expiry.
func ExampleLeaseUntilSettled() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Clock: clock.Now, Retention: 24 * time.Hour})
	op := idempotency.Operation[payment]{Scope: "alice", Key: "order-1", Lease: idempotency.LeaseUntilSettled()}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(ctx context.Context, p payment) (paid, error) {
		clock.Advance(time.Hour)
		_, err := idempotency.Do(ctx, idem, op, p, func(context.Context, payment) (paid, error) { return paid{}, nil })
		fmt.Println(err)
		return paid{}, nil
	})
	// Output:
	// idempotency key is in progress: its lease expires in 23h0m0s
}

// Operation.TakeOver takes a key over from a holder known to be dead,
// before its lease expires: here a holder under LeaseUntilSettled. The
// store must implement Taker (takerStore, in this package's tests, is a
// MemoryStore with a TakeOver).
func ExampleTakeOverFunc() {
	store := &takerStore{MemoryStore: idemtest.NewMemoryStore()}
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idem, _ := idempotency.New(idempotency.Config{Store: store, Clock: clock.Now})
	running := map[string]bool{} // the executions alive, by key
	op := idempotency.Operation[payment]{
		Scope: "alice", KeyFunc: func(p payment) (string, error) { return p.Key, nil },
		Lease: idempotency.LeaseUntilSettled(),
		TakeOver: func(_ context.Context, p payment, holder idempotency.Lease) (bool, error) {
			fmt.Println("holder", holder.Count, "running:", running[p.Key])
			return !running[p.Key], nil
		},
	}
	_, err := idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(ctx context.Context, p payment) (paid, error) {
		running[p.Key] = true
		_, err := idempotency.Do(ctx, idem, op, p, func(context.Context, payment) (paid, error) { return paid{ID: "pay-2"}, nil })
		fmt.Println(err)
		running[p.Key] = false // it died, say
		res, err := idempotency.Do(ctx, idem, op, p, func(context.Context, payment) (paid, error) { return paid{ID: "pay-2"}, nil })
		fmt.Println(res.Output.ID, err)
		return paid{ID: "pay-1"}, nil
	})
	fmt.Println("the first holder:", errors.Is(err, idempotency.ErrFenced))
	// Output:
	// holder 1 running: true
	// idempotency key is in progress: its lease expires in 24h0m0s
	// holder 1 running: false
	// pay-2 <nil>
	// the first holder: true
}

// WrapWithHook changes every replayed output before the caller gets it,
// as Powertools' response hook does; the stored output stays as it is.
func ExampleWrapWithHook() {
	type response struct {
		ID       string `json:"id"`
		Replayed bool   `json:"-"`
	}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 100})
	handler := idempotency.WrapWithHook(idem, idempotency.Operation[payment]{
		Scope: "payments", KeyFunc: func(p payment) (string, error) { return p.Key, nil },
	}, func(_ context.Context, p payment) (response, error) {
		return response{ID: "pay-" + p.Key}, nil
	}, func(_ context.Context, out response, r idempotency.Replay) response {
		out.Replayed = true
		return out
	})
	for range 2 {
		out, err := handler(context.Background(), payment{"order-7", 5})
		fmt.Println(out.ID, out.Replayed, err)
	}
	// Output:
	// pay-order-7 false <nil>
	// pay-order-7 true <nil>
}

// outcomes is an Observer that counts the calls by outcome.
type outcomes struct {
	mu sync.Mutex
	n  map[idempotency.CallOutcome]int
}

func (o *outcomes) Observe(_ context.Context, ev idempotency.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[ev.Outcome]++
}

// An Observer of one's own: here, one that counts the calls by outcome.
func ExampleObserver() {
	counts := &outcomes{n: map[idempotency.CallOutcome]int{}}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: 10, Observer: counts})
	op := idempotency.Operation[payment]{Name: "charge", Scope: "alice", KeyFunc: func(p payment) (string, error) { return p.Key, nil }}
	charge := func(context.Context, payment) (paid, error) { return paid{ID: "pay-1"}, nil }
	for _, p := range []payment{{"order-1", 1}, {"order-1", 1}, {"order-1", 2}, {"", 1}} {
		_, _ = idempotency.Do(context.Background(), idem, op, p, charge)
	}
	fmt.Println(counts.n[idempotency.OutcomeCompleted], counts.n[idempotency.OutcomeCached],
		counts.n[idempotency.OutcomeKeyReused], counts.n[idempotency.OutcomeInvalid])
	// Output:
	// 1 1 1 1
}

// An Event names the record by its key, the SHA-256 of scope and key,
// never by either; its time and duration are by Config.Clock.
func ExampleEvent() {
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var ev idempotency.Event
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), Clock: clock.Now,
		Observer: idempotency.ObserverFunc(func(_ context.Context, e idempotency.Event) { ev = e })})
	op := idempotency.Operation[payment]{Name: "charge", Scope: "alice", Key: "order-1"}
	_, _ = idempotency.Do(context.Background(), idem, op, payment{"order-1", 1}, func(context.Context, payment) (paid, error) {
		clock.Advance(40 * time.Millisecond)
		return paid{ID: "pay-1"}, nil
	})
	fmt.Println(ev.Operation, ev.Outcome, ev.StoreCalls, ev.Ran, ev.Duration, ev.Err)
	fmt.Println(ev.RecordKey == idempotency.RecordKey("alice", "order-1"))
	// Output:
	// charge completed 2 true 40ms <nil>
	// true
}

// A CallOutcome is a stable word, fit for a metric dimension.
func ExampleCallOutcome() {
	for _, o := range []idempotency.CallOutcome{idempotency.OutcomeCompleted, idempotency.OutcomeStoredFailure, idempotency.OutcomeInProgress} {
		fmt.Println(o)
	}
	// Output:
	// completed
	// stored_failure
	// in_progress
}

// A ReplayHook is given to WrapWithHook; it may also serve several
// handlers of one output type.
func ExampleReplayHook() {
	var markReplay idempotency.ReplayHook[paid] = func(_ context.Context, out paid, r idempotency.Replay) paid {
		out.ID += " (replayed)"
		return out
	}
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := idempotency.WrapWithHook(idem, idempotency.Operation[payment]{Scope: "alice", Key: "order-1"},
		func(context.Context, payment) (paid, error) { return paid{ID: "pay-1"}, nil }, markReplay)
	for range 2 {
		out, _ := handler(context.Background(), payment{"order-1", 1})
		fmt.Println(out.ID)
	}
	// Output:
	// pay-1
	// pay-1 (replayed)
}

// Do finds a Taker with a type assertion on the store: the module's
// stores are Takers, and so is a store of one's own that has TakeOver.
func ExampleTaker() {
	for _, store := range []idempotency.Persistence{
		idempotency.NewDynamoDBPersistence(nil, "table"),
		idemtest.NewMemoryStore(),
		&takerStore{MemoryStore: idemtest.NewMemoryStore()},
	} {
		_, ok := store.(idempotency.Taker)
		fmt.Printf("%T: %v\n", store, ok)
	}
	// Output:
	// *idempotency.DynamoDBPersistence: true
	// *idemtest.MemoryStore: true
	// *idempotency_test.takerStore: true
}
