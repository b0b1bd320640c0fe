package redisstore_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/redisstore"
	"github.com/exactlyonce/transfers/idempotency/redisstore/internal/redistest"
)

// BenchmarkStore measures the store's operations and Do on the tests'
// Redis server over loopback, one call at a time:
//
//	cd idempotency/redisstore && go test -run '^$' -bench . .
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	store := redisstore.New(redistest.Client(b), redistest.Prefix(b))
	now := time.Now()
	out := idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`{"id":"r-1","amount":100}`), ExpiresAt: now.Add(time.Hour)}
	n := 0
	b.Run("acquire new and settle", func(b *testing.B) {
		for b.Loop() {
			n++
			e, ok, err := store.Acquire(ctx, input("bench", "new-"+strconv.Itoa(n), "fp", now))
			if err != nil || !ok {
				b.Fatal(ok, err)
			}
			if err := store.Settle(ctx, e.Lease(), out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("acquire duplicate", func(b *testing.B) {
		e, _, err := store.Acquire(ctx, input("bench", "dup", "fp", now))
		if err != nil {
			b.Fatal(err)
		}
		_ = store.Settle(ctx, e.Lease(), out)
		for b.Loop() {
			if _, ok, err := store.Acquire(ctx, input("bench", "dup", "fp", now)); err != nil || ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, err := store.Get(ctx, "bench", "dup"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("do duplicate", func(b *testing.B) {
		idem, err := idempotency.New(idempotency.Config{Store: store})
		if err != nil {
			b.Fatal(err)
		}
		op := idempotency.Operation[int]{Scope: "bench-do", Key: "k1"}
		fn := func(_ context.Context, n int) (int, error) { return n + 1, nil }
		for b.Loop() {
			if _, err := idempotency.Do(ctx, idem, op, 1, fn); err != nil {
				b.Fatal(err)
			}
		}
	})
}
