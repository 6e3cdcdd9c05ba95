package roomcache

import (
	"context"
	"maps"
	"sync"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// refreshWorkers bounds the room reads of one refresh in flight at once.
const refreshWorkers = 16

// Refresh reads every configured room's settings and counters and returns
// when all reads are done. Rooms it could not read keep what was read
// before; the error is the first read that failed.
func (c *Cache) Refresh(ctx context.Context) error {
	rooms, err := c.store.ConfiguredRooms(ctx)
	if err != nil {
		return err
	}
	type read struct {
		room string
		cfg  settings.Room
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
			if r.cfg, r.err = c.store.RoomConfig(ctx, room); r.err == nil {
				r.st, r.err = c.store.Stats(ctx, room)
			}
			out[i] = r
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for _, r := range out {
		if r.err != nil {
			if first == nil {
				first = r.err
			}
			continue
		}
		c.cfg[r.room], c.stats[r.room] = r.cfg, r.st
		c.read[r.room] = true
		delete(c.lost, r.room)
		delete(c.missing, r.room)
	}
	c.rerateLocked()
	return first
}

// Stats is a copy of the configured rooms' counters as last refreshed.
func (c *Cache) Stats() map[string]queue.RoomStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.stats)
}

// RoomSettings returns the settings last read of room, to write back when
// Redis lost them (queue.SettingsSource); ok is false for a room whose
// settings were never read.
func (c *Cache) RoomSettings(room string) (cfg settings.Room, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.read[room] {
		return settings.Room{}, false
	}
	return c.cfg[room], true
}

// SettingsRooms lists, in no order, the rooms whose settings were read.
func (c *Cache) SettingsRooms() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.read))
	for r := range c.read {
		out = append(out, r)
	}
	return out
}
