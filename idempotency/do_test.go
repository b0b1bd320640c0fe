package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
)

// backend is a Persistence under test, with a count of its round trips
// and a way to read its records that counts none.
type backend struct {
	store idempotency.Persistence
	calls func() int
	peek  func(t *testing.T, scope, key string) (idempotency.Entry, bool)
}

// backends are the stores every case of doCases runs against.
var backends = []struct {
	name string
	open func(t *testing.T) backend
}{
	{"memory", func(t *testing.T) backend {
		m := idemtest.NewMemoryStore()
		return backend{
			store: m,
			calls: m.TotalCalls,
			peek: func(_ *testing.T, scope, key string) (idempotency.Entry, bool) {
				return m.Peek(scope, key)
			},
		}
	}},
	{"dynamodb", func(t *testing.T) backend {
		client, n := counted(t)
		table := idemtest.Table(t, client)
		reader := idempotency.NewDynamoDBPersistence(idemtest.Client(t), table)
		return backend{
			store: idempotency.NewDynamoDBPersistence(client, table),
			calls: func() int { return int(n.Load()) },
			peek: func(t *testing.T, scope, key string) (idempotency.Entry, bool) {
				t.Helper()
				e, err := reader.Get(context.Background(), scope, key)
				if errors.Is(err, idempotency.ErrNotFound) {
					return idempotency.Entry{}, false
				}
				if err != nil {
					t.Fatalf("peek: %v", err)
				}
				return e, true
			},
		}
	}},
}

type order struct {
	Key    string `json:"key"`
	Amount int    `json:"amount"`
}

type receipt struct {
	Run    int64 `json:"run"`
	Amount int   `json:"amount"`
}

// harness is one case's world: a backend, a fake clock, and a function
// that counts its runs.
type harness struct {
	t     *testing.T
	b     backend
	clock *idemtest.Clock
	runs  atomic.Int64
	// during, when set, runs inside the function's run-th run, before
	// it answers.
	during func(ctx context.Context, o order, run int64)
	// fail, when set, is the function's error.
	fail error
	// rec observes every Idempotency of h.idem.
	rec recorder
}

const retention = time.Hour

// idem returns an Idempotency over the harness's store with the fake
// clock, a lease of one minute, and cfg's other settings.
func (h *harness) idem(cfg idempotency.Config) *idempotency.Idempotency {
	h.t.Helper()
	cfg.Store, cfg.Clock, cfg.Retention, cfg.Observer = h.b.store, h.clock.Now, retention, &h.rec
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	i, err := idempotency.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return i
}

func (h *harness) fn(ctx context.Context, o order) (receipt, error) {
	n := h.runs.Add(1)
	if h.during != nil {
		h.during(ctx, o, n)
	}
	if h.fail != nil {
		return receipt{}, h.fail
	}
	return receipt{Run: n, Amount: o.Amount}, nil
}

func op(scope string) idempotency.Operation[order] {
	return idempotency.Operation[order]{Scope: scope, KeyFunc: func(o order) (string, error) { return o.Key, nil }}
}

// do runs one call and reports its result and the store calls it cost,
// those of the calls made inside its function included. The call's
// event, its last, must report the calls it made itself and its error.
func (h *harness) do(ctx context.Context, i *idempotency.Idempotency, scope string, o order) (idempotency.Result[receipt], int, error) {
	h.t.Helper()
	before, n := h.b.calls(), h.rec.len()
	res, err := idempotency.Do(ctx, i, op(scope), o, h.fn)
	calls := h.b.calls() - before
	evs := h.rec.since(n)
	if len(evs) == 0 {
		h.t.Fatal("the call was not observed")
	}
	own := calls
	for _, ev := range evs[:len(evs)-1] {
		own -= ev.StoreCalls
	}
	if ev := evs[len(evs)-1]; ev.StoreCalls != own || ev.Err != err {
		h.t.Errorf("event: %d store calls, error %v; the call made %d and returned %v", ev.StoreCalls, ev.Err, own, err)
	}
	return res, calls, err
}

func (h *harness) wantCalls(got, want int) {
	h.t.Helper()
	if got != want {
		h.t.Errorf("store calls = %d, want %d", got, want)
	}
}

func (h *harness) wantRuns(want int64) {
	h.t.Helper()
	if got := h.runs.Load(); got != want {
		h.t.Errorf("function runs = %d, want %d", got, want)
	}
}

func (h *harness) record(scope, key string) idempotency.Entry {
	h.t.Helper()
	e, ok := h.b.peek(h.t, scope, key)
	if !ok {
		h.t.Fatalf("no record of (%s, %s)", scope, key)
	}
	return e
}

