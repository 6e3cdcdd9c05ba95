package hub

import (
	"time"

	"github.com/waitroom/waitroom/wire"
)

// handleMessage acts on one message of a room channel. Bad data is logged
// and ignored.
func (h *Hub) handleMessage(channel string, payload []byte) {
	defer func() {
		// The broker's goroutine must survive whatever arrives.
		if p := recover(); p != nil {
			h.log.Error("hub: panic handling event", "channel", channel, "panic", p)
		}
	}()
	name := wire.RoomOf(channel)
	if name == "" {
		h.log.Warn("hub: message on unknown channel", "channel", channel)
		return
	}
	e, err := wire.DecodeEvent(payload)
	if err != nil {
		h.log.Warn("hub: bad event", "room", name, "err", err, "bytes", len(payload))
		h.metrics.badEvents.Add(1)
		return
	}
	switch e.Type {
	case wire.EventAdmit:
		h.admit(name, &e)
	case wire.EventMessage:
		h.message(name, &e)
	case wire.EventSoldOut, wire.EventConfig, wire.EventOpen:
		// Every visitor's state may have changed: read it at once.
		h.recon.room(name)
	default:
		h.log.Debug("hub: ignored event", "room", name, "type", e.Type)
	}
}

// admit applies an admission event: the admitted local visitors get their
// admitted state at notBefore, and every waiting visitor of the room moves
// count places forward (sent by the next position flush).
func (h *Hub) admit(name string, e *wire.Event) {
	h.mu.RLock()
	r := h.rooms[name]
	h.mu.RUnlock()
	if r == nil {
		return
	}
	count := max(e.Count, int64(len(e.Admitted)))
	now := time.Now()
	var slow []*Conn
	r.mu.Lock()
	r.seq++
	if count > 0 {
		r.head += count
		h.moved(r)
	}
	for _, a := range e.Admitted {
		v := r.visitors[a.Visitor]
		if v == nil {
			continue
		}
		v.touched = r.seq
		if v.st.Status == wire.StatusAdmitted && v.st.NotBefore.Equal(a.NotBefore) {
			continue // a reconcile saw it first
		}
		s := h.src.Admitted(name, v.id, a.NotBefore, a.ExpiresAt)
		s.Room, s.Status, s.NotBefore = name, wire.StatusAdmitted, a.NotBefore
		v.st = s
		slow = append(slow, h.pushLocked(r, v, now)...)
	}
	r.mu.Unlock()
	h.dropSlow(slow)
}
