package hub

import "github.com/waitroom/waitroom/wire"

// notice is the operator's message to a room's waiting visitors as this
// hub knows it. Guarded by its room's mu.
type notice struct {
	version int64  // settings version it was read or announced with
	seq     uint64 // bumped when the text changes; connections record what they were sent
	text    string
	frame   []byte // wire.MessageFrame of text, shared by every connection
}

// setNotice takes the room's message as of settings version; an older
// version than the one known is ignored, so a slow read never undoes a
// newer event. A changed text goes to every connection of the room at
// once. It returns the connections removed as slow consumers, for
// dropSlow after r.mu is released. Needs r.mu.
func (h *Hub) setNotice(r *room, version int64, text string) []*Conn {
	n := &r.notice
	if version <= n.version {
		return nil
	}
	n.version = version
	if text == n.text {
		return nil
	}
	n.text, n.seq, n.frame = text, n.seq+1, wire.MessageFrame(r.name, text)
	var slow []*Conn
	for _, v := range r.visitors {
		for _, c := range v.conns {
			if !h.sendNotice(r, c) {
				slow = append(slow, c)
			}
		}
	}
	for _, c := range slow {
		h.removeLocked(c)
	}
	return slow
}

// sendNotice queues the room's message to c unless c has it; it reports
// false when c's queue is full. Needs r.mu.
func (h *Hub) sendNotice(r *room, c *Conn) bool {
	if c.sentNotice == r.notice.seq {
		return true
	}
	c.sentNotice = r.notice.seq
	return c.enqueue(outMsg{event: "message", data: r.notice.frame})
}

// noticeOnAttach brings the room's message up to date with the state just
// read for c's visitor and sends it to c when there is one, or when one
// was cleared here: the page behind c may still show the message its join
// or poll answer carried before the clearing, and pushed states leave the
// message out. shown is the page's word that it shows a message (Page):
// when the room has none and this instance never had one to clear, c is
// told there is none all the same. Needs r.mu.
func (h *Hub) noticeOnAttach(r *room, c *Conn, st wire.State, shown bool) []*Conn {
	slow := h.setNotice(r, st.Settings, st.Message)
	if c.removed {
		return slow
	}
	ok := true
	switch {
	case r.notice.seq > 0:
		ok = h.sendNotice(r, c)
	case shown:
		// No text here since the room was made (seq 0): the room has no
		// message, and the page's came from another instance's answer.
		ok = c.enqueue(outMsg{event: "message", data: wire.MessageFrame(r.name, "")})
	}
	if !ok {
		h.removeLocked(c)
		slow = append(slow, c)
	}
	return slow
}

// message applies a message event.
func (h *Hub) message(name string, e *wire.Event) {
	h.mu.RLock()
	r := h.rooms[name]
	h.mu.RUnlock()
	if r == nil {
		return
	}
	r.mu.Lock()
	slow := h.setNotice(r, e.Version, e.Text)
	r.mu.Unlock()
	h.dropSlow(slow)
}
