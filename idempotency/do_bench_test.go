package idempotency_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// BenchmarkDo measures Do's own cost on the in-memory store against the
// bare handler: a new key each time (acquire, run, settle), a duplicate
// replayed from the store (one acquire), and a duplicate served from the
// local cache (no store call).
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	handler := func(_ context.Context, o order) (receipt, error) { return receipt{Run: 1, Amount: o.Amount}, nil }
	keys := func(n int) []string {
		k := make([]string, n)
		for i := range k {
			k[i] = "order-" + strconv.Itoa(i)
		}
		return k
	}
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = handler(ctx, order{"order-1", 100})
		}
	})
	b.Run("new", func(b *testing.B) {
		i, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
		ks := keys(b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			if _, err := idempotency.Do(ctx, i, op("alice"), order{ks[n], 100}, handler); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name  string
		cache int
	}{{"duplicate", 0}, {"cached", 1024}} {
		b.Run(c.name, func(b *testing.B) {
			i, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore(), CacheSize: c.cache})
			if _, err := idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, handler); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := idempotency.Do(ctx, i, op("alice"), order{"order-1", 100}, handler)
				if err != nil || !res.Replayed || res.FromCache != (c.cache > 0) {
					b.Fatalf("Do = %+v, %v", res, err)
				}
			}
		})
	}
}
