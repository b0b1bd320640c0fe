package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DefaultLease is how long a call holds its key when its context has no
// deadline (Config.Lease).
const DefaultLease = 5 * time.Minute

// settleTimeout bounds a settle or release, which run even when the
// call's context is done.
const settleTimeout = 10 * time.Second

// The backoff of a duplicate that waits for the key (Operation.Wait):
// the first delay, and the longest.
const (
	waitFirst = 50 * time.Millisecond
	waitMax   = time.Second
)

// EnvDisabled turns idempotency off when truthy ("1", "true", "yes",
// "on", any case): Do then runs the function directly. It is the variable
// Powertools' runtimes read.
const EnvDisabled = "POWERTOOLS_IDEMPOTENCY_DISABLED"

// Config configures an Idempotency.
type Config struct {
	// Store keeps the records (required).
	Store Persistence
	// Retention is how long a settled outcome is replayed (and an
	// abandoned record kept): DefaultRetention when 0.
	Retention time.Duration
	// Lease is how long a call holds its key when its context has no
	// deadline: DefaultLease when 0. With a deadline (a Lambda's), the
	// lease expires at the deadline. Operation.Lease may set another
	// policy.
	Lease time.Duration
	// CacheSize, when positive, keeps up to that many settled records in
	// memory, so that a duplicate served from there costs no call to the
	// store. The cache is per Idempotency and safe for concurrent use.
	CacheSize int
	// Disabled runs every function directly, as EnvDisabled does.
	Disabled bool
	// Observer, when set, is told of every call once, when it ends
	// (Event). Without one, Do measures nothing.
	Observer Observer
	// Clock is the time (tests): time.Now when nil.
	Clock func() time.Time
	// Sleep waits d, or until ctx is done (then it returns ctx's error),
	// between the reads of a duplicate that waits (Operation.Wait): a
	// timer when nil. With a fake Clock, give a Sleep that moves it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Idempotency runs functions at most once per (scope, key) with Do and
// Wrap. It is safe for concurrent use.
type Idempotency struct {
	store     Persistence
	retention time.Duration
	lease     time.Duration
	disabled  bool
	observer  Observer
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	cache     *entryCache
}

// New returns an Idempotency of cfg.
func New(cfg Config) (*Idempotency, error) {
	if cfg.Store == nil {
		return nil, errors.New("idempotency: Config.Store is required")
	}
	if v, ok := cfg.Store.(interface{ Err() error }); ok && v.Err() != nil {
		return nil, v.Err()
	}
	if cfg.Retention < 0 || cfg.Lease < 0 || cfg.CacheSize < 0 {
		return nil, errors.New("idempotency: Config.Retention, Lease and CacheSize may not be negative")
	}
	i := &Idempotency{
		store: cfg.Store, retention: cfg.Retention, lease: cfg.Lease, disabled: cfg.Disabled,
		observer: cfg.Observer, now: cfg.Clock, sleep: cfg.Sleep,
	}
	if i.retention == 0 {
		i.retention = DefaultRetention
	}
	if i.lease == 0 {
		i.lease = DefaultLease
	}
	if i.now == nil {
		i.now = time.Now
	}
	if i.sleep == nil {
		i.sleep = sleep
	}
	if cfg.CacheSize > 0 {
		c, err := newEntryCache(cfg.CacheSize)
		if err != nil {
			return nil, err
		}
		i.cache = c
	}
	return i, nil
}

// sleep waits d on a timer, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Disabled reports whether functions run directly: Config.Disabled, or
// EnvDisabled truthy now.
func (i *Idempotency) Disabled() bool { return i.disabled || truthy(os.Getenv(EnvDisabled)) }

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "y", "yes", "on":
		return true
	}
	return false
}

