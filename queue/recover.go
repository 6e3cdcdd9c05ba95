package queue

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// SettingsSource says what a room's settings should be when Redis has lost
// them: the rooms file of the deployment, or the settings an instance last
// read. ok is false when the source does not know the room.
type SettingsSource interface {
	RoomSettings(room string) (c settings.Room, ok bool)
	// SettingsRooms lists the rooms the source knows.
	SettingsRooms() []string
}

// Restored says what a restore put back, for logs and metrics.
type Restored struct {
	Room     string
	Settings bool // the room's settings were missing and were written back
	Tickets  int  // visitors whose tickets were taken back
	Removed  int  // queued visitors taken out because they were already let in
	Tokens   int  // entry tokens whose records were written back
}

// memo is what this instance remembers of a room, to put back when Redis
// lost it: the last ticket admitted (with the moment the state it was
// admitted from began) and the highest ticket it saw given, in each band
// (public and priority).
type memo struct {
	mu    sync.Mutex
	head  int64
	phead int64
	born  int64
	seq   atomic.Int64
	pseq  atomic.Int64
	// done and pdone are the tickets of each band this instance saw done
	// with (admitted or dropped, by its own admit calls): a lottery admits
	// out of ticket order, so no head says which were let in.
	done, pdone doneBits
}

// maxDoneTicket bounds the tickets a memo's bitmaps hold (and SETBIT's
// offsets).
const maxDoneTicket = 1<<32 - 1

// maxDoneBytes bounds each band's bitmap of a memo: 1 MiB, the last
// 8,388,608 tickets. A ticket further behind the newest one done with is
// forgotten: were Redis to lose its data, a visitor holding it could get
// a place back, which in a room that admits in order its head prevents
// (tickets at or below it never come back) and in a lottery takes more
// tickets handed out while it waits than a room has places.
const maxDoneBytes = 1 << 20

// doneBits is a window of a bitmap of tickets as Redis stores it (bit n
// is byte n/8, most significant bit first): bits holds bytes at, at+1, …
// of it, at most maxDoneBytes, and moves on to the newest tickets.
type doneBits struct {
	at   int64
	bits []byte
}

// noteDone remembers the tickets of scores (queue scores: a ticket, or
// ticket - priorityBase in the priority band) as done with.
func (m *memo) noteDone(scores []int64) {
	if len(scores) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sc := range scores {
		t := scoreTicket(sc)
		// The ticket was given: a counter put back goes past it.
		m.noteTicket(t)
		bits := &m.done
		if t.Priority {
			bits = &m.pdone
		}
		bits.set(t.Seq)
	}
}

// isDone reports whether this instance saw t done with.
func (m *memo) isDone(t wire.Ticket) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Priority {
		return m.pdone.has(t.Seq)
	}
	return m.done.has(t.Seq)
}

// doneBitmaps returns copies of the bitmaps of both bands, each with the
// byte offset it starts at.
func (m *memo) doneBitmaps() (done string, doneAt int64, pdone string, pdoneAt int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return string(m.done.bits), m.done.at, string(m.pdone.bits), m.pdone.at
}

// set marks ticket n, moving the window on to it when it is past the
// window's end, and widening it back when it is before the start and the
// window has room; a ticket that does not fit is forgotten.
func (d *doneBits) set(n int64) {
	if n < 1 || n > maxDoneTicket {
		return
	}
	i := n / 8
	switch {
	case len(d.bits) == 0:
		d.at, d.bits = i, d.bits[:0]
	case i < d.at:
		end := d.at + int64(len(d.bits))
		if end-i > maxDoneBytes {
			return // older than the window holds
		}
		grown := make([]byte, end-i)
		copy(grown[d.at-i:], d.bits)
		d.at, d.bits = i, grown
	case i-d.at >= maxDoneBytes:
		// Past the window: drop its oldest bytes.
		at := i - maxDoneBytes + 1
		if drop := at - d.at; drop < int64(len(d.bits)) {
			d.bits = d.bits[:copy(d.bits, d.bits[drop:])]
		} else {
			d.bits = d.bits[:0]
		}
		d.at = at
	}
	j := int(i - d.at)
	if j >= len(d.bits) {
		d.bits = append(d.bits, make([]byte, j+1-len(d.bits))...)
	}
	d.bits[j] |= 0x80 >> (n % 8)
}

// has reports whether ticket n is marked (false when outside the window).
func (d *doneBits) has(n int64) bool {
	if n < 1 || n > maxDoneTicket {
		return false
	}
	j := n/8 - d.at
	if j < 0 || j >= int64(len(d.bits)) {
		return false
	}
	return d.bits[j]&(0x80>>(n%8)) != 0
}

// priorityBase is the offset of the priority band's queue scores
// (PRIO_BASE in scripts/priority.lua): a priority ticket s is at s - 10^12.
const priorityBase = 1_000_000_000_000

