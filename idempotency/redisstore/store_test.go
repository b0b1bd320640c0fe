package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/exactlyonce/transfers/idempotency"
	"github.com/exactlyonce/transfers/idempotency/idemtest"
	"github.com/exactlyonce/transfers/idempotency/redisstore"
	"github.com/exactlyonce/transfers/idempotency/redisstore/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestPersistenceSuite: the store conformance suite, on a real Redis.
func TestPersistenceSuite(t *testing.T) {
	idemtest.RunPersistenceSuite(t, func(t *testing.T) idemtest.SuiteStore {
		client := redistest.Client(t)
		store := redisstore.New(client, redistest.Prefix(t))
		return idemtest.SuiteStore{
			Store: store,
			PutForeign: func(ctx context.Context, scope, key, format string) error {
				fields := []any{"status", string(idempotency.EntryReleased)}
				if format != "" {
					fields = append(fields, "format", format)
				}
				return client.HSet(ctx, store.Key(scope, key), fields...).Err()
			},
		}
	})
}

// commands records the commands a client sends, by name.
type commands struct {
	mu    sync.Mutex
	names []string
}

func (c *commands) add(cmd redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, cmd.Name())
}

// take returns the commands sent since the last take.
func (c *commands) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.names
	c.names = nil
	return n
}

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

// counted is a store whose client records its commands, on a connection
// already made, so that only the store's own commands are recorded.
func counted(t *testing.T) (*redisstore.Store, *redis.Client, *commands) {
	t.Helper()
	client := redistest.Client(t, func(o *redis.Options) { o.PoolSize = 1 })
	if err := client.Ping(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	cmds := &commands{}
	client.AddHook(cmds)
	return redisstore.New(client, redistest.Prefix(t)), client, cmds
}

func input(scope, key, fp string, now time.Time) idempotency.AcquireInput {
	return idempotency.AcquireInput{
		Scope: scope, Key: key, Fingerprint: fp, Now: now,
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour),
	}
}

// TestOneRoundTripPerOperation: each operation sends one command, once
// the server has the scripts; the first call of a script the server does
// not have sends one more (EVALSHA, then EVAL).
func TestOneRoundTripPerOperation(t *testing.T) {
	ctx := t.Context()
	store, client, cmds := counted(t)
	now := time.Now()
	if err := client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	cmds.take()
	check := func(what string, want ...string) {
		t.Helper()
		if got := cmds.take(); !slices.Equal(got, want) {
			t.Errorf("%s sent %q, want %q", what, got, want)
		}
	}

	e, ok, err := store.Acquire(ctx, input("alice", "k1", "fp", now))
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	check("the first Acquire after SCRIPT FLUSH", "evalsha", "eval")
	e2, ok, err := store.Acquire(ctx, input("alice", "k2", "fp", now))
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	check("Acquire of a new key", "evalsha")
	if _, ok, err := store.Acquire(ctx, input("alice", "k1", "fp", now)); err != nil || ok {
		t.Fatalf("duplicate Acquire = %v, %v", ok, err)
	}
	check("Acquire of a held key", "evalsha")
	o := idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`{}`), ExpiresAt: now.Add(time.Hour)}
	if err := store.Settle(ctx, e.Lease(), o); err != nil {
		t.Fatal(err)
	}
	check("the first Settle", "evalsha", "eval")
	if err := store.Settle(ctx, e.Lease(), o); !errors.Is(err, idempotency.ErrFenced) {
		t.Fatalf("second Settle: %v", err)
	}
	check("a fenced Settle", "evalsha")
	if _, ok, err := store.Acquire(ctx, input("alice", "k1", "fp", now)); err != nil || ok {
		t.Fatalf("duplicate Acquire = %v, %v", ok, err)
	}
	check("Acquire of a settled key", "evalsha")
	if err := store.Release(ctx, e2.Lease()); err != nil {
		t.Fatal(err)
	}
	check("the first Release", "evalsha", "eval")
	if err := store.Release(ctx, e2.Lease()); !errors.Is(err, idempotency.ErrFenced) {
		t.Fatalf("second Release: %v", err)
	}
	check("a fenced Release", "evalsha")
	if _, err := store.Get(ctx, "alice", "k1"); err != nil {
		t.Fatal(err)
	}
	check("Get", "hgetall")
	if _, err := store.Get(ctx, "alice", "none"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	check("Get of no record", "hgetall")
}

