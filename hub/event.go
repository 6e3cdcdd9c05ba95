package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// maxEventBytes bounds a room event; anything larger is not from the admit
// script and is ignored.
const maxEventBytes = 4 << 20

// event is a message on a room channel. Only admit is acted on in detail;
// sold_out and config make the hub reconcile the room; other types are
// ignored.
type event struct {
	Type     string       `json:"type"`
	Room     string       `json:"room"`
	Tick     flexInt      `json:"tick"`
	Count    flexInt      `json:"count"`
	Admitted []admitEntry `json:"admitted"`
}

// admitEntry is [visitorID, notBeforeUnixMs, expiresAtUnixMs].
type admitEntry struct {
	Visitor   string
	NotBefore int64
	ExpiresAt int64
}

func (e *admitEntry) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) < 3 {
		return errors.New("admitted entry needs 3 elements")
	}
	var nb, exp flexInt
	if err := json.Unmarshal(raw[0], &e.Visitor); err != nil {
		return err
	}
	if err := nb.UnmarshalJSON(raw[1]); err != nil {
		return err
	}
	if err := exp.UnmarshalJSON(raw[2]); err != nil {
		return err
	}
	e.NotBefore, e.ExpiresAt = int64(nb), int64(exp)
	return nil
}

// flexInt accepts an integer written as a JSON integer, a float (Lua's cjson
// may write 1.7329876544e+12) or a string of either.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*n = flexInt(i)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<62 {
		return errors.New("not an integer")
	}
	*n = flexInt(math.Round(f))
	return nil
}

// maxCount bounds an event's count: more is not a tick's batch.
const maxCount = 1 << 30

// decodeEvent parses a room event.
func decodeEvent(payload []byte) (event, error) {
	var e event
	if len(payload) > maxEventBytes {
		return e, fmt.Errorf("event of %d bytes is too large", len(payload))
	}
	if err := json.Unmarshal(payload, &e); err != nil {
		return e, err
	}
	if e.Count < 0 || e.Count > maxCount {
		return e, fmt.Errorf("count %d out of range", e.Count)
	}
	return e, nil
}

// handleMessage acts on one message of a room channel. Bad data is logged
// and ignored.
func (h *Hub) handleMessage(channel string, payload []byte) {
	defer func() {
		// The broker's goroutine must survive whatever arrives.
		if p := recover(); p != nil {
			h.log.Error("hub: panic handling event", "channel", channel, "panic", p)
		}
	}()
	name := roomOf(channel)
	if name == "" {
		h.log.Warn("hub: message on unknown channel", "channel", channel)
		return
	}
	e, err := decodeEvent(payload)
	if err != nil {
		h.log.Warn("hub: bad event", "room", name, "err", err, "bytes", len(payload))
		h.metrics.badEvents.Add(1)
		return
	}
	switch e.Type {
	case "admit":
		h.admit(name, &e)
	case "sold_out", "config":
		h.recon.room(name)
	default:
		h.log.Debug("hub: ignored event", "room", name, "type", e.Type)
	}
}

// admit applies an admission event: the admitted local visitors get their
// admitted state at notBefore, and every waiting visitor of the room moves
// count places forward (sent by the next position flush).
func (h *Hub) admit(name string, e *event) {
	h.mu.RLock()
	r := h.rooms[name]
	h.mu.RUnlock()
	if r == nil {
		return
	}
	count := max(int64(e.Count), int64(len(e.Admitted)))
	now := time.Now()
	var slow []*Conn
	r.mu.Lock()
	r.seq++
	if count > 0 {
		r.head += count
		r.dirty = allSlices
	}
	for _, a := range e.Admitted {
		v := r.visitors[a.Visitor]
		if v == nil || a.NotBefore <= 0 {
			continue
		}
		v.touched = r.seq
		nb := time.UnixMilli(a.NotBefore)
		if v.status == StatusAdmitted && v.adm.NotBefore.Equal(nb) {
			continue // a reconcile saw it first
		}
		s := h.src.Admitted(name, v.id, nb, time.UnixMilli(a.ExpiresAt))
		s.Status, s.NotBefore = StatusAdmitted, nb
		v.status, v.adm = StatusAdmitted, s
		slow = append(slow, h.pushLocked(r, v, now)...)
	}
	r.mu.Unlock()
	h.dropSlow(slow)
}
