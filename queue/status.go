package queue

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Join puts visitor in room's queue (or its pre-queue before opening), or
// returns its current state when it is already there (a refresh keeps the
// place). Idempotent.
func (q *Queue) Join(ctx context.Context, room, visitor string) (wire.State, error) {
	st, _, err := q.JoinTicket(ctx, room, visitor)
	return st, err
}

// JoinTicket is Join that also returns the visitor's ticket while it waits
// in the queue (zero otherwise), for its credential to carry.
func (q *Queue) JoinTicket(ctx context.Context, room, visitor string) (wire.State, wire.Ticket, error) {
	return q.join(ctx, joinScript, room, visitor)
}

func (q *Queue) join(ctx context.Context, script *luaScript, room, visitor string, extra ...string) (wire.State, wire.Ticket, error) {
	r, err := q.joinCall(ctx, script, room, visitor, extra...)
	if err != nil {
		return wire.State{}, wire.Ticket{}, err
	}
	// Every join that leaves the visitor waiting lists the room for the
	// tick loop (the set is in another slot than the room, so this is a
	// call of its own): if it fails, the join fails, and the retry lists
	// the room, so a queue is never left without ticks.
	if r.Code == replyWaiting || r.Code == replyPreQueue {
		if err := q.list(ctx, room); err != nil {
			return wire.State{}, wire.Ticket{}, err
		}
	}
	return q.joinState(room, visitor, r)
}

// joinCall runs script, a join, for visitor in room.
func (q *Queue) joinCall(ctx context.Context, script *luaScript, room, visitor string, extra ...string) (joinReply, error) {
	if err := check(room, visitor); err != nil {
		return joinReply{}, err
	}
	v, err := q.r.Eval(ctx, script.Script, script.keys(room, visitor), append(q.joinArgs(room, visitor), extra...)...)
	if err != nil {
		return joinReply{}, fmt.Errorf("queue: join: %w", err)
	}
	return decodeJoin(v)
}

// list adds room to the rooms the tick loop admits from, after a join
// left a visitor waiting in it.
func (q *Queue) list(ctx context.Context, room string) error {
	if _, err := q.r.Do(ctx, "SADD", roomsKey, room); err != nil {
		return fmt.Errorf("queue: join: %w", err)
	}
	q.poke()
	return nil
}

// joinArgs is join.lua's ARGV[1..7] for visitor in room.
func (q *Queue) joinArgs(room, visitor string) []string {
	return []string{prefix(room), visitor, seed(), q.channel(room),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10),
		strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10)}
}

// joinState is the outcome of visitor's join in room that replied r.
func (q *Queue) joinState(room, visitor string, r joinReply) (wire.State, wire.Ticket, error) {
	var t wire.Ticket
	if r.Code == replyWaiting && r.Seq > 0 {
		t = wire.Ticket{Room: room, Seq: r.Seq, IssuedAt: time.UnixMilli(r.Now), Priority: r.Prio}
		q.remember(room).noteTicket(t)
	}
	switch r.Code {
	case replySettingsChanged:
		return wire.State{}, wire.Ticket{}, ErrSettingsChanged
	case replyInviteRequired:
		return wire.State{}, wire.Ticket{}, ErrInviteRequired
	case replyInviteUsed:
		return wire.State{}, wire.Ticket{}, ErrInviteUsed
	case replyClosed:
		return wire.State{Room: room, Status: wire.StatusClosed, Message: r.Message}, wire.Ticket{}, nil
	}
	h := roomHeader{rate: q.rate(room), paused: r.Paused, settings: r.Settings, message: r.Message, draw: -1}
	if r.HasDraw && r.Code == replyWaiting {
		h.draw = r.Draw
		q.noteDraw(room, h.draw)
	}
	if r.Code == replyPreQueue {
		h.opensAt = r.A
	}
	return q.state(room, visitor, h, r.Code, r.A, r.B), t, nil
}

// Status returns visitor's state in room. Reads of a room that arrive
// together may go to Redis in one call (coalesce.go).
func (q *Queue) Status(ctx context.Context, room, visitor string) (wire.State, error) {
	if q.batches != nil {
		st, _, err := q.coalesced(ctx, batchKey{room: room, status: true}, visitor)
		return st, err
	}
	s, err := q.StatusMany(ctx, room, []string{visitor})
	if err != nil {
		return wire.State{}, err
	}
	return s[0], nil
}

