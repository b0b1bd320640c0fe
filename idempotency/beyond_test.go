package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// stores are the Persistence implementations of this module, each new
// per call.
func stores(t *testing.T) map[string]func(t *testing.T) idempotency.Persistence {
	client := idemtest.Client(t)
	return map[string]func(t *testing.T) idempotency.Persistence{
		"memory": func(*testing.T) idempotency.Persistence { return idemtest.NewMemoryStore() },
		"dynamodb": func(t *testing.T) idempotency.Persistence {
			return idempotency.NewDynamoDBPersistence(client, idemtest.Table(t, client))
		},
	}
}

type mutable struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

// TestMutatedInputSettlesItsOwnKey: a function that changes its input
// (through a pointer) still settles the key it was called with, and
// writes nothing under the key its input now names.
func TestMutatedInputSettlesItsOwnKey(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			idem, err := idempotency.New(idempotency.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			op := idempotency.Operation[*mutable]{Scope: "alice", KeyFunc: func(m *mutable) (string, error) { return m.ID, nil }}
			runs := 0
			fn := func(_ context.Context, m *mutable) (int, error) {
				runs++
				m.ID, m.Amount = "o-2", 999
				return runs, nil
			}
			if _, err := idempotency.Do(context.Background(), idem, op, &mutable{"o-1", 5}, fn); err != nil {
				t.Fatal(err)
			}
			e, err := store.Get(context.Background(), "alice", "o-1")
			if err != nil || e.Status != idempotency.EntryCompleted || string(e.Output) != "1" {
				t.Fatalf("the record of o-1 = %+v, %v; want COMPLETED with 1", e, err)
			}
			if _, err := store.Get(context.Background(), "alice", "o-2"); !errors.Is(err, idempotency.ErrNotFound) {
				t.Errorf("a record of o-2, the key the input was changed to: %v", err)
			}
			res, err := idempotency.Do(context.Background(), idem, op, &mutable{"o-1", 5}, fn)
			if err != nil || !res.Replayed || res.Output != 1 || runs != 1 {
				t.Errorf("the retry = %+v, %v after %d runs; want the stored 1 after one run", res, err, runs)
			}
		})
	}
}

// TestScopesNeverLeak: one key in two scopes is two records, through the
// cache as through the store, and Get never answers one scope's record to
// another.
func TestScopesNeverLeak(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			idem, err := idempotency.New(idempotency.Config{Store: store, CacheSize: 100})
			if err != nil {
				t.Fatal(err)
			}
			runs := map[string]int{}
			call := func(scope string) idempotency.Result[string] {
				t.Helper()
				res, err := idempotency.Do(context.Background(), idem, idempotency.Operation[int]{Scope: scope, Key: "shared"}, 1,
					func(context.Context, int) (string, error) { runs[scope]++; return "for " + scope, nil })
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			call("alice")
			if _, err := store.Get(context.Background(), "bob", "shared"); !errors.Is(err, idempotency.ErrNotFound) {
				t.Errorf("Get(bob) after alice's call = %v, want ErrNotFound", err)
			}
			// alice's record is in the cache now: bob's call must not be
			// answered from it.
			if res := call("bob"); res.Replayed || res.Output != "for bob" {
				t.Errorf("bob's call = %+v, want his own run", res)
			}
			if res := call("alice"); !res.Replayed || !res.FromCache || res.Output != "for alice" {
				t.Errorf("alice's retry = %+v, want her output from the cache", res)
			}
			if res := call("bob"); !res.Replayed || res.Output != "for bob" {
				t.Errorf("bob's retry = %+v, want his output", res)
			}
			if runs["alice"] != 1 || runs["bob"] != 1 {
				t.Errorf("runs %v, want one each", runs)
			}
		})
	}
}
