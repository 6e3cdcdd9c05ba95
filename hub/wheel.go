package hub

import "time"

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
		w.flushed = stepOf(time.Now(), h.step()) - 1
	}
	n = min(max(n, w.flushed+1), w.flushed+wheelSlots)
	if v.filed == n {
		return
	}
	v.filed, v.idle = n, false
	s := &w.slots[n%wheelSlots]
	*s = append(*s, v)
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
