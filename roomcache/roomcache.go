// Package roomcache keeps the settings and counters of every room an
// operator configured, as last read from the queue's store, so that what
// must not wait for Redis (whether a room exists, its fail mode and its
// fail-open limiter while Redis is down) and what must not cost a Redis
// call per scrape (metrics) is answered from memory.
//
// A room's entry stays until a read gives it anew: a failed or partial
// refresh never drops settings, and settings Redis lost are kept to be
// written back.
package roomcache

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"golang.org/x/time/rate"
)

// Store is what the cache reads of the queue (*queue.Queue is one).
type Store interface {
	// RoomExists reports whether an operator created room.
	RoomExists(ctx context.Context, room string) (bool, error)
	// RoomConfig is room's stored settings (version 0 when it has none).
	RoomConfig(ctx context.Context, room string) (settings.Room, error)
	// Stats is room's counters.
	Stats(ctx context.Context, room string) (queue.RoomStats, error)
	// ConfiguredRooms lists the rooms an operator created.
	ConfiguredRooms(ctx context.Context) ([]string, error)
	// Capacity is the deployment's admission capacity; it is read once,
	// by New.
	Capacity() queue.Capacity
}

// Options tune a Cache. A nil *Options means every default.
type Options struct {
	// FailMode is the fail mode of a room without one of its own:
	// settings.FailOpen (the default) or settings.FailClosed.
	FailMode string
}

// Cache is the rooms' settings and counters in memory. Its methods are
// safe for concurrent use, and it keeps its own copy of every room name
// it is given. It starts no goroutine: the owner calls
// Refresh on its own schedule.
type Cache struct {
	store    Store
	defFail  string
	capacity queue.Capacity

	instances atomic.Int64 // live instances last seen in the registry (at least 1)

	mu       sync.RWMutex
	cfg      map[string]settings.Room   // configured rooms
	read     map[string]bool            // rooms whose settings were read (not just seen to exist)
	stats    map[string]queue.RoomStats // configured rooms
	limiters map[string]*rate.Limiter   // configured rooms
	other    *rate.Limiter              // every other room (open rooms), together
	missing  map[string]time.Time       // rooms found not to exist, until when to believe it
	lost     map[string]int64           // rooms whose settings Redis lost: the version a join checks
}

// missingFor is how long a room found not to exist is believed gone; a room
// an operator creates is seen by every instance within it.
const missingFor = time.Second

// maxMissing bounds the rooms remembered as missing.
const maxMissing = 4096

// New returns an empty cache reading store, rated for one live instance.
// The caller's opts is not kept.
func New(store Store, opts *Options) *Cache {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.FailMode == "" {
		o.FailMode = settings.FailOpen
	}
	c := &Cache{
		store: store, defFail: o.FailMode, capacity: store.Capacity(),
		cfg: map[string]settings.Room{}, stats: map[string]queue.RoomStats{}, read: map[string]bool{},
		limiters: map[string]*rate.Limiter{}, missing: map[string]time.Time{}, lost: map[string]int64{},
	}
	c.instances.Store(1)
	lim, burst := c.admissionRate(settings.Room{})
	c.other = rate.NewLimiter(lim, burst)
	return c
}

// Label is room's value for a metric label: its name when an operator
// configured it, else "other", so visitors cannot add series.
func (c *Cache) Label(room string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.cfg[room]; ok {
		return room
	}
	return "other"
}

// JoinLimit is room's own join limit per client (rate 0 when it has none);
// a room with a rate and no burst gets a burst of the rate, at least 1.
func (c *Cache) JoinLimit(room string) (perSecond float64, burst int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cfg := c.cfg[room]
	if cfg.JoinRate <= 0 {
		return 0, 0
	}
	return cfg.JoinRate, cmp.Or(cfg.JoinBurst, max(int(cfg.JoinRate), 1))
}

// FailMode is room's own fail mode, else the default of Options.
func (c *Cache) FailMode(room string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m := c.cfg[room].FailMode; m != "" {
		return m
	}
	return c.defFail
}

// TokenTTL is room's own idle token lifetime (0 when it has none).
func (c *Cache) TokenTTL(room string) time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg[room].TokenTTL
}

// PowBits is the proof of work a new visitor of room needs; 0 for a room
// no operator configured.
func (c *Cache) PowBits(room string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cfg[room].PowBits
}

// Exists reports whether an operator created room: from memory, or from
// the store for a room the cache does not know yet. A room found is read
// in full before Exists returns; a room not found is believed missing for
// a second. An error is a failure to reach the store, not an answer.
func (c *Cache) Exists(ctx context.Context, room string) (bool, error) {
	c.mu.RLock()
	_, ok := c.cfg[room]
	until, gone := c.missing[room]
	c.mu.RUnlock()
	if ok {
		return true, nil
	}
	if gone && time.Now().Before(until) {
		return false, nil
	}
	ok, err := c.store.RoomExists(ctx, room)
	if err != nil {
		return false, err
	}
	if ok {
		// Its settings now, not the defaults: a gate must never act on an
		// empty config of a room that has settings.
		return true, c.Reload(ctx, room)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.missing) >= maxMissing {
		clear(c.missing)
	}
	c.missing[strings.Clone(room)] = time.Now().Add(missingFor)
	return false, nil
}

// Version is the version of room's settings the cache holds (0 for a
// room it holds none of): the join checks it against the stored one
// (queue.JoinAt), so the gates that read the cache never pass a join on
// settings older than the last change.
func (c *Cache) Version(room string) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.lost[room]; ok {
		return v
	}
	return c.cfg[room].Version()
}

// Reload reads room's settings from the store now, for a join that found
// them changed (or a room seen for the first time). When the store has
// none of a room whose settings were read before (Redis lost them), the
// settings read before stay, to be written back (RoomSettings) and to
// gate joins until then; only the version a join checks follows the store.
func (c *Cache) Reload(ctx context.Context, room string) error {
	cfg, err := c.store.RoomConfig(ctx, room)
	if err != nil {
		return err
	}
	// The cache's maps outlive the call: they keep their own copy of the
	// name, which a caller may have in a request buffer reused after it.
	room = strings.Clone(room)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.Version() == 0 && c.read[room] {
		c.lost[room] = 0
		return nil
	}
	delete(c.lost, room)
	c.cfg[room] = cfg
	c.read[room] = true
	delete(c.missing, room)
	if l := c.limiters[room]; l != nil {
		lim, burst := c.admissionRate(cfg)
		l.SetLimit(lim)
		l.SetBurst(burst)
	}
	return nil
}
