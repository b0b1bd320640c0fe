// Package redisstore is an idempotency.Persistence over Redis, for
// idempotency.Do: the same records and rules as
// idempotency.DynamoDBPersistence, each operation one round trip. It
// needs Lua scripting, hashes with HSET of several fields (Redis 4.0) and
// PEXPIREAT; its tests run on Redis 7.0. Valkey has the same commands,
// but is not among the servers tested.
//
// It is its own module, github.com/exactlyonce/transfers/idempotency/redisstore,
// so that only code that uses it downloads go-redis.
//
// # Records
//
// A record is a Redis hash under the key prefix +
// idempotency.RecordKey(scope, key), prefix being New's: neither the
// scope nor the idempotency key is stored in clear. Its fields are those
// of a DynamoDBPersistence item: format (idempotency.EntryFormat),
// status, fingerprint, leaseId, leaseCount, leaseUntil (epoch
// milliseconds), expiresAt (epoch seconds), and output or failure. The Redis key expires at expiresAt (PEXPIREAT), so Redis
// drops records as DynamoDB's Time to Live does, only at once rather than
// within days. A hash without that format, or with another, is refused
// with an *idempotency.FormatError and left as it is.
//
// # One round trip
//
// Acquire, Settle and Release are each one Lua script (EVALSHA, or EVAL
// when the server does not have the script yet: the first call of each
// after the server starts or its script cache is flushed costs that one
// more round trip), which applies the rule and writes atomically: Acquire
// takes the record when there is none or it is idempotency.Entry.Free
// and returns it either way; Settle and Release write only under the
// lease (id and count) that holds the record, else fail with
// idempotency.ErrFenced having written nothing. Get is one HGETALL.
//
// # Time
//
// The scripts judge leases and expiries at idempotency.AcquireInput.Now,
// the caller's clock, never at Redis's TIME: as with DynamoDBPersistence,
// whose conditions compare the values the caller sends, a test's fake
// clock (idempotency.Config.Clock) moves leases and retention, and the
// scripts are deterministic, so a replica or an append-only file that
// replays them gets the same records. Only the key's expiry, which
// deletes the record, follows the server's clock: a record whose
// ExpiresAt is already past by it is dropped as soon as it is written,
// and the next acquisition finds no record (a new one, lease count 1,
// with a new random lease id, so a stale lease stays fenced).
//
// Each script touches only the one key it is given, as Redis Cluster
// requires of a script (untested on a cluster here).
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/transfers/idempotency"
)

// DefaultPrefix is the key prefix New is usually given: the records of
// one application's Do share it.
const DefaultPrefix = "idempotency:"

// Client is the part of a go-redis client the Store uses: *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient serve.
type Client interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
}

var (
	_ Client = (*redis.Client)(nil)
	_ Client = (*redis.ClusterClient)(nil)
	_ Client = (*redis.Ring)(nil)
	_ Client = redis.UniversalClient(nil)
)

// Store is the idempotency.Persistence over Redis. It is safe for
// concurrent use.
type Store struct {
	client Client
	prefix string
}

var _ idempotency.Persistence = (*Store)(nil)

// New returns the Store of client whose records are under keys that
// begin with prefix (DefaultPrefix, say; "" puts them at the bare
// record keys, 64 hexadecimal digits). On a Redis Cluster a prefix with a
// hash tag ({...}) would put every record in one slot.
func New(client Client, prefix string) *Store {
	return &Store{client: client, prefix: prefix}
}

// Key is the Redis key of the record of (scope, key).
func (s *Store) Key(scope, key string) string {
	return s.prefix + idempotency.RecordKey(scope, key)
}

// Hash fields of a record: those of a DynamoDBPersistence item.
const (
	fieldFormat      = idempotency.AttrFormat
	fieldStatus      = idempotency.AttrStatus
	fieldFingerprint = idempotency.AttrFingerprint
	fieldLeaseID     = idempotency.AttrLeaseID
	fieldLeaseCount  = idempotency.AttrLeaseCount
	fieldLeaseUntil  = idempotency.AttrLeaseUntil
	fieldExpiresAt   = idempotency.AttrExpiresAt
	fieldOutput      = idempotency.AttrOutput
	fieldFailure     = idempotency.AttrFailure
)

// expiry is the expiresAt field of t, epoch seconds, and the key's
// expiry, epoch milliseconds: both "" for the zero time, a record that
// never expires (idempotency.Entry.Free: never free once settled), as for
// the Unix epoch itself, which a record read back could not tell from
// the zero time.
func expiry(t time.Time) (seconds, millis string) {
	if t.IsZero() || t.Unix() == 0 {
		return "", ""
	}
	// A time before the epoch is past: the earliest PEXPIREAT deletes the
	// key as any other past time does.
	return strconv.FormatInt(t.Unix(), 10), strconv.FormatInt(max(t.Unix()*1000, 1), 10)
}

