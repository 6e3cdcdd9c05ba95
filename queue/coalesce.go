package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Coalesced joins (and status reads). A room's keys share one cluster slot, so one Redis core
// runs every join of the room, and much of a join's Redis time is what
// any script call costs (the call, its arguments, its reply) and what a
// join reads about the room (settings, the clock, a draw or an opening
// that is due), whoever joins. An instance that takes many joins of a
// room at once runs them as one call of joinBatchScript: the room's part
// once, then each visitor's part in arrival order, each visitor still
// getting its own reply, exactly as the same joins run one call after the
// other at the same moment would have.
//
// There is no timer: a join goes to Redis at once when no batch of its
// room (and settings version) is on the way, so a join alone waits for
// nothing. Joins that arrive while one is on the way wait for it and go
// together in the next call, up to the batch size. So a batch gathers
// what arrived during one call, and the wait it adds is at most about one
// call. Two calls of a room's joins on the way at once could reach Redis
// in another order than they left (on two connections, or one handed to
// the connection as the other was), and the later joins would take
// tickets ahead of the earlier ones. So one call of a room's joins is on
// the way from an instance at a time. The listing of the room for the tick
// loop that follows a call (see join) takes no tickets: it goes beside the
// next call, so a room's calls follow each other without waiting for it.
// Status reads take no tickets either: a full batch of them goes at once,
// with up to maxStatusCalls on the way.
//
// Status reads go the same way, as one call of the status script for
// several visitors (StatusMany), which is what the push hub's reads of
// its connected visitors already are.

// DefaultJoinBatch is the most joins of a room one coalesced call takes.
const DefaultJoinBatch = 64

// MaxJoinBatch bounds JoinBatch: a batch's script passes its visitors to
// single commands, whose arguments Lua's stack bounds.
const MaxJoinBatch = 1000

// maxStatusCalls is the most coalesced calls of one room's status reads
// on the way at once from an instance; a room's joins have one.
const maxStatusCalls = 4

// batchTimeout bounds a coalesced call, which runs for several callers
// and so under none of their contexts, when the first caller's context
// has no sooner deadline.
const batchTimeout = 10 * time.Second

// joinBatchScript is the join of JoinAt without an invite code, for many
// visitors (lua/joinbatch.lua): fresh.lua and joinroom.lua once, then
// invite.lua and join.lua as the body of join_visitor, which joinbatch.lua
// runs for each. Its KEYS are the room's keys it names, then each
// visitor's (batchKeys).
var joinBatchScript = loadScript("joinbatch")

// batchKeys is the KEYS of a call of joinBatchScript: the room's keys,
// then each visitor's.
func (s *luaScript) batchKeys(room string, visitors []string) []string {
	p := prefix(room)
	keys := make([]string, 0, len(s.keyNames)+len(visitors)*len(s.visitorNames))
	for _, name := range s.keyNames {
		keys = append(keys, p+name)
	}
	for _, v := range visitors {
		for _, name := range s.visitorNames {
			keys = append(keys, p+name+v)
		}
	}
	return keys
}

// batchKey is what the joins (or status reads) of one coalesced call
// share.
type batchKey struct {
	room     string
	settings int64 // joins: the settings version they were checked at
	status   bool  // status reads (StatusMany), not joins
}

// joinBatches holds the joins waiting for a coalesced call, by room and
// settings version.
type joinBatches struct {
	max   int
	mu    sync.Mutex
	rooms map[batchKey]*roomBatch
}

// newJoinBatches takes up to size joins of a room in a call.
func newJoinBatches(size int) *joinBatches {
	return &joinBatches{max: size, rooms: map[batchKey]*roomBatch{}}
}

// roomBatch is one batchKey's joins waiting, and its calls on the way.
type roomBatch struct {
	// key is the batch's key, whose room is the map's own copy: the
	// calls and the states they return outlive the caller whose join
	// made the batch, whose room may alias a request buffer.
	key     batchKey
	waiting []*batchJoin
	calls   int
}

