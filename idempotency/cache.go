package idempotency

import (
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// entryCache keeps settled records in memory, least recently used out
// first, keyed by record key (so by scope and key), in a
// hashicorp/golang-lru cache, which is safe for concurrent use. It holds
// copies and hands out copies.
type entryCache struct {
	entries *lru.Cache[string, Entry]
}

func newEntryCache(size int) (*entryCache, error) {
	c, err := lru.New[string, Entry](size)
	if err != nil {
		return nil, fmt.Errorf("idempotency: cache of %d records: %w", size, err)
	}
	return &entryCache{entries: c}, nil
}

// get returns the settled record of recordKey unless it has expired at
// now (then it is dropped).
func (c *entryCache) get(recordKey string, now time.Time) (Entry, bool) {
	e, ok := c.entries.Get(recordKey)
	if !ok {
		return Entry{}, false
	}
	if now.Unix() >= e.ExpiresAt.Unix() {
		c.entries.Remove(recordKey)
		return Entry{}, false
	}
	return e.Clone(), true
}

// put keeps a copy of e, when it is settled.
func (c *entryCache) put(e Entry) {
	if !e.Status.Settled() {
		return
	}
	c.entries.Add(e.RecordKey, e.Clone())
}
