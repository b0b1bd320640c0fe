package fault

import (
	"context"
	"time"

	"github.com/exactlyonce/transfers/internal/local/sfnlocal"
)

// EventFaultKind is what an event fault does to a status change event.
type EventFaultKind int

const (
	// Drop loses the event: Publish reports success and nothing is
	// published.
	Drop EventFaultKind = iota
	// Delay publishes the event after Delay of wall time, in the
	// background (Injector.Wait waits for it); Publish returns at once.
	Delay
	// Duplicate publishes the event twice, the same bytes (the same event
	// id), as EventBridge's at-least-once delivery may.
	Duplicate
)

var eventCountNames = map[EventFaultKind]string{Drop: CountEventDrop, Delay: CountEventDelay, Duplicate: CountEventDuplicate}

// delayedPublishTimeout bounds the publication of a delayed event.
const delayedPublishTimeout = 10 * time.Second

// EventFault is a fault applied to the status change events the Step
// Functions endpoint publishes.
type EventFault struct {
	Kind EventFaultKind
	// Times and Prob: as in LambdaFault.
	Times int
	Prob  float64
	// Delay is the wall time a Delay fault holds the event.
	Delay time.Duration
	// Match, when set, filters events (the EventBridge envelope as JSON).
	Match func(event []byte) bool
}

// Event arms an event fault.
func (in *Injector) Event(f EventFault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.events = append(in.events, &armed[EventFault]{f: f, times: f.Times, prob: f.Prob})
}

// Publisher wraps next, the Step Functions endpoint's publisher, with the
// event faults.
func (in *Injector) Publisher(next sfnlocal.Publisher) sfnlocal.Publisher {
	return &publisher{in: in, next: next}
}

type publisher struct {
	in   *Injector
	next sfnlocal.Publisher
}

func (p *publisher) Publish(ctx context.Context, event []byte) error {
	in := p.in
	in.mu.Lock()
	f, ok := take(in, &in.events, func(f EventFault) bool { return f.Match == nil || f.Match(event) })
	if ok {
		in.counts[eventCountNames[f.Kind]]++
		if f.Kind == Delay {
			in.bg.Add(1)
		}
	}
	in.mu.Unlock()
	if !ok {
		return p.next.Publish(ctx, event)
	}
	switch f.Kind {
	case Drop:
		return nil
	case Duplicate:
		err := p.next.Publish(ctx, event)
		if err2 := p.next.Publish(ctx, event); err == nil {
			err = err2
		}
		return err
	default: // Delay
		event = append([]byte(nil), event...)
		go func() {
			defer in.bg.Done()
			time.Sleep(f.Delay)
			ctx, cancel := context.WithTimeout(context.Background(), delayedPublishTimeout)
			defer cancel()
			_ = p.next.Publish(ctx, event) // like EventBridge delivery, best effort
		}()
		return nil
	}
}
