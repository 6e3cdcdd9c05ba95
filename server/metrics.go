package main

import (
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomcache"
)

// metricsRooms is the room cache as the metrics read it.
type metricsRooms struct{ rc *roomcache.Cache }

func (a metricsRooms) Snapshot() map[string]queue.RoomStats { return a.rc.Stats() }
