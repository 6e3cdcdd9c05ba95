package hub

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// room is the hub's index of one room: its local visitors and the in-memory
// view of the queue head.
type room struct {
	name    string
	channel string
	// waitingPrefix is the encoded start of every waiting state of the room,
	// so a position update appends its numbers instead of encoding a state.
	waitingPrefix []byte

	mu       sync.Mutex
	visitors map[string]*visitor
	nconns   int
	head     int64  // visitors admitted since the room was created (events)
	seq      uint64 // admission events applied; a reconcile read older than a visitor's touch is stale
	wheel    wheel  // when each waiting visitor is due a position update
	dead     bool   // removed from Hub.rooms; a new room takes its place

	notice notice // the operator's message to the waiting

	reconciledSeq uint64    // seq when the last reconcile started
	reconciledAt  time.Time // when the last reconcile started

	subMu      sync.Mutex // serialises the broker calls of this room
	subscribed bool       // guarded by subMu
}

func newRoom(name string) *room {
	return &room{
		name:          name,
		channel:       wire.Channel(name),
		waitingPrefix: wire.WaitingPrefix(name),
		visitors:      make(map[string]*visitor),
	}
}

// visitor is one visitor's local connections and last known state. Guarded
// by its room's mu.
type visitor struct {
	id    string
	conns []*Conn
	gone  bool // removed from its room

	// st is the last exact state (Status "" until first known): the
	// admitted state once admitted. For a waiting visitor with a place, the
	// position moves on from st.Position as the room head advances.
	st      wire.State
	pos     int64 // exact position when the room head was headAt
	headAt  int64
	due     time.Time     // no position-only update before this: the nextPoll last sent
	every   time.Duration // the nextPoll last sent
	touched uint64        // room seq of the last event that changed this visitor
	timerAt int64         // notBefore (UnixNano) a scheduler entry exists for
	ticket  keptTicket    // the place its connections' credentials carry
	filed   int64         // the flush step its wheel entry is under (0: none)
	idle    bool          // in its room's idle list
}

// placed reports whether v waits with a place in the queue (not in the
// pre-queue), so that admissions move it forward.
func (v *visitor) placed() bool {
	return v.st.Status == wire.StatusWaiting && !v.st.PreQueue()
}

// position is the visitor's position now: every admission since the exact
// read moved it forward.
func (v *visitor) position(head int64) int64 {
	return max(v.pos-(head-v.headAt), 1)
}

// apply takes an exact state read from the Source, begun when the room's
// event sequence was seq. Needs r.mu.
//
// An admission that came in during the read may or may not be in what was
// read: the read's position then bounds the visitor's place from above, as
// does the place the visitor had moved on to here, and the lower of the two
// is kept. Taking the read alone would put the visitor back by that
// admission's count until the next reconcile.
func (h *Hub) apply(r *room, v *visitor, s wire.State, seq uint64) {
	if s.Status == "" {
		return
	}
	s.Room = r.name
	switch {
	case s.Status == wire.StatusAdmitted:
		if v.st.Status == wire.StatusAdmitted && v.st.NotBefore.Equal(s.NotBefore) {
			return // already known, maybe already delivered
		}
	case s.Status == wire.StatusWaiting && !s.PreQueue():
		pos := max(s.Position, 1)
		if r.seq != seq && v.placed() && v.st.InDraw == 0 && s.InDraw == 0 {
			pos = min(pos, v.position(r.head))
		}
		v.pos, v.headAt = pos, r.head
	}
	v.st = s
}

// shown is the position c's page shows at now: the one last sent, moved
// on at the rate it came with. Needs r.mu.
func (c *Conn) shown(now time.Time) int64 {
	return wire.Shown(c.sentPos, c.sentRate, time.Duration(now.UnixNano()-c.sentAt))
}

// drifted reports whether a page showing shown, while the true position is
// pos, should be told: with no rate to move on at, whenever they differ;
// otherwise when they are further apart than a quarter of a second of
// admissions or a twentieth of the position, whichever is more: a place in
// the thousands may be off by a few seconds' worth of admissions, one near
// the front by a quarter second's (a tick's batch or two), which is the
// truth's own step between ticks.
func drifted(shown, pos int64, rate float64) bool {
	if rate <= 0 {
		return shown != pos
	}
	tol := max(int64(rate/4), pos/20, 1)
	d := shown - pos
	return d > tol || d < -tol
}

// sentPreQueue marks a connection that was last sent a pre-queue state:
// its first position after the draw is news, not a rise.
const sentPreQueue wire.Status = "waiting (pre-queue)"

