package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// waiter is a world where a duplicate waits: the fake clock moves only
// by the waiter's sleeps, which it records; after the n-th sleep, at
// runs.
type waiter struct {
	store  *idemtest.MemoryStore
	clock  *idemtest.Clock
	idem   *idempotency.Idempotency
	sleeps []time.Duration
	at     map[int]func()
}

func newWaiter(t *testing.T, cfg idempotency.Config) *waiter {
	w := &waiter{store: idemtest.NewMemoryStore(), clock: idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), at: map[int]func(){}}
	cfg.Store, cfg.Clock = w.store, w.clock.Now
	if cfg.Lease == 0 {
		cfg.Lease = time.Hour
	}
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.sleeps = append(w.sleeps, d)
		w.clock.Advance(d)
		if f := w.at[len(w.sleeps)]; f != nil {
			f()
		}
		return ctx.Err()
	}
	w.idem = newIdem(t, cfg)
	return w
}

// hold acquires the key for order{"k1", 1} as another call would, with
// a lease of lease.
func (w *waiter) hold(t *testing.T, lease time.Duration) idempotency.Lease {
	t.Helper()
	now := w.clock.Now()
	e, ok, err := w.store.Acquire(t.Context(), idempotency.AcquireInput{
		Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint([]byte(`{"key":"k1","amount":1}`)),
		Now: now, LeaseUntil: now.Add(lease), ExpiresAt: now.Add(24 * time.Hour),
	})
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	return e.Lease()
}

// do is the waiting duplicate.
func (w *waiter) do(ctx context.Context, wait time.Duration) (idempotency.Result[receipt], error) {
	o := op("alice")
	o.Wait = wait
	return idempotency.Do(ctx, w.idem, o, order{"k1", 1}, func(_ context.Context, o order) (receipt, error) {
		return receipt{Run: 2, Amount: o.Amount}, nil
	})
}

// wantBackoff checks the delays: 50ms doubling up to 1s, each between
// half of it and all of it; the last may be cut short.
func (w *waiter) wantBackoff(t *testing.T, lastCut bool) {
	t.Helper()
	d := 50 * time.Millisecond
	for n, got := range w.sleeps {
		cut := lastCut && n == len(w.sleeps)-1
		if got > d || !cut && got < d/2 {
			t.Errorf("sleep %d = %v, want %v to %v", n+1, got, d/2, d)
		}
		d = min(2*d, time.Second)
	}
}

