package main

import (
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/roomcache"
)

// metricsRooms is the room cache as the metrics read it.
type metricsRooms struct{ rc *roomcache.Cache }

func (a metricsRooms) Snapshot() map[string]metrics.Room {
	stats := a.rc.Stats()
	out := make(map[string]metrics.Room, len(stats))
	for room, st := range stats {
		cfg, _ := a.rc.RoomSettings(room)
		out[room] = metrics.Room{RoomStats: st, Paused: cfg.Paused}
	}
	return out
}