// pushLocked queues to each connection of v whatever it has not been sent
// of v's state: an admitted state once notBefore has come (scheduling it
// otherwise), a new status, pause or opening at once, and a new position
// when the one its page shows (moved on at the rate last sent, see
// wire.Shown) has drifted from the true one (see drifted), no sooner than
// the nextPoll its last update carried: a waiting visitor hears no more
// often than a poll would ask, and while the queue moves at the rate it
// was told, not at all. Positions sent never go up, except the first one
// after the pre-queue's draw. It returns the connections removed as slow
// consumers, for dropSlow after r.mu is released. Needs r.mu.
func (h *Hub) pushLocked(r *room, v *visitor, now time.Time) []*Conn {
	var slow []*Conn
	send := func(c *Conn, m outMsg) {
		if !c.enqueue(m) {
			slow = append(slow, c)
		}
	}
	st := &v.st
	switch {
	case st.Status == "":
		return nil
	case st.Status == wire.StatusAdmitted:
		h.pushAdmittedLocked(r, v, now, send)
	case st.PreQueue():
		pushPreQueueLocked(v, send)
	case st.Status == wire.StatusWaiting && st.InDraw > 0:
		h.pushDrawLocked(r, v, now, send)
	case st.Status == wire.StatusWaiting:
		h.pushWaitingLocked(r, v, now, send)
	default:
		pushStatusLocked(v, send)
	}
	for _, c := range slow {
		h.removeLocked(c)
	}
	return slow
}

// pushAdmittedLocked is pushLocked for an admitted visitor: the state goes
// once to each connection when notBefore has come; before, a timer is
// scheduled for it (once per notBefore). Needs r.mu.
func (h *Hub) pushAdmittedLocked(r *room, v *visitor, now time.Time, send func(*Conn, outMsg)) {
	st := &v.st
	nb := st.NotBefore
	if now.Before(nb) {
		if v.timerAt != nb.UnixNano() {
			v.timerAt = nb.UnixNano()
			h.sched.add(timerEntry{at: nb, r: r, v: v, nb: nb.UnixNano()})
		}
		return
	}
	var data []byte
	for _, c := range v.conns {
		if c.sentStatus == wire.StatusAdmitted && c.sentNB == nb.UnixNano() {
			continue
		}
		if data == nil {
			data = st.AppendJSON(nil)
		}
		c.sentStatus, c.sentNB = wire.StatusAdmitted, nb.UnixNano()
		send(c, outMsg{event: "state", data: data, notBefore: nb})
	}
}

// pushPreQueueLocked is pushLocked for a visitor in the pre-queue: the
// state goes to each connection not yet told this opening and pause.
// Needs r.mu.
func pushPreQueueLocked(v *visitor, send func(*Conn, outMsg)) {
	st := &v.st
	opens := st.OpensAt.UnixNano()
	var data []byte
	for _, c := range v.conns {
		if c.sentStatus == sentPreQueue && c.sentOpens == opens && c.sentPaused == st.Paused {
			continue
		}
		if data == nil {
			data = st.AppendJSON(nil)
		}
		c.sentStatus, c.sentOpens, c.sentPaused = sentPreQueue, opens, st.Paused
		send(c, outMsg{event: "state", data: data})
	}
}

// pushStatusLocked is pushLocked for any other status: the state goes to
// each connection not yet told that status. Needs r.mu.
func pushStatusLocked(v *visitor, send func(*Conn, outMsg)) {
	st := &v.st
	var data []byte
	for _, c := range v.conns {
		if c.sentStatus == st.Status {
			continue
		}
		if data == nil {
			data = st.AppendJSON(nil)
		}
		c.sentStatus = st.Status
		send(c, outMsg{event: "state", data: data})
	}
}

// waitingPass is what one pass of pushWaitingLocked over a visitor's
// connections did.
type waitingPass struct {
	nextPoll time.Duration // of the last message built
	sent     bool          // a message went out
	atOnce   bool          // one went to a connection told a new status or pause
	pending  bool          // a position moved but was not due yet
	moving   bool          // a page moves on by itself: look at it again
}

