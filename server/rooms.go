package main

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/queue"
	"golang.org/x/time/rate"
)

// roomCache keeps the settings and counters of every room an operator
// configured, as last read from Redis, refreshed in the background. It
// answers what must not wait for Redis (whether a room exists, its fail
// mode and its fail-open limiter while Redis is down) and what must not
// cost a Redis call per scrape (metrics). A room's entry stays until a
// refresh reads it anew: a failed or partial refresh never drops settings.
type roomCache struct {
	q        *queue.Queue
	defFail  string
	capacity queue.Capacity

	instances atomic.Int64 // live instances last seen in the registry (at least 1)

	mu       sync.RWMutex
	cfg      map[string]queue.RoomConfig // configured rooms
	read     map[string]bool             // rooms whose settings were read from Redis (not just seen to exist)
	stats    map[string]queue.RoomStats  // configured rooms
	limiters map[string]*rate.Limiter    // configured rooms
	other    *rate.Limiter               // every other room (open rooms), together
	missing  map[string]time.Time        // rooms found not to exist, until when to believe it
	lost     map[string]int64            // rooms whose settings Redis lost: the version a join checks
}

// missingFor is how long a room found not to exist is believed gone; a room
// an operator creates is seen by every instance within it.
const missingFor = time.Second

// maxMissing bounds the rooms remembered as missing.
const maxMissing = 4096

func newRoomCache(q *queue.Queue, defFail string) *roomCache {
	rc := &roomCache{
		q: q, defFail: defFail, capacity: q.Capacity(),
		cfg: map[string]queue.RoomConfig{}, stats: map[string]queue.RoomStats{}, read: map[string]bool{},
		limiters: map[string]*rate.Limiter{}, missing: map[string]time.Time{}, lost: map[string]int64{},
	}
	rc.instances.Store(1)
	lim, burst := rc.admissionRate(queue.RoomConfig{})
	rc.other = rate.NewLimiter(lim, burst)
	return rc
}

// label is room's value for a metric label: its name when an operator
// configured it, else "other", so visitors cannot add series.
func (rc *roomCache) label(room string) string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if _, ok := rc.cfg[room]; ok {
		return room
	}
	return "other"
}

// joinLimit is room's own join limit (0 when it has none).
func (rc *roomCache) joinLimit(room string) (float64, int) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	c := rc.cfg[room]
	if c.JoinRate <= 0 {
		return 0, 0
	}
	return c.JoinRate, cmp.Or(c.JoinBurst, max(int(c.JoinRate), 1))
}

func (rc *roomCache) failMode(room string) string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if m := rc.cfg[room].FailMode; m != "" {
		return m
	}
	return rc.defFail
}

// tokenTTL is room's own idle token lifetime (0 when it has none).
func (rc *roomCache) tokenTTL(room string) time.Duration {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.cfg[room].TokenTTL
}

// exists reports whether an operator created room: from the cache, or from
// Redis for a room the cache does not know yet (remembered either way).
func (rc *roomCache) exists(ctx context.Context, room string) (bool, error) {
	rc.mu.RLock()
	_, ok := rc.cfg[room]
	until, gone := rc.missing[room]
	rc.mu.RUnlock()
	if ok {
		return true, nil
	}
	if gone && time.Now().Before(until) {
		return false, nil
	}
	ok, err := rc.q.RoomExists(ctx, room)
	if err != nil {
		return false, err
	}
	if ok {
		// Its settings now, not the defaults: a gate must never act on an
		// empty config of a room that has settings.
		return true, rc.reload(ctx, room)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.missing) >= maxMissing {
		clear(rc.missing)
	}
	rc.missing[room] = time.Now().Add(missingFor)
	return false, nil
}

// version is the version of room's settings the cache holds (0 for a
// room it holds none of): the join checks it against the stored one
// (queue.JoinAt), so the gates that read the cache never pass a join on
// settings older than the last change.
func (rc *roomCache) version(room string) int64 {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if v, ok := rc.lost[room]; ok {
		return v
	}
	return rc.cfg[room].Version()
}

