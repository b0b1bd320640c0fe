package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// The record's lease and expiry while the function runs, under each
// policy, with and without a deadline. Config.Lease is a minute and the
// retention an hour.
func TestLeasePolicies(t *testing.T) {
	for _, c := range []struct {
		name      string
		policy    idempotency.LeasePolicy
		deadline  time.Duration // 0: none
		wantLease time.Duration
		wantExp   time.Duration
	}{
		{"default without a deadline", idempotency.LeasePolicy{}, 0, time.Minute, time.Hour},
		{"default with a deadline", idempotency.LeaseFromDeadline(), 90 * time.Second, 90 * time.Second, time.Hour},
		{"fixed, the deadline ignored", idempotency.LeaseFor(10 * time.Minute), 90 * time.Second, 10 * time.Minute, time.Hour},
		{"fixed beyond the retention", idempotency.LeaseFor(2 * time.Hour), 0, 2 * time.Hour, 2 * time.Hour},
		{"until settled", idempotency.LeaseUntilSettled(), 0, time.Hour, time.Hour},
		{"until settled, the deadline ignored", idempotency.LeaseUntilSettled(), 90 * time.Second, time.Hour, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := idemtest.NewMemoryStore()
			// Now, as the deadlines are real ones.
			clock := idemtest.NewClock(time.Now().UTC().Truncate(time.Second))
			i := newIdem(t, idempotency.Config{Store: store, Clock: clock.Now, Lease: time.Minute, Retention: time.Hour})
			ctx := t.Context()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clock.Now().Add(c.deadline))
				defer cancel()
			}
			o := op("alice")
			o.Lease = c.policy
			now := clock.Now()
			_, err := idempotency.Do(ctx, i, o, order{"k1", 1}, func(context.Context, order) (receipt, error) {
				e, _ := store.Peek("alice", "k1")
				if !e.LeaseUntil.Equal(now.Add(c.wantLease)) || !e.ExpiresAt.Equal(now.Add(c.wantExp)) {
					t.Errorf("lease until +%v, expires +%v; want +%v, +%v", e.LeaseUntil.Sub(now), e.ExpiresAt.Sub(now), c.wantLease, c.wantExp)
				}
				return receipt{}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLeaseForRefusesNonPositive(t *testing.T) {
	store := idemtest.NewMemoryStore()
	rec := &recorder{}
	i := newIdem(t, idempotency.Config{Store: store, Observer: rec})
	for _, d := range []time.Duration{0, -time.Second} {
		o := op("alice")
		o.Lease = idempotency.LeaseFor(d)
		if _, err := idempotency.Do(t.Context(), i, o, order{"k1", 1}, echo); err == nil {
			t.Errorf("Do with %v succeeded", o.Lease)
		}
	}
	if store.TotalCalls() != 0 {
		t.Errorf("%d store calls, want none", store.TotalCalls())
	}
	for _, ev := range rec.since(0) {
		if ev.Outcome != idempotency.OutcomeInvalid {
			t.Errorf("outcome %s, want invalid", ev.Outcome)
		}
	}
}

// Under LeaseUntilSettled a holder keeps the key however long it runs,
// until the record's own expiry.
func TestLeaseUntilSettledHolds(t *testing.T) {
	store := idemtest.NewMemoryStore()
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	i := newIdem(t, idempotency.Config{Store: store, Clock: clock.Now, Lease: time.Minute, Retention: time.Hour})
	o := op("alice")
	o.Lease = idempotency.LeaseUntilSettled()
	_, err := idempotency.Do(t.Context(), i, o, order{"k1", 1}, func(ctx context.Context, in order) (receipt, error) {
		clock.Advance(59 * time.Minute)
		_, err := idempotency.Do(ctx, i, o, in, echo)
		var ip *idempotency.InProgressError
		if !errors.As(err, &ip) || ip.RetryAfter != time.Minute {
			t.Errorf("duplicate after 59 minutes = %v, want in progress for one more minute", err)
		}
		clock.Advance(time.Minute)
		if res, err := idempotency.Do(ctx, i, o, in, echo); err != nil || res.Replayed {
			t.Errorf("duplicate at the record's expiry = %+v, %v, want it taken over and run", res, err)
		}
		return receipt{}, nil
	})
	if !errors.Is(err, idempotency.ErrFenced) {
		t.Errorf("the first holder = %v, want ErrFenced", err)
	}
}

// takerStore is a MemoryStore with a TakeOver: a release under the held
// lease, then an acquisition. It counts its take-overs apart.
type takerStore struct {
	*idemtest.MemoryStore
	takeOvers int
	// gone: TakeOver finds no record.
	gone bool
}

func (s *takerStore) TakeOver(ctx context.Context, in idempotency.AcquireInput, held idempotency.Lease) (idempotency.Entry, bool, error) {
	s.takeOvers++
	if s.gone {
		return idempotency.Entry{}, false, idempotency.ErrNotFound
	}
	if err := s.Release(ctx, held); err != nil {
		if !errors.Is(err, idempotency.ErrFenced) {
			return idempotency.Entry{}, false, err
		}
		e, err := s.Get(ctx, in.Scope, in.Key)
		return e, false, err
	}
	return s.Acquire(ctx, in)
}

var _ idempotency.Taker = (*takerStore)(nil)

// takeOver is a world with a holder of order{"k1", 1} under
// LeaseUntilSettled and a rule that says what dead says.
type takeOver struct {
	store   *takerStore
	clock   *idemtest.Clock
	idem    *idempotency.Idempotency
	rec     *recorder
	held    idempotency.Lease
	asked   []idempotency.Lease
	askedIn []order
	dead    func(n int) (bool, error)
}

func newTakeOver(t *testing.T) *takeOver {
	w := &takeOver{store: &takerStore{MemoryStore: idemtest.NewMemoryStore()}, clock: idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), rec: &recorder{}}
	w.idem = newIdem(t, idempotency.Config{Store: w.store, Clock: w.clock.Now, Retention: time.Hour, Observer: w.rec,
		Sleep: func(_ context.Context, d time.Duration) error { w.clock.Advance(d); return nil }})
	now := w.clock.Now()
	e, ok, err := w.store.Acquire(t.Context(), idempotency.AcquireInput{
		Scope: "alice", Key: "k1", Fingerprint: idempotency.Fingerprint([]byte(`{"key":"k1","amount":1}`)),
		Now: now, LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour),
	})
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	w.held = e.Lease()
	w.store.ResetCalls()
	return w
}

func (w *takeOver) op() idempotency.Operation[order] {
	o := op("alice")
	o.Lease = idempotency.LeaseUntilSettled()
	o.TakeOver = func(_ context.Context, in order, holder idempotency.Lease) (bool, error) {
		w.asked = append(w.asked, holder)
		w.askedIn = append(w.askedIn, in)
		return w.dead(len(w.asked))
	}
	return o
}

func (w *takeOver) do(t *testing.T, o idempotency.Operation[order]) (idempotency.Result[receipt], error) {
	return idempotency.Do(t.Context(), w.idem, o, order{"k1", 1}, func(_ context.Context, o order) (receipt, error) {
		return receipt{Run: 2, Amount: o.Amount}, nil
	})
}

func (w *takeOver) lastEvent(t *testing.T) idempotency.Event {
	t.Helper()
	evs := w.rec.since(0)
	if len(evs) == 0 {
		t.Fatal("no event")
	}
	return evs[len(evs)-1]
}

func TestTakeOver(t *testing.T) {
	errCheck := errors.New("describe execution: throttled")
	for _, c := range []struct {
		name string
		run  func(t *testing.T, w *takeOver)
	}{
		{"the holder is alive", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { return false, nil }
			_, err := w.do(t, w.op())
			if !errors.Is(err, idempotency.ErrInProgress) {
				t.Fatalf("Do = %v, want ErrInProgress", err)
			}
			if len(w.asked) != 1 || w.asked[0] != w.held || w.askedIn[0] != (order{"k1", 1}) {
				t.Errorf("asked about %+v with %+v, want once about the holder's lease %+v with the input", w.asked, w.askedIn, w.held)
			}
			if w.store.takeOvers != 0 || w.store.TotalCalls() != 1 {
				t.Errorf("%d take-overs, %d store calls, want none and the acquire", w.store.takeOvers, w.store.TotalCalls())
			}
		}},
		{"the holder is dead", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { return true, nil }
			res, err := w.do(t, w.op())
			wantReceipt(t, res, err, receipt{2, 1}, false, false)
			if e, _ := w.store.Peek("alice", "k1"); e.Status != idempotency.EntryCompleted || e.LeaseCount != 2 {
				t.Errorf("record %s lease %d, want COMPLETED lease 2", e.Status, e.LeaseCount)
			}
			if ev := w.lastEvent(t); !ev.TookOver || ev.Outcome != idempotency.OutcomeCompleted || ev.StoreCalls != 3 {
				t.Errorf("event = %+v, want completed after a take-over, in 3 store calls (acquire, take over, settle)", ev)
			}
			if err := w.store.Settle(t.Context(), w.held, idempotency.Outcome{Status: idempotency.EntryCompleted, ExpiresAt: w.clock.Now()}); !errors.Is(err, idempotency.ErrFenced) {
				t.Errorf("the old holder's settle = %v, want ErrFenced", err)
			}
		}},
		{"the record is gone when taken over", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { return true, nil }
			w.store.gone = true
			_, err := w.do(t, w.op())
			// The record is still there, so the acquisition that follows
			// finds it held: the rule is not asked again.
			if !errors.Is(err, idempotency.ErrInProgress) || len(w.asked) != 1 || w.store.takeOvers != 1 || w.store.Calls(idemtest.OpAcquire) != 2 {
				t.Errorf("Do = %v after %d asks, %d take-overs and %d acquisitions, want ErrInProgress after 1, 1 and 2",
					err, len(w.asked), w.store.takeOvers, w.store.Calls(idemtest.OpAcquire))
			}
		}},
		{"the rule fails", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { return false, errCheck }
			if _, err := w.do(t, w.op()); !errors.Is(err, errCheck) {
				t.Errorf("Do = %v, want the rule's error", err)
			}
			if w.store.takeOvers != 0 {
				t.Error("took over on an error")
			}
		}},
		{"the holder settles while the rule runs", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) {
				if err := w.store.Settle(t.Context(), w.held, idempotency.Outcome{
					Status: idempotency.EntryCompleted, Output: []byte(`{"run":1,"amount":1}`), ExpiresAt: w.clock.Now().Add(time.Hour),
				}); err != nil {
					t.Fatal(err)
				}
				return true, nil
			}
			res, err := w.do(t, w.op())
			wantReceipt(t, res, err, receipt{1, 1}, true, false)
			if ev := w.lastEvent(t); ev.TookOver || ev.Outcome != idempotency.OutcomeReplayed || ev.StoreCalls != 2 {
				t.Errorf("event = %+v, want replayed in 2 store calls (acquire, take over)", ev)
			}
		}},
		{"asked again after each read while waiting", func(t *testing.T, w *takeOver) {
			w.dead = func(n int) (bool, error) { return n == 3, nil }
			o := w.op()
			o.Wait = time.Minute
			res, err := w.do(t, o)
			wantReceipt(t, res, err, receipt{2, 1}, false, false)
			if len(w.asked) != 3 || w.store.Calls(idemtest.OpGet) != 2 || w.store.takeOvers != 1 {
				t.Errorf("asked %d times, %d gets, %d take-overs; want 3 asks, one per read (acquire, 2 gets), and one take-over",
					len(w.asked), w.store.Calls(idemtest.OpGet), w.store.takeOvers)
			}
		}},
		{"an expired lease is taken without asking", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { t.Error("asked"); return false, nil }
			w.clock.Advance(time.Hour)
			res, err := w.do(t, w.op())
			wantReceipt(t, res, err, receipt{2, 1}, false, false)
		}},
		{"a settled record is replayed without asking", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { t.Error("asked"); return false, nil }
			if err := w.store.Settle(t.Context(), w.held, idempotency.Outcome{
				Status: idempotency.EntryCompleted, Output: []byte(`{"run":1,"amount":1}`), ExpiresAt: w.clock.Now().Add(time.Hour),
			}); err != nil {
				t.Fatal(err)
			}
			res, err := w.do(t, w.op())
			wantReceipt(t, res, err, receipt{1, 1}, true, false)
		}},
		{"another payload is refused without asking", func(t *testing.T, w *takeOver) {
			w.dead = func(int) (bool, error) { t.Error("asked"); return true, nil }
			_, err := idempotency.Do(t.Context(), w.idem, w.op(), order{"k1", 2}, echo)
			if !errors.Is(err, idempotency.ErrKeyReused) {
				t.Errorf("Do = %v, want ErrKeyReused", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, newTakeOver(t)) })
	}
}

