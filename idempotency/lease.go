package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LeasePolicy says how long a call of Do holds its key (Operation.Lease).
// The zero value is LeaseFromDeadline.
type LeasePolicy struct {
	kind leaseKind
	d    time.Duration
}

type leaseKind uint8

const (
	leaseFromDeadline leaseKind = iota
	leaseFixed
	leaseUntilSettled
)

// LeaseFromDeadline is the default policy: the lease expires at the
// context's deadline (a Lambda's), or after Config.Lease when the
// context has none.
func LeaseFromDeadline() LeasePolicy { return LeasePolicy{} }

// LeaseFor makes the lease expire d after the call acquires the key,
// whatever the context's deadline. d must be positive: Do refuses the
// call otherwise.
func LeaseFor(d time.Duration) LeasePolicy { return LeasePolicy{kind: leaseFixed, d: d} }

// LeaseUntilSettled makes the lease last until the call settles or
// releases the key: it expires only with the record itself, at its
// expiry (Config.Retention after the acquisition), when the table's Time
// to Live may delete it. Only Operation.TakeOver, or that expiry, ends a
// holder that died.
func LeaseUntilSettled() LeasePolicy { return LeasePolicy{kind: leaseUntilSettled} }

// String names the policy, as its constructor call.
func (p LeasePolicy) String() string {
	switch p.kind {
	case leaseFixed:
		return fmt.Sprintf("LeaseFor(%v)", p.d)
	case leaseUntilSettled:
		return "LeaseUntilSettled()"
	}
	return "LeaseFromDeadline()"
}

// check refuses a policy Do cannot apply.
func (p LeasePolicy) check() error {
	if p.kind == leaseFixed && p.d <= 0 {
		return fmt.Errorf("idempotency: %v: the lease must be positive", p)
	}
	return nil
}

// times are the lease's expiry and the record's for an acquisition at
// now: the record lives at least as long as the lease.
func (i *Idempotency) times(ctx context.Context, p LeasePolicy, now time.Time) (leaseUntil, expires time.Time) {
	expires = now.Add(i.retention)
	switch p.kind {
	case leaseFixed:
		leaseUntil = now.Add(p.d)
	case leaseUntilSettled:
		leaseUntil = expires
	default:
		leaseUntil = now.Add(i.lease)
		if d, ok := ctx.Deadline(); ok {
			leaseUntil = d
		}
	}
	if leaseUntil.After(expires) {
		expires = leaseUntil
	}
	return leaseUntil.Truncate(time.Millisecond), expires.Truncate(time.Second)
}

// TakeOverFunc decides whether a call that finds its key IN_PROGRESS for
// the same payload, under a lease that has not expired, takes it over
// from the holder (Operation.TakeOver): true when the holder is known to
// be dead (the Step Functions execution it started is no longer running,
// say). in is the finding call's input; holder is the lease it would
// take over. An error fails the call with it.
type TakeOverFunc[In any] func(ctx context.Context, in In, holder Lease) (bool, error)

// Taker is a Persistence that can take a record over from a lease that
// has not expired, as Operation.TakeOver needs. Do finds it with a type
// assertion on Config.Store.
type Taker interface {
	// TakeOver takes the record of (in.Scope, in.Key) with a fresh lease,
	// as Acquire does (its lease counter plus one, the new LeaseUntil and
	// ExpiresAt), when the record is still IN_PROGRESS for in.Fingerprint
	// under exactly held (its ID and Count), whatever its LeaseUntil, and
	// returns it with acquired = true. Otherwise it writes nothing and
	// returns the record as it is, with acquired = false, or ErrNotFound
	// when there is none. It is one round trip, as Acquire is.
	TakeOver(ctx context.Context, in AcquireInput, held Lease) (e Entry, acquired bool, err error)
}

// ErrTakeOverUnsupported refuses a call whose Operation has a TakeOver
// when the store does not implement Taker.
var ErrTakeOverUnsupported = errors.New("idempotency: Operation.TakeOver needs a store that implements Taker")