// TestRecordLayout: a record is a hash under the prefix and RecordKey
// with DynamoDBPersistence's attribute names, and holds neither the scope
// nor the key in clear.
func TestRecordLayout(t *testing.T) {
	ctx := t.Context()
	client := redistest.Client(t)
	prefix := redistest.Prefix(t)
	store := redisstore.New(client, prefix)
	now := time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	scope, key := "scope-in-clear", "key-in-clear"
	e, _, err := store.Acquire(ctx, input(scope, key, "fp", now))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Settle(ctx, e.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, Output: []byte(`"out"`), ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rk := prefix + idempotency.RecordKey(scope, key)
	if store.Key(scope, key) != rk {
		t.Errorf("Key = %s, want %s", store.Key(scope, key), rk)
	}
	keys, err := client.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{rk}) {
		t.Fatalf("keys under the prefix: %q, want %q", keys, rk)
	}
	if typ := client.Type(ctx, rk).Val(); typ != "hash" {
		t.Fatalf("the record is a %s", typ)
	}
	fields, err := client.HGetAll(ctx, rk).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		idempotency.AttrFormat:      idempotency.EntryFormat,
		idempotency.AttrStatus:      "COMPLETED",
		idempotency.AttrFingerprint: "fp",
		idempotency.AttrLeaseID:     e.LeaseID,
		idempotency.AttrLeaseCount:  "1",
		idempotency.AttrLeaseUntil:  "1893553505678", // now + 1 minute, in ms
		idempotency.AttrExpiresAt:   "1893557045",    // now + 1 hour, in s
		idempotency.AttrOutput:      `"out"`,
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, fields[k], v)
		}
	}
	for k, v := range fields {
		if _, ok := want[k]; !ok {
			t.Errorf("field %s = %q, which no record should have", k, v)
		}
		if strings.Contains(k+v, "in-clear") {
			t.Errorf("field %s = %q holds the scope or the key", k, v)
		}
	}
}

