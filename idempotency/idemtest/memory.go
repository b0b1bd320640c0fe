package idemtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/exactlyonce/transfers/idempotency"
)

// Op names an operation of idempotency.Persistence, for MemoryStore's
// call counts and faults.
type Op string

// The operations of idempotency.Persistence.
const (
	OpAcquire Op = "Acquire"
	OpSettle  Op = "Settle"
	OpRelease Op = "Release"
	OpGet     Op = "Get"
	// OpTakeOver is idempotency.Taker's TakeOver.
	OpTakeOver Op = "TakeOver"
)

// MemoryStore is an idempotency.Persistence in memory, for tests of code
// that uses idempotency.Do: it applies the same rules as
// idempotency.DynamoDBPersistence (idempotency.Entry.Free, the lease
// fence), counts the calls of each operation, and fails operations on
// demand (FailBefore, FailAfter). The zero value is not usable: call
// NewMemoryStore. It is safe for concurrent use.
type MemoryStore struct {
	mu      sync.Mutex
	entries map[string]idempotency.Entry
	calls   map[Op]int
	before  map[Op][]error
	after   map[Op][]error
}

var (
	_ idempotency.Persistence = (*MemoryStore)(nil)
	_ idempotency.Taker       = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		entries: map[string]idempotency.Entry{},
		calls:   map[Op]int{},
		before:  map[Op][]error{},
		after:   map[Op][]error{},
	}
}

// Calls is how many times op was called, faults included.
func (m *MemoryStore) Calls(op Op) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[op]
}

// TotalCalls is how many times any operation was called.
func (m *MemoryStore) TotalCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.calls {
		n += c
	}
	return n
}

// ResetCalls sets every call count to zero.
func (m *MemoryStore) ResetCalls() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.calls)
}

// FailBefore makes the next call of op fail with err without doing
// anything, as a request that never reached the store. Faults queue up:
// each call takes the first.
func (m *MemoryStore) FailBefore(op Op, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.before[op] = append(m.before[op], err)
}

// FailAfter makes the next call of op do its work and then fail with err,
// as an answer lost on its way back.
func (m *MemoryStore) FailAfter(op Op, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.after[op] = append(m.after[op], err)
}

// Peek returns a copy of the record of (scope, key), without counting a
// call.
func (m *MemoryStore) Peek(scope, key string) (idempotency.Entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[idempotency.RecordKey(scope, key)]
	return e.Clone(), ok
}

// begin counts a call of op and takes its faults: a fault before, which
// the call returns at once, and one after, which it returns after its
// work. m.mu is held.
func (m *MemoryStore) begin(op Op) (before, after error) {
	m.calls[op]++
	if q := m.before[op]; len(q) > 0 {
		before, m.before[op] = q[0], q[1:]
		return before, nil
	}
	if q := m.after[op]; len(q) > 0 {
		after, m.after[op] = q[0], q[1:]
	}
	return nil, after
}

// Acquire implements idempotency.Persistence.
func (m *MemoryStore) Acquire(ctx context.Context, in idempotency.AcquireInput) (idempotency.Entry, bool, error) {
	return m.take(ctx, OpAcquire, in, func(old idempotency.Entry, exists bool) (bool, error) {
		return !exists || old.Free(in.Fingerprint, in.Now), nil
	})
}

// TakeOver implements idempotency.Taker: the record is taken when it is
// still IN_PROGRESS for in.Fingerprint under exactly held, whatever its
// lease's expiry; ErrNotFound when there is none.
func (m *MemoryStore) TakeOver(ctx context.Context, in idempotency.AcquireInput, held idempotency.Lease) (idempotency.Entry, bool, error) {
	return m.take(ctx, OpTakeOver, in, func(old idempotency.Entry, exists bool) (bool, error) {
		if !exists {
			return false, idempotency.ErrNotFound
		}
		return old.Status == idempotency.EntryInProgress && old.Fingerprint == in.Fingerprint &&
			old.LeaseID == held.ID && old.LeaseCount == held.Count, nil
	})
}