// Acquire implements idempotency.Persistence: one script that takes the
// record when there is none or it is Free (Entry.Free, judged at in.Now),
// and returns it as it is otherwise.
func (s *Store) Acquire(ctx context.Context, in idempotency.AcquireInput) (idempotency.Entry, bool, error) {
	if err := idempotency.ValidateKey(in.Key); err != nil {
		return idempotency.Entry{}, false, err
	}
	rk := idempotency.RecordKey(in.Scope, in.Key)
	expiresAt, expireAtMillis := expiry(in.ExpiresAt)
	res, err := acquireScript.Run(ctx, s.client, []string{s.prefix + rk},
		idempotency.EntryFormat,
		in.Fingerprint,
		in.Now.UnixMilli(),
		in.Now.Unix(),
		idempotency.NewLeaseID(),
		in.LeaseUntil.UnixMilli(),
		expiresAt,
		expireAtMillis,
	).Slice()
	if err != nil {
		return idempotency.Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	acquired, fields, err := acquireReply(res)
	if err != nil {
		return idempotency.Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	e, err := decode(rk, fields)
	if err != nil {
		return idempotency.Entry{}, false, fmt.Errorf("acquire %s: %w", rk, err)
	}
	return e, acquired, nil
}

// acquireReply reads the acquire script's reply: {1 or 0, the record's
// HGETALL}.
func acquireReply(res []any) (bool, map[string]string, error) {
	if len(res) != 2 {
		return false, nil, fmt.Errorf("the script answered %d values, want 2", len(res))
	}
	flag, ok := res[0].(int64)
	flat, ok2 := res[1].([]any)
	if !ok || !ok2 || len(flat)%2 != 0 {
		return false, nil, fmt.Errorf("the script answered %T %T, want a flag and the record's fields", res[0], res[1])
	}
	fields := make(map[string]string, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		k, ok := flat[i].(string)
		v, ok2 := flat[i+1].(string)
		if !ok || !ok2 {
			return false, nil, fmt.Errorf("the script answered a field %T = %T, want strings", flat[i], flat[i+1])
		}
		fields[k] = v
	}
	if len(fields) == 0 {
		return false, nil, errors.New("the script answered no record")
	}
	return flag == 1, fields, nil
}

// Settle implements idempotency.Persistence: one script that stores the
// outcome, and the key's new expiry, only while lease holds the record.
func (s *Store) Settle(ctx context.Context, lease idempotency.Lease, o idempotency.Outcome) error {
	var field, value string
	switch o.Status {
	case idempotency.EntryCompleted:
		field, value = fieldOutput, string(o.Output)
	case idempotency.EntryFailed:
		field, value = fieldFailure, o.Failure
	default:
		return fmt.Errorf("settle %s: status %q is not COMPLETED or FAILED", lease.RecordKey, o.Status)
	}
	expiresAt, expireAtMillis := expiry(o.ExpiresAt)
	return s.fenced(ctx, "settle", settleScript, lease, string(o.Status), expiresAt, expireAtMillis, field, value)
}

// Release implements idempotency.Persistence: one script that marks the
// record RELEASED, keeping its lease counter and expiry, only while lease
// holds it.
func (s *Store) Release(ctx context.Context, lease idempotency.Lease) error {
	return s.fenced(ctx, "release", releaseScript, lease)
}

// fenced runs script on the record of lease with the fence's arguments,
// then args.
func (s *Store) fenced(ctx context.Context, op string, script *redis.Script, lease idempotency.Lease, args ...any) error {
	argv := append([]any{idempotency.EntryFormat, lease.ID, strconv.FormatInt(lease.Count, 10)}, args...)
	n, err := script.Run(ctx, s.client, []string{s.prefix + lease.RecordKey}, argv...).Int64()
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", op, lease.RecordKey, err)
	case n != 1:
		return fmt.Errorf("%s %s (lease %d): %w", op, lease.RecordKey, lease.Count, idempotency.ErrFenced)
	}
	return nil
}

// Get implements idempotency.Persistence: one HGETALL.
func (s *Store) Get(ctx context.Context, scope, key string) (idempotency.Entry, error) {
	rk := idempotency.RecordKey(scope, key)
	fields, err := s.client.HGetAll(ctx, s.prefix+rk).Result()
	if err != nil {
		return idempotency.Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	if len(fields) == 0 {
		return idempotency.Entry{}, idempotency.ErrNotFound
	}
	e, err := decode(rk, fields)
	if err != nil {
		return idempotency.Entry{}, fmt.Errorf("get %s: %w", rk, err)
	}
	return e, nil
}

// decode reads a record's fields, refusing one of another format by
// name.
func decode(rk string, fields map[string]string) (idempotency.Entry, error) {
	if f := fields[fieldFormat]; f != idempotency.EntryFormat {
		return idempotency.Entry{}, &idempotency.FormatError{Format: f}
	}
	e := idempotency.Entry{
		RecordKey:   rk,
		Status:      idempotency.EntryStatus(fields[fieldStatus]),
		Fingerprint: fields[fieldFingerprint],
		LeaseID:     fields[fieldLeaseID],
		Failure:     fields[fieldFailure],
	}
	if out, ok := fields[fieldOutput]; ok {
		e.Output = []byte(out)
	}
	count, err := integer(fields, fieldLeaseCount)
	if err != nil {
		return idempotency.Entry{}, err
	}
	e.LeaseCount = count
	until, err := integer(fields, fieldLeaseUntil)
	if err != nil {
		return idempotency.Entry{}, err
	}
	if until != 0 {
		e.LeaseUntil = time.UnixMilli(until).UTC()
	}
	expires, err := integer(fields, fieldExpiresAt)
	if err != nil {
		return idempotency.Entry{}, err
	}
	if expires != 0 {
		e.ExpiresAt = time.Unix(expires, 0).UTC()
	}
	return e, nil
}

// integer is the field's integer value, 0 when it is missing.
func integer(fields map[string]string, name string) (int64, error) {
	v, ok := fields[name]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("decode: field %s: %w", name, err)
	}
	return n, nil
}
