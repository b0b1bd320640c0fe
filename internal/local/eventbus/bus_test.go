package eventbus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/eventbus"
)

// testScale makes every bus wait (backoff of seconds to minutes) last
// nanoseconds.
const testScale = 1e-9

func newBus(t *testing.T, cfg eventbus.Config) *eventbus.Bus {
	t.Helper()
	if cfg.TimeScale == 0 {
		cfg.TimeScale = testScale
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b := eventbus.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func drain(t *testing.T, b *eventbus.Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// recorder is a Target that fails its first failures deliveries.
type recorder struct {
	failures int32
	mu       sync.Mutex
	attempts int
	events   []string
}

var errTargetDown = errors.New("target down")

func (r *recorder) Deliver(_ context.Context, event []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts++
	if r.attempts <= int(r.failures) {
		return fmt.Errorf("attempt %d: %w", r.attempts, errTargetDown)
	}
	r.events = append(r.events, string(event))
	return nil
}

func (r *recorder) snapshot() (attempts int, events []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts, append([]string(nil), r.events...)
}

// deadLetters records what rules hand to their dead letter.
type deadLetters struct {
	mu     sync.Mutex
	events []string
	errs   []error
}

func (d *deadLetters) record(_ context.Context, event []byte, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, string(event))
	d.errs = append(d.errs, err)
}

func (d *deadLetters) snapshot() ([]string, []error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.events...), append([]error(nil), d.errs...)
}

func TestPublishRoutesToMatchingRules(t *testing.T) {
	b := newBus(t, eventbus.Config{})
	reaper, audit := &recorder{}, &recorder{}
	for _, r := range []eventbus.Rule{
		{Name: "ExecutionFailed", Pattern: eventbus.MustCompile(statusChangeRule), Target: reaper},
		{Name: "AllStates", Pattern: eventbus.MustCompile(`{"source":["aws.states"]}`), Target: audit},
	} {
		if err := b.AddRule(r); err != nil {
			t.Fatalf("AddRule(%s): %v", r.Name, err)
		}
	}
	const sfn = "Step Functions Execution Status Change"
	failed := statusChange("aws.states", sfn, "FAILED", machineARN)
	succeeded := statusChange("aws.states", sfn, "SUCCEEDED", machineARN)
	other := statusChange("transfers.api", sfn, "FAILED", machineARN)
	for _, e := range []string{failed, succeeded, other} {
		if err := b.Publish(context.Background(), []byte(e)); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	drain(t, b)
	if _, got := reaper.snapshot(); len(got) != 1 || got[0] != failed {
		t.Errorf("reaper got %d events %q, want the FAILED one", len(got), got)
	}
	if _, got := audit.snapshot(); len(got) != 2 {
		t.Errorf("audit got %d events, want 2 (FAILED and SUCCEEDED)", len(got))
	}
}

func TestPublishRejectsInvalidEvents(t *testing.T) {
	b := newBus(t, eventbus.Config{})
	for _, event := range []string{`{"source":`, `[]`, `"x"`, `{} {}`} {
		t.Run(event, func(t *testing.T) {
			if err := b.Publish(context.Background(), []byte(event)); !errors.Is(err, eventbus.ErrInvalidEvent) {
				t.Errorf("Publish(%s) = %v, want ErrInvalidEvent", event, err)
			}
		})
	}
}

func TestDeliveryRetries(t *testing.T) {
	const event = `{"source":["x"]}`
	tests := []struct {
		name         string
		failures     int32
		policy       eventbus.RetryPolicy
		wantAttempts int // exact, or the lower bound with maxAttempts
		maxAttempts  int
		wantDelivery bool
		wantReason   error
	}{
		{"first attempt succeeds", 0, eventbus.RetryPolicy{}, 1, 0, true, nil},
		{"retry then success", 3, eventbus.RetryPolicy{}, 4, 0, true, nil},
		{"retries exhausted", 100, eventbus.RetryPolicy{MaximumRetryAttempts: 2}, 3, 0, false, eventbus.ErrRetriesExhausted},
		{"no retries", 100, eventbus.RetryPolicy{MaximumRetryAttempts: eventbus.NoRetries}, 1, 0, false, eventbus.ErrRetriesExhausted},
		{"default policy exhausted", 1000, eventbus.RetryPolicy{}, 186, 0, false, eventbus.ErrRetriesExhausted},
		// Backoff 1, 2, 4, ... s with jitter in [d/2, d]: the event is 60 s
		// old after the 6th or 7th attempt.
		{"event too old", 1000, eventbus.RetryPolicy{MaximumEventAgeInSeconds: 60}, 6, 7, false, eventbus.ErrEventTooOld},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBus(t, eventbus.Config{})
			target := &recorder{failures: tc.failures}
			dlq := &deadLetters{}
			err := b.AddRule(eventbus.Rule{
				Name: "r", Pattern: eventbus.MustCompile(event), Target: target,
				RetryPolicy: tc.policy, DeadLetter: dlq.record,
			})
			if err != nil {
				t.Fatalf("AddRule: %v", err)
			}
			if err := b.Publish(context.Background(), []byte(`{"source":"x","detail":{"n":1}}`)); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			drain(t, b)
			attempts, delivered := target.snapshot()
			if tc.maxAttempts == 0 && attempts != tc.wantAttempts ||
				tc.maxAttempts != 0 && (attempts < tc.wantAttempts || attempts > tc.maxAttempts) {
				t.Errorf("attempts = %d, want %d (max %d)", attempts, tc.wantAttempts, tc.maxAttempts)
			}
			if (len(delivered) == 1) != tc.wantDelivery {
				t.Errorf("delivered %d times, want delivery %v", len(delivered), tc.wantDelivery)
			}
			dead, errs := dlq.snapshot()
			if tc.wantReason == nil {
				if len(dead) != 0 {
					t.Errorf("dead letters = %q, want none", dead)
				}
				return
			}
			if len(dead) != 1 || dead[0] != `{"source":"x","detail":{"n":1}}` {
				t.Fatalf("dead letters = %q, want the event once", dead)
			}
			if !errors.Is(errs[0], tc.wantReason) || !errors.Is(errs[0], errTargetDown) {
				t.Errorf("dead-letter error %v does not match %v and the target error", errs[0], tc.wantReason)
			}
			var de *eventbus.DeliveryError
			if !errors.As(errs[0], &de) || de.Attempts != attempts || de.Rule != "r" {
				t.Errorf("dead-letter error = %#v, want a *DeliveryError for rule r after %d attempts", errs[0], attempts)
			}
		})
	}
}

