package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

var errNoTable = errors.New("no table of keys")

// TestDoOptionalKey: a missing key runs the function directly at no
// store call; a key that is present goes through Do; a bad key or a
// KeyFunc error runs nothing and calls nothing.
func TestDoOptionalKey(t *testing.T) {
	tests := []struct {
		name     string
		op       idempotency.Operation[order]
		in       order
		calls    int // of the second call: the first may store
		wantRuns int
		wantErr  error // nil: none, unless refused
		refused  bool  // any error, with no run and no call
		replayed bool
	}{
		{"key present is idempotent", op("alice"), order{"k1", 5}, 1, 1, nil, false, true},
		{"Key present is idempotent", idempotency.Operation[order]{Scope: "alice", Key: "k1"}, order{"k1", 5}, 1, 1, nil, false, true},
		{"KeyFunc answers empty", op("alice"), order{"", 5}, 0, 2, nil, false, false},
		{"no Key nor KeyFunc", idempotency.Operation[order]{Scope: "alice"}, order{"k1", 5}, 0, 2, nil, false, false},
		{"KeyFunc answers ErrKeyMissing", idempotency.Operation[order]{
			Scope:   "alice",
			KeyFunc: func(order) (string, error) { return "", fmt.Errorf("no key field: %w", idempotency.ErrKeyMissing) },
		}, order{"k1", 5}, 0, 2, nil, false, false},
		{"KeyFunc fails otherwise", idempotency.Operation[order]{
			Scope:   "alice",
			KeyFunc: func(order) (string, error) { return "", errNoTable },
		}, order{"k1", 5}, 0, 0, errNoTable, true, false},
		{"malformed key", op("alice"), order{"k\x00", 5}, 0, 0, idempotency.ErrKeyMalformed, true, false},
		{"Key and KeyFunc both set", idempotency.Operation[order]{
			Scope: "alice", Key: "k1",
			KeyFunc: func(o order) (string, error) { return o.Key, nil },
		}, order{"k1", 5}, 0, 0, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			idem, err := idempotency.New(idempotency.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			runs := 0
			fn := func(_ context.Context, o order) (receipt, error) {
				runs++
				return receipt{Run: int64(runs), Amount: o.Amount}, nil
			}
			var res idempotency.Result[receipt]
			for n := range 2 {
				before := store.TotalCalls()
				res, err = idempotency.DoOptionalKey(t.Context(), idem, tt.op, tt.in, fn)
				if n == 1 && store.TotalCalls()-before != tt.calls {
					t.Errorf("store calls of a retry = %d, want %d", store.TotalCalls()-before, tt.calls)
				}
			}
			if tt.refused {
				if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
					t.Errorf("DoOptionalKey = %v, want %v", err, tt.wantErr)
				}
				if runs != 0 || store.TotalCalls() != 0 {
					t.Errorf("%d runs and %d store calls, want none", runs, store.TotalCalls())
				}
				return
			}
			if err != nil {
				t.Fatalf("DoOptionalKey = %v", err)
			}
			if runs != tt.wantRuns || res.Replayed != tt.replayed {
				t.Errorf("runs = %d, replayed %v, want %d, %v", runs, res.Replayed, tt.wantRuns, tt.replayed)
			}
		})
	}
}

// The key of a call may be missing: then it runs without idempotency,
// as Powertools does by default.
func ExampleDoOptionalKey() {
	ctx := context.Background()
	store := idemtest.NewMemoryStore()
	idem, _ := idempotency.New(idempotency.Config{Store: store})
	op := idempotency.Operation[payment]{
		Scope:   "alice",
		KeyFunc: func(p payment) (string, error) { return p.Key, nil },
	}
	charges := 0
	charge := func(_ context.Context, p payment) (paid, error) {
		charges++
		return paid{ID: fmt.Sprintf("pay-%d", charges)}, nil
	}
	for _, p := range []payment{{"order-1", 5}, {"order-1", 5}, {"", 5}, {"", 5}} {
		res, err := idempotency.DoOptionalKey(ctx, idem, op, p, charge)
		fmt.Println(res.Output.ID, res.Replayed, err)
	}
	fmt.Println("store calls:", store.TotalCalls())
	// Output:
	// pay-1 false <nil>
	// pay-1 true <nil>
	// pay-2 false <nil>
	// pay-3 false <nil>
	// store calls: 3
}

func ExampleWrapOptionalKey() {
	idem, _ := idempotency.New(idempotency.Config{Store: idemtest.NewMemoryStore()})
	handler := idempotency.WrapOptionalKey(idem, idempotency.Operation[payment]{
		Scope:   "payments",
		KeyFunc: func(p payment) (string, error) { return p.Key, nil },
	}, func(_ context.Context, p payment) (paid, error) {
		return paid{ID: "pay-" + p.Key}, nil
	})
	out, err := handler(context.Background(), payment{"", 5})
	fmt.Printf("%q %v\n", out.ID, err)
	// Output:
	// "pay-" <nil>
}
