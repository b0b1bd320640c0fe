package bench

import (
	"context"
	"testing"

	"github.com/exactlyonce/transfers/internal/local/stack"
)

// BenchmarkOrchestrator is the orchestrator's own work per request in the
// default configuration (ownership enforced), against the recorded
// answers of the real services, as the CPU-per-request stage measures it:
// the loop to profile (bench/profiles/orchestrator.md).
//
//	go test -run '^$' -bench Orchestrator -benchmem -cpuprofile cpu.out -memprofile mem.out ./internal/bench/
func BenchmarkOrchestrator(b *testing.B) {
	ctx := context.Background()
	st, err := stack.Start(ctx, stack.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(context.Background()) })
	p, err := newPaths(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{New, Duplicate} {
		do, err := p.replayed(ctx, Ours, true, kind)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			for i := 1; b.Loop(); i++ {
				if err := do(i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
