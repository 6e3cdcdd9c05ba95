package hub

import (
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Heartbeats are scheduled by the hub, in a wheel served by the position
// flush, rather than by a timer per connection: a timer (and the goroutine
// each firing starts) per connection was most of what 10,000 connections
// in a paused room cost, and a tenth of a KiB each.

// beats is the hub's heartbeat schedule.
type beats struct {
	mu      sync.Mutex
	slots   [wheelSlots][]*Conn
	flushed int64 // the last step served
	due     []*Conn
}

// Beat has the hub queue a heartbeat message (event "heartbeat", data
// wire.Heartbeat) to the connection every interval from now on, until it
// is closed. With always unset, a connection that had a message written
// within half an interval, or has one on its way, gets none: that message
// serves as well, so only quiet connections get one. Call it once, after
// Attach.
func (c *Conn) Beat(every time.Duration, always bool) {
	b := &c.h.beats
	b.mu.Lock()
	c.beatEvery, c.beatAlways = every, always
	c.h.fileBeat(c, time.Now().Add(every))
	b.mu.Unlock()
}

// fileBeat files c under the step of at. Needs beats.mu.
func (h *Hub) fileBeat(c *Conn, at time.Time) {
	b := &h.beats
	if b.flushed == 0 {
		b.flushed = stepOf(time.Now(), h.step()) - 1
	}
	n := min(max(stepOf(at, h.step()), b.flushed+1), b.flushed+wheelSlots)
	c.beatAt = n
	s := &b.slots[n%wheelSlots]
	*s = append(*s, c)
}

// serveBeats queues the heartbeats due up to now.
func (h *Hub) serveBeats(now time.Time) {
	b := &h.beats
	b.mu.Lock()
	last := now.UnixNano() / int64(h.step())
	if b.flushed == 0 || last <= b.flushed {
		b.mu.Unlock()
		return
	}
	due := b.due[:0]
	for n := b.flushed + 1; n <= last && n <= b.flushed+wheelSlots; n++ {
		s := &b.slots[n%wheelSlots]
		for _, c := range *s {
			if c.beatAt == n {
				due = append(due, c)
			}
		}
		clear(*s)
		if cap(*s) > 1024 {
			*s = nil
		} else {
			*s = (*s)[:0]
		}
	}
	b.flushed = last
	for _, c := range due {
		// Filed again now, so Beat's interval holds whatever the write
		// does; a closed connection is dropped below and never comes back.
		h.fileBeat(c, now.Add(c.beatEvery))
	}
	b.mu.Unlock()
	for i, c := range due {
		if !c.beat(now) {
			b.mu.Lock()
			c.beatAt = 0 // its entry is skipped when its step comes
			b.mu.Unlock()
		}
		due[i] = nil
	}
	b.due = due[:0] // only the flush loop serves beats
}

// beat queues one heartbeat unless the connection does not need it; it
// reports false once the connection is closed. A full queue gets none:
// the next position or state finds it full too and drops the connection
// as slow.
func (c *Conn) beat(now time.Time) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	busy := !c.beatAlways && (len(c.q) > 0 || now.UnixNano()-c.lastWrite < int64(c.beatEvery/2))
	c.mu.Unlock()
	if !busy {
		c.enqueue(outMsg{event: "heartbeat", data: wire.Heartbeat})
	}
	return true
}
