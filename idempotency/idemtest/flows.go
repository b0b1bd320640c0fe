package idemtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/batch"
)

// Recorder is an idempotency.Persistence that passes every call to
// another and records the sequence of operations, for tests that assert
// the exact calls a flow makes, whatever the store.
type Recorder struct {
	store idempotency.Persistence
	mu    sync.Mutex
	ops   []Op
}

var _ idempotency.Persistence = (*Recorder)(nil)

// NewRecorder records the calls made to store.
func NewRecorder(store idempotency.Persistence) *Recorder { return &Recorder{store: store} }

func (r *Recorder) record(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns the operations recorded since the last Take, without
// forgetting them.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// Take returns the operations recorded so far and forgets them.
func (r *Recorder) Take() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := r.ops
	r.ops = nil
	return ops
}

// Acquire records OpAcquire and passes the call on.
func (r *Recorder) Acquire(ctx context.Context, in idempotency.AcquireInput) (idempotency.Entry, bool, error) {
	r.record(OpAcquire)
	return r.store.Acquire(ctx, in)
}

// Settle records OpSettle and passes the call on.
func (r *Recorder) Settle(ctx context.Context, lease idempotency.Lease, o idempotency.Outcome) error {
	r.record(OpSettle)
	return r.store.Settle(ctx, lease, o)
}

// Release records OpRelease and passes the call on.
func (r *Recorder) Release(ctx context.Context, lease idempotency.Lease) error {
	r.record(OpRelease)
	return r.store.Release(ctx, lease)
}

// Get records OpGet and passes the call on.
func (r *Recorder) Get(ctx context.Context, scope, key string) (idempotency.Entry, error) {
	r.record(OpGet)
	return r.store.Get(ctx, scope, key)
}

// Flow is one request flow of RunFlows.
type Flow struct {
	Name string
	Run  func(t *testing.T, f *FlowEnv)
}

// FlowEnv is what a Flow runs with: an Idempotency over a Recorder of a
// fresh store, a fake clock, and helpers that assert the stored record
// and the calls.
type FlowEnv struct {
	Store    idempotency.Persistence
	Recorder *Recorder
	Clock    *Clock
	// New makes an Idempotency over Recorder with cfg's other fields.
	New func(cfg idempotency.Config) *idempotency.Idempotency
}

// WantOps fails t unless the calls since the last check are want.
func (f *FlowEnv) WantOps(t *testing.T, want ...Op) {
	t.Helper()
	if got := f.Recorder.Take(); !slices.Equal(got, want) {
		t.Errorf("store calls %v, want %v", got, want)
	}
}

// WantEntry fails t unless the record of (scope, key) has status and
// output (compared as text; "" skips it) and lease count n (0 skips it).
// The read is not recorded.
func (f *FlowEnv) WantEntry(t *testing.T, scope, key string, status idempotency.EntryStatus, output string, n int64) {
	t.Helper()
	e, err := f.Store.Get(context.Background(), scope, key)
	if err != nil {
		t.Fatalf("the record of %s/%s: %v", scope, key, err)
	}
	if e.Status != status || (output != "" && string(e.Output) != output) || (n != 0 && e.LeaseCount != n) {
		t.Errorf("record %s, output %s, lease count %d; want %s, %s, %d", e.Status, e.Output, e.LeaseCount, status, output, n)
	}
}

// flowLease and flowRetention are the flows' configuration.
const (
	flowLease     = time.Minute
	flowRetention = time.Hour
)

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type receipt struct {
	PaymentID string `json:"paymentId"`
}

func orderOp(scope string) idempotency.Operation[order] {
	return idempotency.Operation[order]{Scope: scope, KeyFunc: func(o order) (string, error) { return o.ID, nil }}
}

// counter is a function made idempotent in the flows: it counts its
// runs and answers a receipt numbered by them.
type counter struct {
	mu   sync.Mutex
	runs int
}

func (c *counter) charge(_ context.Context, o order) (receipt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	return receipt{PaymentID: fmt.Sprintf("pay-%s-%d", o.ID, c.runs)}, nil
}

func (c *counter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs
}

