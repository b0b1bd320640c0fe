package idempotency

import (
	"container/list"
	"sync"
	"time"
)

// entryCache keeps settled records in memory, least recently used out
// first, keyed by record key (so by scope and key). It holds copies and
// hands out copies. It is safe for concurrent use.
type entryCache struct {
	mu    sync.Mutex
	size  int
	order *list.List               // front: most recently used
	items map[string]*list.Element // record key -> element holding an Entry
}

func newEntryCache(size int) *entryCache {
	return &entryCache{size: size, order: list.New(), items: make(map[string]*list.Element, size)}
}

// get returns the settled record of recordKey unless it has expired at
// now (then it is dropped).
func (c *entryCache) get(recordKey string, now time.Time) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[recordKey]
	if !ok {
		return Entry{}, false
	}
	e := el.Value.(Entry)
	if now.Unix() >= e.ExpiresAt.Unix() {
		c.order.Remove(el)
		delete(c.items, recordKey)
		return Entry{}, false
	}
	c.order.MoveToFront(el)
	return e.Clone(), true
}

// put keeps a copy of e, when it is settled.
func (c *entryCache) put(e Entry) {
	if !e.Status.Settled() {
		return
	}
	e = e.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.RecordKey]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	c.items[e.RecordKey] = c.order.PushFront(e)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(Entry).RecordKey)
	}
}
