package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Result is what one Admit call did.
type Result struct {
	Taken    bool  // false: another caller already took this tick
	Tick     int64 // tick number: floor(Redis TIME / tick)
	Admitted []wire.Admission
	Waiting  int64 // left in the queue
}

// The admit script's reply: {taken, tick, admitted, waiting, event}.
const (
	admitReplyTaken = iota
	admitReplyTick
	_ // admitted count
	admitReplyWaiting
	admitReplyEvent
	admitReplyLen
)

// Admit runs one admission tick for room: at most one batch per room per
// tick however many instances call it. Pop, token records and the publish
// are one atomic script.
func (q *Queue) Admit(ctx context.Context, room string) (Result, error) {
	if !ValidRoom(room) {
		return Result{}, ErrInvalidRoom
	}
	c := q.opts.Capacity
	v, err := q.r.Eval(ctx, admitScript, []string{queueKey(room)},
		prefix(room), room, wire.Channel(room),
		strconv.FormatInt(c.Tick.Milliseconds(), 10),
		strconv.Itoa(c.BatchSize()),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10),
		strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10),
		seed(),
		strconv.Itoa(q.opts.MaxActive),
		jitterArg(q.opts.NoJitter),
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

// Rooms lists the rooms with waiting visitors.
func (q *Queue) Rooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SMEMBERS", roomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}

func validRooms(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok && ValidRoom(s) {
			out = append(out, s)
		}
	}
	return out
}

// forget drops room from the rooms set once its queue is empty. The ZCARD
// after SREM closes the race with a join that lands in between.
func (q *Queue) forget(ctx context.Context, room string) error {
	if _, err := q.r.Do(ctx, "SREM", roomsKey, room); err != nil {
		return err
	}
	v, err := q.r.Do(ctx, "ZCARD", queueKey(room))
	if err != nil {
		return err
	}
	pre, err := q.r.Do(ctx, "SCARD", prefix(room)+"pre")
	if err != nil {
		return err
	}
	n, _ := asInt(v)
	m, _ := asInt(pre)
	if n+m > 0 {
		_, err = q.r.Do(ctx, "SADD", roomsKey, room)
	}
	return err
}

// Run admits visitors of every room with waiting visitors once per tick
// until ctx ends. Ticks fire just after each tick boundary; the script's
// tick record makes sure that several instances admit one batch per tick.
func (q *Queue) Run(ctx context.Context) error {
	tick := q.opts.Capacity.Tick
	t := time.NewTimer(untilNextTick(time.Now(), tick))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		q.tickOnce(ctx)
		t.Reset(untilNextTick(time.Now(), tick))
	}
}

// untilNextTick aims a little past the next boundary so that a caller a few
// ms early does not land in the tick it already took.
func untilNextTick(now time.Time, tick time.Duration) time.Duration {
	offset := tick / 10
	d := tick - time.Duration(now.UnixNano())%tick + offset
	if d > tick {
		d -= tick
	}
	return d
}

func (q *Queue) tickOnce(ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick*5)
	defer cancel()
	rooms, err := q.Rooms(tctx)
	if err != nil {
		if ctx.Err() == nil {
			q.log.Warn("tick: rooms", "err", err)
		}
		return
	}
	for _, room := range rooms {
		res, err := q.Admit(tctx, room)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("tick: admit", "room", room, "err", err)
			}
			continue
		}
		if n := len(res.Admitted); n > 0 && q.opts.OnAdmit != nil {
			q.opts.OnAdmit(room, n)
		}
		if res.Taken && res.Waiting == 0 {
			if err := q.forget(tctx, room); err != nil && ctx.Err() == nil {
				q.log.Warn("tick: forget room", "room", room, "err", err)
			}
		}
	}
}
