package idempotency

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EntryFormat names the format of the records that Persistence stores
// (the attribute AttrFormat). A record of any other format, or of none
// (one that another writer put under the same key), is refused with a *FormatError.
const EntryFormat = "idempotency.Entry/1"

// AttrFormat is the attribute that names an Entry record's format.
const AttrFormat = "format"

// EntryStatus is the state of an Entry.
type EntryStatus string

// Entry states. IN_PROGRESS: a call holds the key under a lease. COMPLETED
// and FAILED are settled and carry the outcome, replayed until the
// record's expiry. RELEASED: the call failed in a way worth retrying; the
// next acquisition takes the key again, and its lease counter goes on
// rising.
const (
	EntryInProgress EntryStatus = "IN_PROGRESS"
	EntryCompleted  EntryStatus = "COMPLETED"
	EntryFailed     EntryStatus = "FAILED"
	EntryReleased   EntryStatus = "RELEASED"
)

// Settled reports whether s is COMPLETED or FAILED.
func (s EntryStatus) Settled() bool { return s == EntryCompleted || s == EntryFailed }

// Errors of Persistence and Do.
var (
	// ErrFenced reports a settle or release by a lease that no longer
	// holds the record: another call took it over (or the record is
	// gone). Nothing was written.
	ErrFenced = errors.New("idempotency lease no longer holds the record")
	// ErrInProgress reports a key that another call holds under an
	// unexpired lease. The error is an *InProgressError saying when the
	// lease expires.
	ErrInProgress = errors.New("idempotency key is in progress")
	// ErrStoredFailure reports a permanent failure stored for the key and
	// replayed. The error is a *StoredFailureError.
	ErrStoredFailure = errors.New("idempotency key holds a stored failure")
	// ErrFormat reports a record of another format than EntryFormat. The
	// error is a *FormatError naming it.
	ErrFormat = errors.New("idempotency record of another format")
)

// InProgressError reports a key held by another call. It matches
// ErrInProgress with errors.Is.
type InProgressError struct {
	// RetryAfter is how long until the holder's lease expires (0 when it
	// already has, by the caller's clock).
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return fmt.Sprintf("%v: its lease expires in %v", ErrInProgress, e.RetryAfter)
}

// Unwrap makes the error match ErrInProgress.
func (e *InProgressError) Unwrap() error { return ErrInProgress }

// StoredFailureError is a permanent failure replayed from the store. It
// matches ErrStoredFailure with errors.Is.
type StoredFailureError struct {
	// Message is the text of the error the call failed with.
	Message string
}

func (e *StoredFailureError) Error() string {
	return fmt.Sprintf("%v: %s", ErrStoredFailure, e.Message)
}

// Unwrap makes the error match ErrStoredFailure.
func (e *StoredFailureError) Unwrap() error { return ErrStoredFailure }

// FormatError refuses a record of another format. It matches ErrFormat
// with errors.Is.
type FormatError struct {
	// Format is the record's format attribute, "" when it has none.
	Format string
}

func (e *FormatError) Error() string {
	if e.Format == "" {
		return fmt.Sprintf("%v: the record has no %q attribute, want %q", ErrFormat, AttrFormat, EntryFormat)
	}
	return fmt.Sprintf("%v: %q, want %q", ErrFormat, e.Format, EntryFormat)
}

// Unwrap makes the error match ErrFormat.
func (e *FormatError) Unwrap() error { return ErrFormat }

// Entry is a record of Persistence: one fenced idempotent call per
// (scope, key).
type Entry struct {
	// RecordKey is the table key, RecordKey(scope, key): neither the
	// scope nor the key is stored in clear.
	RecordKey   string
	Status      EntryStatus
	Fingerprint string
	// LeaseID and LeaseCount identify the lease that last acquired the
	// record: a random id, and a counter that starts at 1 and rises by
	// one with every acquisition of the same record.
	LeaseID    string
	LeaseCount int64
	// LeaseUntil is when an IN_PROGRESS record's lease expires, to the
	// millisecond.
	LeaseUntil time.Time
	// ExpiresAt is when the record may be deleted and its key reused, to
	// the second (the table's Time to Live attribute).
	ExpiresAt time.Time
	// Output is a COMPLETED call's output (JSON, as Do stores it).
	Output []byte
	// Failure is a FAILED call's error text.
	Failure string
}

// Lease is the holder's proof of an acquisition: Settle and Release apply
// only while the record still carries it.
func (e Entry) Lease() Lease {
	return Lease{RecordKey: e.RecordKey, ID: e.LeaseID, Count: e.LeaseCount, Until: e.LeaseUntil}
}

// Free reports whether an acquisition for fingerprint at now may take the
// record: it is RELEASED; or IN_PROGRESS for the same fingerprint with
// its lease expired (a takeover); or settled and past its expiry. This is
// the rule every Persistence applies in its conditional write.
func (e Entry) Free(fingerprint string, now time.Time) bool {
	switch e.Status {
	case EntryReleased:
		return true
	case EntryInProgress:
		return e.Fingerprint == fingerprint && now.UnixMilli() >= e.LeaseUntil.UnixMilli()
	case EntryCompleted, EntryFailed:
		return !e.ExpiresAt.IsZero() && now.Unix() >= e.ExpiresAt.Unix()
	}
	return false
}

// Clone returns a copy of e that shares no memory with it.
func (e Entry) Clone() Entry {
	if e.Output != nil {
		e.Output = append([]byte(nil), e.Output...)
	}
	return e
}

// Lease identifies one acquisition of a record.
type Lease struct {
	RecordKey string
	ID        string
	Count     int64
	Until     time.Time
}

// AcquireInput asks for a key.
type AcquireInput struct {
	Scope, Key  string
	Fingerprint string
	// Now is the time the record's expiries are judged at.
	Now time.Time
	// LeaseUntil is when the new lease expires (millisecond precision).
	LeaseUntil time.Time
	// ExpiresAt is when the record may be deleted if it is never settled
	// (second precision).
	ExpiresAt time.Time
}

// Outcome is what Settle stores.
type Outcome struct {
	// Status is EntryCompleted or EntryFailed.
	Status EntryStatus
	// Output is a completed call's output.
	Output []byte
	// Failure is a failed call's error text.
	Failure string
	// ExpiresAt is when the settled record may be deleted and its key
	// reused (second precision).
	ExpiresAt time.Time
}

// Persistence is the store of fenced idempotent calls (Do). Each method is
// one round trip to the store. DynamoDBPersistence implements it over
// DynamoDB; idemtest.MemoryStore in memory, for tests.
type Persistence interface {
	// Acquire takes the record of (Scope, Key) for a call with a fresh
	// lease when there is none or it is Free, and returns it with
	// acquired = true: a new record has LeaseCount 1, a record taken
	// again its previous count plus one. Otherwise it writes nothing and
	// returns the record as it is, with acquired = false. A record of
	// another format is refused with a *FormatError.
	Acquire(ctx context.Context, in AcquireInput) (e Entry, acquired bool, err error)
	// Settle stores the outcome of the call that holds lease. When the
	// record is no longer IN_PROGRESS under that lease (ID and Count) it
	// writes nothing and fails with ErrFenced.
	Settle(ctx context.Context, lease Lease, o Outcome) error
	// Release marks the record RELEASED, keeping its lease counter, so
	// that the key may be acquired again; fenced as Settle is.
	Release(ctx context.Context, lease Lease) error
	// Get reads the record of (scope, key): ErrNotFound when there is
	// none.
	Get(ctx context.Context, scope, key string) (Entry, error)
}