// scoreTicket is the ticket a queue score stands for.
func scoreTicket(score int64) wire.Ticket {
	if score < 0 {
		return wire.Ticket{Seq: score + priorityBase, Priority: true}
	}
	return wire.Ticket{Seq: score}
}

func (m *memo) noteHead(head, phead, born int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if born != m.born {
		// The first admission from a state that began since: the old head
		// was written back before anything was admitted from it.
		if born > m.born {
			m.born, m.head, m.phead = born, head, phead
		}
		return
	}
	m.head = max(m.head, head)
	m.phead = max(m.phead, phead)
}

// noteTicket remembers a ticket given, in its band.
func (m *memo) noteTicket(t wire.Ticket) {
	if t.Priority {
		raise(&m.pseq, t.Seq)
	} else {
		raise(&m.seq, t.Seq)
	}
}

func raise(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if v <= cur || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

// memoState is a memo's content at one moment.
type memoState struct{ head, phead, born, seq, pseq int64 }

func (m *memo) snapshot() memoState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return memoState{m.head, m.phead, m.born, m.seq.Load(), m.pseq.Load()}
}

// remember returns room's memo, made on first use.
func (q *Queue) remember(room string) *memo {
	m := q.roomMemFor(room)
	m.remembered.Store(true)
	return &m.memo
}

// settingsArgs are the retake script's settings arguments for room: the
// count of field pairs (-1 when no source knows the room) and the pairs.
func (q *Queue) settingsArgs(room string) []string {
	if q.opts.Settings == nil {
		return []string{"-1"}
	}
	c, ok := q.opts.Settings.RoomSettings(room)
	if !ok || c.Validate() != nil {
		return []string{"-1"}
	}
	f := c.Hash()
	return append([]string{strconv.Itoa(len(f) / 2)}, f...)
}

// Retake gives visitors of room whose places Redis lost their tickets back,
// each at its original score (ZADD NX), so the order among them and towards
// everyone else is the order before the loss; it raises the room's ticket
// counter past every ticket, and first puts back the room's settings if
// they are missing (from Options.Settings). A ticket is taken back only
// when Redis no longer knows its visitor: neither in the queue nor holding
// a token, and not let in before the loss (as far as any instance that
// calls this remembers). tickets[i] belongs to visitors[i]; tickets of
// other rooms are skipped. With no tickets, Retake only puts back what this
// instance remembers of the room.
func (q *Queue) Retake(ctx context.Context, room string, visitors []string, tickets []wire.Ticket) (Restored, error) {
	if !wire.ValidRoom(room) {
		return Restored{}, wire.ErrInvalidRoom
	}
	m := q.remember(room)
	for _, t := range tickets {
		if t.Room == room {
			m.noteTicket(t)
		}
	}
	ms := m.snapshot()
	// What this instance knows of tickets done with goes to Redis when it
	// writes back (no tickets: after a loss, or a room missing); a
	// visitor's own retake skips a ticket it knows is done.
	var done, pdone string
	var doneAt, pdoneAt int64
	if len(tickets) == 0 {
		done, doneAt, pdone, pdoneAt = m.doneBitmaps()
	}
	args := []string{prefix(room), room, q.channel(room),
		strconv.FormatInt(ms.head, 10), strconv.FormatInt(ms.born, 10), strconv.FormatInt(ms.seq, 10),
		strconv.FormatInt(ms.phead, 10), strconv.FormatInt(ms.pseq, 10), done, pdone,
		strconv.FormatInt(doneAt, 10), strconv.FormatInt(pdoneAt, 10)}
	args = append(args, q.settingsArgs(room)...)
	for i, t := range tickets {
		if t.Room != room || t.IsZero() || i >= len(visitors) || !wire.ValidVisitor(visitors[i]) || m.isDone(t) {
			continue
		}
		band := "0"
		if t.Priority {
			band = "1"
		}
		args = append(args, visitors[i], strconv.FormatInt(t.Seq, 10), strconv.FormatInt(t.IssuedAt.UnixMilli(), 10), band)
	}
	v, err := q.r.Eval(ctx, retakeScript.Script, roomKeys(room), args...)
	if err != nil {
		return Restored{}, fmt.Errorf("queue: retake: %w", err)
	}
	r, err := decodeRetake(v, room)
	if err != nil {
		return Restored{}, err
	}
	q.restored(r)
	// Settings put back with an opening to come bring back a committed
	// draw seed too (commitDraw keeps one that survived): without it the
	// opening would draw with an uncommitted seed nobody could check.
	if r.Settings && q.opts.Settings != nil {
		if c, ok := q.opts.Settings.RoomSettings(room); ok && !c.OpensAt.IsZero() {
			if err := q.commitDraw(ctx, room); err != nil {
				return r, fmt.Errorf("queue: retake: %w", err)
			}
		}
	}
	// The room's lists are in another slot, so these are calls of their
	// own. They are made whenever there was anything to put back, not only
	// when this call put it back: a retry after one of them failed lists
	// the room then.
	if r.Settings || q.knowsSettings(room) {
		if _, err := q.r.Do(ctx, "SADD", configuredRoomsKey, room); err != nil {
			return r, fmt.Errorf("queue: retake: %w", err)
		}
	}
	if len(tickets) > 0 || r.Settings {
		// As a join does: the tick loop must see the room.
		if _, err := q.r.Do(ctx, "SADD", roomsKey, room); err != nil {
			return r, fmt.Errorf("queue: retake: %w", err)
		}
		q.poke()
	}
	return r, nil
}

