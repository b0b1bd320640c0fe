package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

type charge struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type receipt struct {
	Run    int64 `json:"run"`
	Amount int   `json:"amount"`
}

var errDeclined = errors.New("card declined")

// TestDo: idempotency.Do over a Redis store, with a fake clock: a new
// key, a duplicate, a permanent failure replayed, a takeover whose zombie
// is fenced, and the commands each costs.
func TestDo(t *testing.T) {
	ctx := t.Context()
	store, _, cmds := counted(t)
	clock := idemtest.NewClock(time.Now())
	idem, err := idempotency.New(idempotency.Config{Store: store, Clock: clock.Now, Lease: time.Minute, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	op := idempotency.Operation[charge]{Scope: "alice", KeyFunc: func(c charge) (string, error) { return c.ID, nil }}
	var runs atomic.Int64
	// during, when set, runs inside the function, with its run number.
	var during func(run int64)
	fn := func(_ context.Context, c charge) (receipt, error) {
		run := runs.Add(1)
		if during != nil {
			during(run)
		}
		if c.Amount < 0 {
			return receipt{}, idempotency.Permanent(errDeclined)
		}
		return receipt{run, c.Amount}, nil
	}
	// Warm the server's script cache, so that each call below costs its
	// one command per operation.
	if _, err := idempotency.Do(ctx, idem, op, charge{"warm", 1}, fn); err != nil {
		t.Fatal(err)
	}
	warm, _, _ := store.Acquire(ctx, input("alice", "warm-release", "fp", clock.Now()))
	_ = store.Release(ctx, warm.Lease())
	runs.Store(0)
	cmds.take()
	wantCommands := func(what string, want ...string) {
		t.Helper()
		if got := cmds.take(); !slices.Equal(got, want) {
			t.Errorf("%s sent %q, want %q", what, got, want)
		}
	}

	t.Run("new key", func(t *testing.T) {
		res, err := idempotency.Do(ctx, idem, op, charge{"c1", 100}, fn)
		if err != nil || res.Replayed || res.Output != (receipt{1, 100}) {
			t.Fatalf("Do = %+v, %v", res, err)
		}
		wantCommands("a new key", "evalsha", "evalsha")
	})
	t.Run("duplicate", func(t *testing.T) {
		res, err := idempotency.Do(ctx, idem, op, charge{"c1", 100}, fn)
		if err != nil || !res.Replayed || res.Output != (receipt{1, 100}) || runs.Load() != 1 {
			t.Fatalf("Do = %+v, %v after %d runs; want the first output replayed", res, err, runs.Load())
		}
		wantCommands("a duplicate", "evalsha")
		if _, err := idempotency.Do(ctx, idem, op, charge{"c1", 999}, fn); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("the key with another payload: %v, want ErrKeyReused", err)
		}
		cmds.take()
	})
	t.Run("permanent failure replayed", func(t *testing.T) {
		before := runs.Load()
		if _, err := idempotency.Do(ctx, idem, op, charge{"c2", -1}, fn); !errors.Is(err, errDeclined) {
			t.Fatalf("Do = %v, want the function's error", err)
		}
		wantCommands("a permanent failure", "evalsha", "evalsha")
		var stored *idempotency.StoredFailureError
		_, err := idempotency.Do(ctx, idem, op, charge{"c2", -1}, fn)
		if !errors.As(err, &stored) || stored.Message != errDeclined.Error() || runs.Load() != before+1 {
			t.Fatalf("retry: %v after %d runs; want the stored failure, not a run", err, runs.Load()-before)
		}
		wantCommands("a retry of a permanent failure", "evalsha")
		e, err := store.Get(ctx, "alice", "c2")
		if err != nil || e.Status != idempotency.EntryFailed || e.LeaseCount != 1 {
			t.Errorf("record = %+v, %v", e, err)
		}
	})
	t.Run("takeover fences the zombie", func(t *testing.T) {
		before := runs.Load()
		zombieIn, zombieOut := make(chan struct{}), make(chan struct{})
		during = func(run int64) {
			if run == before+1 {
				close(zombieIn)
				<-zombieOut
			}
		}
		defer func() { during = nil }()
		var zombieErr error
		zombieDone := make(chan struct{})
		go func() {
			defer close(zombieDone)
			_, zombieErr = idempotency.Do(ctx, idem, op, charge{"c3", 7}, fn)
		}()
		<-zombieIn
		if _, err := idempotency.Do(ctx, idem, op, charge{"c3", 7}, fn); !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("a duplicate while the lease runs: %v, want ErrInProgress", err)
		}
		clock.Advance(time.Minute)
		res, err := idempotency.Do(ctx, idem, op, charge{"c3", 7}, fn)
		if err != nil || res.Replayed || res.Output != (receipt{before + 2, 7}) {
			t.Fatalf("the takeover's Do = %+v, %v", res, err)
		}
		close(zombieOut)
		<-zombieDone
		if !errors.Is(zombieErr, idempotency.ErrFenced) {
			t.Errorf("the zombie's Do = %v, want ErrFenced", zombieErr)
		}
		e, err := store.Get(ctx, "alice", "c3")
		if err != nil || e.Status != idempotency.EntryCompleted || e.LeaseCount != 2 || string(e.Output) != `{"run":`+strconv.FormatInt(before+2, 10)+`,"amount":7}` {
			t.Errorf("record = %+v (%s), %v; want the takeover's outcome under lease 2", e, e.Output, err)
		}
	})
}
