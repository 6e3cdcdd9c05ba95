package hub

import (
	"time"

	"github.com/waitroom/waitroom/wire"
)

// sentDraw marks a connection that was last sent a waiting state in a
// lottery (its sentPos is the size of the draw it was told).
const sentDraw wire.Status = "waiting (draw)"

// pushDrawLocked is pushLocked for a visitor waiting in a lottery (v.st
// came from an exact read that found it in one): the room's draw size and
// chance, from the Source's DrawEstimate (the last exact read when the
// Source has none), go out when the size or the pause changed, a new size
// no more often than the nextPoll last sent, like a position. Needs r.mu.
func (h *Hub) pushDrawLocked(r *room, v *visitor, now time.Time, send func(*Conn, outMsg)) {
	st := &v.st
	size, chance, span, nextPoll := st.InDraw, st.ChancePerMinute, st.ETARange, st.NextPoll
	if ds, ok := h.src.(DrawSource); ok {
		if s, c, np, ok := ds.DrawEstimate(r.name); ok {
			size, chance, nextPoll = s, c, np
			if rs, ok := h.src.(RangeSource); ok {
				span = rs.DrawRange(r.name, size)
			}
		}
	}
	if st.Paused {
		chance, span = 0, wire.Range{} // a paused room draws nobody
	}
	due := !now.Before(v.due)
	var (
		data    []byte
		sent    bool
		pending bool
	)
	for _, c := range v.conns {
		if c.sentStatus == sentDraw && c.sentPaused == st.Paused {
			if c.sentPos == size {
				continue
			}
			if !due {
				pending = true // only the size moved: it waits its turn
				continue
			}
		}
		if data == nil {
			data = make([]byte, 0, len(r.waitingPrefix)+80)
			data = wire.AppendDraw(append(data, r.waitingPrefix...), size, chance, span, nextPoll, st.Paused)
			data = wire.AppendActivation(data, st.Activation) // as the visitor's last full state read
		}
		c.sentStatus, c.sentPos, c.sentPaused = sentDraw, size, st.Paused
		send(c, outMsg{event: "state", data: data})
		sent = true
	}
	if sent {
		v.due, v.every = now.Add(nextPoll), nextPoll
	}
	if pending {
		h.file(r, v, v.due)
	} else {
		r.rest(v)
	}
}
