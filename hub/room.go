package hub

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"time"
)

// room is the hub's index of one room: its local visitors and the in-memory
// view of the queue head.
type room struct {
	name    string
	channel string
	// waitingPrefix is the encoded start of every waiting state of the room,
	// so the position flush appends two numbers instead of marshalling.
	waitingPrefix []byte

	mu       sync.Mutex
	visitors map[string]*visitor
	nconns   int
	head     int64  // visitors admitted since the room was created (events)
	seq      uint64 // admission events applied; a reconcile read older than a visitor's touch is stale
	dirty    uint16 // flush slices whose positions moved since they were last flushed
	dead     bool   // removed from Hub.rooms; a new room takes its place

	subMu      sync.Mutex // serialises the broker calls of this room
	subscribed bool       // guarded by subMu
}

func newRoom(name string) *room {
	q, _ := json.Marshal(name)
	prefix := append([]byte(`{"type":"state","room":`), q...)
	prefix = append(prefix, `,"status":"waiting","position":`...)
	return &room{
		name:          name,
		channel:       Channel(name),
		waitingPrefix: prefix,
		visitors:      make(map[string]*visitor),
	}
}

// Channel returns the pub/sub channel of room's events: wr:{room}:events.
func Channel(room string) string { return "wr:{" + room + "}:events" }

// roomOf returns the room of a channel made by Channel, or "".
func roomOf(channel string) string {
	const pre, suf = "wr:{", "}:events"
	if len(channel) <= len(pre)+len(suf) || channel[:len(pre)] != pre || channel[len(channel)-len(suf):] != suf {
		return ""
	}
	return channel[len(pre) : len(channel)-len(suf)]
}

// visitor is one visitor's local connections and last known state. Guarded
// by its room's mu.
type visitor struct {
	id    string
	conns []*Conn
	gone  bool // removed from its room

	status  string // "" until first known
	pos     int64  // exact position when the room head was headAt
	headAt  int64
	paused  bool
	adm     State  // the admitted state, when status is admitted
	touched uint64 // room seq of the last event that changed this visitor
	timerAt int64  // notBefore (UnixNano) a scheduler entry exists for
	slice   uint8  // the position flush slice this visitor belongs to
}

// position is the visitor's position now: every admission since the exact
// read moved it forward.
func (v *visitor) position(head int64) int64 {
	return max(v.pos-(head-v.headAt), 1)
}

// apply takes an exact state read from the Source. Needs r.mu.
func (h *Hub) apply(r *room, v *visitor, s State) {
	switch s.Status {
	case "":
	case StatusWaiting:
		v.status = StatusWaiting
		v.pos, v.headAt = max(s.Position, 1), r.head
		v.paused = s.Paused
	case StatusAdmitted:
		if v.status == StatusAdmitted && v.adm.NotBefore.Equal(s.NotBefore) {
			return // already known, maybe already delivered
		}
		v.status, v.adm = StatusAdmitted, s
	default:
		v.status = s.Status
		v.paused = s.Paused
	}
}

// pushLocked queues to each connection of v whatever it has not been sent
// of v's state: an admitted state once notBefore has come (scheduling it
// otherwise), a lower position, a new status. Positions sent never go up. It
// returns the connections removed as slow consumers, for dropSlow after
// r.mu is released. Needs r.mu.
func (h *Hub) pushLocked(r *room, v *visitor, now time.Time) []*Conn {
	var slow []*Conn
	send := func(c *Conn, m outMsg) {
		if !c.enqueue(m) {
			slow = append(slow, c)
		}
	}
	switch v.status {
	case "":
		return nil
	case StatusAdmitted:
		nb := v.adm.NotBefore
		if now.Before(nb) {
			if v.timerAt != nb.UnixNano() {
				v.timerAt = nb.UnixNano()
				h.sched.add(timerEntry{at: nb, r: r, v: v, nb: nb.UnixNano()})
			}
			return nil
		}
		var data []byte
		for _, c := range v.conns {
			if c.sentStatus == StatusAdmitted && c.sentNB == nb.UnixNano() {
				continue
			}
			if data == nil {
				data = encodeState(r.name, v.adm)
			}
			c.sentStatus, c.sentNB = StatusAdmitted, nb.UnixNano()
			send(c, outMsg{event: "state", data: data, notBefore: nb})
		}
	case StatusWaiting:
		pos := v.position(r.head)
		var lastPos int64
		var data []byte
		for _, c := range v.conns {
			p := pos
			if c.sentStatus == StatusWaiting {
				p = min(p, c.sentPos)
				if p == c.sentPos && v.paused == c.sentPaused {
					continue
				}
			}
			if data == nil || p != lastPos {
				data, lastPos = h.encodeWaiting(r, p, v.paused), p
			}
			c.sentStatus, c.sentPos, c.sentPaused = StatusWaiting, p, v.paused
			send(c, outMsg{event: "state", data: data})
		}
	default:
		var data []byte
		for _, c := range v.conns {
			if c.sentStatus == v.status {
				continue
			}
			if data == nil {
				data = encodeState(r.name, State{Status: v.status, Paused: v.paused})
			}
			c.sentStatus = v.status
			send(c, outMsg{event: "state", data: data})
		}
	}
	for _, c := range slow {
		h.removeLocked(c)
	}
	return slow
}

