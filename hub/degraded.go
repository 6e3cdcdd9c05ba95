package hub

import (
	"context"
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
					if c.sentPaused {
						st.ETASeconds, st.Rate = 0, 0
					}
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

// storeDownAfter is how many failed pings in a row mark the store
// unreachable: one slow answer is not an outage.
const storeDownAfter = 2

// watchStore pings the store every PingEvery until ctx ends and puts the
// hub in and out of the degraded state, so waiting visitors read "positions
// paused, your place is kept" instead of figures that silently froze.
func (h *Hub) watchStore(ctx context.Context) {
	every := h.opts.PingEvery
	t := time.NewTicker(every)
	defer t.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := h.opts.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fails++
		} else {
			fails = 0
		}
		switch down := fails >= storeDownAfter; {
		case down && !h.Degraded():
			h.log.Warn("redis unreachable: push clients told positions are paused", "err", err)
			h.SetDegraded(true)
		case !down && fails == 0 && h.Degraded():
			h.log.Info("redis reachable again")
			h.SetDegraded(false)
		}
	}
}