// pttl is the record's time to live in Redis: -1 without an expiry, -2
// when the key does not exist.
func pttl(t *testing.T, client *redis.Client, key string) time.Duration {
	t.Helper()
	d, err := client.PTTL(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// near reports whether d is within a few seconds below want.
func near(d, want time.Duration) bool { return d <= want && d > want-5*time.Second }

// TestKeyExpiry: the Redis key expires at the record's ExpiresAt, so that
// Redis drops old records: set by Acquire, moved by Settle, kept by
// Release, none for a zero ExpiresAt; a record already past it by the
// server's clock is dropped at once.
func TestKeyExpiry(t *testing.T) {
	ctx := t.Context()
	client := redistest.Client(t)
	store := redisstore.New(client, redistest.Prefix(t))
	now := time.Now()

	e, _, err := store.Acquire(ctx, input("alice", "k1", "fp", now))
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("alice", "k1")
	if d := pttl(t, client, key); !near(d, time.Hour) {
		t.Errorf("after Acquire the key expires in %v, want about an hour", d)
	}
	if err := store.Settle(ctx, e.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, ExpiresAt: now.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if d := pttl(t, client, key); !near(d, 3*time.Hour) {
		t.Errorf("after Settle the key expires in %v, want about 3 hours", d)
	}

	e2, _, err := store.Acquire(ctx, input("alice", "k2", "fp", now))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Release(ctx, e2.Lease()); err != nil {
		t.Fatal(err)
	}
	if d := pttl(t, client, store.Key("alice", "k2")); !near(d, time.Hour) {
		t.Errorf("after Release the key expires in %v, want about an hour, as before", d)
	}

	in := input("alice", "k3", "fp", now)
	in.ExpiresAt = time.Time{}
	e3, _, err := store.Acquire(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if d := pttl(t, client, store.Key("alice", "k3")); d != -1 {
		t.Errorf("with no ExpiresAt the key expires in %v, want never (-1)", d)
	}
	if !e3.ExpiresAt.IsZero() {
		t.Errorf("with no ExpiresAt the record expires at %v", e3.ExpiresAt)
	}
	// A settled record without expiry is never free (Entry.Free).
	if err := store.Settle(ctx, e3.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := store.Acquire(ctx, input("alice", "k3", "fp", now.AddDate(100, 0, 0))); err != nil || ok {
		t.Errorf("a completed record without expiry: Acquire = %v, %v; want it kept", ok, err)
	}

	// A record already expired by the server's clock is dropped at once;
	// the next acquisition makes a new one.
	past := input("alice", "k4", "fp", now.Add(-2*time.Hour))
	gone, ok, err := store.Acquire(ctx, past)
	if err != nil || !ok || gone.LeaseCount != 1 {
		t.Fatalf("Acquire = %+v, %v, %v", gone, ok, err)
	}
	if _, err := store.Get(ctx, "alice", "k4"); !errors.Is(err, idempotency.ErrNotFound) {
		t.Errorf("Get of a record expired by the server's clock: %v, want ErrNotFound", err)
	}
	if err := store.Settle(ctx, gone.Lease(), idempotency.Outcome{Status: idempotency.EntryCompleted, ExpiresAt: now.Add(time.Hour)}); !errors.Is(err, idempotency.ErrFenced) {
		t.Errorf("Settle of a dropped record: %v, want ErrFenced", err)
	}
	again, ok, err := store.Acquire(ctx, input("alice", "k4", "fp", now))
	if err != nil || !ok || again.LeaseCount != 1 || again.LeaseID == gone.LeaseID {
		t.Errorf("Acquire after the drop = %+v, %v, %v; want a new record", again, ok, err)
	}
}

// TestCallersClock: leases are judged at AcquireInput.Now, not by the
// server's clock: with a clock two hours behind, a lease that ended by
// the server's clock still holds until the caller's clock reaches it.
func TestCallersClock(t *testing.T) {
	ctx := t.Context()
	store := redisstore.New(redistest.Client(t), redistest.Prefix(t))
	behind := time.Now().Add(-2 * time.Hour)
	in := input("alice", "k1", "fp", behind)
	in.ExpiresAt = time.Now().Add(time.Hour)
	first, ok, err := store.Acquire(ctx, in)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	in.Now = behind.Add(59 * time.Second)
	if e, ok, err := store.Acquire(ctx, in); err != nil || ok || e.LeaseID != first.LeaseID {
		t.Fatalf("Acquire before the lease ends by the caller's clock = %+v, %v, %v; want the holder's record", e, ok, err)
	}
	in.Now = first.LeaseUntil
	if e, ok, err := store.Acquire(ctx, in); err != nil || !ok || e.LeaseCount != 2 {
		t.Fatalf("Acquire when the lease ends by the caller's clock = %+v, %v, %v; want a takeover", e, ok, err)
	}
}

// TestAnotherKeyType: a key of another type where a record would be is
// an error, and is left as it is.
func TestAnotherKeyType(t *testing.T) {
	ctx := t.Context()
	client := redistest.Client(t)
	store := redisstore.New(client, redistest.Prefix(t))
	key := store.Key("alice", "k1")
	if err := client.Set(ctx, key, "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Acquire(ctx, input("alice", "k1", "fp", time.Now())); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Acquire: %v, want WRONGTYPE", err)
	}
	if _, err := store.Get(ctx, "alice", "k1"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Get: %v, want WRONGTYPE", err)
	}
	lease := idempotency.Lease{RecordKey: idempotency.RecordKey("alice", "k1"), ID: "x", Count: 1}
	if err := store.Release(ctx, lease); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("Release: %v, want WRONGTYPE", err)
	}
	if v := client.Get(ctx, key).Val(); v != "a string" {
		t.Errorf("the key now holds %q", v)
	}
}

// TestPrefixes: stores of two prefixes on one server keep apart; the
// empty prefix puts records at the bare record keys.
func TestPrefixes(t *testing.T) {
	ctx := t.Context()
	client := redistest.Client(t)
	p := redistest.Prefix(t)
	a, b := redisstore.New(client, p+"a:"), redisstore.New(client, p+"b:")
	now := time.Now()
	for _, s := range []*redisstore.Store{a, b} {
		if e, ok, err := s.Acquire(ctx, input("alice", "k1", "fp", now)); err != nil || !ok || e.LeaseCount != 1 {
			t.Fatalf("Acquire = %+v, %v, %v; want a record of each prefix", e, ok, err)
		}
	}
	bare := redisstore.New(client, "")
	scope := "scope-" + p
	if _, _, err := bare.Acquire(ctx, input(scope, "k1", "fp", now)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Del(context.Background(), idempotency.RecordKey(scope, "k1")) })
	if n := client.Exists(ctx, idempotency.RecordKey(scope, "k1")).Val(); n != 1 {
		t.Errorf("no record at the bare record key")
	}
}