// Flows are the request flows that Powertools' idempotency utility
// documents, as idempotency.Do runs them: each asserts the answers, the
// stored record and the exact sequence of store calls.
var Flows = []Flow{
	{"success", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || res.Replayed || res.Output.PaymentID != "pay-o-1-1" {
			t.Fatalf("Do = %+v, %v", res, err)
		}
		f.WantOps(t, OpAcquire, OpSettle)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-1"}`, 1)
	}},
	{"duplicate", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		_, _ = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		f.Recorder.Take()
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || !res.Replayed || res.FromCache || res.Output.PaymentID != "pay-o-1-1" || c.count() != 1 {
			t.Fatalf("Do = %+v, %v after %d runs", res, err, c.count())
		}
		f.WantOps(t, OpAcquire)
	}},
	{"duplicate from the local cache", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{CacheSize: 10}), &counter{}
		_, _ = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		f.Recorder.Take()
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || !res.Replayed || !res.FromCache || res.Output.PaymentID != "pay-o-1-1" {
			t.Fatalf("Do = %+v, %v", res, err)
		}
		f.WantOps(t)
		// The cache forgets a record at its expiry.
		f.Clock.Advance(flowRetention)
		res, err = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || res.Replayed || res.Output.PaymentID != "pay-o-1-2" {
			t.Fatalf("Do past the retention = %+v, %v", res, err)
		}
		f.WantOps(t, OpAcquire, OpSettle)
	}},
	{"expired record runs again", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		_, _ = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		f.Recorder.Take()
		f.Clock.Advance(flowRetention - time.Second)
		if res, _ := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge); !res.Replayed {
			t.Fatal("not replayed a second before the expiry")
		}
		f.WantOps(t, OpAcquire)
		f.Clock.Advance(time.Second)
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || res.Replayed || res.Output.PaymentID != "pay-o-1-2" {
			t.Fatalf("Do at the expiry = %+v, %v", res, err)
		}
		f.WantOps(t, OpAcquire, OpSettle)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-2"}`, 2)
	}},
	{"concurrent duplicate while in flight", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		var inner error
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, func(ctx context.Context, o order) (receipt, error) {
			_, inner = idempotency.Do(ctx, idem, orderOp("alice"), order{"o-1", 5}, c.charge)
			return c.charge(ctx, o)
		})
		var ip *idempotency.InProgressError
		if !errors.As(inner, &ip) || ip.RetryAfter != flowLease {
			t.Errorf("the duplicate in flight = %v, want an *InProgressError with %v left", inner, flowLease)
		}
		if err != nil || res.Output.PaymentID != "pay-o-1-1" || c.count() != 1 {
			t.Fatalf("Do = %+v, %v after %d runs", res, err, c.count())
		}
		f.WantOps(t, OpAcquire, OpAcquire, OpSettle)
	}},
	{"timed out call taken over and fenced", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{Lease: flowLease}), &counter{}
		var second idempotency.Result[receipt]
		var secondErr error
		_, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, func(ctx context.Context, o order) (receipt, error) {
			// This call outlives its lease: a retry takes the key over
			// and settles it while this one still runs.
			f.Clock.Advance(flowLease)
			second, secondErr = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
			return receipt{PaymentID: "zombie"}, nil
		})
		if secondErr != nil || second.Replayed || second.Output.PaymentID != "pay-o-1-1" {
			t.Fatalf("the takeover = %+v, %v", second, secondErr)
		}
		if !errors.Is(err, idempotency.ErrFenced) {
			t.Errorf("the first call's settle = %v, want ErrFenced", err)
		}
		f.WantOps(t, OpAcquire, OpAcquire, OpSettle, OpSettle)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-1"}`, 2)
	}},
	{"transient failure released, retried", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		boom := errors.New("provider unavailable")
		_, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, func(context.Context, order) (receipt, error) { return receipt{}, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("Do = %v, want the function's error", err)
		}
		f.WantOps(t, OpAcquire, OpRelease)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryReleased, "", 1)
		res, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		if err != nil || res.Replayed || res.Output.PaymentID != "pay-o-1-1" {
			t.Fatalf("the retry = %+v, %v", res, err)
		}
		f.WantOps(t, OpAcquire, OpSettle)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, "", 2)
	}},
	{"permanent failure stored, replayed", func(t *testing.T, f *FlowEnv) {
		idem := f.New(idempotency.Config{})
		runs := 0
		declined := func(context.Context, order) (receipt, error) {
			runs++
			return receipt{}, idempotency.Permanent(errors.New("card declined"))
		}
		_, _ = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, declined)
		f.WantOps(t, OpAcquire, OpSettle)
		_, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, declined)
		var stored *idempotency.StoredFailureError
		if !errors.As(err, &stored) || stored.Message != "card declined" || runs != 1 {
			t.Fatalf("the retry = %v after %d runs, want the stored failure after 1", err, runs)
		}
		f.WantOps(t, OpAcquire)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryFailed, "", 1)
	}},
	{"required key missing", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		for _, tc := range []struct {
			id   string
			want error
		}{{"", idempotency.ErrKeyMissing}, {"tab\there", idempotency.ErrKeyMalformed}} {
			if _, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{tc.id, 5}, c.charge); !errors.Is(err, tc.want) {
				t.Errorf("key %q: %v, want %v", tc.id, err, tc.want)
			}
		}
		if c.count() != 0 {
			t.Errorf("the function ran %d times", c.count())
		}
		f.WantOps(t)
	}},
	{"payload validation", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{CacheSize: 10}), &counter{}
		_, _ = idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge)
		f.Recorder.Take()
		// From the cache, then from the store: refused either way.
		if _, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 6}, c.charge); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("another payload (cached) = %v, want ErrKeyReused", err)
		}
		f.WantOps(t)
		fresh := f.New(idempotency.Config{})
		if _, err := idempotency.Do(context.Background(), fresh, orderOp("alice"), order{"o-1", 6}, c.charge); !errors.Is(err, idempotency.ErrKeyReused) {
			t.Errorf("another payload = %v, want ErrKeyReused", err)
		}
		f.WantOps(t, OpAcquire)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-1"}`, 1)
	}},
	{"two operations or callers, one key", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{CacheSize: 10}), &counter{}
		for _, scope := range []string{"alice", "bob"} {
			res, err := idempotency.Do(context.Background(), idem, orderOp(scope), order{"o-1", 5}, c.charge)
			if err != nil || res.Replayed {
				t.Fatalf("%s: Do = %+v, %v", scope, res, err)
			}
		}
		f.WantOps(t, OpAcquire, OpSettle, OpAcquire, OpSettle)
		f.WantEntry(t, "alice", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-1"}`, 1)
		f.WantEntry(t, "bob", "o-1", idempotency.EntryCompleted, `{"paymentId":"pay-o-1-2"}`, 1)
	}},
	{"batch of records, one failing, one sent twice", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{}), &counter{}
		handler := batch.SQS(idem, batch.Config[events.SQSMessage]{
			Scope: "orders-queue",
			Key: func(m events.SQSMessage) (string, error) {
				var o order
				err := json.Unmarshal([]byte(m.Body), &o)
				return o.ID, err
			},
		}, func(ctx context.Context, m events.SQSMessage) error {
			var o order
			if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
				return err
			}
			if o.Amount < 0 {
				return errors.New("provider refused the amount")
			}
			_, err := c.charge(ctx, o)
			return err
		})
		msg := func(id, body string) events.SQSMessage {
			return events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:orders"}
		}
		res, err := handler(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
			msg("m1", `{"id":"o-1","amount":5}`),
			msg("m2", `{"id":"o-2","amount":-1}`),
			msg("m3", `{"id":"o-1","amount":5}`),
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.BatchItemFailures) != 1 || res.BatchItemFailures[0].ItemIdentifier != "m2" {
			t.Errorf("batch item failures %+v, want m2 alone", res.BatchItemFailures)
		}
		if c.count() != 1 {
			t.Errorf("o-1 charged %d times, want once", c.count())
		}
		f.WantOps(t, OpAcquire, OpSettle, OpAcquire, OpRelease, OpAcquire)
		f.WantEntry(t, "orders-queue", "o-1", idempotency.EntryCompleted, "", 1)
		f.WantEntry(t, "orders-queue", "o-2", idempotency.EntryReleased, "", 1)
	}},
	{"disabled", func(t *testing.T, f *FlowEnv) {
		idem, c := f.New(idempotency.Config{Disabled: true}), &counter{}
		for range 2 {
			if _, err := idempotency.Do(context.Background(), idem, orderOp("alice"), order{"o-1", 5}, c.charge); err != nil {
				t.Fatal(err)
			}
		}
		if c.count() != 2 {
			t.Errorf("ran %d times, want 2", c.count())
		}
		f.WantOps(t)
		if _, err := f.Store.Get(context.Background(), "alice", "o-1"); !errors.Is(err, idempotency.ErrNotFound) {
			t.Errorf("a record was stored: %v", err)
		}
	}},
}

// RunFlows runs every Flow as a subtest, each on a fresh store from
// newStore.
func RunFlows(t *testing.T, newStore func(t *testing.T) idempotency.Persistence) {
	for _, flow := range Flows {
		t.Run(strings.ReplaceAll(flow.Name, " ", "_"), func(t *testing.T) {
			store := newStore(t)
			clock := NewClock(Now())
			rec := NewRecorder(store)
			env := &FlowEnv{Store: store, Recorder: rec, Clock: clock}
			env.New = func(cfg idempotency.Config) *idempotency.Idempotency {
				cfg.Store, cfg.Clock = rec, clock.Now
				if cfg.Lease == 0 {
					cfg.Lease = flowLease
				}
				if cfg.Retention == 0 {
					cfg.Retention = flowRetention
				}
				idem, err := idempotency.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return idem
			}
			flow.Run(t, env)
		})
	}
}
