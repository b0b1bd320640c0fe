package idemtest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// A store of your own passes the flows that the library's stores pass.
func ExampleRunFlows() {
	_ = func(t *testing.T) {
		idemtest.RunFlows(t, func(*testing.T) idempotency.Persistence {
			return idemtest.NewMemoryStore() // your store here
		})
	}
}

// The flows, after Powertools' documented request flows.
func ExampleFlow() {
	for _, f := range idemtest.Flows {
		fmt.Println(f.Name)
	}
	// Output:
	// success
	// duplicate
	// duplicate from the local cache
	// expired record runs again
	// concurrent duplicate while in flight
	// timed out call taken over and fenced
	// transient failure released, retried
	// permanent failure stored, replayed
	// required key missing
	// payload validation
	// two operations or callers, one key
	// batch of records, one failing, one sent twice
	// disabled
}

// A flow asserts the calls it made and the record it left.
func ExampleFlowEnv_WantOps() {
	_ = idemtest.Flow{Name: "success", Run: func(t *testing.T, f *idemtest.FlowEnv) {
		idem := f.New(idempotency.Config{})
		op := idempotency.Operation[int]{Scope: "alice", Key: "k1"}
		if _, err := idempotency.Do(context.Background(), idem, op, 1, func(_ context.Context, n int) (int, error) { return n, nil }); err != nil {
			t.Fatal(err)
		}
		f.WantOps(t, idemtest.OpAcquire, idemtest.OpSettle)
		f.WantEntry(t, "alice", "k1", idempotency.EntryCompleted, "1", 1)
	}}
}

// A Recorder shows the calls in the order they were made.
func ExampleNewRecorder() {
	rec := idemtest.NewRecorder(idemtest.NewMemoryStore())
	idem, _ := idempotency.New(idempotency.Config{Store: rec})
	op := idempotency.Operation[int]{Scope: "alice", Key: "k1"}
	double := func(_ context.Context, n int) (int, error) { return 2 * n, nil }
	_, _ = idempotency.Do(context.Background(), idem, op, 21, double)
	fmt.Println(rec.Take())
	_, _ = idempotency.Do(context.Background(), idem, op, 21, double)
	fmt.Println(rec.Ops())
	// Output:
	// [Acquire Settle]
	// [Acquire]
}
