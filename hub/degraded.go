package hub

import "github.com/waitroom/waitroom/wire"

// SetDegraded tells the hub whether the queue store is reachable. On each
// change every waiting connection is sent what it was last shown, marked
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
					st = wire.State{Room: r.name, Status: wire.StatusWaiting, Position: c.sentPos, Paused: c.sentPaused}
					st.ETASeconds, st.NextPoll = h.src.Estimate(r.name, c.sentPos)
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
