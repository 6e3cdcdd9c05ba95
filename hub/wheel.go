package hub

import (
	"sync/atomic"
	"time"
)

// The position flush finds the visitors due for a new position without
// looking at the others. A visitor whose place moved and who may hear of it
// at v.due is filed in its room's wheel under the flush step of v.due; one
// told its current place waits in the room's idle list until the head moves
// again (an admission), which files it under its due. A flush step then
// serves one slot: the visitors due in it, not every visitor of the room.
// Scanning all of them every step was a tenth of the server's CPU at 10,000
// connections, and most of what a paused room cost.

// flushSteps is how many flush steps make one PositionEvery: the wheel's
// resolution, so updates spread over the interval instead of all going out
// in the same instant.
const flushSteps = 5

// wheelSlots is how many flush steps ahead a visitor can be filed: more than
// the longest interval between two updates (5 s, plus as much again when a
// first update is spread) at the default step. A later due is filed in the
// last slot and filed again from there.
const wheelSlots = 256

// marks notes which steps (modulo wheelSlots) have anything filed under
// them, in any room's wheel or in the heartbeats', so that the flush loop
// sleeps until the first of them instead of waking every step: ten wakes a
// second for nothing were most of what the hub cost an idle instance.
type marks struct {
	bits  [wheelSlots / 64]atomic.Uint64
	sleep atomic.Int64 // the step the flush loop sleeps until; 0 while it serves
	// served is the last step the flush loop served: a wheel begun after
	// it starts there, so that nothing is filed under a step the loop has
	// passed (at a step boundary, stepOf(now)-1 is one step before).
	served atomic.Int64
	passes atomic.Int64  // serving passes made, for tests
	wake   chan struct{} // cap 1: something was filed before sleep
}

func (m *marks) init() { m.wake = make(chan struct{}, 1) }

func markBit(n int64) (word int, bit uint64) {
	i := uint64(n) % wheelSlots
	return int(i / 64), 1 << (i % 64)
}

// mark notes that something is filed under step n, and wakes the flush
// loop if it sleeps past n.
func (m *marks) mark(n int64) {
	w, bit := markBit(n)
	if m.bits[w].Load()&bit == 0 {
		m.bits[w].Or(bit)
	}
	if s := m.sleep.Load(); s != 0 && n < s {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// unmark forgets the marks of steps from..to, before they are served:
// what is filed under them while they are served is taken by the serving,
// or filed later and marked again.
func (m *marks) unmark(from, to int64) {
	for n := from; n <= to && n < from+wheelSlots; n++ {
		w, bit := markBit(n)
		m.bits[w].And(^bit)
	}
}

// next returns the first marked step after last (within wheelSlots), or 0.
func (m *marks) next(last int64) int64 {
	for n := last + 1; n <= last+wheelSlots; n++ {
		w, bit := markBit(n)
		if m.bits[w].Load()&bit != 0 {
			return n
		}
	}
	return 0
}

// wheel is a room's schedule of position updates. Guarded by the room's mu.
type wheel struct {
	slots   [wheelSlots][]*visitor
	flushed int64      // the last step served
	idle    []*visitor // told their place; filed again when the head moves
}

// step returns the flush step of the hub.
func (h *Hub) step() time.Duration { return max(h.opts.PositionEvery/flushSteps, time.Millisecond) }

// stepOf returns the first step at or after t.
func stepOf(t time.Time, step time.Duration) int64 {
	ns := t.UnixNano()
	n := ns / int64(step)
	if ns%int64(step) != 0 {
		n++
	}
	return n
}

// file puts v in r's wheel under the step of at (the next step if at has
// passed). Needs r.mu.
func (h *Hub) file(r *room, v *visitor, at time.Time) {
	w := &r.wheel
	n := stepOf(at, h.step())
	if w.flushed == 0 {
		w.flushed = max(stepOf(time.Now(), h.step())-1, h.marks.served.Load())
	}
	n = min(max(n, w.flushed+1), w.flushed+wheelSlots)
	if v.filed == n {
		return
	}
	v.filed, v.idle = n, false
	s := &w.slots[n%wheelSlots]
	*s = append(*s, v)
	h.marks.mark(n)
}

// rest moves v to r's idle list: it was told its place, and only a moving
// head gives it news. Needs r.mu.
func (r *room) rest(v *visitor) {
	if v.idle || v.filed != 0 {
		return
	}
	v.idle = true
	w := &r.wheel
	if len(w.idle) >= 64 && len(w.idle) >= 2*len(r.visitors) {
		// Entries of visitors that left or were filed since pile up in a
		// room that does not move: keep only those still resting.
		kept := w.idle[:0]
		for _, x := range w.idle {
			if x.idle && !x.gone {
				kept = append(kept, x)
			}
		}
		clear(w.idle[len(kept):])
		w.idle = kept
	}
	w.idle = append(w.idle, v)
}

// moved files every resting visitor of r under its due: the head moved.
// Needs r.mu.
func (h *Hub) moved(r *room) {
	w := &r.wheel
	for _, v := range w.idle {
		if v.idle && !v.gone {
			h.file(r, v, v.due)
		}
	}
	clear(w.idle)
	if cap(w.idle) > 1024 && cap(w.idle) > 4*len(r.visitors) {
		w.idle = nil
	} else {
		w.idle = w.idle[:0]
	}
}

// dueVisitors takes the visitors filed under the steps up to now that have
// not been served, appending them to buf. Needs r.mu.
func (h *Hub) dueVisitors(r *room, now time.Time, buf []*visitor) []*visitor {
	w := &r.wheel
	last := now.UnixNano() / int64(h.step()) // the last step that has begun
	if w.flushed == 0 {
		w.flushed = last
		return buf
	}
	for n := w.flushed + 1; n <= last && n <= w.flushed+wheelSlots; n++ {
		s := &w.slots[n%wheelSlots]
		for _, v := range *s {
			if v.filed == n {
				v.filed = 0
				if !v.gone {
					buf = append(buf, v)
				}
			}
		}
		clear(*s)
		if cap(*s) > 1024 {
			*s = nil
		} else {
			*s = (*s)[:0]
		}
	}
	if last > w.flushed {
		w.flushed = last
	}
	return buf
}
