package idempotency

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// entryCache keeps settled records in memory, least recently used out
// first, keyed by scope and key (so that a hit costs no RecordKey), in a
// hashicorp/golang-lru cache, which is safe for concurrent use. Its
// records are copies, never changed once kept.
type entryCache struct {
	entries *lru.Cache[cacheKey, *cached]
}

// cacheKey is a record's (scope, key).
type cacheKey struct{ scope, key string }

// cached is a record of the cache, and its output decoded once when that
// is safe to hand out again (decodeOutput).
type cached struct {
	e Entry
	// out is the decoded output (an Out), or noShare, or nil until a
	// replay decodes it.
	out atomic.Pointer[any]
}

// noShare marks a cached output whose decoded value may not be handed
// out twice: every replay decodes it.
var noShare = new(any)

func newEntryCache(size int) (*entryCache, error) {
	c, err := lru.New[cacheKey, *cached](size)
	if err != nil {
		return nil, fmt.Errorf("idempotency: cache of %d records: %w", size, err)
	}
	return &entryCache{entries: c}, nil
}

// get returns the settled record of (scope, key) unless it has expired
// at now (then it is dropped). The caller reads it and never changes it.
func (c *entryCache) get(scope, key string, now time.Time) (*cached, bool) {
	k := cacheKey{scope, key}
	r, ok := c.entries.Get(k)
	if !ok {
		return nil, false
	}
	if now.Unix() >= r.e.ExpiresAt.Unix() {
		c.entries.Remove(k)
		return nil, false
	}
	return r, true
}

// put keeps a copy of e, the record of (scope, key), when it is settled.
func (c *entryCache) put(scope, key string, e Entry) {
	if !e.Status.Settled() {
		return
	}
	c.entries.Add(cacheKey{scope, key}, &cached{e: e.Clone()})
}

// decodeOutput decodes the output of e, the record of r when r is not
// nil. A record of the cache keeps the first value it decodes when Out
// shares no memory (shareable): later replays get a copy of it, which is
// what decoding again would give, without decoding.
func decodeOutput[Out any](e *Entry, r *cached) (Out, error) {
	if r != nil {
		if p := r.out.Load(); p != nil && p != noShare {
			if v, ok := (*p).(Out); ok {
				return v, nil
			}
		}
	}
	out := new(Out)
	if err := json.Unmarshal(e.Output, out); err != nil {
		return *out, err
	}
	if r != nil && r.out.Load() == nil {
		if shareable(reflect.TypeFor[Out]()) {
			var v any = *out
			r.out.CompareAndSwap(nil, &v)
		} else {
			r.out.CompareAndSwap(nil, noShare)
		}
	}
	return *out, nil
}

// shareable reports whether a value of t, copied, shares no memory that
// its holder could change: no pointers, slices, maps, interfaces,
// channels or functions, at any depth. Strings are immutable, and so is
// a time.Time's location.
func shareable(t reflect.Type) bool {
	if t == reflect.TypeFor[time.Time]() {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return shareable(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !shareable(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
