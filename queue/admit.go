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

// The admit script's reply: {taken, tick, admitted, waiting, event}.
const (
	admitReplyTaken = iota
	admitReplyTick
	_ // admitted count
	admitReplyWaiting
	admitReplyEvent
	admitReplyLen
	admitReplyHead   = admitReplyLen     // the last admitted ticket
	admitReplyBorn   = admitReplyLen + 1 // when the room's state began
	admitReplyDraw   = admitReplyLen + 2 // the lottery's size, -1: not random
	admitReplyPHead  = admitReplyLen + 3 // the last admitted priority ticket
	admitReplyPaused = admitReplyLen + 4 // 1: the room is paused
	admitReplyDone   = admitReplyLen + 5 // the scores of the tickets done with, comma-separated
)

// Admit runs one admission tick for room: at most one batch per room per
// tick however many instances call it. Pop, token records and the publish
// are one atomic script.
func (q *Queue) Admit(ctx context.Context, room string) (Result, error) {
	if !ValidRoom(room) {
		return Result{}, ErrInvalidRoom
	}
	c := q.opts.Capacity
	lseed, err := newLotterySeed()
	if err != nil {
		return Result{}, fmt.Errorf("queue: admit: %w", err)
	}
	v, err := q.r.Eval(ctx, admitScript, []string{queueKey(room)},
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
	arr, ok := v.([]any)
	if !ok || len(arr) < admitReplyLen {
		return Result{}, fmt.Errorf("queue: admit: unexpected reply %v", v)
	}
	taken, _ := asInt(arr[admitReplyTaken])
	tick, _ := asInt(arr[admitReplyTick])
	waiting, _ := asInt(arr[admitReplyWaiting])
	res := Result{Taken: taken == 1, Tick: tick, Waiting: waiting}
	if len(arr) > admitReplyBorn {
		head, _ := asInt(arr[admitReplyHead])
		born, _ := asInt(arr[admitReplyBorn])
		var phead int64
		if len(arr) > admitReplyPHead {
			phead, _ = asInt(arr[admitReplyPHead])
		}
		if head > 0 || phead > 0 {
			q.remember(room).noteHead(head, phead, born)
		}
	}
	if len(arr) > admitReplyDone {
		if d := stringAt(arr, admitReplyDone); d != "" {
			scores, err := parseTickets(d)
			if err != nil {
				return res, fmt.Errorf("queue: admit: bad done list %q", d)
			}
			q.remember(room).noteDone(scores)
		}
	}
	if len(arr) > admitReplyPaused {
		paused, _ := asInt(arr[admitReplyPaused])
		res.Paused = paused == 1
	}
	if len(arr) > admitReplyDraw {
		size, _ := asInt(arr[admitReplyDraw])
		q.noteDraw(room, size)
	}
	if ev, _ := arr[admitReplyEvent].(string); ev != "" {
		e, err := wire.DecodeEvent([]byte(ev))
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