// roomHeader is what a status read learns about the room.
type roomHeader struct {
	rate    float64
	paused  bool
	soldOut bool
	opensAt int64
	// settings is the version of the room's stored settings; message is
	// the operator's message to the waiting in them.
	settings int64
	message  string
	// draw is the size of the room's lottery (method random), -1 when the
	// room admits otherwise: a waiting visitor is then in the draw.
	draw int64
}

// StatusMany returns the states of several visitors of one room in one
// round trip.
func (q *Queue) StatusMany(ctx context.Context, room string, visitors []string) ([]wire.State, error) {
	if !wire.ValidRoom(room) {
		return nil, wire.ErrInvalidRoom
	}
	args := make([]string, 0, len(visitors)+3)
	args = append(args, prefix(room), seed(), q.channel(room))
	for _, v := range visitors {
		if !wire.ValidVisitor(v) {
			return nil, visitorsig.ErrInvalidToken
		}
		args = append(args, v)
	}
	v, err := q.r.Eval(ctx, statusScript.Script, statusScript.keys(room, ""), args...)
	if err != nil {
		return nil, fmt.Errorf("queue: status: %w", err)
	}
	r, err := decodeStatus(v, len(visitors))
	if err != nil {
		return nil, err
	}
	h := roomHeader{rate: float64(r.RateMilli) / 1000, paused: r.Paused, soldOut: r.SoldOut, opensAt: r.OpensAt,
		settings: r.Settings, message: r.Message, draw: r.Draw}
	q.noteDraw(room, h.draw)
	// No rate (no admissions now, as in a full max-active room, or none
	// measured yet): an earlier measured rate no longer holds.
	q.noteRate(room, h.rate)
	out := make([]wire.State, len(visitors))
	for i, vis := range visitors {
		e := r.Visitors[i]
		out[i] = q.state(room, vis, h, e.Code, e.A, e.B)
	}
	return out, nil
}

// rate is the last measured admission rate of room, or the one its own
// settings plan for (plannedRate) while none is measured.
func (q *Queue) rate(room string) float64 {
	if r, ok := q.measuredRate(room); ok {
		return r
	}
	return q.plannedRate(room)
}

// passBatch is what a passthrough room admits a tick (method.lua's
// PASS_BATCH).
const passBatch = 1000

// plannedRate is the admission rate room's own settings plan for: its
// batch (or the instance's) per tick, as admit.lua sizes a batch, and in
// a max-active room no more than its slots can turn over while each
// admitted visitor holds one for the token's idle lifetime. It stands in
// before the room measured a rate, and while the measured rate is nil (a
// full max-active room admits nobody until a slot frees), so a waiting
// visitor is never promised the instance's default rate, which the room
// may be far from.
func (q *Queue) plannedRate(room string) float64 {
	c := q.opts.Capacity
	batch, maxActive, ttl := c.BatchSize(), q.opts.MaxActive, q.opts.TokenTTL
	var cfg settings.Room
	if q.opts.Settings != nil {
		cfg, _ = q.opts.Settings.RoomSettings(room)
	}
	if cfg.Batch > 0 {
		batch = cfg.Batch
	}
	switch cfg.Strategy {
	case "fixed":
		maxActive = 0
	case "max-active":
		if cfg.MaxActive > 0 {
			maxActive = cfg.MaxActive
		}
	}
	if cfg.TokenTTL > 0 {
		ttl = cfg.TokenTTL
	}
	if cfg.Method == "passthrough" {
		batch, maxActive = passBatch, 0
	}
	rate := float64(batch) / c.Tick.Seconds()
	if maxActive > 0 && ttl > 0 {
		rate = min(rate, float64(maxActive)/ttl.Seconds())
	}
	return rate
}