// Operation says how Do keys a call with input In.
type Operation[In any] struct {
	// Name names the operation to observers (Event.Operation, a metric
	// dimension): a fixed word such as "charge", never a caller's name
	// or a key. It plays no part in the record.
	Name string
	// Scope keeps the records of different callers or operations apart:
	// the same key in two scopes is two records. Observers never see it.
	Scope string
	// ScopeFunc, when set, gives the scope of each call instead of Scope:
	// the caller the call is made for, say (LambdaTenant). An error
	// refuses the call before any store call.
	ScopeFunc func(ctx context.Context, in In) (string, error)
	// Key is the idempotency key, or KeyFunc derives it from the input;
	// exactly one of them is set. It must pass ValidateKey.
	Key     string
	KeyFunc func(In) (string, error)
	// Payload is what the fingerprint is taken of: the JSON of the input
	// when nil. A key presented again with another payload is refused
	// with ErrKeyReused.
	Payload func(In) ([]byte, error)
	// OnReplay, when set, is called when an outcome is replayed instead
	// of running the function (Wrap's only way to tell).
	OnReplay func(ctx context.Context, r Replay)
	// Wait, when positive, is how long a call that finds its key held by
	// another call waits for it instead of failing at once with an
	// *InProgressError: it reads the record (Get) after 50ms, then after
	// twice as long each time up to 1s, each delay jittered (between half
	// of it and all of it) and cut short at the holder's lease expiry,
	// until the record is settled (replayed), free (the call acquires it
	// and runs), Wait has passed or ctx is done (an *InProgressError).
	// Each read is one store call.
	Wait time.Duration
	// Lease says how long a call holds its key: LeaseFromDeadline (the
	// zero value), LeaseFor or LeaseUntilSettled.
	Lease LeasePolicy
	// TakeOver, when set, is asked whenever the call finds its key
	// IN_PROGRESS for the same payload under a lease that has not
	// expired (with LeaseUntilSettled, every time it finds it in
	// progress), once per read of the record: true takes the key over
	// from the holder, as an expired lease is taken, and the holder's
	// settle or release then fails with ErrFenced. It needs a store that
	// implements Taker (else every call fails with
	// ErrTakeOverUnsupported). An expired lease is taken without asking.
	TakeOver TakeOverFunc[In]
	// Require, when set, gives the conditions on other DynamoDB items
	// that must hold for the call to take its key (the account it debits
	// exists and belongs to the caller, say): they are checked in the
	// same write as the acquisition, so that the key is taken with all of
	// them holding, or nothing is stored. When the key could be taken and
	// a condition fails, the call fails with a *PreconditionError
	// (ErrPreconditionFailed) naming it, and the function does not run;
	// when the key is not free (settled, in progress, used with another
	// payload), its record answers as it would without Require. Require
	// is called once per call, after the cache (a cached replay never
	// calls it) and before the first store call (an error refuses the
	// call); its conditions go with every acquisition the call makes, one
	// after Wait or a take-over included. None (nil or empty) is a plain
	// acquisition. When idempotency is disabled, Require is not called:
	// the function runs directly. It needs a store that implements
	// Preconditioner (else
	// every call fails with ErrPreconditionsUnsupported), and at most
	// MaxTxItems conditions (else the call fails with ErrTxTooLarge).
	Require func(ctx context.Context, in In) ([]types.ConditionCheck, error)
}

// Replay describes an outcome replayed instead of running the function.
type Replay struct {
	// FromCache: served from the local cache, without a call to the
	// store.
	FromCache bool
	// Failed: the outcome is a stored failure (a *StoredFailureError).
	Failed bool
	// ExpiresAt is when the stored outcome expires and the key is free
	// again (to the second).
	ExpiresAt time.Time
}

// Result is Do's answer.
type Result[Out any] struct {
	Output Out
	// Replayed: the output is a stored one, and the function did not run.
	Replayed bool
	// FromCache: the replay came from the local cache.
	FromCache bool
}

// PermanentError marks a function's error as permanent: Do stores it and
// replays it to every retry instead of releasing the key.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }

// Unwrap returns the error marked permanent.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err permanent (nil stays nil).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// ReplayHook changes a replayed output before it is returned, as
// Powertools' response hook does (WrapWithHook): it gets the output
// decoded from the store or the cache and returns the one the caller
// gets. It runs after Operation.OnReplay, on every replayed output, not
// on a replayed stored failure.
type ReplayHook[Out any] func(ctx context.Context, out Out, r Replay) Out

