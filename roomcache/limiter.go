package roomcache

import (
	"strings"

	"github.com/waitroom/waitroom/settings"
	"golang.org/x/time/rate"
)

// admissionRate is this instance's share of the room's configured rate
// (batch per tick, divided among the live instances) and its burst.
func (c *Cache) admissionRate(cfg settings.Room) (rate.Limit, int) {
	batch := c.capacity.BatchSize()
	if cfg.Batch > 0 {
		batch = cfg.Batch
	}
	n := max(c.instances.Load(), 1)
	return rate.Limit(float64(batch) / c.capacity.Tick.Seconds() / float64(n)), max(batch/int(n), 1)
}

// Limiter is room's fail-open limiter, at this instance's share of the
// room's admission rate. Configured rooms have one each; all other rooms
// share one, so no request ever gets a fresh full burst.
func (c *Cache) Limiter(room string) *rate.Limiter {
	c.mu.RLock()
	l := c.limiters[room]
	_, configured := c.cfg[room]
	c.mu.RUnlock()
	if l != nil {
		return l
	}
	if !configured {
		return c.other
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l = c.limiters[room]; l == nil {
		lim, burst := c.admissionRate(c.cfg[room])
		l = rate.NewLimiter(lim, burst)
		c.limiters[strings.Clone(room)] = l
	}
	return l
}

// SetInstances records how many instances are live (fewer than 1 counts
// as 1) and re-rates the limiters to this instance's share.
func (c *Cache) SetInstances(n int) {
	c.instances.Store(int64(max(n, 1)))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rerateLocked()
}

func (c *Cache) rerateLocked() {
	for room, l := range c.limiters {
		lim, burst := c.admissionRate(c.cfg[room])
		l.SetLimit(lim)
		l.SetBurst(burst)
	}
	lim, burst := c.admissionRate(settings.Room{})
	c.other.SetLimit(lim)
	c.other.SetBurst(burst)
}