// pushWaitingLocked is pushLocked for a visitor waiting in line: a new
// status or pause goes out at once, a position that drifted from what the
// page shows only when v is due, and never higher than one sent before.
// Needs r.mu.
func (h *Hub) pushWaitingLocked(r *room, v *visitor, now time.Time, send func(*Conn, outMsg)) {
	st := &v.st
	pos := v.position(r.head)
	due := !now.Before(v.due)
	if due && v.every > 0 && now.Sub(v.due) > v.every {
		// The queue stood still for a while (a pause, a quiet room):
		// when it moves again every visitor would be due at once.
		// Spread their first updates over one interval instead.
		v.due = now.Add(rand.N(v.every))
		due = false
	}
	var (
		pass    waitingPass
		data    []byte
		lastPos int64
		rate    float64
	)
	for _, c := range v.conns {
		p := pos
		if c.sentStatus == wire.StatusWaiting {
			p = min(p, c.sentPos)
			if st.Paused == c.sentPaused {
				shown := c.shown(now)
				if !drifted(shown, p, c.sentRate) {
					pass.moving = pass.moving || (c.sentRate > 0 && shown > 1)
					continue // what its page shows is close enough
				}
				if !due {
					pass.pending = true // only the position moved: it waits its turn
					continue
				}
			}
		}
		pass.atOnce = pass.atOnce || c.sentStatus != wire.StatusWaiting || st.Paused != c.sentPaused
		if data == nil || p != lastPos {
			var eta int64
			eta, rate, pass.nextPoll = h.src.Estimate(r.name, p)
			if st.Paused {
				eta, rate = 0, 0 // a paused room meets no wait: none is told
			}
			data = make([]byte, 0, len(r.waitingPrefix)+100)
			var span wire.Range
			if rs, ok := h.src.(RangeSource); ok && eta > 0 {
				span = rs.ETARange(r.name, p)
			}
			data = wire.AppendWaiting(append(data, r.waitingPrefix...), p, eta, span, rate, pass.nextPoll, st.Paused)
			// The room's activation as the visitor's last full state
			// read (join, connect, reconcile) had it.
			data = wire.AppendActivation(data, st.Activation)
			lastPos = p
		}
		c.sentStatus, c.sentPos, c.sentPaused = wire.StatusWaiting, p, st.Paused
		c.sentAt, c.sentRate = now.UnixNano(), rate
		if st.Paused {
			c.sentRate = 0 // a paused page stands still
		}
		pass.moving = pass.moving || c.sentRate > 0
		send(c, outMsg{event: "state", data: data})
		pass.sent = true
	}
	h.refileWaitingLocked(r, v, now, due, pass)
}

// refileWaitingLocked sets when v, waiting, is due next after pass and
// files it for then, or lets it rest when nothing about it can change by
// itself. Needs r.mu.
func (h *Hub) refileWaitingLocked(r *room, v *visitor, now time.Time, due bool, pass waitingPass) {
	switch {
	case pass.sent:
		next := pass.nextPoll
		if pass.atOnce {
			// A message that went to everyone at once (connect,
			// resume) would line up every visitor's next update:
			// spread those over one more interval.
			next += rand.N(pass.nextPoll + 1)
		}
		v.due, v.every = now.Add(next), pass.nextPoll
	case due && pass.moving:
		v.due = now.Add(max(v.every, h.step()))
	}
	if pass.pending || pass.moving {
		h.file(r, v, v.due)
	} else {
		r.rest(v)
	}
}

// flushLoop sends due positions and heartbeats: it serves the steps up to
// now, then sleeps until the first step anything is filed under (at most
// maxFlushSleep), woken sooner when something is filed before that.
func (h *Hub) flushLoop(ctx context.Context) {
	step := int64(h.step())
	t := time.NewTimer(time.Duration(step))
	defer t.Stop()
	served := time.Now().UnixNano()/step - 1
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-h.marks.wake:
		}
		h.marks.sleep.Store(0)
		now := time.Now()
		last := now.UnixNano() / step
		if last > served {
			h.marks.unmark(served+1, last)
			h.flushPositions()
			h.serveBeats(now)
			served = last
			h.marks.served.Store(served)
			h.marks.passes.Add(1)
		}
		next := h.marks.next(served)
		if next == 0 {
			next = served + maxFlushSleep
		}
		h.marks.sleep.Store(next)
		// A mark made before the store above did not wake the loop.
		if n := h.marks.next(served); n != 0 && n < next {
			next = n
			h.marks.sleep.Store(next)
		}
		t.Reset(time.Until(time.Unix(0, next*step)))
	}
}

// maxFlushSleep is the most steps the flush loop sleeps with nothing
// filed: less than the wheels' span.
const maxFlushSleep = wheelSlots / 2

// flushChunk is how many visitors a position flush serves per hold of a
// room's lock, so admissions and attaches of a big room are not held up.
const flushChunk = 256

// flushPositions sends each connection of a waiting visitor due in the
// steps up to now its new, lower position. Only flushLoop (and benchmarks)
// call it: it reuses h.flushBuf.
func (h *Hub) flushPositions() {
	now := time.Now()
	for _, r := range h.snapshotRooms() {
		r.mu.Lock()
		due := h.dueVisitors(r, now, h.flushBuf[:0])
		r.mu.Unlock()
		for chunk := range slices.Chunk(due, flushChunk) {
			var slow []*Conn
			r.mu.Lock()
			for _, v := range chunk {
				if !v.gone && v.placed() {
					slow = append(slow, h.pushLocked(r, v, now)...)
				}
			}
			r.mu.Unlock()
			h.dropSlow(slow)
		}
		clear(due)
		h.flushBuf = due[:0]
	}
}

// fire delivers an admitted state whose notBefore has come.
func (h *Hub) fire(e timerEntry) {
	r, v := e.r, e.v
	r.mu.Lock()
	var slow []*Conn
	if !v.gone && v.st.Status == wire.StatusAdmitted && v.st.NotBefore.UnixNano() == e.nb {
		v.timerAt = 0
		slow = h.pushLocked(r, v, time.Now())
	}
	r.mu.Unlock()
	h.dropSlow(slow)
}