// Estimate returns what a poll at position in room is told: the ETA in
// seconds from the measured admission rate (so it stays honest under
// max-active limits; the configured rate before anything was measured),
// that rate (rounded as the state carries it) and when to ask next. A push
// transport sends the same.
func (q *Queue) Estimate(room string, position int64) (eta int64, rate float64, nextPoll time.Duration) {
	r := q.rate(room)
	eta = etaAt(position, r)
	if eta > 0 {
		rate = wire.RoundRate(r)
	}
	return eta, rate, q.opts.Capacity.nextPoll(position, eta)
}

// etaAt is the one ETA formula: ceil(position / rate).
func etaAt(position int64, rate float64) int64 {
	if position <= 0 || rate <= 0 {
		return 0
	}
	// The epsilon keeps 700 / 140 at 5, not 5.000…1.
	return int64(math.Ceil(float64(position)/rate - 1e-9))
}

// ETAAt is the wait in seconds of a 1-based position at rate admissions
// per second: the one ETA formula, for what-if estimates.
func ETAAt(position int64, rate float64) int64 { return etaAt(position, rate) }

// preQueuePoll is when a visitor in the pre-queue should ask again: at
// opening, but no sooner than 500 ms and no later than 5 s.
func preQueuePoll(opensAt time.Time) time.Duration {
	return min(max(time.Until(opensAt), 500*time.Millisecond), 5*time.Second)
}

func (q *Queue) state(room, visitor string, h roomHeader, code, a, b int64) wire.State {
	s := wire.State{Room: room, Paused: h.paused, Message: h.message, Settings: h.settings}
	c := q.opts.Capacity
	rate := h.rate
	if rate <= 0 {
		rate = q.rate(room)
	}
	switch code {
	case replyWaiting:
		s.Status = wire.StatusWaiting
		if h.draw > 0 {
			// In a lottery: no place, the draw's size and chance.
			s.InDraw = h.draw
			s.ChancePerMinute, s.NextPoll = q.drawFigures(h.draw, rate)
		} else {
			s.Position = a + 1
			s.ETASeconds = etaAt(s.Position, rate)
			if s.ETASeconds > 0 {
				s.Rate = wire.RoundRate(rate)
			}
			s.NextPoll = c.nextPoll(s.Position, s.ETASeconds)
		}
		s.ETARange = q.etaRange(room, s, rate)
		if h.paused {
			// A paused room admits nobody: no wait it could meet is known,
			// so none is told (the page says the queue is paused). When to
			// ask next stays as the place's wait would have it.
			s.ETASeconds, s.Rate, s.ETARange, s.ChancePerMinute = 0, 0, wire.Range{}, 0
		}
		if h.soldOut {
			s.Status = wire.StatusSoldOut
		}
	case replyAdmitted:
		s.Status = wire.StatusAdmitted
		s.NotBefore = time.UnixMilli(a)
		s.ExpiresAt = time.UnixMilli(b)
		s.Token = q.opts.Tokens.SignToken(visitorsig.Token{Room: room, Visitor: visitor, NotBefore: s.NotBefore, ExpiresAt: s.ExpiresAt})
	case replyExpired:
		s.Status = wire.StatusExpired
	case replyAway:
		s.Status = wire.StatusExpired
		s.Reason = wire.ReasonAway
	case replyPreQueue:
		// The place is drawn at opening.
		s.Status = wire.StatusWaiting
		s.OpensAt = time.UnixMilli(a)
		s.NextPoll = preQueuePoll(s.OpensAt)
	default:
		s.Status = wire.StatusNotInQueue
	}
	return s
}

// Admitted returns the admitted state for an admission event entry.
func (q *Queue) Admitted(room, visitor string, notBefore, expiresAt time.Time) wire.State {
	return q.state(room, visitor, roomHeader{draw: -1}, replyAdmitted, notBefore.UnixMilli(), expiresAt.UnixMilli())
}

// Leave takes visitor out of room's queue, or gives back its unused token.
// It reports whether there was anything to leave.
func (q *Queue) Leave(ctx context.Context, room, visitor string) (bool, error) {
	if err := check(room, visitor); err != nil {
		return false, err
	}
	v, err := q.r.Eval(ctx, leaveScript.Script, visitorKeys(room, visitor), prefix(room), visitor)
	if err != nil {
		return false, fmt.Errorf("queue: leave: %w", err)
	}
	n, err := asInt(v)
	return n == 1, err
}