// Do runs fn(ctx, in) at most once per (op.Scope, key) while its outcome
// is retained, with fencing:
//
//   - a new key is acquired (one call to the store), fn runs, and its
//     output, JSON-encoded, is settled (one more call), under the lease
//     that acquired it;
//   - a duplicate of a settled call gets the stored output, decoded into
//     Out, with Result.Replayed, without running fn: one call, or none
//     from the cache;
//   - the same key with another payload fails with ErrKeyReused;
//   - a key held by another call whose lease has not expired fails with
//     an *InProgressError (ErrInProgress), at once or after op.Wait, or
//     is taken over when op.TakeOver says the holder is dead. The lease
//     expires as op.Lease says: by default at ctx's deadline, or after
//     Config.Lease without one; then the next call takes the key over
//     (its lease counter rises by one), and a settle or release by the
//     earlier holder writes nothing and fails with ErrFenced;
//   - an error of fn releases the key, so that a retry runs fn again,
//     unless it is a *PermanentError (Permanent): then it is stored, and
//     every retry gets a *StoredFailureError (ErrStoredFailure) without
//     running fn. fn's own error is returned to the call that ran it; a
//     panic releases the key and goes on;
//   - with op.Require, the key is taken only when the conditions it gives
//     hold, checked in the same write: else the call fails with a
//     *PreconditionError (ErrPreconditionFailed), fn does not run, and
//     nothing is stored.
//
// When idempotency is disabled (Idempotency.Disabled) fn runs directly.
// Config.Observer is told of the call once, when it ends.
func Do[In, Out any](ctx context.Context, i *Idempotency, op Operation[In], in In, fn func(context.Context, In) (Out, error)) (res Result[Out], err error) {
	return call(ctx, i, &op, in, fn, nil)
}

// call is Do, with a hook for replayed outputs.
func call[In, Out any](ctx context.Context, i *Idempotency, op *Operation[In], in In, fn func(context.Context, In) (Out, error), hook ReplayHook[Out]) (res Result[Out], err error) {
	var t tally
	if i.observer != nil {
		t.start = i.now()
		defer i.observe(ctx, op.Name, &t, &err)
	}
	res, err = do(ctx, i, op, in, fn, hook, &t)
	t.returned = true
	return res, err
}

// do is Do, tallying the call in t.
func do[In, Out any](ctx context.Context, i *Idempotency, op *Operation[In], in In, fn func(context.Context, In) (Out, error), hook ReplayHook[Out], t *tally) (Result[Out], error) {
	var zero Result[Out]
	if i.Disabled() {
		t.outcome, t.ran = OutcomeDisabled, true
		out, err := fn(ctx, in)
		return Result[Out]{Output: out}, err
	}
	t.outcome = OutcomeInvalid
	key, err := op.key(in)
	if err != nil {
		return zero, err
	}
	if op.ScopeFunc != nil {
		scope, err := op.ScopeFunc(ctx, in)
		if err != nil {
			return zero, fmt.Errorf("idempotency: scope: %w", err)
		}
		// A copy: op may be shared by concurrent calls (Wrap).
		o := *op
		o.Scope = scope
		op = &o
	}
	if err := op.Lease.check(); err != nil {
		return zero, err
	}
	acq := acquirer{store: i.store}
	if op.TakeOver != nil {
		var ok bool
		if acq.taker, ok = i.store.(Taker); !ok {
			return zero, ErrTakeOverUnsupported
		}
	}
	if op.Require != nil {
		var ok bool
		if acq.pre, ok = i.store.(Preconditioner); !ok {
			return zero, ErrPreconditionsUnsupported
		}
	}
	var fp fingerprint
	if err := op.fingerprint(in, &fp); err != nil {
		return zero, err
	}
	t.scope, t.key = op.Scope, key
	now := i.now()
	if i.cache != nil {
		if r, ok := i.cache.get(op.Scope, key, now); ok {
			t.recordKey, t.fromCache = r.e.RecordKey, true
			if string(fp[:]) != r.e.Fingerprint {
				t.outcome = OutcomeKeyReused
				return zero, ErrKeyReused
			}
			return replay(ctx, op, &r.e, r, hook, t)
		}
	}
	if op.Require != nil {
		if acq.require, err = op.Require(ctx, in); err != nil {
			return zero, fmt.Errorf("idempotency: require: %w", err)
		}
		if len(acq.require) > MaxTxItems {
			return zero, fmt.Errorf("idempotency: %d required conditions: %w (at most %d)", len(acq.require), ErrTxTooLarge, MaxTxItems)
		}
	}
	return acquire(ctx, i, op, key, string(fp[:]), in, fn, hook, &acq, now, t)
}