// A rule needs a store that can take over: without one, every call fails
// before any store call, and the rule is never asked.
func TestTakeOverUnsupported(t *testing.T) {
	store := idemtest.NewMemoryStore()
	// The interface alone: a store that cannot take over.
	i := newIdem(t, idempotency.Config{Store: struct{ idempotency.Persistence }{store}})
	o := op("alice")
	o.TakeOver = func(context.Context, order, idempotency.Lease) (bool, error) { t.Error("asked"); return true, nil }
	if _, err := idempotency.Do(t.Context(), i, o, order{"k1", 1}, echo); !errors.Is(err, idempotency.ErrTakeOverUnsupported) {
		t.Errorf("Do = %v, want ErrTakeOverUnsupported", err)
	}
	if store.TotalCalls() != 0 {
		t.Errorf("%d store calls, want none", store.TotalCalls())
	}
}

// TestTakerStores: the module's stores take a record over from a live
// lease when the rule says its holder is dead, in one call, and the
// holder's settle is then fenced; when the rule says it lives, the call
// is refused as in progress.
func TestTakerStores(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			clock := idemtest.NewClock(idemtest.Now())
			i := newIdem(t, idempotency.Config{Store: store, Clock: clock.Now})
			dead := false
			o := op("alice")
			o.Lease = idempotency.LeaseUntilSettled()
			o.TakeOver = func(context.Context, order, idempotency.Lease) (bool, error) { return dead, nil }
			var holder idempotency.Lease
			inner := func(ctx context.Context, in order) (receipt, error) {
				e, err := store.Get(ctx, "alice", "k1")
				if err != nil {
					return receipt{}, err
				}
				holder = e.Lease()
				// While this call holds the key, another finds it.
				if _, err := idempotency.Do(ctx, i, o, in, echo); !errors.Is(err, idempotency.ErrInProgress) {
					t.Errorf("while the holder lives: %v, want ErrInProgress", err)
				}
				dead = true
				res, err := idempotency.Do(ctx, i, o, in, func(context.Context, order) (receipt, error) { return receipt{Run: 2}, nil })
				if err != nil || res.Output.Run != 2 {
					t.Errorf("the take-over = %+v, %v", res, err)
				}
				return receipt{Run: 1}, nil
			}
			if _, err := idempotency.Do(t.Context(), i, o, order{"k1", 1}, inner); !errors.Is(err, idempotency.ErrFenced) {
				t.Errorf("the holder's settle after the take-over = %v, want ErrFenced", err)
			}
			e, err := store.Get(t.Context(), "alice", "k1")
			if err != nil || e.Status != idempotency.EntryCompleted || e.LeaseCount != holder.Count+1 || !strings.Contains(string(e.Output), `"run":2`) {
				t.Errorf("record %+v, %v; want the taker's output under lease %d", e, err, holder.Count+1)
			}
		})
	}
}