func TestPanickingTargetIsRetried(t *testing.T) {
	b := newBus(t, eventbus.Config{})
	var calls atomic.Int32
	delivered := make(chan struct{}, 1)
	target := eventbus.TargetFunc(func(context.Context, []byte) error {
		if calls.Add(1) == 1 {
			panic("target bug")
		}
		delivered <- struct{}{}
		return nil
	})
	if err := b.AddRule(eventbus.Rule{Name: "r", Pattern: eventbus.MustCompile(`{"source":["x"]}`), Target: target}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(context.Background(), []byte(`{"source":"x"}`)); err != nil {
		t.Fatal(err)
	}
	drain(t, b)
	if n := calls.Load(); n != 2 || len(delivered) != 1 {
		t.Errorf("calls = %d, delivered = %d; want a retry after the panic", n, len(delivered))
	}
}

func TestAddRuleErrors(t *testing.T) {
	p := eventbus.MustCompile(`{"source":["x"]}`)
	target := &recorder{}
	tests := []struct {
		name string
		rule eventbus.Rule
		want error
	}{
		{"duplicate name", eventbus.Rule{Name: "taken", Pattern: p, Target: target}, eventbus.ErrDuplicateRule},
		{"bad name", eventbus.Rule{Name: "no spaces", Pattern: p, Target: target}, eventbus.ErrInvalidRule},
		{"empty name", eventbus.Rule{Pattern: p, Target: target}, eventbus.ErrInvalidRule},
		{"no pattern", eventbus.Rule{Name: "n", Target: target}, eventbus.ErrInvalidRule},
		{"no target", eventbus.Rule{Name: "n", Pattern: p}, eventbus.ErrInvalidRule},
		{"too many retries", eventbus.Rule{Name: "n", Pattern: p, Target: target, RetryPolicy: eventbus.RetryPolicy{MaximumRetryAttempts: 186}}, eventbus.ErrInvalidRule},
		{"age too short", eventbus.Rule{Name: "n", Pattern: p, Target: target, RetryPolicy: eventbus.RetryPolicy{MaximumEventAgeInSeconds: 59}}, eventbus.ErrInvalidRule},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBus(t, eventbus.Config{})
			if err := b.AddRule(eventbus.Rule{Name: "taken", Pattern: p, Target: target}); err != nil {
				t.Fatal(err)
			}
			if err := b.AddRule(tc.rule); !errors.Is(err, tc.want) {
				t.Errorf("AddRule = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		expr string
		want time.Duration
		err  error
	}{
		{"rate(1 minute)", time.Minute, nil},
		{"rate(5 minutes)", 5 * time.Minute, nil},
		{"rate(1 hour)", time.Hour, nil},
		{"rate(12 hours)", 12 * time.Hour, nil},
		{"rate(1 day)", 24 * time.Hour, nil},
		{"rate(7 days)", 7 * 24 * time.Hour, nil},
		{"rate(1 minutes)", 0, eventbus.ErrInvalidRule},
		{"rate(5 minute)", 0, eventbus.ErrInvalidRule},
		{"rate(0 minutes)", 0, eventbus.ErrInvalidRule},
		{"rate(5 seconds)", 0, eventbus.ErrInvalidRule},
		{"rate(-1 minutes)", 0, eventbus.ErrInvalidRule},
		{"every 5 minutes", 0, eventbus.ErrInvalidRule},
		{"cron(0/5 * * * ? *)", 0, eventbus.ErrUnsupportedSchedule},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := eventbus.ParseRate(tc.expr)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("ParseRate = (%v, %v), want (%v, %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestScheduleTicks(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	// rate(5 minutes) ticks every millisecond.
	b := newBus(t, eventbus.Config{
		Region: "eu-west-1", AccountID: "111122223333",
		TimeScale: float64(time.Millisecond) / float64(5*time.Minute),
		Now:       func() time.Time { return now },
	})
	ticks := make(chan []byte, 100)
	var closed atomic.Bool
	target := eventbus.TargetFunc(func(_ context.Context, event []byte) error {
		if closed.Load() {
			t.Error("delivery after Close returned")
		}
		select {
		case ticks <- event:
		default:
		}
		return nil
	})
	if err := b.AddSchedule("ReaperSchedule", "rate(5 minutes)", target); err != nil {
		t.Fatalf("AddSchedule: %v", err)
	}
	var ids []string
	timeout := time.After(10 * time.Second)
	for len(ids) < 3 {
		select {
		case raw := <-ticks:
			var e eventbus.ScheduledEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("tick %s: %v", raw, err)
			}
			want := eventbus.ScheduledEvent{
				Version: "0", ID: e.ID, DetailType: "Scheduled Event", Source: "aws.events",
				Account: "111122223333", Time: "2026-03-01T11:30:00Z", Region: "eu-west-1",
				Resources: []string{"arn:aws:events:eu-west-1:111122223333:rule/ReaperSchedule"},
				Detail:    json.RawMessage(`{}`),
			}
			if fmt.Sprint(e) != fmt.Sprint(want) {
				t.Errorf("tick = %+v\nwant   %+v", e, want)
			}
			if !uuidLike(e.ID) {
				t.Errorf("id %q is not a UUID", e.ID)
			}
			ids = append(ids, e.ID)
		case <-timeout:
			t.Fatalf("got %d ticks in 10 s, want 3", len(ids))
		}
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("tick ids repeat: %q", ids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closed.Store(true)
	if err := b.AddSchedule("Late", "rate(1 minute)", target); !errors.Is(err, eventbus.ErrClosed) {
		t.Errorf("AddSchedule after Close = %v, want ErrClosed", err)
	}
}

func TestAddScheduleErrors(t *testing.T) {
	b := newBus(t, eventbus.Config{})
	target := &recorder{}
	if err := b.AddSchedule("s", "cron(0 12 * * ? *)", target); !errors.Is(err, eventbus.ErrUnsupportedSchedule) {
		t.Errorf("cron = %v, want ErrUnsupportedSchedule", err)
	}
	if err := b.AddSchedule("s", "rate(1 minute)", target); err != nil {
		t.Fatal(err)
	}
	if err := b.AddSchedule("s", "rate(1 minute)", target); !errors.Is(err, eventbus.ErrDuplicateRule) {
		t.Errorf("duplicate = %v, want ErrDuplicateRule", err)
	}
	if err := b.AddSchedule("t", "rate(1 minute)", nil); !errors.Is(err, eventbus.ErrInvalidRule) {
		t.Errorf("nil target = %v, want ErrInvalidRule", err)
	}
}

func TestCloseWaitsForDeliveries(t *testing.T) {
	b := eventbus.New(eventbus.Config{TimeScale: testScale, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	started := make(chan struct{})
	release := make(chan struct{})
	var startOnce sync.Once
	var finished atomic.Int32
	target := eventbus.TargetFunc(func(context.Context, []byte) error {
		startOnce.Do(func() { close(started) })
		<-release
		finished.Add(1)
		return nil
	})
	if err := b.AddRule(eventbus.Rule{Name: "slow", Pattern: eventbus.MustCompile(`{"source":["x"]}`), Target: target}); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(context.Background(), []byte(`{"source":"x"}`)); err != nil {
		t.Fatal(err)
	}
	<-started

	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Drain(expired); !errors.Is(err, context.Canceled) {
		t.Errorf("Drain with a delivery in flight and an ended context = %v, want context.Canceled", err)
	}
	if err := b.Publish(context.Background(), []byte(`{"source":"x"}`)); err != nil {
		t.Errorf("Publish before Close: %v", err)
	}

	closeErr := make(chan error, 1)
	go func() { closeErr <- b.Close(context.Background()) }()
	close(release)
	if err := <-closeErr; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := finished.Load(); n != 2 {
		t.Errorf("Close returned after %d of 2 in-flight deliveries finished", n)
	}
	if err := b.Publish(context.Background(), []byte(`{"source":"x"}`)); !errors.Is(err, eventbus.ErrClosed) {
		t.Errorf("Publish after Close = %v, want ErrClosed", err)
	}
}

func uuidLike(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// A schedule's first event can come before its first interval: a local
// runtime restarted on persistent data sweeps soon instead of an hour
// later.
func TestScheduleFirstAfter(t *testing.T) {
	// Real time: the rate is an hour, the first event 10 ms.
	b := newBus(t, eventbus.Config{TimeScale: 1, FirstScheduleAfter: 10 * time.Millisecond})
	ticks := make(chan struct{}, 1)
	target := eventbus.TargetFunc(func(context.Context, []byte) error {
		select {
		case ticks <- struct{}{}:
		default:
		}
		return nil
	})
	if err := b.AddSchedule("Hourly", "rate(1 hour)", target); err != nil {
		t.Fatalf("AddSchedule: %v", err)
	}
	select {
	case <-ticks:
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s of a rate(1 hour) schedule whose first event comes after 10 ms")
	}
}
