package main

import (
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomcache"
)

// metricsRooms is the room cache as the metrics read it.
type metricsRooms struct{ rc *roomcache.Cache }

func (a metricsRooms) Snapshot() map[string]queue.RoomStats { return a.rc.Stats() }

// demoPool is the simulated DB pool as its metrics read it.
type demoPool struct{ p *dbPool }

func (a demoPool) InUse() int64 { return a.p.inUse.Load() }
func (a demoPool) Peak() int64  { return a.p.peak.Load() }
func (a demoPool) Size() int    { return cap(a.p.slots) }
