package gateway

import (
	"sync"
	"time"
)

// Cache is this instance's memory of sessions: which were revoked (ended
// before their time, here or on another instance, as heard on pub/sub) and
// when each was last slid here, so a page with fifty assets slides its
// session once. Entries live until the session could no longer be valid.
// Bounded: past max entries, the ones closest to their end go first. Safe
// for concurrent use.
type Cache struct {
	mu      sync.Mutex
	revoked map[string]time.Time // key -> until
	slid    map[string]time.Time // key -> when this instance last slid it
	max     int
}

// NewCache returns a cache holding at most max entries of each kind.
func NewCache(max int) *Cache {
	return &Cache{revoked: make(map[string]time.Time), slid: make(map[string]time.Time), max: max}
}

// Revoke remembers that the session key ended, until until.
func (c *Cache) Revoke(key string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.revoked) >= c.max {
		evictEarliest(c.revoked)
	}
	c.revoked[key] = until
	delete(c.slid, key)
}

// Revoked reports whether the session key was revoked.
func (c *Cache) Revoked(key string) bool {
	c.mu.Lock()
	_, ok := c.revoked[key]
	c.mu.Unlock()
	return ok
}

// ClaimSlide reports whether the caller should slide session key now: not
// slid here within every. A true answer records the slide at now, so
// concurrent requests of one page slide once.
func (c *Cache) ClaimSlide(key string, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.slid[key]; ok && now.Sub(at) < every {
		return false
	}
	if len(c.slid) >= c.max {
		evictEarliest(c.slid)
	}
	c.slid[key] = now
	return true
}

// Prune forgets revocations past their end and slides older than keep.
func (c *Cache) Prune(now time.Time, keep time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, until := range c.revoked {
		if !now.Before(until) {
			delete(c.revoked, k)
		}
	}
	for k, at := range c.slid {
		if now.Sub(at) >= keep {
			delete(c.slid, k)
		}
	}
}

// Len returns the number of revocations held.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.revoked)
}

// evictEarliest drops the eighth of m with the earliest times (a full scan:
// it runs once per max/8 insertions).
func evictEarliest(m map[string]time.Time) {
	n := max(len(m)/8, 1)
	for ; n > 0; n-- {
		var ek string
		var et time.Time
		first := true
		for k, t := range m {
			if first || t.Before(et) {
				ek, et, first = k, t, false
			}
		}
		delete(m, ek)
	}
}