// acquirer acquires a call's key and takes it over: with the store's
// Acquire and its Taker, or, when the call requires conditions, its
// Preconditioner.
type acquirer struct {
	store   Persistence
	taker   Taker
	pre     Preconditioner
	require []types.ConditionCheck
}

func (a *acquirer) acquire(ctx context.Context, in AcquireInput) (Entry, bool, error) {
	if len(a.require) > 0 {
		return a.pre.AcquireRequiring(ctx, in, a.require)
	}
	return a.store.Acquire(ctx, in)
}

func (a *acquirer) takeOver(ctx context.Context, in AcquireInput, held Lease) (Entry, bool, error) {
	if len(a.require) > 0 {
		return a.pre.TakeOverRequiring(ctx, in, held, a.require)
	}
	return a.taker.TakeOver(ctx, in, held)
}

// acquire takes the key, or answers with its record: replayed, refused,
// waited for, taken over.
func acquire[In, Out any](ctx context.Context, i *Idempotency, op *Operation[In], key, fp string, in In, fn func(context.Context, In) (Out, error), hook ReplayHook[Out], acq *acquirer, now time.Time, t *tally) (Result[Out], error) {
	var zero Result[Out]
	ai := AcquireInput{Scope: op.Scope, Key: key, Fingerprint: fp}
	var (
		e Entry
		// take: acquire (again); read: e was read by Get, so a record
		// free by now is acquired; asked: TakeOver was asked since the
		// last read, and is not asked again before the next one.
		take, read, asked = true, false, false
		w                 backoff
	)
	for {
		if take {
			ai.Now = now
			ai.LeaseUntil, ai.ExpiresAt = i.times(ctx, op.Lease, now)
			t.calls++
			var acquired bool
			var err error
			e, acquired, err = acq.acquire(ctx, ai)
			if err != nil {
				t.failed(err)
				return zero, fmt.Errorf("idempotency: %w", err)
			}
			t.recordKey = e.RecordKey
			if acquired {
				return run(ctx, i, op, e, in, fn, t)
			}
			take, read = false, false
		}
		if read && e.Free(fp, now) {
			take = true
			continue
		}
		if e.Fingerprint != fp {
			t.outcome = OutcomeKeyReused
			return zero, ErrKeyReused
		}
		if e.Status.Settled() {
			if i.cache != nil {
				i.cache.put(op.Scope, key, e)
			}
			return replay(ctx, op, &e, nil, hook, t)
		}
		t.outcome = OutcomeInProgress
		if acq.taker != nil && !asked && e.Status == EntryInProgress {
			asked = true
			dead, err := op.TakeOver(ctx, in, e.Lease())
			if err != nil {
				return zero, fmt.Errorf("idempotency: take over: %w", err)
			}
			if dead {
				ai.Now = now
				ai.LeaseUntil, ai.ExpiresAt = i.times(ctx, op.Lease, now)
				t.calls++
				taken, acquired, err := acq.takeOver(ctx, ai, e.Lease())
				if errors.Is(err, ErrNotFound) {
					take = true // gone meanwhile: acquired afresh
					continue
				}
				if err != nil {
					t.failed(err)
					return zero, fmt.Errorf("idempotency: %w", err)
				}
				if acquired {
					t.tookOver = true
					return run(ctx, i, op, taken, in, fn, t)
				}
				// Settled, released, or taken by another call
				// meanwhile: judged as a read.
				e, read = taken, true
				continue
			}
		}
		// Held by another call (or released since the acquisition's
		// condition failed): not this call's to take now.
		if op.Wait <= 0 {
			return zero, inProgress(e, now)
		}
		if w.until.IsZero() {
			w.until = now.Add(op.Wait)
		}
		left := w.until.Sub(now)
		if left <= 0 || ctx.Err() != nil {
			return zero, inProgress(e, now)
		}
		d := min(w.next(), left)
		if e.Status == EntryInProgress {
			if l := e.LeaseUntil.Sub(now); l > 0 && l < d {
				d = l
			}
		}
		if err := i.sleep(ctx, d); err != nil {
			return zero, inProgress(e, now)
		}
		now = i.now()
		t.calls++
		got, err := i.store.Get(ctx, op.Scope, key)
		switch {
		case errors.Is(err, ErrNotFound):
			take = true
		case err != nil && ctx.Err() != nil:
			return zero, inProgress(e, now)
		case err != nil:
			t.outcome = OutcomeStoreError
			return zero, fmt.Errorf("idempotency: %w", err)
		default:
			e, read, asked = got, true, false
		}
	}
}

