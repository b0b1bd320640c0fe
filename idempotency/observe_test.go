package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []idempotency.Event
}

func (r *recorder) Observe(_ context.Context, ev idempotency.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// since returns the events after the first n.
func (r *recorder) since(n int) []idempotency.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]idempotency.Event(nil), r.events[n:]...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// The event of each kind of call: its outcome, store calls, whether the
// function ran, the record key, the duration by the clock, the error.
func TestObserverEvents(t *testing.T) {
	const scope, key = "alice@example.com", "order-SECRET"
	rk := idempotency.RecordKey(scope, key)
	errDown := errors.New("store unreachable")
	type want struct {
		outcome    idempotency.CallOutcome
		calls      int
		ran, cache bool
		recordKey  string
		err        error // errors.Is; nil for none
	}
	for _, c := range []struct {
		name string
		// setup runs first, unobserved; call is the observed call.
		setup func(t *testing.T, w *observed)
		call  func(t *testing.T, w *observed) error
		want  want
	}{
		{"completed", nil, func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeCompleted, 2, true, false, rk, nil}},
		{"failed permanently", nil, func(t *testing.T, w *observed) error { return w.do(t, 1, idempotency.Permanent(errRefused)) },
			want{idempotency.OutcomeFailed, 2, true, false, rk, errRefused}},
		{"released", nil, func(t *testing.T, w *observed) error { return w.do(t, 1, errTransient) },
			want{idempotency.OutcomeReleased, 2, true, false, rk, errTransient}},
		{"replayed", func(t *testing.T, w *observed) { w.do(t, 1, nil) }, func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeReplayed, 1, false, false, rk, nil}},
		{"cached", func(t *testing.T, w *observed) { w.cache(t); w.do(t, 1, nil) }, func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeCached, 0, false, true, rk, nil}},
		{"stored failure", func(t *testing.T, w *observed) { w.do(t, 1, idempotency.Permanent(errRefused)) },
			func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeStoredFailure, 1, false, false, rk, idempotency.ErrStoredFailure}},
		{"stored failure from the cache", func(t *testing.T, w *observed) { w.cache(t); w.do(t, 1, idempotency.Permanent(errRefused)) },
			func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeStoredFailure, 0, false, true, rk, idempotency.ErrStoredFailure}},
		{"in progress", func(t *testing.T, w *observed) { w.hold(t) }, func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeInProgress, 1, false, false, rk, idempotency.ErrInProgress}},
		{"key reused", func(t *testing.T, w *observed) { w.do(t, 1, nil) }, func(t *testing.T, w *observed) error { return w.do(t, 2, nil) },
			want{idempotency.OutcomeKeyReused, 1, false, false, rk, idempotency.ErrKeyReused}},
		{"key reused, from the cache", func(t *testing.T, w *observed) { w.cache(t); w.do(t, 1, nil) }, func(t *testing.T, w *observed) error { return w.do(t, 2, nil) },
			want{idempotency.OutcomeKeyReused, 0, false, true, rk, idempotency.ErrKeyReused}},
		{"fenced", nil, func(t *testing.T, w *observed) error {
			w.during = func() {
				w.clock.Advance(2 * time.Minute) // the lease expires; another call takes over
				w.extra++
				if _, _, err := w.store.Acquire(t.Context(), acquireInput(w.clock.Now(), scope, key, 1)); err != nil {
					t.Fatal(err)
				}
			}
			return w.do(t, 1, nil)
		}, want{idempotency.OutcomeFenced, 2, true, false, rk, idempotency.ErrFenced}},
		{"store error", func(t *testing.T, w *observed) { w.store.FailBefore(idemtest.OpAcquire, errDown) },
			func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeStoreError, 1, false, false, rk, errDown}},
		{"settle fails", func(t *testing.T, w *observed) { w.store.FailBefore(idemtest.OpSettle, errDown) },
			func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeStoreError, 2, true, false, rk, errDown}},
		{"invalid key", nil, func(t *testing.T, w *observed) error { w.key = "tab\tkey"; return w.do(t, 1, nil) },
			want{idempotency.OutcomeInvalid, 0, false, false, "", idempotency.ErrKeyMalformed}},
		{"disabled", func(t *testing.T, w *observed) { w.cfg.Disabled = true }, func(t *testing.T, w *observed) error { return w.do(t, 1, nil) },
			want{idempotency.OutcomeDisabled, 0, true, false, "", nil}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newObserved(scope, key)
			if c.setup != nil {
				c.setup(t, w)
			}
			w.store.ResetCalls()
			n := w.rec.len()
			err := c.call(t, w)
			evs := w.rec.since(n)
			if len(evs) != 1 {
				t.Fatalf("%d events, want 1: %+v", len(evs), evs)
			}
			ev := evs[0]
			got := want{ev.Outcome, ev.StoreCalls, ev.Ran, ev.FromCache, ev.RecordKey, nil}
			if wnt := c.want; got.outcome != wnt.outcome || got.calls != wnt.calls || got.ran != wnt.ran || got.cache != wnt.cache || got.recordKey != wnt.recordKey {
				t.Errorf("event = %+v, want %+v", got, wnt)
			}
			if counted := w.store.TotalCalls() - w.extra; ev.StoreCalls != counted {
				t.Errorf("event says %d store calls, the store counted %d", ev.StoreCalls, counted)
			}
			if ev.Err != err || (c.want.err == nil) != (err == nil) || c.want.err != nil && !errors.Is(err, c.want.err) {
				t.Errorf("event error %v, Do's %v, want %v", ev.Err, err, c.want.err)
			}
			if ev.Operation != "charge" || ev.TookOver {
				t.Errorf("event operation %q took over %v", ev.Operation, ev.TookOver)
			}
			if !ev.Time.Equal(w.start) {
				t.Errorf("event time %v, want the call's start %v", ev.Time, w.start)
			}
			wantDuration := time.Duration(0)
			if ev.Ran {
				wantDuration = runTime
			}
			if c.want.outcome == idempotency.OutcomeFenced {
				wantDuration += 2 * time.Minute
			}
			if ev.Duration != wantDuration {
				t.Errorf("duration %v, want %v (by the clock)", ev.Duration, wantDuration)
			}
			for _, s := range []string{ev.Operation, ev.RecordKey, string(ev.Outcome)} {
				if strings.Contains(s, key) || strings.Contains(s, scope) {
					t.Errorf("the event holds the key or the scope: %+v", ev)
				}
			}
		})
	}
}