// mayGo reports whether a call of b's waiting joins may leave now. Needs
// bs.mu.
func (bs *joinBatches) mayGo(b *roomBatch) bool {
	switch {
	case len(b.waiting) == 0:
		return false
	case b.calls == 0:
		return true
	case b.key.status:
		return len(b.waiting) >= bs.max && b.calls < maxStatusCalls
	}
	return false // a room's joins: one call on the way at a time
}

// leave takes the joins of b's next call and counts the call on the way.
// Needs bs.mu.
func (bs *joinBatches) leave(b *roomBatch) []*batchJoin {
	run := b.take(bs.max)
	b.calls++
	return run
}

// batchJoin is one visitor's join in a batch, and its outcome, which is
// set before done is closed.
type batchJoin struct {
	visitor string
	done    chan struct{}
	state   wire.State
	ticket  wire.Ticket
	err     error
}

// take removes up to max joins from the front of b's waiting.
func (b *roomBatch) take(max int) []*batchJoin {
	n := min(len(b.waiting), max)
	run := b.waiting[:n:n]
	b.waiting = b.waiting[n:]
	if len(b.waiting) == 0 {
		b.waiting = nil
	}
	return run
}

// joinCoalesced is JoinAt without an invite code, through a batch.
func (q *Queue) joinCoalesced(ctx context.Context, room, visitor string, settings int64) (wire.State, wire.Ticket, error) {
	return q.coalesced(ctx, batchKey{room: room, settings: settings}, visitor)
}

// coalesced is visitor's join or status read of key, through a batch.
func (q *Queue) coalesced(ctx context.Context, key batchKey, visitor string) (wire.State, wire.Ticket, error) {
	if err := check(key.room, visitor); err != nil {
		return wire.State{}, wire.Ticket{}, err
	}
	room := key.room
	j := &batchJoin{visitor: strings.Clone(visitor), done: make(chan struct{})}
	bs := q.batches
	bs.mu.Lock()
	b := bs.rooms[key]
	if b == nil {
		// room may alias a request buffer that is reused: the map keeps
		// a copy.
		key.room = strings.Clone(room)
		b = &roomBatch{key: key}
		bs.rooms[key] = b
	}
	b.waiting = append(b.waiting, j)
	var run []*batchJoin
	if bs.mayGo(b) {
		run = bs.leave(b)
	}
	bs.mu.Unlock()
	if run != nil {
		q.runBatch(ctx, b, run)
	}
	select {
	case <-j.done:
		return j.state, j.ticket, j.err
	case <-ctx.Done():
		// The call goes on without its caller, as a call that was sent
		// does; a retried join finds its place.
		return wire.State{}, wire.Ticket{}, fmt.Errorf("queue: %w", ctx.Err())
	}
}

