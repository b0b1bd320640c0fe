// Package fault injects failures into the local runtime, for tests: Lambda
// invocations that fail, hang, lose their response or commit late; status
// change events that are dropped, delayed or duplicated; AWS SDK calls that
// fail before or after reaching the service; and Step Functions' direct
// DynamoDB integrations that fail the same two ways.
//
// An Injector holds the armed faults. The local stack (stack.Options.Faults)
// wires it into the Lambda registry, the Step Functions endpoint's event
// publisher and DynamoDB transport, and the functions' aws.Config; a test
// arms faults on it while the stack runs. Production code knows nothing of
// it.
//
// Each kind of fault is a list consumed in the order armed: an invocation,
// event, call or request takes the first armed fault that matches it
// (target, Match, then the Prob draw), and a fault with Times > 0 stops
// matching once it has applied Times times.
package fault

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
)

// Names of the faults in Counts.
const (
	CountLambdaFail         = "lambda.fail"
	CountLambdaHang         = "lambda.hang"
	CountLambdaLoseResponse = "lambda.lose-response"
	CountLambdaDetach       = "lambda.detach"
	CountEventDrop          = "event.drop"
	CountEventDelay         = "event.delay"
	CountEventDuplicate     = "event.duplicate"
	CountSDKBefore          = "sdk.before"
	CountSDKAfter           = "sdk.after"
	CountIntegrationBefore  = "ddb-integration.before"
	CountIntegrationAfter   = "ddb-integration.after"
)

const (
	defaultLambdaServiceError  = "Lambda.ServiceException"
	lambdaServiceErrorPrefix   = "Lambda."
	lambdaUnknownFunctionError = "Lambda.Unknown"
)

// Injector holds armed faults. It is safe for concurrent use; every
// decision that involves randomness (Prob) draws from one source seeded by
// New.
type Injector struct {
	mu       sync.Mutex
	rng      *rand.Rand
	lambdas  []*armed[LambdaFault]
	events   []*armed[EventFault]
	sdks     []*armed[SDKFault]
	integ    []*armed[IntegrationFault]
	counts   map[string]int
	detached []*detached

	bg sync.WaitGroup // delayed events
}

// New returns an Injector with nothing armed whose random draws come from
// a source seeded with seed.
func New(seed uint64) *Injector {
	return &Injector{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), counts: map[string]int{}}
}

// Counts returns how many times each fault kind fired, keyed by the Count*
// names ("lambda.fail", "event.drop", "sdk.after", ...). Kinds that never
// fired are absent.
func (in *Injector) Counts() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
	}
	return out
}

// Reset disarms every fault and zeroes Counts. Background work already
// started (a delayed event, a detached invocation) goes on.
func (in *Injector) Reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.lambdas, in.events, in.sdks, in.integ = nil, nil, nil, nil
	in.counts = map[string]int{}
}

// Wait waits until the background work the faults started has finished:
// delayed events are published, and detached invocations whose Release is
// closed have run. A detached invocation still waiting for its Release is
// not waited for. Release must be closed, not sent on: Wait receives from
// it to learn that it is closed.
func (in *Injector) Wait(ctx context.Context) error {
	bg := make(chan struct{})
	go func() { in.bg.Wait(); close(bg) }()
	select {
	case <-bg:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	in.mu.Lock()
	pending := append([]*detached(nil), in.detached...)
	in.mu.Unlock()
	for _, d := range pending {
		if d.release != nil {
			select {
			case <-d.release:
			default:
				continue // not released: not waited for
			}
		}
		select {
		case <-d.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// armed is one armed fault with its use count.
type armed[F any] struct {
	f     F
	times int
	prob  float64
	used  int
}

// take picks, from list, the first fault that match accepts and the Prob
// draw lets apply, counts its use and drops it once exhausted. It must be
// called with in.mu held.
func take[F any](in *Injector, list *[]*armed[F], match func(F) bool) (F, bool) {
	for i, a := range *list {
		if !match(a.f) {
			continue
		}
		if a.prob > 0 && in.rng.Float64() >= a.prob {
			continue
		}
		a.used++
		if a.times > 0 && a.used >= a.times {
			*list = append((*list)[:i:i], (*list)[i+1:]...)
		}
		return a.f, true
	}
	var zero F
	return zero, false
}

// errInjected is wrapped by every error a fault makes up.
var errInjected = errors.New("injected fault")

// IsInjected reports whether err was made up by a fault (a connection error
// of an SDK or integration fault with no Err of its own).
func IsInjected(err error) bool { return errors.Is(err, errInjected) }