// runTime is how long the observed function takes, by the fake clock.
const runTime = 30 * time.Millisecond

// observed is a world for one observed call.
type observed struct {
	cfg        idempotency.Config
	idem       *idempotency.Idempotency
	store      *idemtest.MemoryStore
	clock      *idemtest.Clock
	rec        *recorder
	start      time.Time
	scope, key string
	// during runs inside the function; its store calls are counted in
	// extra.
	during func()
	extra  int
}

func newObserved(scope, key string) *observed {
	store, rec := idemtest.NewMemoryStore(), &recorder{}
	clock := idemtest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	return &observed{
		cfg:   idempotency.Config{Store: store, Clock: clock.Now, Lease: time.Minute, Observer: rec},
		store: store, clock: clock, rec: rec, scope: scope, key: key,
	}
}

func (w *observed) cache(*testing.T) { w.cfg.CacheSize = 8 }

// do calls Do with amount as the payload; the function fails with fail.
// The first call makes the Idempotency of w.cfg.
func (w *observed) do(t *testing.T, amount int, fail error) error {
	t.Helper()
	if w.idem == nil {
		w.idem = newIdem(t, w.cfg)
	}
	w.start = w.clock.Now()
	o := idempotency.Operation[order]{Name: "charge", Scope: w.scope, Key: w.key}
	_, err := idempotency.Do(t.Context(), w.idem, o, order{Amount: amount}, func(context.Context, order) (receipt, error) {
		w.clock.Advance(runTime)
		if w.during != nil {
			w.during()
		}
		return receipt{Amount: amount}, fail
	})
	return err
}

// hold makes another call hold the key, for the payload of amount 1.
func (w *observed) hold(t *testing.T) {
	t.Helper()
	if _, ok, err := w.store.Acquire(t.Context(), acquireInput(w.clock.Now(), w.scope, w.key, 1)); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
}

// acquireInput is what Do acquires (scope, key) with for order{Amount:
// amount}, with a lease of a minute from now.
func acquireInput(now time.Time, scope, key string, amount int) idempotency.AcquireInput {
	return idempotency.AcquireInput{
		Scope: scope, Key: key, Fingerprint: idempotency.Fingerprint([]byte(`{"key":"","amount":` + strconv.Itoa(amount) + `}`)),
		Now: now, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	}
}

// A panic in the function is one event, released, with ErrPanicked; and
// an Operation without a Name is "unnamed".
func TestObserverPanic(t *testing.T) {
	rec := &recorder{}
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), Observer: rec})
	func() {
		defer func() { _ = recover() }()
		_, _ = idempotency.Do(t.Context(), i, idempotency.Operation[int]{Scope: "alice", Key: "k1"}, 1, func(context.Context, int) (int, error) {
			panic("boom")
		})
	}()
	evs := rec.since(0)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	if ev := evs[0]; ev.Outcome != idempotency.OutcomeReleased || !errors.Is(ev.Err, idempotency.ErrPanicked) || !ev.Ran || ev.StoreCalls != 2 || ev.Operation != idempotency.UnnamedOperation {
		t.Errorf("event = %+v, want released after a panic, 2 store calls, unnamed", ev)
	}
}

// A stored output that does not decode into Out is a store error.
func TestObserverUndecodableOutput(t *testing.T) {
	rec := &recorder{}
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), Observer: rec})
	op := idempotency.Operation[int]{Name: "n", Scope: "alice", Key: "k1"}
	_, _ = idempotency.Do(t.Context(), i, op, 1, func(context.Context, int) (string, error) { return "text", nil })
	_, err := idempotency.Do(t.Context(), i, op, 1, func(context.Context, int) (int, error) { return 0, nil })
	if err == nil {
		t.Fatal("a string output decoded into an int")
	}
	if ev := rec.since(1)[0]; ev.Outcome != idempotency.OutcomeStoreError || ev.Err != err {
		t.Errorf("event = %+v, want a store error", ev)
	}
}

func TestObserverFunc(t *testing.T) {
	var got []idempotency.CallOutcome
	i := newIdem(t, idempotency.Config{Store: idemtest.NewMemoryStore(), Observer: idempotency.ObserverFunc(func(_ context.Context, ev idempotency.Event) {
		got = append(got, ev.Outcome)
	})})
	for range 2 {
		_, _ = idempotency.Do(t.Context(), i, op("alice"), order{"k1", 1}, echo)
	}
	if len(got) != 2 || got[0] != idempotency.OutcomeCompleted || got[1] != idempotency.OutcomeReplayed {
		t.Errorf("outcomes = %v", got)
	}
}