func TestWait(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, w *waiter)
	}{
		{"replays once the holder settles", func(t *testing.T, w *waiter) {
			held := w.hold(t, time.Hour)
			w.at[3] = func() {
				if err := w.store.Settle(t.Context(), held, idempotency.Outcome{
					Status: idempotency.EntryCompleted, Output: []byte(`{"run":1,"amount":1}`), ExpiresAt: w.clock.Now().Add(time.Hour),
				}); err != nil {
					t.Fatal(err)
				}
			}
			w.store.ResetCalls()
			res, err := w.do(t.Context(), 10*time.Second)
			wantReceipt(t, res, err, receipt{1, 1}, true, false)
			// The store's calls: the duplicate's acquire and three gets,
			// and the holder's settle.
			if len(w.sleeps) != 3 || w.store.Calls(idemtest.OpAcquire) != 1 || w.store.Calls(idemtest.OpGet) != 3 || w.store.TotalCalls() != 5 {
				t.Errorf("%d sleeps, store calls %d (acquire %d, get %d), want 3 sleeps, 1 acquire and 3 gets",
					len(w.sleeps), w.store.TotalCalls(), w.store.Calls(idemtest.OpAcquire), w.store.Calls(idemtest.OpGet))
			}
			w.wantBackoff(t, false)
		}},
		{"in progress when the wait ends", func(t *testing.T, w *waiter) {
			w.hold(t, time.Hour)
			w.store.ResetCalls()
			start := w.clock.Now()
			_, err := w.do(t.Context(), 3*time.Second)
			var ip *idempotency.InProgressError
			if !errors.As(err, &ip) {
				t.Fatalf("Do = %v, want an *InProgressError", err)
			}
			if waited := w.clock.Now().Sub(start); waited != 3*time.Second {
				t.Errorf("waited %v, want the 3s of Wait exactly", waited)
			}
			if want := time.Hour - 3*time.Second; ip.RetryAfter != want {
				t.Errorf("retry after %v, want %v", ip.RetryAfter, want)
			}
			if gets := w.store.Calls(idemtest.OpGet); gets != len(w.sleeps) || w.store.TotalCalls() != 1+gets {
				t.Errorf("%d sleeps, %d gets, %d calls, want a get after each sleep and one acquire", len(w.sleeps), gets, w.store.TotalCalls())
			}
			w.wantBackoff(t, true)
		}},
		{"runs when the holder releases", func(t *testing.T, w *waiter) {
			held := w.hold(t, time.Hour)
			w.at[2] = func() {
				if err := w.store.Release(t.Context(), held); err != nil {
					t.Fatal(err)
				}
			}
			w.store.ResetCalls()
			res, err := w.do(t.Context(), 10*time.Second)
			wantReceipt(t, res, err, receipt{2, 1}, false, false)
			if w.store.Calls(idemtest.OpAcquire) != 2 || w.store.Calls(idemtest.OpGet) != 2 || w.store.Calls(idemtest.OpSettle) != 1 {
				t.Errorf("acquire %d, get %d, settle %d, want 2, 2, 1",
					w.store.Calls(idemtest.OpAcquire), w.store.Calls(idemtest.OpGet), w.store.Calls(idemtest.OpSettle))
			}
			if e, _ := w.store.Peek("alice", "k1"); e.Status != idempotency.EntryCompleted || e.LeaseCount != 2 {
				t.Errorf("record %s lease %d, want COMPLETED lease 2", e.Status, e.LeaseCount)
			}
		}},
		{"takes over when the holder's lease expires", func(t *testing.T, w *waiter) {
			w.hold(t, 120*time.Millisecond)
			start := w.clock.Now()
			w.store.ResetCalls()
			res, err := w.do(t.Context(), 10*time.Second)
			wantReceipt(t, res, err, receipt{2, 1}, false, false)
			// 25 to 50ms, 50 to 100ms, cut at the expiry (120ms) as
			// the second or the third.
			if n := len(w.sleeps); n < 2 || n > 3 || w.clock.Now().Sub(start) != 120*time.Millisecond {
				t.Errorf("sleeps %v, want two or three ending at the lease's expiry, 120ms", w.sleeps)
			}
			if gets := w.store.Calls(idemtest.OpGet); gets != len(w.sleeps) {
				t.Errorf("%d gets after %d sleeps", gets, len(w.sleeps))
			}
			if e, _ := w.store.Peek("alice", "k1"); e.Status != idempotency.EntryCompleted || e.LeaseCount != 2 {
				t.Errorf("record %s lease %d, want COMPLETED lease 2", e.Status, e.LeaseCount)
			}
		}},
		{"another payload is refused after the wait", func(t *testing.T, w *waiter) {
			held := w.hold(t, time.Hour)
			w.at[1] = func() {
				_ = w.store.Release(t.Context(), held)
				now := w.clock.Now()
				if _, _, err := w.store.Acquire(t.Context(), idempotency.AcquireInput{
					Scope: "alice", Key: "k1", Fingerprint: "other", Now: now, LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour),
				}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.do(t.Context(), 10*time.Second); !errors.Is(err, idempotency.ErrKeyReused) {
				t.Errorf("Do = %v, want ErrKeyReused", err)
			}
		}},
		{"context done", func(t *testing.T, w *waiter) {
			w.hold(t, time.Hour)
			ctx, cancel := context.WithCancel(t.Context())
			w.at[2] = cancel
			w.store.ResetCalls()
			_, err := w.do(ctx, time.Minute)
			if !errors.Is(err, idempotency.ErrInProgress) {
				t.Fatalf("Do = %v, want ErrInProgress", err)
			}
			if len(w.sleeps) != 2 || w.store.TotalCalls() != 2 {
				t.Errorf("%d sleeps and %d store calls, want 2 sleeps, the acquire and the first get", len(w.sleeps), w.store.TotalCalls())
			}
		}},
		{"the delays stop doubling at a second", func(t *testing.T, w *waiter) {
			w.hold(t, time.Hour)
			_, _ = w.do(t.Context(), 10*time.Second)
			if len(w.sleeps) < 9 {
				t.Fatalf("%d sleeps in 10s, want at least 9", len(w.sleeps))
			}
			w.wantBackoff(t, true)
		}},
		{"no wait fails at once", func(t *testing.T, w *waiter) {
			w.hold(t, time.Hour)
			w.store.ResetCalls()
			if _, err := w.do(t.Context(), 0); !errors.Is(err, idempotency.ErrInProgress) || len(w.sleeps) != 0 || w.store.TotalCalls() != 1 {
				t.Errorf("Do = %v after %d sleeps and %d calls, want ErrInProgress at once, in one call", err, len(w.sleeps), w.store.TotalCalls())
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newWaiter(t, idempotency.Config{})) })
	}
}

// With the real clock and timer: the holder settles while the duplicate
// waits.
func TestWaitTimer(t *testing.T) {
	store := idemtest.NewMemoryStore()
	i := newIdem(t, idempotency.Config{Store: store})
	o := op("alice")
	o.Wait = 5 * time.Second
	running, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = idempotency.Do(context.Background(), i, o, order{"k1", 1}, func(_ context.Context, o order) (receipt, error) {
			close(running)
			<-release
			return receipt{Run: 1, Amount: o.Amount}, nil
		})
	}()
	<-running
	time.AfterFunc(120*time.Millisecond, func() { close(release) })
	start := time.Now()
	res, err := idempotency.Do(t.Context(), i, o, order{"k1", 1}, echo)
	wantReceipt(t, res, err, receipt{1, 1}, true, false)
	if waited := time.Since(start); waited < 120*time.Millisecond || waited > 4*time.Second {
		t.Errorf("waited %v, want from the release (120ms) to a little after", waited)
	}
	if store.Calls(idemtest.OpGet) < 2 {
		t.Errorf("%d gets, want at least 2 (after at most 50ms and 100ms)", store.Calls(idemtest.OpGet))
	}
}
