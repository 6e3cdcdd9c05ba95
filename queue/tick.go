package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/wire"
)

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
		if s, ok := e.(string); ok && wire.ValidRoom(s) {
			out = append(out, s)
		}
	}
	return out
}

// forget drops room from the rooms set once its queue is empty. The ZCARD
// after SREM closes the race with a join that lands in between. A room
// whose active set still holds tokens moves to the tokens set, which the
// tick looks at once a second, so expired tokens leave the active set
// whether or not anyone waits.
func (q *Queue) forget(ctx context.Context, room string) (err error) {
	if _, err := q.r.Do(ctx, "SREM", roomsKey, room); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			err = q.keepSwept(ctx, room)
		}
	}()
	v, err := q.r.Do(ctx, "ZCARD", queueKey(room))
	if err != nil {
		return err
	}
	pre, err := q.r.Do(ctx, "SCARD", prefix(room)+"pre")
	if err != nil {
		return err
	}
	// Priority visitors held until a scheduled opening (priority.lua).
	ppre, err := q.r.Do(ctx, "ZCARD", prefix(room)+"ppre")
	if err != nil {
		return err
	}
	n, _ := asInt(v)
	m, _ := asInt(pre)
	o, _ := asInt(ppre)
	if n+m+o > 0 {
		_, err = q.r.Do(ctx, "SADD", roomsKey, room)
	}
	return err
}

// tokensKey lists rooms with nobody waiting whose active set still holds
// tokens (same slot as roomsKey).
const tokensKey = "wr:{rooms}:tokens"

// sweepEvery is how often the tick admits the rooms of tokensKey: the admit
// script prunes expired tokens from the active set before anything else.
const sweepEvery = time.Second

// keepSwept lists room in tokensKey while its active set holds tokens.
func (q *Queue) keepSwept(ctx context.Context, room string) error {
	v, err := q.r.Do(ctx, "ZCARD", prefix(room)+"active")
	if err != nil {
		return err
	}
	cmd := "SREM"
	if n, _ := asInt(v); n > 0 {
		cmd = "SADD"
	}
	_, err = q.r.Do(ctx, cmd, tokensKey, room)
	return err
}

// Run admits visitors of every room with waiting visitors once per tick
// until ctx ends. Ticks fire just after each tick boundary; the script's
// tick record makes sure that several instances admit one batch per tick.
// While no room needs a tick (every room it found is paused, or there is
// none), the loop looks at the rooms every quietEvery instead; a join or a
// change of settings made here wakes it for the next tick.
func (q *Queue) Run(ctx context.Context) error {
	tick := q.opts.Capacity.Tick
	t := time.NewTimer(untilNextTick(time.Now(), tick))
	defer t.Stop()
	defer q.bg.Wait()
	var wake <-chan struct{} // q.wake while quiet
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
			// At the next boundary, as any tick.
			t.Reset(untilNextTick(time.Now(), tick))
			wake = nil
			continue
		}
		// What this tick looks at covers every poke made before it.
		select {
		case <-q.wake:
		default:
		}
		// A room whose admit call is slow (its Redis node failing over,
		// say) is left running and skipped until it returns; the others
		// tick on time.
		busy := q.tick(ctx, untilNextTick(time.Now(), tick)-tick/20)
		next := untilNextTick(time.Now(), tick)
		wake = nil
		if !busy {
			next += quietTicks(q.quiet, tick) * tick
			wake = q.wake
		}
		t.Reset(next)
	}
}

// quietEvery is how often the tick loop looks at the rooms while none
// needs a tick. Ten looks a second at rooms that are all paused were
// about half of what an idle instance cost. A room that needs ticks again
// because of something done on another instance (a join, a resume) is
// ticked there from its next tick, and here within quietEvery; a loss of
// Redis's data is seen here within quietEvery too (aliveKey).
const quietEvery = 500 * time.Millisecond

// quietTicks is how many ticks more than one the loop waits while quiet.
func quietTicks(quiet, tick time.Duration) time.Duration {
	return time.Duration(max(int64(quiet/tick)-1, 0))
}

// poke has a quiet tick loop tick at the next boundary: a room may need
// ticks now (a join, a change of settings, places given back).
func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
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

// tickSample is how many of the rooms that visitors made (with open rooms)
// one tick visits, picked at random; tickWorkers bounds the admit calls in
// flight at once.
const (
	tickSample  = 64
	tickWorkers = 32
)

// tickOnce admits every room once and returns when every admit call has.
func (q *Queue) tickOnce(ctx context.Context) { q.tick(ctx, -1) }

