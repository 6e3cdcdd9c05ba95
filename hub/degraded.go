package hub

import (
	"time"

	"github.com/waitroom/waitroom/wire"
)

// SetDegraded tells the hub whether the queue store is reachable. On each
// change every waiting connection is sent its place as last known, marked
// degraded (positions stand still, the place is kept) or no longer so; on
// recovery every room is then reconciled at once. Admitted, sold-out and
// other settled connections are not disturbed: their news does not depend
// on the store.
func (h *Hub) SetDegraded(on bool) {
	if h.degraded.Swap(on) == on {
		return
	}
	for _, r := range h.snapshotRooms() {
		var slow []*Conn
		r.mu.Lock()
		for _, v := range r.visitors {
			for _, c := range v.conns {
				var st wire.State
				switch c.sentStatus {
				case wire.StatusWaiting:
					// The page stops at the place as last known (and
					// moves on from there once the store is back).
					if v.placed() {
						c.sentPos = min(c.sentPos, v.position(r.head))
					}
					c.sentAt = time.Now().UnixNano()
					st = wire.State{Room: r.name, Status: wire.StatusWaiting, Position: c.sentPos, Paused: c.sentPaused}
					st.ETASeconds, st.Rate, st.NextPoll = h.src.Estimate(r.name, c.sentPos)
					c.sentRate = st.Rate
					if on || c.sentPaused {
						c.sentRate = 0
					}
				case sentPreQueue:
					if !v.st.PreQueue() {
						continue
					}
					st = v.st
				default:
					continue
				}
				st.Degraded = on
				if !c.enqueue(outMsg{event: "state", data: st.AppendJSON(nil)}) {
					slow = append(slow, c)
				}
			}
		}
		for _, c := range slow {
			h.removeLocked(c)
		}
		r.mu.Unlock()
		h.dropSlow(slow)
	}
	if !on {
		h.recon.all()
	}
}

// Degraded reports what SetDegraded last said.
func (h *Hub) Degraded() bool { return h.degraded.Load() }