// reload reads room's settings from Redis into the cache now, for a join
// that found them changed (or a room seen for the first time). When Redis
// has none of a room whose settings were read before (it lost them), the
// settings read before stay, to be written back (RoomSettings) and to
// gate joins until then; only the version the join checks follows Redis.
func (rc *roomCache) reload(ctx context.Context, room string) error {
	cfg, err := rc.q.RoomConfig(ctx, room)
	if err != nil {
		return err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if cfg.Version() == 0 && rc.read[room] {
		rc.lost[room] = 0
		return nil
	}
	delete(rc.lost, room)
	rc.cfg[room] = cfg
	rc.read[room] = true
	delete(rc.missing, room)
	if l := rc.limiters[room]; l != nil {
		lim, burst := rc.admissionRate(cfg)
		l.SetLimit(lim)
		l.SetBurst(burst)
	}
	return nil
}

// admissionRate is this instance's share of the room's configured rate
// (batch per tick, divided among the live instances) and its burst.
func (rc *roomCache) admissionRate(cfg queue.RoomConfig) (rate.Limit, int) {
	batch := rc.capacity.BatchSize()
	if cfg.Batch > 0 {
		batch = cfg.Batch
	}
	n := max(rc.instances.Load(), 1)
	return rate.Limit(float64(batch) / rc.capacity.Tick.Seconds() / float64(n)), max(batch/int(n), 1)
}

// limiter is the room's fail-open limiter. Configured rooms have one each;
// all other rooms share one, so no request ever gets a fresh full burst.
func (rc *roomCache) limiter(room string) *rate.Limiter {
	rc.mu.RLock()
	l := rc.limiters[room]
	_, configured := rc.cfg[room]
	rc.mu.RUnlock()
	if l != nil {
		return l
	}
	if !configured {
		return rc.other
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if l = rc.limiters[room]; l == nil {
		lim, burst := rc.admissionRate(rc.cfg[room])
		l = rate.NewLimiter(lim, burst)
		rc.limiters[room] = l
	}
	return l
}

// setInstances records how many instances are live and re-rates the
// limiters to this instance's share.
func (rc *roomCache) setInstances(n int) {
	rc.instances.Store(int64(max(n, 1)))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.rerateLocked()
}

func (rc *roomCache) rerateLocked() {
	for room, l := range rc.limiters {
		lim, burst := rc.admissionRate(rc.cfg[room])
		l.SetLimit(lim)
		l.SetBurst(burst)
	}
	lim, burst := rc.admissionRate(queue.RoomConfig{})
	rc.other.SetLimit(lim)
	rc.other.SetBurst(burst)
}

// refreshWorkers bounds the room reads of one refresh in flight at once.
const refreshWorkers = 16

// refresh reads every configured room's settings and counters. Rooms it
// could not read keep what was read before.
func (rc *roomCache) refresh(ctx context.Context) error {
	rooms, err := rc.q.ConfiguredRooms(ctx)
	if err != nil {
		return err
	}
	type read struct {
		room string
		cfg  queue.RoomConfig
		st   queue.RoomStats
		err  error
	}
	out := make([]read, len(rooms))
	sem := make(chan struct{}, refreshWorkers)
	var wg sync.WaitGroup
	for i, room := range rooms {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := read{room: room}
			if r.cfg, r.err = rc.q.RoomConfig(ctx, room); r.err == nil {
				r.st, r.err = rc.q.Stats(ctx, room)
			}
			out[i] = r
		})
	}
	wg.Wait()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var first error
	for _, r := range out {
		if r.err != nil {
			first = cmpErr(first, r.err)
			continue
		}
		rc.cfg[r.room], rc.stats[r.room] = r.cfg, r.st
		rc.read[r.room] = true
		delete(rc.lost, r.room)
		delete(rc.missing, r.room)
	}
	rc.rerateLocked()
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (rc *roomCache) snapshot() map[string]queue.RoomStats {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	out := make(map[string]queue.RoomStats, len(rc.stats))
	for k, v := range rc.stats {
		out[k] = v
	}
	return out
}

// RoomSettings returns the settings last read of room, to write back when
// Redis lost them (queue.SettingsSource).
func (rc *roomCache) RoomSettings(room string) (queue.RoomConfig, bool) {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if !rc.read[room] {
		return queue.RoomConfig{}, false
	}
	return rc.cfg[room], true
}

// SettingsRooms lists the rooms whose settings were read.
func (rc *roomCache) SettingsRooms() []string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	out := make([]string, 0, len(rc.read))
	for r := range rc.read {
		out = append(out, r)
	}
	return out
}