// knowsSettings reports whether Options.Settings knows room.
func (q *Queue) knowsSettings(room string) bool {
	if q.opts.Settings == nil {
		return false
	}
	_, ok := q.opts.Settings.RoomSettings(room)
	return ok
}

// restoreLogEvery is how often at most a room's restores are logged: a
// thousand visitors coming back one by one make one line, not a thousand.
const restoreLogEvery = 5 * time.Second

// restoreLog sums what was put back in a room since it was last logged.
type restoreLog struct {
	mu   sync.Mutex
	at   time.Time
	sum  Restored
	runs int
}

// restored reports a restore that put anything back: counted at once,
// logged as a warning at most every restoreLogEvery per room.
func (q *Queue) restored(r Restored) {
	if !r.Settings && r.Tickets == 0 && r.Removed == 0 && r.Tokens == 0 {
		return
	}
	if q.opts.OnRestored != nil {
		q.opts.OnRestored(r)
	}
	l := &q.roomMemFor(r.Room).log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sum.Settings = l.sum.Settings || r.Settings
	l.sum.Tickets += r.Tickets
	l.sum.Removed += r.Removed
	l.sum.Tokens += r.Tokens
	l.runs++
	if now := time.Now(); now.Sub(l.at) >= restoreLogEvery || r.Settings {
		q.log.Warn("redis had lost room state; put back what this instance remembers", "room", r.Room,
			"settings", l.sum.Settings, "tickets", l.sum.Tickets, "removed", l.sum.Removed, "tokens", l.sum.Tokens, "calls", l.runs)
		l.at, l.sum, l.runs = now, Restored{}, 0
	}
}

// writeBack puts back what this instance remembers of every room it knows
// (settings from Options.Settings, admitted heads, ticket counters and the
// tickets done with): the tick loop calls it when Redis comes back after a
// failure and when a room it remembers is missing from the configured
// rooms. It stops at the first room that fails and returns that error: the
// caller tries again, since a room not written back would let another
// instance give a visitor let in here a place again.
func (q *Queue) writeBack(ctx context.Context, rooms []string) error {
	for _, room := range rooms {
		if _, err := q.Retake(ctx, room, nil, nil); err != nil {
			if ctx.Err() == nil {
				q.log.Warn("restore room state", "room", room, "err", err)
			}
			return err
		}
	}
	return nil
}

// settingsRooms lists the rooms Options.Settings knows, once each.
func (q *Queue) settingsRooms() []string {
	if q.opts.Settings == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range q.opts.Settings.SettingsRooms() {
		if !seen[r] && wire.ValidRoom(r) {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// writeBackOthers writes back, on a goroutine of its own (one at a time),
// what this instance remembers of the rooms not in done: rooms visitors
// made, of which there may be thousands.
func (q *Queue) writeBackOthers(ctx context.Context, done []string) {
	skip := make(map[string]bool, len(done))
	for _, r := range done {
		skip[r] = true
	}
	var rooms []string
	q.rooms.Range(func(k, v any) bool {
		if r := k.(string); !skip[r] && v.(*roomMem).remembered.Load() {
			rooms = append(rooms, r)
		}
		return true
	})
	if len(rooms) == 0 || !q.writingBack.CompareAndSwap(false, true) {
		return
	}
	q.bg.Go(func() {
		defer q.writingBack.Store(false)
		if q.writeBack(ctx, rooms) != nil {
			// The next tick tries again (and writes back the rest).
			q.recovery.markLost()
		}
	})
}

// revive writes back the record of a signed token that Redis lost (see
// revive.lua); it reports whether it did.
func (q *Queue) revive(ctx context.Context, t visitorsig.Token, use Use, idleMs int64) (bool, error) {
	touch := "0"
	if use == Touch {
		touch = "1"
	}
	v, err := q.r.Eval(ctx, reviveScript.Script, visitorKeys(t.Room, t.Visitor),
		prefix(t.Room), t.Visitor, strconv.FormatInt(t.NotBefore.UnixMilli(), 10),
		strconv.FormatInt(t.ExpiresAt.UnixMilli(), 10), touch, strconv.FormatInt(idleMs, 10),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10), strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10))
	if err != nil {
		return false, fmt.Errorf("queue: revive: %w", err)
	}
	n, err := asInt(v)
	if err != nil || n != 1 {
		return false, err
	}
	q.restored(Restored{Room: t.Room, Tokens: 1})
	return true, nil
}
