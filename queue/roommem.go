package queue

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// roomMem is everything this instance holds in memory of one room; the
// Queue keeps one per room (Queue.rooms), made the first time the room
// needs one of its fields and kept while the Queue lives.
//
// Which rooms have one: a room this instance joined a visitor to, admitted
// from, retook tickets in, changed the settings of or ran a tick of, and a
// room a status read of which reported a measured rate or a lottery. Each
// of those is a room that exists in Redis: a name nobody made gets none.
// Without its memo's bitmaps an entry is a fixed size: 312 bytes, about
// 450 on the heap with its map entry and name (TestRoomMemSize holds them
// under 384 and 640); the bitmaps hold one bit per ticket this instance
// saw done with in the room (see memo).
type roomMem struct {
	// rate is the bits of the last measured admission rate a status read
	// reported (math.Float64bits), 0 while none is measured: read by
	// every state, so without a lock.
	rate atomic.Uint64
	// draw is the size of the room's lottery as an admission tick or a
	// status read last saw it; -1 when the room admits in order.
	draw atomic.Int64
	// ticking is set while the room's admit call of a tick runs.
	ticking atomic.Bool
	// remembered is set once memo holds anything to put back.
	remembered atomic.Bool

	mu     sync.Mutex
	paused pausedRoom // when the tick loop next looks at the room; guarded by mu

	spread rateSpread // of rate, for the ETA ranges
	memo   memo       // what to put back when Redis lost it
	log    restoreLog // what was put back since it was last logged
}

// roomMemFor returns room's memory, made on first use.
func (q *Queue) roomMemFor(room string) *roomMem {
	if m, ok := q.rooms.Load(room); ok {
		return m.(*roomMem)
	}
	m := &roomMem{}
	m.draw.Store(-1)
	// The key outlives the call: the caller's string may alias a request
	// buffer that is reused (fiber's params do), which would change a key
	// inside the map.
	v, _ := q.rooms.LoadOrStore(strings.Clone(room), m)
	return v.(*roomMem)
}

// roomMemOf returns room's memory, or nil when this instance holds none.
func (q *Queue) roomMemOf(room string) *roomMem {
	if m, ok := q.rooms.Load(room); ok {
		return m.(*roomMem)
	}
	return nil
}

// measuredRate is room's last measured admission rate; ok is false while
// none is measured.
func (q *Queue) measuredRate(room string) (float64, bool) {
	m := q.roomMemOf(room)
	if m == nil {
		return 0, false
	}
	b := m.rate.Load()
	return math.Float64frombits(b), b != 0
}

// noteRate records the measured admission rate a status read of room
// reported (0: none, a measured rate no longer holds).
func (q *Queue) noteRate(room string, rate float64) {
	if !(rate > 0) {
		if m := q.roomMemOf(room); m != nil {
			m.rate.Store(0)
		}
		return
	}
	m := q.roomMemFor(room)
	m.rate.Store(math.Float64bits(rate))
	if !math.IsInf(rate, 0) {
		m.spread.observe(time.Now(), rate)
	}
}

// skipTick reports whether room's tick is to be skipped at now: the tick
// loop found it paused and does not look again yet.
func (q *Queue) skipTick(room string, now time.Time) bool {
	m := q.roomMemOf(room)
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return now.Before(m.paused.until)
}

// notePaused records the outcome of room's admit call that started at
// start. A call that started before a change of settings made here says
// nothing of the room after it.
func (q *Queue) notePaused(room string, paused bool, start time.Time) {
	m := q.roomMemOf(room)
	if m == nil {
		if !paused {
			return
		}
		m = q.roomMemFor(room)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case start.Before(m.paused.changed):
		return
	case !paused:
		m.paused = pausedRoom{}
		return
	}
	m.paused.until = time.Now().Add(pausedEvery)
}

// settingsChanged has room admitted from the next tick on: its settings
// changed here.
func (q *Queue) settingsChanged(room string) {
	m := q.roomMemFor(room)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = pausedRoom{changed: time.Now()}
}