// tick admits every room once. With wait >= 0 it returns after at most
// wait: the calls still running go on in the background, their rooms are
// skipped by later ticks until they return, and Run waits for them before
// it returns. With wait < 0 it returns when every call has. The rooms an operator configured that
// have waiting visitors are all visited, each tick, concurrently, and each
// call has its own deadline; then a random sample of the other rooms with
// waiting visitors (which only exist with open rooms). So a configured room's admission
// does not depend on how many rooms visitors made, and one slow room does
// not hold up the rest. It reports whether any room needs the next tick: a
// room called is not paused, or its call failed or still runs, or Redis
// could not be asked.
func (q *Queue) tick(ctx context.Context, wait time.Duration) (busy bool) {
	rooms, busy := q.roomsOfTick(ctx)
	return q.callRooms(ctx, rooms, wait) || busy
}

// roomsOfTick is the rooms one tick calls: the configured rooms with
// waiting visitors (all of them when Redis could not be asked), a sample
// of the other rooms with waiting visitors and, every sweepEvery, a
// sample of the rooms holding only tokens. busy is whether Redis could
// not be asked.
func (q *Queue) roomsOfTick(ctx context.Context) (rooms []string, busy bool) {
	tick := q.opts.Capacity.Tick
	configured := q.configuredRooms(ctx)
	sctx, cancel := context.WithTimeout(ctx, tick)
	rooms, sample, alive, err := q.tickRooms(sctx, configured)
	cancel()
	if err == nil && q.recovery.lostBy(alive) {
		// Redis came back without its data, whether or not a call failed
		// meanwhile: put back what this instance remembers before
		// anything is admitted, then look again.
		q.recovery.markLost()
		configured = q.configuredRooms(ctx)
		sctx, cancel := context.WithTimeout(ctx, tick)
		rooms, sample, _, err = q.tickRooms(sctx, configured)
		cancel()
	}
	if err != nil && ctx.Err() == nil {
		busy = true
		if !errors.Is(err, context.DeadlineExceeded) {
			// Unreachable, not slow: Redis may come back without its
			// data.
			q.recovery.markLost()
		}
		q.tickLog.Fail("tick: rooms", err)
	} else if err == nil {
		q.tickLog.OK()
	}
	for _, room := range sample {
		if _, ok := slices.BinarySearch(configured, room); !ok {
			rooms = append(rooms, room)
		}
	}
	if time.Since(q.sweptAt) >= sweepEvery {
		rooms = q.addTokenRooms(ctx, rooms)
	}
	return rooms, busy
}

// addTokenRooms appends to rooms a random sample of tokensKey's rooms
// (nobody waiting, tokens held), whose admit call prunes their expired
// tokens.
func (q *Queue) addTokenRooms(ctx context.Context, rooms []string) []string {
	q.sweptAt = time.Now()
	sctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick)
	v, err := q.r.Do(sctx, "SRANDMEMBER", tokensKey, strconv.Itoa(tickSample))
	cancel()
	if err != nil && ctx.Err() == nil {
		q.tickLog.Fail("tick: rooms with tokens", err)
	}
	for _, room := range validRooms(v) {
		if !slices.Contains(rooms, room) {
			rooms = append(rooms, room)
		}
	}
	return rooms
}

// callRooms admits each of rooms once, at most tickWorkers at a time,
// skipping a room whose call of an earlier tick still runs and (with
// wait >= 0) a paused room not due yet. It waits as tick says and reports
// whether any room needs the next tick.
func (q *Queue) callRooms(ctx context.Context, rooms []string, wait time.Duration) (busy bool) {
	sem := make(chan struct{}, tickWorkers)
	var wg sync.WaitGroup
	var need atomic.Bool // a room called is not paused, or its call failed
	now := time.Now()
	for _, room := range rooms {
		if wait >= 0 && q.skipTick(room, now) {
			continue
		}
		ticking := &q.roomMemFor(room).ticking
		if !ticking.CompareAndSwap(false, true) {
			busy = true
			continue // its call of an earlier tick has not returned yet
		}
		sem <- struct{}{}
		wg.Add(1)
		q.bg.Go(func() {
			defer func() {
				ticking.Store(false)
				<-sem
				wg.Done()
			}()
			if q.tickRoom(ctx, room) {
				need.Store(true)
			}
		})
	}
	if wait < 0 {
		wg.Wait()
		return busy || need.Load()
	}
	done := make(chan struct{})
	q.bg.Go(func() {
		wg.Wait()
		close(done)
	})
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	select {
	case <-done:
		return busy || need.Load()
	case <-t.C:
		return true // a call still runs
	}
}

