package idempotency

import (
	"context"
	"errors"
	"time"
)

// Observer is told of every call of Do (and of a function made by Wrap)
// once, when the call ends: Config.Observer. Observe runs on the calling
// goroutine, after the call's last store call and before Do returns (or,
// after a panic, as the panic goes through Do), so it should be quick;
// it may be called concurrently.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// ObserverFunc is a function that is an Observer.
type ObserverFunc func(ctx context.Context, ev Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, ev Event) { f(ctx, ev) }

// CallOutcome is what a call of Do came to (Event.Outcome). Its values
// are stable, lower-case words, fit for a metric dimension.
type CallOutcome string

// The outcomes of a call.
const (
	// OutcomeCompleted: the call acquired the key, the function succeeded
	// and its output is stored.
	OutcomeCompleted CallOutcome = "completed"
	// OutcomeFailed: the call acquired the key and the function failed
	// with a Permanent error, which is stored.
	OutcomeFailed CallOutcome = "failed"
	// OutcomeReleased: the call acquired the key and the function failed
	// (or panicked, or its output did not encode); the key is released
	// for a retry.
	OutcomeReleased CallOutcome = "released"
	// OutcomeReplayed: a stored output, read from the store, was replayed.
	OutcomeReplayed CallOutcome = "replayed"
	// OutcomeCached: a stored output, from the local cache, was replayed
	// without a call to the store.
	OutcomeCached CallOutcome = "cached"
	// OutcomeStoredFailure: a stored permanent failure was replayed (a
	// *StoredFailureError), from the store or, with Event.FromCache, from
	// the cache.
	OutcomeStoredFailure CallOutcome = "stored_failure"
	// OutcomeInProgress: another call holds the key: an
	// *InProgressError, after Operation.Wait when set, or the error of
	// Operation.TakeOver.
	OutcomeInProgress CallOutcome = "in_progress"
	// OutcomeKeyReused: the key is held or settled for another payload
	// (ErrKeyReused).
	OutcomeKeyReused CallOutcome = "key_reused"
	// OutcomeFenced: the call's lease was taken over while the function
	// ran, and its settle or release wrote nothing (ErrFenced).
	OutcomeFenced CallOutcome = "fenced"
	// OutcomePreconditionFailed: a condition of Operation.Require failed
	// where the key could be taken: a *PreconditionError; nothing was
	// stored and the function did not run.
	OutcomePreconditionFailed CallOutcome = "precondition_failed"
	// OutcomeStoreError: a call to the store failed, or its record could
	// not be used (a *FormatError, an output that does not decode).
	OutcomeStoreError CallOutcome = "store_error"
	// OutcomeInvalid: the call was refused before any store call: a key
	// that fails ValidateKey, a failing KeyFunc, Payload, ScopeFunc or
	// Require, an Operation that cannot be served.
	OutcomeInvalid CallOutcome = "invalid"
	// OutcomeDisabled: idempotency is disabled and the function ran
	// directly.
	OutcomeDisabled CallOutcome = "disabled"
)

// UnnamedOperation is Event.Operation for an Operation without a Name.
const UnnamedOperation = "unnamed"

// ErrPanicked is Event.Err for a call whose function (or another of the
// Operation's functions) panicked: Do does not return, the panic goes
// on.
var ErrPanicked = errors.New("idempotency: the function panicked")

// Event is what an Observer is told of one call of Do. It holds neither
// the idempotency key nor the scope, which may name a caller: only the
// Operation's Name, and the record key, their SHA-256.
type Event struct {
	// Operation is Operation.Name, or UnnamedOperation.
	Operation string
	// RecordKey is RecordKey(scope, key), "" when the call never came to
	// the record (disabled, invalid).
	RecordKey string
	// Outcome is what the call came to.
	Outcome CallOutcome
	// Ran: the function ran in this call.
	Ran bool
	// FromCache: the outcome came from the local cache.
	FromCache bool
	// TookOver: the call took the key from a holder whose lease had not
	// expired, on the word of Operation.TakeOver.
	TookOver bool
	// StoreCalls is how many calls the call made to the store.
	StoreCalls int
	// Time is when the call started and Duration how long it took, by
	// Config.Clock.
	Time     time.Time
	Duration time.Duration
	// Err is the error Do returned (nil on success), ErrPanicked after a
	// panic.
	Err error
}

// tally gathers a call's Event while Do runs. It lives on Do's stack
// and costs no allocation.
type tally struct {
	start time.Time
	// scope and key are the call's, once the key is valid: the record
	// key is taken of them when no record gave it.
	scope, key string
	recordKey  string
	outcome    CallOutcome
	calls      int
	ran        bool
	fromCache  bool
	tookOver   bool
	// returned: Do returned (false while a panic goes through it).
	returned bool
}

// observe tells the observer of the call that t tallied, which returned
// err.
func (i *Idempotency) observe(ctx context.Context, name string, t *tally, err *error) {
	if name == "" {
		name = UnnamedOperation
	}
	if t.recordKey == "" && t.key != "" {
		t.recordKey = RecordKey(t.scope, t.key)
	}
	ev := Event{
		Operation:  name,
		RecordKey:  t.recordKey,
		Outcome:    t.outcome,
		Ran:        t.ran,
		FromCache:  t.fromCache,
		TookOver:   t.tookOver,
		StoreCalls: t.calls,
		Time:       t.start,
		Duration:   i.now().Sub(t.start),
		Err:        *err,
	}
	if !t.returned {
		ev.Err = ErrPanicked
	}
	i.observer.Observe(ctx, ev)
}

// failed records a store call that failed with err.
func (t *tally) failed(err error) {
	switch {
	case errors.Is(err, ErrFenced):
		t.outcome = OutcomeFenced
	case errors.Is(err, ErrPreconditionFailed):
		t.outcome = OutcomePreconditionFailed
	default:
		t.outcome = OutcomeStoreError
	}
}
