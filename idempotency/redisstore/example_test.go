package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/redisstore"
	"github.com/exactlyonce/transfers/idempotency/redisstore/internal/redistest"
)

// redisAddr is the Redis server's host:port: for the Examples, the
// tests' own, with the records an earlier run of the Examples left
// (under DefaultPrefix, which no test uses) deleted, so that each run
// starts with none.
func redisAddr() string {
	addr := redistest.ServerAddr()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	for _, k := range c.Keys(ctx, redisstore.DefaultPrefix+"*").Val() {
		c.Del(ctx, k)
	}
	return addr
}

// Do over Redis: the first call runs the function and stores its output,
// a duplicate gets that output back without running it.
func Example() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	defer client.Close()
	idem, err := idempotency.New(idempotency.Config{
		Store:     redisstore.New(client, redisstore.DefaultPrefix),
		Retention: time.Hour,
	})
	if err != nil {
		panic(err)
	}
	op := idempotency.Operation[string]{Scope: "alice", Key: "order-1"}
	runs := 0
	shout := func(_ context.Context, s string) (string, error) {
		runs++
		return s + "!", nil
	}

	first, _ := idempotency.Do(ctx, idem, op, "hello", shout)
	again, _ := idempotency.Do(ctx, idem, op, "hello", shout)
	_, err = idempotency.Do(ctx, idem, op, "goodbye", shout)
	fmt.Println(first.Output, first.Replayed)
	fmt.Println(again.Output, again.Replayed, "runs:", runs)
	fmt.Println(errors.Is(err, idempotency.ErrKeyReused))
	// Output:
	// hello! false
	// hello! true runs: 1
	// true
}

// The store's own operations, as Do uses them: an acquisition with a
// lease, its settlement, and a second acquisition that finds the outcome.
// A settle under a lease that no longer holds the record is fenced.
func ExampleStore() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr()})
	defer client.Close()
	store := redisstore.New(client, redisstore.DefaultPrefix)
	now := time.Now()
	in := idempotency.AcquireInput{
		Scope: "alice", Key: "order-2", Fingerprint: idempotency.Fingerprint([]byte("payload")),
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	}

	e, acquired, _ := store.Acquire(ctx, in)
	fmt.Println(acquired, e.Status, e.LeaseCount)
	_ = store.Settle(ctx, e.Lease(), idempotency.Outcome{
		Status: idempotency.EntryCompleted, Output: []byte(`"receipt"`), ExpiresAt: now.Add(time.Hour),
	})
	dup, acquired, _ := store.Acquire(ctx, in)
	fmt.Println(acquired, dup.Status, string(dup.Output))
	err := store.Release(ctx, e.Lease())
	fmt.Println(errors.Is(err, idempotency.ErrFenced))
	ttl := client.TTL(ctx, store.Key("alice", "order-2")).Val()
	fmt.Println(ttl > 59*time.Minute && ttl <= time.Hour)
	// Output:
	// true IN_PROGRESS 1
	// false COMPLETED "receipt"
	// true
	// true
}

// Any go-redis client that runs scripts serves: a cluster's too, as each
// record lives under one key.
func ExampleClient() {
	var clients = []redisstore.Client{
		redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}),
		redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:7000"}}),
		redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}}),
	}
	for _, c := range clients {
		_ = redisstore.New(c, redisstore.DefaultPrefix)
	}
}