// inProgress is the error of a call that found e held by another call at
// now.
func inProgress(e Entry, now time.Time) error {
	if e.Status != EntryInProgress {
		return &InProgressError{}
	}
	return &InProgressError{RetryAfter: max(0, e.LeaseUntil.Sub(now))}
}

// backoff is the jittered, doubling delay between the reads of a call
// that waits.
type backoff struct {
	until time.Time
	d     time.Duration
}

// next is the next delay: d between half of it and all of it, d doubling
// from waitFirst up to waitMax.
func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = waitFirst
	} else {
		b.d = min(2*b.d, waitMax)
	}
	half := b.d / 2
	return half + rand.N(b.d-half+1)
}

// run runs fn under the lease of e, just acquired, and settles or
// releases the key.
func run[In, Out any](ctx context.Context, i *Idempotency, op *Operation[In], e Entry, in In, fn func(context.Context, In) (Out, error), t *tally) (res Result[Out], err error) {
	lease := e.Lease()
	// What a panic of fn comes to.
	t.outcome, t.ran = OutcomeReleased, true
	done := false
	defer func() {
		if !done {
			// fn panicked: the key is released and the panic goes on.
			sctx, cancel := settleContext(ctx)
			defer cancel()
			t.calls++
			_ = i.store.Release(sctx, lease)
		}
	}()
	out, ferr := fn(ctx, in)
	done = true
	sctx, cancel := settleContext(ctx)
	defer cancel()
	if ferr != nil {
		var perm *PermanentError
		if !errors.As(ferr, &perm) {
			t.calls++
			if rerr := i.store.Release(sctx, lease); rerr != nil {
				t.failed(rerr)
				return Result[Out]{Output: out}, errors.Join(ferr, fmt.Errorf("idempotency: %w", rerr))
			}
			return Result[Out]{Output: out}, ferr
		}
		o := Outcome{Status: EntryFailed, Failure: ferr.Error(), ExpiresAt: i.now().Add(i.retention).Truncate(time.Second)}
		t.calls++
		if serr := i.store.Settle(sctx, lease, o); serr != nil {
			t.failed(serr)
			return Result[Out]{Output: out}, errors.Join(ferr, fmt.Errorf("idempotency: %w", serr))
		}
		t.outcome = OutcomeFailed
		i.cacheOutcome(op.Scope, t.key, e, o)
		return Result[Out]{Output: out}, ferr
	}
	body, merr := json.Marshal(out)
	if merr != nil {
		merr = fmt.Errorf("idempotency: encode output: %w", merr)
		t.calls++
		if rerr := i.store.Release(sctx, lease); rerr != nil {
			t.failed(rerr)
			return Result[Out]{Output: out}, errors.Join(merr, fmt.Errorf("idempotency: %w", rerr))
		}
		return Result[Out]{Output: out}, merr
	}
	o := Outcome{Status: EntryCompleted, Output: body, ExpiresAt: i.now().Add(i.retention).Truncate(time.Second)}
	t.calls++
	if serr := i.store.Settle(sctx, lease, o); serr != nil {
		t.failed(serr)
		return Result[Out]{Output: out}, fmt.Errorf("idempotency: %w", serr)
	}
	t.outcome = OutcomeCompleted
	i.cacheOutcome(op.Scope, t.key, e, o)
	return Result[Out]{Output: out}, nil
}

