package idempotency_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// benchHandler is the handler every benchmark makes idempotent.
func benchHandler(_ context.Context, o order) (receipt, error) {
	return receipt{Run: 1, Amount: o.Amount}, nil
}

var sink receipt

// bareTime is how long n calls of the bare handler take.
func bareTime(ctx context.Context, n int) time.Duration {
	handler := benchHandler
	start := time.Now()
	for range n {
		sink, _ = handler(ctx, order{"order-1", 100})
	}
	return time.Since(start)
}

// BenchmarkDo measures Do on the in-memory store. The names of its
// sub-benchmarks are stable, for comparing runs (benchstat):
//
//	BenchmarkDo/bare       the handler alone
//	BenchmarkDo/new        a new key each time: acquire, run, settle
//	BenchmarkDo/duplicate  a duplicate replayed from the store: one acquire
//	BenchmarkDo/cached     a duplicate served from the local cache: no store call
//	BenchmarkDo/observed   cached, with an Observer that does nothing
//
// Each but bare also reports overhead-ns/op: its time per call less the
// bare handler's, timed over as many calls right after it.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	overhead := func(b *testing.B, n int) {
		b.ReportMetric(float64(b.Elapsed()-bareTime(ctx, n))/float64(n), "overhead-ns/op")
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		handler := benchHandler
		for b.Loop() {
			sink, _ = handler(ctx, order{"order-1", 100})
		}
	})
	b.Run("new", func(b *testing.B) {
		i, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
		ks := make([]string, b.N)
		for n := range ks {
			ks[n] = "order-" + strconv.Itoa(n)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			if _, err := idempotency.Do(ctx, i, op("alice"), order{ks[n], 100}, benchHandler); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		overhead(b, b.N)
	})
	for _, c := range []struct {
		name  string
		cache int
		obs   idempotency.Observer
	}{
		{"duplicate", 0, nil},
		{"cached", 1024, nil},
		{"observed", 1024, idempotency.ObserverFunc(func(context.Context, idempotency.Event) {})},
	} {
		b.Run(c.name, func(b *testing.B) {
			i, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: c.cache, Observer: c.obs})
			if _, err := idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, benchHandler); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				res, err := idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, benchHandler)
				if err != nil || !res.Replayed || res.FromCache != (c.cache > 0) {
					b.Fatalf("Do = %+v, %v", res, err)
				}
				n++
			}
			overhead(b, n)
		})
	}
}

// TestDoAllocs: a duplicate served from the cache allocates once (the
// input, boxed to be encoded), and an Observer adds no allocation to it
// or to a duplicate replayed from the store.
func TestDoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	allocs := func(cache int, obs idempotency.Observer) float64 {
		i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: cache, Observer: obs})
		_, _ = idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, benchHandler)
		return testing.AllocsPerRun(200, func() {
			_, _ = idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, benchHandler)
		})
	}
	nop := idempotency.ObserverFunc(func(context.Context, idempotency.Event) {})
	if got := allocs(16, nil); got != 1 {
		t.Errorf("a cached duplicate allocates %v times, want 1", got)
	}
	if without, with := allocs(16, nil), allocs(16, nop); with != without {
		t.Errorf("cached duplicate: %v allocations with an Observer, %v without", with, without)
	}
	if without, with := allocs(0, nil), allocs(0, nop); with != without {
		t.Errorf("duplicate from the store: %v allocations with an Observer, %v without", with, without)
	}
}
