package main

import (
	"context"
	"sync"

	"github.com/waitroom/waitroom/queue"
	"golang.org/x/time/rate"
)

// roomCache keeps each room's settings and counters as last read from
// Redis, refreshed in the background. It answers what must not wait for
// Redis (the fail mode and the fail-open limiter while Redis is down) and
// what must not cost a Redis call per scrape (metrics).
type roomCache struct {
	q        *queue.Queue
	defFail  string
	capacity queue.Capacity

	mu       sync.RWMutex
	cfg      map[string]queue.RoomConfig
	stats    map[string]queue.RoomStats
	limiters map[string]*rate.Limiter
}

func newRoomCache(q *queue.Queue, defFail string) *roomCache {
	return &roomCache{
		q: q, defFail: defFail, capacity: q.Capacity(),
		cfg: map[string]queue.RoomConfig{}, stats: map[string]queue.RoomStats{}, limiters: map[string]*rate.Limiter{},
	}
}

func (rc *roomCache) failMode(room string) string {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	if m := rc.cfg[room].FailMode; m != "" {
		return m
	}
	return rc.defFail
}

// admissionRate is the room's configured rate: batch per tick.
func (rc *roomCache) admissionRate(cfg queue.RoomConfig) (rate.Limit, int) {
	batch := rc.capacity.BatchSize()
	if cfg.Batch > 0 {
		batch = cfg.Batch
	}
	return rate.Limit(float64(batch) / rc.capacity.Tick.Seconds()), batch
}

// limiter is the room's fail-open limiter, at its admission rate.
func (rc *roomCache) limiter(room string) *rate.Limiter {
	rc.mu.RLock()
	l := rc.limiters[room]
	rc.mu.RUnlock()
	if l != nil {
		return l
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if l = rc.limiters[room]; l == nil {
		lim, burst := rc.admissionRate(rc.cfg[room])
		l = rate.NewLimiter(lim, burst)
		if len(rc.limiters) < 10000 {
			rc.limiters[room] = l
		}
	}
	return l
}

// refresh reads every known room's settings and counters.
func (rc *roomCache) refresh(ctx context.Context) error {
	rooms, err := rc.q.AllRooms(ctx)
	if err != nil {
		return err
	}
	cfg := make(map[string]queue.RoomConfig, len(rooms))
	stats := make(map[string]queue.RoomStats, len(rooms))
	for i, room := range rooms {
		if i >= 1000 {
			break // bounded work per refresh
		}
		c, err := rc.q.RoomConfig(ctx, room)
		if err != nil {
			return err
		}
		st, err := rc.q.Stats(ctx, room)
		if err != nil {
			return err
		}
		cfg[room], stats[room] = c, st
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.cfg, rc.stats = cfg, stats
	for room, l := range rc.limiters {
		lim, burst := rc.admissionRate(cfg[room])
		l.SetLimit(lim)
		l.SetBurst(burst)
	}
	return nil
}

func (rc *roomCache) snapshot() map[string]queue.RoomStats {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.stats
}
