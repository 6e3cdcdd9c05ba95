package queue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/waitroom/waitroom/wire"
)

// Result is what one Admit call did.
type Result struct {
	Taken    bool  // false: another caller already took this tick
	Tick     int64 // tick number: floor(Redis TIME / tick)
	Admitted []wire.Admission
	Waiting  int64 // left in the queue
	Paused   bool  // the room is paused
}

// Admit runs one admission tick for room: at most one batch per room per
// tick however many instances call it. Pop, token records and the publish
// are one atomic script.
func (q *Queue) Admit(ctx context.Context, room string) (Result, error) {
	if !wire.ValidRoom(room) {
		return Result{}, wire.ErrInvalidRoom
	}
	c := q.opts.Capacity
	lseed, err := newLotterySeed()
	if err != nil {
		return Result{}, fmt.Errorf("queue: admit: %w", err)
	}
	v, err := q.r.Eval(ctx, admitScript.Script, roomKeys(room),
		prefix(room), room, q.channel(room),
		strconv.FormatInt(c.Tick.Milliseconds(), 10),
		strconv.Itoa(c.BatchSize()),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10),
		strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10),
		seed(),
		strconv.Itoa(q.opts.MaxActive),
		jitterArg(q.opts.NoJitter),
		lseed, Commitment(lseed),
	)
	if err != nil {
		return Result{}, fmt.Errorf("queue: admit: %w", err)
	}
	r, err := decodeAdmit(v)
	if err != nil {
		return Result{}, fmt.Errorf("queue: admit: %w", err)
	}
	res := Result{Taken: r.Taken, Tick: r.Tick, Waiting: r.Waiting, Paused: r.Paused}
	if r.HasHead && (r.Head > 0 || r.PHead > 0) {
		q.remember(room).noteHead(r.Head, r.PHead, r.Born)
	}
	if r.Done != "" {
		scores, err := parseTickets(r.Done)
		if err != nil {
			return res, fmt.Errorf("queue: admit: bad done list %q", r.Done)
		}
		q.remember(room).noteDone(scores)
	}
	if r.HasDraw {
		q.noteDraw(room, r.Draw)
	}
	if r.Event != "" {
		e, err := wire.DecodeEvent([]byte(r.Event))
		if err != nil {
			return res, fmt.Errorf("queue: admit: bad event: %w", err)
		}
		res.Admitted = e.Admitted
	}
	return res, nil
}

func jitterArg(off bool) string {
	if off {
		return "0"
	}
	return "1"
}
