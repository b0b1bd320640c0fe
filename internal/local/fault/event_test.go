package fault_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/exactlyonce/transfers/internal/local/eventbus"
	"github.com/exactlyonce/transfers/internal/local/fault"
)

// busRecorder is a target that keeps the "id" of the events it receives.
type busRecorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *busRecorder) Deliver(_ context.Context, event []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, field(event, "id"))
	return nil
}

func (r *busRecorder) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.ids...)
	slices.Sort(out)
	return out
}

// TestEventFaults publishes events e1..eN through the fault publisher to a
// real event bus and checks what the bus's target received.
func TestEventFaults(t *testing.T) {
	tests := []struct {
		name     string
		faults   []fault.EventFault
		events   int
		want     []string
		wantHits map[string]int
	}{
		{"drop once", []fault.EventFault{{Kind: fault.Drop, Times: 1}}, 3,
			[]string{"e2", "e3"}, map[string]int{"event.drop": 1}},
		{"duplicate", []fault.EventFault{{Kind: fault.Duplicate, Times: 2}}, 3,
			[]string{"e1", "e1", "e2", "e2", "e3"}, map[string]int{"event.duplicate": 2}},
		{"delay", []fault.EventFault{{Kind: fault.Delay, Delay: 20 * time.Millisecond}}, 2,
			[]string{"e1", "e2"}, map[string]int{"event.delay": 2}},
		{"match", []fault.EventFault{{Kind: fault.Drop, Match: func(e []byte) bool { return field(e, "id") == "e2" }}}, 3,
			[]string{"e1", "e3"}, map[string]int{"event.drop": 1}},
		{"in the order armed", []fault.EventFault{{Kind: fault.Drop, Times: 1}, {Kind: fault.Duplicate, Times: 1}}, 3,
			[]string{"e2", "e2", "e3"}, map[string]int{"event.drop": 1, "event.duplicate": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bus := eventbus.New(eventbus.Config{Logger: quietLogger()})
			t.Cleanup(func() { _ = bus.Close(context.Background()) })
			rec := &busRecorder{}
			p, err := eventbus.Compile([]byte(`{"source":["test"]}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := bus.AddRule(eventbus.Rule{Name: "r", Pattern: p, Target: rec}); err != nil {
				t.Fatal(err)
			}
			in := fault.New(1)
			for _, f := range tc.faults {
				in.Event(f)
			}
			pub := in.Publisher(bus)
			ctx := testContext(t)
			for i := 1; i <= tc.events; i++ {
				if err := pub.Publish(ctx, fmt.Appendf(nil, `{"id":"e%d","source":"test","detail-type":"x","detail":{}}`, i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := in.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if err := bus.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if got := rec.received(); !slices.Equal(got, tc.want) {
				t.Errorf("received %v, want %v", got, tc.want)
			}
			assertCounts(t, in, tc.wantHits)
		})
	}
}

// TestEventDelayIsHeld checks that a delayed event is not published before
// Wait and is published by the time Wait returns.
func TestEventDelayIsHeld(t *testing.T) {
	in := fault.New(1)
	release := make(chan struct{})
	in.Event(fault.EventFault{Kind: fault.Delay, Delay: time.Hour, Match: func([]byte) bool { <-release; return true }})
	rec := &recordingPublisher{}
	pub := in.Publisher(rec)
	go func() { time.Sleep(10 * time.Millisecond); close(release) }()
	// Match blocks until release, so this also shows Publish waits for
	// Match; with a Delay of an hour, the event must still be held after.
	if err := pub.Publish(testContext(t), []byte(`{"id":"e1"}`)); err != nil {
		t.Fatal(err)
	}
	if got := rec.recorded(); len(got) != 0 {
		t.Fatalf("a delayed event was published at once: %v", got)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 20*time.Millisecond)
	defer cancel()
	if err := in.Wait(ctx); err == nil {
		t.Fatal("Wait returned while an event was delayed")
	}
}