// pausedEvery is how often the tick loop admits a room it found paused:
// the call admits nobody then, but it still sweeps expired tokens and
// away visitors, and it is how a resume made on another instance is seen.
// Every tick, a paused room cost each instance a script call ten times a
// second for nothing. A change of settings made here is seen at once.
const pausedEvery = time.Second

// pausedRoom is when the tick loop next looks at a room it found paused.
type pausedRoom struct {
	until   time.Time // skip the room's ticks until then
	changed time.Time // when this instance last changed its settings
}

// tickRooms returns the rooms of configured that have waiting visitors
// (so that a thousand configured rooms with nobody in them cost no admit
// call each tick) and a random sample of all rooms with waiting visitors,
// in one call, and the alive marker's value ("" when it is gone: Redis has
// lost its data). If the call fails, it returns every configured room and
// no sample.
func (q *Queue) tickRooms(ctx context.Context, configured []string) (waiting, sample []string, alive string, err error) {
	args := append(make([]string, 0, len(configured)+1), strconv.Itoa(tickSample))
	v, err := q.r.Eval(ctx, tickRoomsScript.Script, []string{roomsKey, aliveKey}, append(args, configured...)...)
	var r tickRoomsReply
	if err == nil {
		r, err = decodeTickRooms(v, len(configured))
	}
	if err != nil {
		return slices.Clone(configured), nil, "", err
	}
	waiting = make([]string, 0, len(configured))
	for i, in := range r.In {
		if in {
			waiting = append(waiting, configured[i])
		}
	}
	return waiting, r.Sample, r.Alive, nil
}

// tickRoom runs one room's admission, under a deadline of its own. It
// reports whether the room needs the next tick: it is not paused, or the
// call failed.
func (q *Queue) tickRoom(ctx context.Context, room string) (need bool) {
	tctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick*5)
	defer cancel()
	start := time.Now()
	res, err := q.Admit(tctx, room)
	if err != nil {
		if ctx.Err() == nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				// Not slow but unreachable: Redis may come back without
				// its data (a slow call says nothing of the kind).
				q.recovery.markLost()
			}
			q.tickLog.Fail("tick: admit", err, "room", room)
		}
		return true
	}
	q.tickLog.OK()
	q.notePaused(room, res.Paused, start)
	if res.Taken && q.opts.OnTick != nil {
		q.opts.OnTick(room, res)
	}
	if n := len(res.Admitted); n > 0 && q.opts.OnAdmit != nil {
		q.opts.OnAdmit(room, n)
	}
	if res.Taken && res.Waiting == 0 {
		if err := q.forget(tctx, room); err != nil && ctx.Err() == nil {
			q.tickLog.Fail("tick: forget room", err, "room", room)
		}
	}
	return !res.Paused
}

// roomList is the configured rooms as last read, sorted, re-read at most
// once a second (every look while the recoverer has a loss to put back); a
// failed read keeps the last list. It only reads: the recoverer writes.
type roomList struct {
	mu    sync.Mutex
	rooms []string
	at    time.Time
}

// read returns the configured rooms, read now (fresh) unless they were
// less than a second ago and force is false. A read that fails returns
// the last list; one that could not reach Redis tells the recoverer.
func (l *roomList) read(ctx context.Context, q *Queue, force bool) (rooms []string, fresh bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.at) < time.Second && !force {
		return l.rooms, false
	}
	l.at = time.Now()
	rctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick)
	defer cancel()
	v, err := q.r.Do(rctx, "SMEMBERS", configuredRoomsKey)
	if err != nil {
		if ctx.Err() == nil {
			q.tickLog.Fail("tick: configured rooms", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			q.recovery.markLost()
		}
		return l.rooms, false
	}
	rooms = validRooms(v)
	slices.Sort(rooms)
	return rooms, true
}

// set keeps rooms as the list.
func (l *roomList) set(rooms []string) {
	l.mu.Lock()
	l.rooms, l.at = rooms, time.Now()
	l.mu.Unlock()
}

// last is the list as last kept.
func (l *roomList) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rooms
}

// configuredRooms is the configured rooms for a tick: read (see roomList),
// and when read afresh, handed to the recoverer first, which puts back what
// this instance remembers if Redis may have lost it. The list is kept only
// once that is done: until then the last one stands.
func (q *Queue) configuredRooms(ctx context.Context) []string {
	rooms, fresh := q.configured.read(ctx, q, q.recovery.pending())
	if !fresh {
		return rooms
	}
	rooms, ok := q.recovery.recover(ctx, q, rooms)
	if !ok {
		return q.configured.last()
	}
	q.configured.set(rooms)
	return rooms
}