// take gives the record of (in.Scope, in.Key) a fresh lease when may
// says so, as one call of op.
func (m *MemoryStore) take(ctx context.Context, op Op, in idempotency.AcquireInput, may func(old idempotency.Entry, exists bool) (bool, error)) (idempotency.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, after := m.begin(op)
	if before != nil {
		return idempotency.Entry{}, false, before
	}
	if err := ctx.Err(); err != nil {
		return idempotency.Entry{}, false, err
	}
	if err := idempotency.ValidateKey(in.Key); err != nil {
		return idempotency.Entry{}, false, err
	}
	rk := idempotency.RecordKey(in.Scope, in.Key)
	old, exists := m.entries[rk]
	ok, err := may(old, exists)
	if err != nil {
		return idempotency.Entry{}, false, err
	}
	if !ok {
		if after != nil {
			return idempotency.Entry{}, false, after
		}
		return old.Clone(), false, nil
	}
	e := idempotency.Entry{
		RecordKey:   rk,
		Status:      idempotency.EntryInProgress,
		Fingerprint: in.Fingerprint,
		LeaseID:     idempotency.NewLeaseID(),
		LeaseCount:  old.LeaseCount + 1,
		LeaseUntil:  time.UnixMilli(in.LeaseUntil.UnixMilli()).UTC(),
		ExpiresAt:   time.Unix(in.ExpiresAt.Unix(), 0).UTC(),
	}
	m.entries[rk] = e
	if after != nil {
		return idempotency.Entry{}, false, after
	}
	return e.Clone(), true, nil
}

// holds reports whether lease holds the record it names. m.mu is held.
func (m *MemoryStore) holds(lease idempotency.Lease) (idempotency.Entry, bool) {
	e, ok := m.entries[lease.RecordKey]
	return e, ok && e.Status == idempotency.EntryInProgress && e.LeaseID == lease.ID && e.LeaseCount == lease.Count
}

// Settle implements idempotency.Persistence.
func (m *MemoryStore) Settle(ctx context.Context, lease idempotency.Lease, o idempotency.Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, after := m.begin(OpSettle)
	if before != nil {
		return before
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !o.Status.Settled() {
		return fmt.Errorf("settle %s: status %q is not COMPLETED or FAILED", lease.RecordKey, o.Status)
	}
	e, ok := m.holds(lease)
	if !ok {
		return fmt.Errorf("settle %s (lease %d): %w", lease.RecordKey, lease.Count, idempotency.ErrFenced)
	}
	e.Status, e.ExpiresAt = o.Status, time.Unix(o.ExpiresAt.Unix(), 0).UTC()
	switch o.Status {
	case idempotency.EntryCompleted:
		e.Output = append([]byte{}, o.Output...)
	case idempotency.EntryFailed:
		e.Failure = o.Failure
	}
	m.entries[lease.RecordKey] = e
	return after
}

// Release implements idempotency.Persistence.
func (m *MemoryStore) Release(ctx context.Context, lease idempotency.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, after := m.begin(OpRelease)
	if before != nil {
		return before
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e, ok := m.holds(lease)
	if !ok {
		return fmt.Errorf("release %s (lease %d): %w", lease.RecordKey, lease.Count, idempotency.ErrFenced)
	}
	e.Status = idempotency.EntryReleased
	m.entries[lease.RecordKey] = e
	return after
}

// Get implements idempotency.Persistence.
func (m *MemoryStore) Get(ctx context.Context, scope, key string) (idempotency.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, after := m.begin(OpGet)
	if before != nil {
		return idempotency.Entry{}, before
	}
	if err := ctx.Err(); err != nil {
		return idempotency.Entry{}, err
	}
	e, ok := m.entries[idempotency.RecordKey(scope, key)]
	if after != nil {
		return idempotency.Entry{}, after
	}
	if !ok {
		return idempotency.Entry{}, idempotency.ErrNotFound
	}
	return e.Clone(), nil
}

// Now is the time to start a fake Clock at in a test whose records reach
// DynamoDB Local (or Redis): the current time, to the second. Both delete
// a record once the Time to Live attribute (expiresAt) it carries is past
// by their own clock, the machine's: DynamoDB Local within seconds,
// Redis at once (DynamoDB itself within days, at any moment). A clock set
// in the past makes every record it settles one they may delete between
// two calls of the test; a clock started at Now, and only moved forward,
// never does.
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// Clock is a fake clock for idempotency.Config.Clock: it stands still
// until Set or Advance moves it. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