// runBatch makes the call of the joins run, tells each its outcome, and
// hands on: the joins that arrived meanwhile go in a call of their own,
// made by a goroutine of its own, so the caller that made this one is not
// held for it. The next call leaves as soon as this one's script is back:
// the listing of the room for the tick loop, which its joins still wait
// for, takes no tickets, so it goes on the way beside the next call.
func (q *Queue) runBatch(ctx context.Context, b *roomBatch, run []*batchJoin) {
	key := b.key
	// The call is for every join of run, so the first one's caller going
	// away does not cancel it; its deadline, the same for every request,
	// still bounds it.
	deadline := time.Now().Add(batchTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	list := false
	if key.status {
		q.statusBatch(ctx, key.room, run)
	} else {
		list = q.joinBatch(ctx, key, run)
	}
	bs := q.batches
	bs.mu.Lock()
	b.calls--
	var next []*batchJoin
	// Status reads that waited go as soon as a call of theirs is back.
	if len(b.waiting) > 0 && (key.status || bs.mayGo(b)) {
		next = bs.leave(b)
	} else if b.calls == 0 && len(b.waiting) == 0 {
		delete(bs.rooms, key)
	}
	bs.mu.Unlock()
	if next != nil {
		// Not under ctx: its deadline is the first caller's, and these
		// joins came later.
		go q.runBatch(context.Background(), b, next)
	}
	if list {
		// One listing of the room serves the batch (see join).
		if err := q.list(ctx, key.room); err != nil {
			for _, j := range run {
				j.err = err
			}
		}
	}
	for _, j := range run {
		close(j.done)
	}
}

// joinBatch makes one call for the joins of run and sets each one's
// outcome. It reports whether the room must be listed for the tick loop
// before the joins are answered (see join). A batch of one is the join of
// JoinAt itself.
func (q *Queue) joinBatch(ctx context.Context, key batchKey, run []*batchJoin) (list bool) {
	if len(run) == 1 {
		j := run[0]
		r, err := q.joinCall(ctx, joinAtScript, key.room, j.visitor, noInvite(key.settings)...)
		if err != nil {
			j.err = err
			return false
		}
		j.state, j.ticket, j.err = q.joinState(key.room, j.visitor, r)
		return r.Code == replyWaiting || r.Code == replyPreQueue
	}
	fail := func(err error) {
		for _, j := range run {
			j.err = err
		}
	}
	visitors := make([]string, len(run))
	for i, j := range run {
		visitors[i] = j.visitor
	}
	keys := joinBatchScript.batchKeys(key.room, visitors)
	args := append(append(q.joinArgs(key.room, ""), noInvite(key.settings)...), visitors...)
	v, err := q.r.Eval(ctx, joinBatchScript.Script, keys, args...)
	if err != nil {
		fail(fmt.Errorf("queue: join: %w", err))
		return false
	}
	replies, err := decodeJoinBatch(v, len(run))
	if err != nil {
		fail(err)
		return false
	}
	for i, j := range run {
		r := replies[i]
		list = list || r.Code == replyWaiting || r.Code == replyPreQueue
		j.state, j.ticket, j.err = q.joinState(key.room, j.visitor, r)
	}
	return list
}

// statusBatch reads the states of the visitors of run in one call.
func (q *Queue) statusBatch(ctx context.Context, room string, run []*batchJoin) {
	visitors := make([]string, len(run))
	for i, j := range run {
		visitors[i] = j.visitor
	}
	states, err := q.StatusMany(ctx, room, visitors)
	for i, j := range run {
		if err != nil {
			j.err = err
			continue
		}
		j.state = states[i]
	}
}

// noInvite is JoinAt's ARGV[8..12] for a join without an invite code at
// settings version settings.
func noInvite(settings int64) []string {
	return []string{"", "1", strconv.FormatInt(time.Time{}.UnixMilli(), 10), "0", strconv.FormatInt(settings, 10)}
}

// decodeJoinBatch reads the reply of joinBatchScript for n visitors
// (joinbatch.lua): a header, then each visitor's join reply or, for a
// new visitor given its ticket with others, its ticket and place; or
// fresh.lua's one reply for all of them.
func decodeJoinBatch(v any, n int) ([]joinReply, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("queue: join batch: unexpected reply %T", v)
	}
	out := make([]joinReply, n)
	if code, err := asInt(list[0]); err == nil && code < 0 {
		r, err := decodeJoin(v)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = r
		}
		return out, nil
	}
	const header = 5
	head, err := asInts(list[:header], header)
	if err != nil {
		return nil, err
	}
	if head[4] != int64(n) || len(list) != header+2*n {
		return nil, fmt.Errorf("queue: join batch: %d replies for %d joins", head[4], n)
	}
	for i := range out {
		e := list[header+i]
		if _, nested := e.([]any); nested {
			if out[i], err = decodeJoin(e); err != nil {
				return nil, err
			}
			continue
		}
		seq, err := asInt(e)
		if err != nil {
			return nil, err
		}
		rank, err := asInt(list[header+n+i])
		if err != nil {
			return nil, err
		}
		out[i] = joinReply{Code: replyWaiting, A: rank, New: true, Paused: head[0] == 1, Settings: head[1],
			Message: stringAt(v, 2), Seq: seq, Now: head[3], HasDraw: true, Draw: -1}
	}
	return out, nil
}