func (h *harness) wantRecord(scope, key string, status idempotency.EntryStatus, count int64) idempotency.Entry {
	h.t.Helper()
	e := h.record(scope, key)
	if e.Status != status || e.LeaseCount != count {
		h.t.Errorf("record = %s lease %d, want %s lease %d", e.Status, e.LeaseCount, status, count)
	}
	return e
}

func wantReceipt(t *testing.T, res idempotency.Result[receipt], err error, want receipt, replayed, cached bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if res.Output != want || res.Replayed != replayed || res.FromCache != cached {
		t.Errorf("Do = %+v, want output %+v replayed %v from cache %v", res, want, replayed, cached)
	}
}

var errTransient = errors.New("ledger busy")
var errRefused = errors.New("insufficient funds")

// doCases run against every backend: Powertools' request flows and the
// fenced ones.
var doCases = []struct {
	name string
	run  func(t *testing.T, h *harness)
}{
	{"success", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, false, false)
		h.wantCalls(calls, 2)
		e := h.wantRecord("alice", "k1", idempotency.EntryCompleted, 1)
		if string(e.Output) != `{"run":1,"amount":100}` {
			t.Errorf("stored output = %s", e.Output)
		}
		if want := h.clock.Now().Add(retention).Truncate(time.Second); !e.ExpiresAt.Equal(want) {
			t.Errorf("expires at %v, want %v", e.ExpiresAt, want)
		}
		if e.Fingerprint != idempotency.Fingerprint([]byte(`{"key":"k1","amount":100}`)) {
			t.Errorf("fingerprint %s is not the input's JSON", e.Fingerprint)
		}
	}},
	{"duplicate is one call and replays", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		h.do(t.Context(), i, "alice", order{"k1", 100})
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, true, false)
		h.wantCalls(calls, 1)
		h.wantRuns(1)
	}},
	{"cached duplicate costs no call", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{CacheSize: 8})
		h.do(t.Context(), i, "alice", order{"k1", 100})
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, true, true)
		h.wantCalls(calls, 0)
		h.wantRuns(1)
		// Past the retention the cache no longer answers, nor the record.
		h.clock.Advance(retention)
		res, calls, err = h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{2, 100}, false, false)
		h.wantCalls(calls, 2)
		h.wantRecord("alice", "k1", idempotency.EntryCompleted, 2)
	}},
	{"duplicate replayed from the store fills the cache", func(t *testing.T, h *harness) {
		h.do(t.Context(), h.idem(idempotency.Config{}), "alice", order{"k1", 100})
		i := h.idem(idempotency.Config{CacheSize: 8})
		_, calls, _ := h.do(t.Context(), i, "alice", order{"k1", 100})
		h.wantCalls(calls, 1)
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, true, true)
		h.wantCalls(calls, 0)
	}},
	{"payload mismatch", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		h.do(t.Context(), i, "alice", order{"k1", 100})
		_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 999})
		if !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("Do = %v, want ErrKeyReused", err)
		}
		h.wantCalls(calls, 1)
		h.wantRuns(1)
		cached := h.idem(idempotency.Config{CacheSize: 8})
		h.do(t.Context(), cached, "alice", order{"k1", 100})
		_, calls, err = h.do(t.Context(), cached, "alice", order{"k1", 999})
		if !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("Do through the cache = %v, want ErrKeyReused", err)
		}
		h.wantCalls(calls, 0)
		h.wantRecord("alice", "k1", idempotency.EntryCompleted, 1)
	}},
	{"in-flight duplicate", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		var inner error
		var innerCalls int
		h.during = func(ctx context.Context, o order, _ int64) {
			h.during = nil
			h.clock.Advance(20 * time.Second)
			_, innerCalls, inner = h.do(ctx, i, "alice", o)
		}
		res, _, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, false, false)
		var ip *idempotency.InProgressError
		if !errors.As(inner, &ip) || !errors.Is(inner, idempotency.ErrInProgress) {
			t.Fatalf("duplicate in flight = %v, want an *InProgressError", inner)
		}
		if ip.RetryAfter != 40*time.Second {
			t.Errorf("retry after %v, want the 40s left of the lease", ip.RetryAfter)
		}
		h.wantCalls(innerCalls, 1)
		h.wantRuns(1)
	}},
	{"lease expiry and takeover", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		// A call that acquired the key and died.
		fp := idempotency.Fingerprint([]byte(`{"key":"k1","amount":100}`))
		now := h.clock.Now()
		dead, ok, err := h.b.store.Acquire(t.Context(), idempotency.AcquireInput{
			Scope: "alice", Key: "k1", Fingerprint: fp, Now: now,
			LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(retention),
		})
		if err != nil || !ok || dead.LeaseCount != 1 {
			t.Fatalf("Acquire = %+v, %v, %v", dead, ok, err)
		}
		h.clock.Advance(time.Minute - time.Millisecond)
		if _, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100}); !errors.Is(err, idempotency.ErrInProgress) || calls != 1 {
			t.Errorf("Do before the lease expires = %v in %d calls, want ErrInProgress in 1", err, calls)
		}
		// Another payload never takes over an expired lease.
		h.clock.Advance(time.Millisecond)
		if _, _, err := h.do(t.Context(), i, "alice", order{"k1", 5}); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("Do with another payload = %v, want ErrKeyReused", err)
		}
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, false, false)
		h.wantCalls(calls, 2)
		e := h.wantRecord("alice", "k1", idempotency.EntryCompleted, 2)
		if e.LeaseID == dead.LeaseID {
			t.Error("the takeover kept the dead call's lease id")
		}
	}},
	{"zombie settle after a takeover writes nothing", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		var after idempotency.Entry
		h.during = func(ctx context.Context, o order, _ int64) {
			h.during = nil
			// The zombie outlives its lease; another call takes over.
			h.clock.Advance(2 * time.Minute)
			res, _, err := h.do(ctx, i, "alice", o)
			wantReceipt(t, res, err, receipt{2, 100}, false, false)
			after = h.wantRecord("alice", "k1", idempotency.EntryCompleted, 2)
		}
		_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		if !errors.Is(err, idempotency.ErrFenced) {
			t.Fatalf("zombie Do = %v, want ErrFenced", err)
		}
		h.wantCalls(calls, 2+2) // its acquire and settle, the other call's two
		if got := h.record("alice", "k1"); string(got.Output) != string(after.Output) || got.LeaseID != after.LeaseID || got.LeaseCount != 2 {
			t.Errorf("record after the zombie's settle = %+v, want it unchanged: %+v", got, after)
		}
		// A zombie's release is fenced too.
		h.fail = errTransient
		h.during = func(ctx context.Context, o order, _ int64) {
			h.during = nil
			h.clock.Advance(2 * time.Minute)
			h.fail = nil
			h.do(ctx, i, "alice", o)
			h.fail = errTransient
		}
		_, _, err = h.do(t.Context(), i, "alice", order{"k2", 1})
		if !errors.Is(err, errTransient) || !errors.Is(err, idempotency.ErrFenced) {
			t.Errorf("zombie release = %v, want its error and ErrFenced", err)
		}
		h.wantRecord("alice", "k2", idempotency.EntryCompleted, 2)
	}},
	{"zombie settle while the new holder runs writes nothing", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		zombieIn, zombieOut := make(chan struct{}), make(chan struct{})
		var zombieErr error
		h.during = func(ctx context.Context, o order, run int64) {
			if run == 1 {
				close(zombieIn)
				<-zombieOut
				return
			}
			// The new holder, mid-run, lets the zombie settle.
			zombieOut <- struct{}{}
			<-zombieOut
			if e := h.wantRecord("alice", "k1", idempotency.EntryInProgress, 2); len(e.Output) != 0 {
				t.Errorf("the zombie's output was stored under the new lease: %s", e.Output)
			}
		}
		go func() {
			defer close(zombieOut)
			_, zombieErr = idempotency.Do(t.Context(), i, op("alice"), order{"k1", 100}, h.fn)
		}()
		<-zombieIn
		h.clock.Advance(2 * time.Minute)
		res, err := idempotency.Do(t.Context(), i, op("alice"), order{"k1", 100}, h.fn)
		wantReceipt(t, res, err, receipt{2, 100}, false, false)
		if !errors.Is(zombieErr, idempotency.ErrFenced) {
			t.Errorf("zombie Do = %v, want ErrFenced", zombieErr)
		}
		if e := h.wantRecord("alice", "k1", idempotency.EntryCompleted, 2); string(e.Output) != `{"run":2,"amount":100}` {
			t.Errorf("stored output = %s, want the new holder's", e.Output)
		}
	}},
	{"release marks and a retry succeeds", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{CacheSize: 8})
		h.fail = errTransient
		_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		if !errors.Is(err, errTransient) {
			t.Fatalf("Do = %v, want the function's error", err)
		}
		h.wantCalls(calls, 2)
		h.wantRecord("alice", "k1", idempotency.EntryReleased, 1)
		h.fail = nil
		res, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{2, 100}, false, false)
		h.wantCalls(calls, 2)
		h.wantRecord("alice", "k1", idempotency.EntryCompleted, 2)
	}},
	{"permanent failure stored and replayed", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{})
		h.fail = idempotency.Permanent(errRefused)
		_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		if !errors.Is(err, errRefused) {
			t.Fatalf("Do = %v, want the function's error", err)
		}
		h.wantCalls(calls, 2)
		e := h.wantRecord("alice", "k1", idempotency.EntryFailed, 1)
		if e.Failure != errRefused.Error() {
			t.Errorf("stored failure %q", e.Failure)
		}
		for retry := range 3 {
			_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
			var sf *idempotency.StoredFailureError
			if !errors.As(err, &sf) || !errors.Is(err, idempotency.ErrStoredFailure) || sf.Message != errRefused.Error() {
				t.Errorf("retry %d = %v, want the stored failure", retry, err)
			}
			h.wantCalls(calls, 1)
		}
		h.wantRuns(1)
	}},
	{"scopes never leak", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{CacheSize: 8})
		a, _, err := h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, a, err, receipt{1, 100}, false, false)
		// The same key in another scope, with another payload: its own
		// record, not ErrKeyReused, not alice's output.
		b, _, err := h.do(t.Context(), i, "bob", order{"k1", 7})
		wantReceipt(t, b, err, receipt{2, 7}, false, false)
		a, _, err = h.do(t.Context(), i, "alice", order{"k1", 100})
		wantReceipt(t, a, err, receipt{1, 100}, true, true)
		b, _, err = h.do(t.Context(), i, "bob", order{"k1", 7})
		wantReceipt(t, b, err, receipt{2, 7}, true, true)
		if _, _, err := h.do(t.Context(), i, "bob", order{"k1", 100}); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("bob with alice's payload = %v, want ErrKeyReused", err)
		}
		if ra, rb := h.record("alice", "k1"), h.record("bob", "k1"); ra.RecordKey == rb.RecordKey {
			t.Error("two scopes share a record")
		}
	}},
	{"disabled switch", func(t *testing.T, h *harness) {
		t.Setenv(idempotency.EnvDisabled, "true")
		i := h.idem(idempotency.Config{CacheSize: 8})
		for range 2 {
			_, calls, err := h.do(t.Context(), i, "alice", order{"k1", 100})
			if err != nil || calls != 0 {
				t.Errorf("Do disabled = %v in %d calls, want the function alone", err, calls)
			}
		}
		t.Setenv(idempotency.EnvDisabled, "0")
		off := h.idem(idempotency.Config{Disabled: true})
		h.do(t.Context(), off, "alice", order{"k1", 100})
		h.wantRuns(3)
		if _, ok := h.b.peek(t, "alice", "k1"); ok {
			t.Error("a disabled call stored a record")
		}
	}},
	{"context deadline is the lease", func(t *testing.T, h *harness) {
		i := h.idem(idempotency.Config{Lease: time.Hour})
		deadline := h.clock.Now().Add(90 * time.Second)
		ctx, cancel := context.WithDeadline(t.Context(), deadline)
		defer cancel()
		var inner error
		h.during = func(ctx context.Context, o order, _ int64) {
			h.during = nil
			if e := h.record("alice", "k1"); !e.LeaseUntil.Equal(deadline.Truncate(time.Millisecond)) {
				t.Errorf("lease until %v, want the deadline %v", e.LeaseUntil, deadline)
			}
			h.clock.Advance(30 * time.Second)
			_, _, inner = h.do(context.Background(), i, "alice", o)
		}
		res, _, err := h.do(ctx, i, "alice", order{"k1", 100})
		wantReceipt(t, res, err, receipt{1, 100}, false, false)
		var ip *idempotency.InProgressError
		if !errors.As(inner, &ip) {
			t.Fatalf("duplicate = %v, want an *InProgressError", inner)
		}
		if want := deadline.Truncate(time.Millisecond).Sub(h.clock.Now()); ip.RetryAfter != want {
			t.Errorf("retry after %v, want %v (the deadline)", ip.RetryAfter, want)
		}
	}},
}

func TestDo(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range doCases {
				t.Run(c.name, func(t *testing.T) {
					h := &harness{t: t, b: b.open(t), clock: idemtest.NewClock(time.Now().UTC().Truncate(time.Millisecond))}
					c.run(t, h)
				})
			}
		})
	}
}