// encodeWaiting encodes a waiting state without reflection: the position
// flush does this once per waiting visitor.
func (h *Hub) encodeWaiting(r *room, pos int64, paused bool) []byte {
	b := make([]byte, 0, len(r.waitingPrefix)+64)
	b = append(b, r.waitingPrefix...)
	b = strconv.AppendInt(b, pos, 10)
	b = append(b, `,"etaSeconds":`...)
	b = strconv.AppendInt(b, h.src.ETA(r.name, pos), 10)
	b = append(b, `,"nextPollMs":0,"paused":`...)
	b = strconv.AppendBool(b, paused)
	return append(b, '}')
}

// wireState is the JSON of a state message.
type wireState struct {
	Type       string `json:"type"`
	Room       string `json:"room"`
	Status     string `json:"status"`
	Position   *int64 `json:"position,omitempty"`
	ETASeconds *int64 `json:"etaSeconds,omitempty"`
	NextPollMs int64  `json:"nextPollMs"`
	Paused     bool   `json:"paused"`
	Token      string `json:"token,omitempty"`
	NotBefore  string `json:"notBefore,omitempty"`
	ExpiresAt  string `json:"expiresAt,omitempty"`
}

// encodeState encodes s as a state message of room.
func encodeState(room string, s State) []byte {
	w := wireState{Type: "state", Room: room, Status: s.Status, Paused: s.Paused}
	switch s.Status {
	case StatusWaiting:
		w.Position, w.ETASeconds = &s.Position, &s.ETASeconds
	case StatusAdmitted:
		w.Token = s.Token
		w.NotBefore = s.NotBefore.UTC().Format(time.RFC3339Nano)
		w.ExpiresAt = s.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(w) // cannot fail: strings, numbers and bools only
	return b
}

// flushSlices spreads a position flush over its interval: each visitor
// belongs to one of these slices (by its id) and a slice is flushed every
// PositionEvery/flushSlices, so each visitor still hears at most once per
// PositionEvery, but 10,000 connections do not all get a write (and a
// flusher goroutine) in the same instant, delaying admitted messages.
const flushSlices = 10

const allSlices = 1<<flushSlices - 1

func sliceOf(id string) uint8 {
	var h uint32 = 2166136261 // FNV-1a
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return uint8(h % flushSlices)
}

// flushLoop sends changed positions, one slice every
// PositionEvery/flushSlices.
func (h *Hub) flushLoop(ctx context.Context) {
	t := time.NewTicker(h.opts.PositionEvery / flushSlices)
	defer t.Stop()
	var slice uint8
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.flushSlice(slice)
			slice = (slice + 1) % flushSlices
		}
	}
}

// flushChunk is how many visitors a position flush serves per hold of a
// room's lock, so admissions and attaches of a big room are not held up.
const flushChunk = 256

// flushPositions flushes every slice at once (benchmarks).
func (h *Hub) flushPositions() {
	for s := range uint8(flushSlices) {
		h.flushSlice(s)
	}
}

// flushSlice sends each connection of a waiting visitor of the slice, in a
// room that saw admissions, its new, lower position. Only flushLoop (and
// benchmarks) call it: it reuses h.flushBuf.
func (h *Hub) flushSlice(slice uint8) {
	now := time.Now()
	bit := uint16(1) << slice
	for _, r := range h.snapshotRooms() {
		r.mu.Lock()
		if r.dirty&bit == 0 {
			r.mu.Unlock()
			continue
		}
		r.dirty &^= bit
		waiting := h.flushBuf[:0]
		for _, v := range r.visitors {
			if v.slice == slice && v.status == StatusWaiting {
				waiting = append(waiting, v)
			}
		}
		r.mu.Unlock()
		for chunk := range slices.Chunk(waiting, flushChunk) {
			var slow []*Conn
			r.mu.Lock()
			for _, v := range chunk {
				if !v.gone && v.status == StatusWaiting {
					slow = append(slow, h.pushLocked(r, v, now)...)
				}
			}
			r.mu.Unlock()
			h.dropSlow(slow)
		}
		clear(waiting)
		h.flushBuf = waiting[:0]
	}
}

// fire delivers an admitted state whose notBefore has come.
func (h *Hub) fire(e timerEntry) {
	r, v := e.r, e.v
	r.mu.Lock()
	var slow []*Conn
	if !v.gone && v.status == StatusAdmitted && v.adm.NotBefore.UnixNano() == e.nb {
		v.timerAt = 0
		slow = h.pushLocked(r, v, time.Now())
	}
	r.mu.Unlock()
	h.dropSlow(slow)
}
