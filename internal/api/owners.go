package api

import (
	"sync"
	"time"
)

// ownerCache remembers the owners of source accounts for a bounded time,
// in one container: a new key whose owner is remembered costs no read.
// An account that does not exist is remembered with no owner. It is an
// early answer only: the debit's own check, inside the transaction that
// moves the money, decides (docs/design.md, "The owner check").
//
// It is written here rather than taken from a library: the expirable
// cache of hashicorp/golang-lru starts a goroutine per cache that never
// ends and reads the wall clock only, where this one needs neither.
type ownerCache struct {
	age  time.Duration
	size int
	now  func() time.Time

	mu      sync.Mutex
	entries map[string]ownerEntry
}

type ownerEntry struct {
	owner string
	read  time.Time
}

// newOwnerCache remembers up to size owners, each for age after it was
// read. An age of zero or less remembers nothing.
func newOwnerCache(age time.Duration, size int, now func() time.Time) *ownerCache {
	return &ownerCache{age: age, size: size, now: now, entries: map[string]ownerEntry{}}
}

// get returns the owner of account read less than the cache's age ago.
func (c *ownerCache) get(account string) (owner string, ok bool) {
	if c.age <= 0 {
		return "", false
	}
	c.mu.Lock()
	e, ok := c.entries[account]
	c.mu.Unlock()
	if !ok || c.now().Sub(e.read) >= c.age {
		return "", false
	}
	return e.owner, true
}

// put remembers the owner of account, read at read (the time the read was
// sent, so that the age bounds the answer's own age). When the cache is
// full, the entries past their age go first, then any.
func (c *ownerCache) put(account, owner string, read time.Time) {
	if c.age <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[account]; !ok && len(c.entries) >= c.size {
		now := c.now()
		for k, e := range c.entries {
			if now.Sub(e.read) >= c.age {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < c.size {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[account] = ownerEntry{owner: owner, read: read}
}