// settleContext keeps ctx's values but not its end: an outcome is stored
// even when the call used its whole deadline.
func settleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// cacheOutcome keeps the record of e, that of (scope, key), as settled
// with o.
func (i *Idempotency) cacheOutcome(scope, key string, e Entry, o Outcome) {
	if i.cache == nil {
		return
	}
	e.Status, e.Output, e.Failure, e.ExpiresAt = o.Status, o.Output, o.Failure, o.ExpiresAt
	i.cache.put(scope, key, e)
}

// replay answers a call with the settled record e, of the call's
// fingerprint: one of the cache's, r, or one the store returned (r nil).
func replay[In, Out any](ctx context.Context, op *Operation[In], e *Entry, r *cached, hook ReplayHook[Out], t *tally) (Result[Out], error) {
	var zero Result[Out]
	rp := Replay{FromCache: r != nil, Failed: e.Status == EntryFailed, ExpiresAt: e.ExpiresAt}
	switch {
	case rp.Failed:
		t.outcome = OutcomeStoredFailure
	case rp.FromCache:
		t.outcome = OutcomeCached
	default:
		t.outcome = OutcomeReplayed
	}
	if op.OnReplay != nil {
		op.OnReplay(ctx, rp)
	}
	if rp.Failed {
		return zero, &StoredFailureError{Message: e.Failure}
	}
	out, err := decodeOutput[Out](e, r)
	if err != nil {
		t.outcome = OutcomeStoreError
		return zero, fmt.Errorf("idempotency: decode the stored output of %s: %w", e.RecordKey, err)
	}
	if hook != nil {
		out = hook(ctx, out, rp)
	}
	return Result[Out]{Output: out, Replayed: true, FromCache: rp.FromCache}, nil
}

// key is the call's idempotency key, validated.
func (op *Operation[In]) key(in In) (string, error) {
	key := op.Key
	switch {
	case op.KeyFunc != nil && op.Key != "":
		return "", errors.New("idempotency: Operation.Key and KeyFunc are both set")
	case op.KeyFunc != nil:
		k, err := op.KeyFunc(in)
		if err != nil {
			return "", fmt.Errorf("idempotency: key: %w", err)
		}
		key = k
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// fingerprint is a Fingerprint, in hex, that needs no allocation until
// it is made a string.
type fingerprint [2 * sha256.Size]byte

// fingerprint sets fp to the Fingerprint of the call's payload.
func (op *Operation[In]) fingerprint(in In, fp *fingerprint) error {
	var sum [sha256.Size]byte
	if op.Payload != nil {
		payload, err := op.Payload(in)
		if err != nil {
			return fmt.Errorf("idempotency: payload: %w", err)
		}
		sum = sha256.Sum256(payload)
	} else {
		b := encoders.Get().(*encoder)
		defer b.put()
		if err := b.enc.Encode(in); err != nil {
			return fmt.Errorf("idempotency: payload: %w", err)
		}
		// Encode is Marshal and a newline.
		sum = sha256.Sum256(b.buf.Bytes()[:b.buf.Len()-1])
	}
	hex.Encode(fp[:], sum[:])
	return nil
}

// encoder is a JSON encoder into a buffer, reused through encoders so
// that taking a fingerprint allocates no copy of the payload.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	b := new(encoder)
	b.enc = json.NewEncoder(&b.buf)
	return b
}}

// maxPooled is the largest buffer put back into encoders.
const maxPooled = 64 << 10

func (b *encoder) put() {
	if b.buf.Cap() > maxPooled {
		return
	}
	b.buf.Reset()
	encoders.Put(b)
}

// Wrap returns fn made idempotent by Do under op. A replay is told only
// through op.OnReplay; WrapWithHook may also change it.
func Wrap[In, Out any](i *Idempotency, op Operation[In], fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		res, err := call(ctx, i, &op, in, fn, nil)
		return res.Output, err
	}
}

// WrapWithHook is Wrap with a hook that may change every replayed output
// before the caller gets it (Powertools' response hook): a field that
// tells the caller it is a replay, say. The stored output stays as it
// is.
func WrapWithHook[In, Out any](i *Idempotency, op Operation[In], fn func(context.Context, In) (Out, error), hook ReplayHook[Out]) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		res, err := call(ctx, i, &op, in, fn, hook)
		return res.Output, err
	}
}
