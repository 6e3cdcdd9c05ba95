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
//
// A connection's heartbeat is due one interval after the last message
// written to it, so the longest silence is the interval itself (plus a
// grain, below), and a connection that hears something more often than
// that hears no heartbeat. The heartbeats due within a grain (a second in
// production) go out together, written in a row by a few writers: spread
// over the flush steps, each few woke a writer, and the peers' side, on
// their own.

// beatChunk is how many heartbeats one writer writes in a row. A write that
// blocks (a peer that has taken nothing for an interval and whose socket
// buffer is full) holds up the rest of its chunk until the write timeout.
const beatChunk = 64

// beats is the hub's heartbeat schedule.
type beats struct {
	mu      sync.Mutex
	slots   [wheelSlots][]*Conn
	flushed int64 // the last step served
	due     []*Conn
}

// beatGrain is how far a heartbeat may be put off so that it goes out with
// others: a sixteenth of the interval, between one flush step and a second.
func beatGrain(every, step time.Duration) time.Duration {
	return min(max(every/16, step), max(time.Second, step))
}

// BeatSilence is the longest a connection that asked for heartbeats every
// interval goes without a message (the write itself aside).
func (h *Hub) BeatSilence(every time.Duration) time.Duration {
	return every + beatGrain(every, h.step()) + h.step()
}

// Beat has the hub queue a heartbeat message (event "heartbeat", data
// wire.Heartbeat) to the connection once it has had no message for the
// interval, from now on until it is closed; with always set, every interval
// whatever else it had. Call it once, after Attach.
func (c *Conn) Beat(every time.Duration, always bool) {
	b := &c.h.beats
	b.mu.Lock()
	c.beatEvery, c.beatAlways = every, always
	c.h.fileBeat(c, time.Now().Add(every))
	b.mu.Unlock()
}

// fileBeat files c under the step of at, put off to the end of its grain.
// Needs beats.mu.
func (h *Hub) fileBeat(c *Conn, at time.Time) {
	b := &h.beats
	step := h.step()
	if b.flushed == 0 {
		b.flushed = max(stepOf(time.Now(), step)-1, h.marks.served.Load())
	}
	g := int64(beatGrain(c.beatEvery, step))
	ns := at.UnixNano()
	if r := ns % g; r != 0 {
		ns += g - r
	}
	// A due beyond the wheel is filed in its last slot and looked at again
	// from there (see beatDue).
	n := min(max(stepOf(time.Unix(0, ns), step), b.flushed+1), b.flushed+wheelSlots)
	c.beatAt = n
	s := &b.slots[n%wheelSlots]
	*s = append(*s, c)
	h.marks.mark(n)
}

// serveBeats writes the heartbeats due up to now.
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
	b.mu.Unlock()
	if len(due) == 0 {
		b.due = due
		return
	}

	// Decide for each connection outside the schedule's lock (beatDue
	// takes the connection's), then file them all again at once.
	nexts := make([]int64, len(due))
	var send []*Conn
	for i, c := range due {
		next, beat := c.beatDue(now)
		nexts[i] = next
		if beat && c.claim(outMsg{event: "heartbeat", data: wire.Heartbeat}) {
			send = append(send, c)
		}
	}
	b.mu.Lock()
	for i, c := range due {
		if nexts[i] == 0 {
			c.beatAt = 0 // closed: its entry is skipped when its step comes
		} else {
			h.fileBeat(c, time.Unix(0, nexts[i]))
		}
		due[i] = nil
	}
	b.mu.Unlock()
	b.due = due[:0] // only the flush loop serves beats

	for len(send) > 0 {
		chunk := send[:min(beatChunk, len(send))]
		send = send[len(chunk):]
		if !h.runBulk(func() {
			for _, c := range chunk {
				c.flush()
			}
		}) {
			for _, c := range chunk {
				c.unclaim()
			}
		}
	}
}

// beatDue reports when c's heartbeat is next due (UnixNano; 0 once c is
// closed) and whether one is due now. A connection with a message on its
// way or written within the interval needs none yet.
func (c *Conn) beatDue(now time.Time) (next int64, beat bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, false
	}
	every := int64(c.beatEvery)
	t := now.UnixNano()
	switch {
	case c.beatAlways:
		return t + every, true
	case len(c.q) > 0 || c.flushing:
		return t + every, false
	case c.lastWrite > 0 && t-c.lastWrite < every:
		return c.lastWrite + every, false
	}
	return t + every, true
}

// claim queues m for a writer that the caller starts with flush; it
// reports false when c needs no writer from the caller: closed, a full
// queue (the next position or state finds it full too and drops the
// connection as slow), or a flusher already running, which takes m too.
func (c *Conn) claim(m outMsg) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.q) >= c.h.opts.SendQueue {
		return false
	}
	c.q = append(c.q, m)
	if c.flushing {
		return false
	}
	c.flushing = true
	return true
}

// unclaim gives up a claim whose writer could not start (the hub has
// stopped; the connection is being closed anyway).
func (c *Conn) unclaim() {
	c.mu.Lock()
	c.flushing = false
	c.mu.Unlock()
}
