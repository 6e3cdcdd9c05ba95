package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// orderSpy is an Ordered over any client: EvalOrdered goes through the
// client's own when it keeps the order, else through Eval, which may
// reach Redis in any order (go-redis takes a connection of its pool for
// each call), so the script's check of the order is what keeps it then.
// It records every attempt of an ordered call. hold, when set, runs
// before an attempt is sent and may block it.
type orderSpy struct {
	Redis
	hold func(seq string)

	mu       sync.Mutex
	now, max int
	tries    []orderTry
}

// orderTry is one attempt of an ordered call: its place in order, the
// call's that was on its way when it left, its visitors, and whether
// Redis answered that it came early.
type orderTry struct {
	seq, prev string
	visitors  []string
	early     bool
}

func (s *orderSpy) KeepsOrder() bool { return true }

// orderedQueue is a Queue on r through an orderSpy, taking up to four
// joins of a room in a call.
func orderedQueue(t *testing.T, r Redis) (*Queue, *orderSpy) {
	t.Helper()
	spy := &orderSpy{Redis: r}
	return newQueue(t, spy, &Options{JoinBatch: 4}), spy
}

// holdFirst holds the first ordered call (call 1) before it is sent,
// until the returned channel is closed.
func (s *orderSpy) holdFirst() chan struct{} {
	release := make(chan struct{})
	s.hold = func(seq string) {
		if seq == "1" {
			<-release
		}
	}
	return release
}

func (s *orderSpy) EvalOrdered(ctx context.Context, sc *Script, keys []string, args ...string) (any, error) {
	seq, prev := args[13], args[14]
	if s.hold != nil {
		s.hold(seq)
	}
	s.mu.Lock()
	s.now++
	s.max = max(s.max, s.now)
	s.mu.Unlock()
	var v any
	var err error
	if o, ok := s.Redis.(Ordered); ok && o.KeepsOrder() {
		v, err = o.EvalOrdered(ctx, sc, keys, args...)
	} else {
		v, err = s.Redis.Eval(ctx, sc, keys, args...)
	}
	s.mu.Lock()
	s.now--
	s.tries = append(s.tries, orderTry{seq: seq, prev: prev, visitors: slices.Clone(args[15:]), early: err == nil && orderReply(v) == replyEarly})
	s.mu.Unlock()
	return v, err
}

func (s *orderSpy) record() (tries []orderTry, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tries), s.max
}

// ranInOrder checks that the calls that ran (their last attempt) gave
// their visitors tickets in the order the calls were made: every ticket of
// a call below every ticket of the next.
func ranInOrder(t *testing.T, tries []orderTry, tickets map[string]int64) {
	t.Helper()
	ran := map[int]orderTry{}
	for _, tr := range tries {
		if !tr.early {
			n, _ := strconv.Atoi(tr.seq)
			ran[n] = tr
		}
	}
	var top int64
	for n := 1; n <= len(ran); n++ {
		tr, ok := ran[n]
		if !ok {
			t.Fatalf("call %d never ran (%d calls ran)", n, len(ran))
		}
		low := int64(-1)
		for _, v := range tr.visitors {
			if low < 0 || tickets[v] < low {
				low = tickets[v]
			}
		}
		if low <= top {
			t.Fatalf("call %d's lowest ticket %d is not above %d, the highest of the calls before it", n, low, top)
		}
		for _, v := range tr.visitors {
			top = max(top, tickets[v])
		}
	}
}

// With a client that keeps the order of its calls, a herd of joins of one
// room has two calls on the way at once, and the tickets still follow the
// order the calls were made; every visitor gets one of its own.
func TestTwoJoinCallsOnTheWayInOrder(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q, spy := orderedQueue(t, r)
		if !q.batches.ordered {
			t.Fatal("a client that keeps the order is not used so")
		}
		const callers, each = 64, 8
		var mu sync.Mutex
		tickets := map[string]int64{}
		// Herds until one had two calls on the way (the first, unless the
		// machine is very slow).
		herds := 0
		for ; herds < 5; herds++ {
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for i := range each {
						v := fmt.Sprintf("h%d-c%d-%d", herds, c, i)
						_, tk, err := q.JoinAt(ctx, "herd", v, Invite{}, 0)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						tickets[v] = tk.Seq
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if _, most := spy.record(); most >= 2 {
				herds++
				break
			}
		}
		seen := map[int64]bool{}
		for _, s := range tickets {
			seen[s] = true
		}
		if n := herds * callers * each; len(tickets) != n || len(seen) != n {
			t.Fatalf("%d distinct tickets for %d joins", len(seen), n)
		}
		tries, most := spy.record()
		early := 0
		for _, tr := range tries {
			if tr.early {
				early++
			}
		}
		t.Logf("%d ordered calls, %d came early", len(tries)-early, early)
		if most != 2 {
			t.Fatalf("at most %d ordered calls on the way at once in %d herds, want 2", most, herds)
		}
		ranInOrder(t, tries, tickets)
	})
}

// A call that reaches Redis before the call that was on its way when it
// left does nothing, says so, and goes again once that call is back: its
// visitors take their tickets after the other call's. Here the first call
// of several joins is held before it is sent until the second has come
// back early.
func TestEarlyJoinCallGoesAgain(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		g := &gatedRedis{Redis: r, gate: make(chan struct{})}
		spy := &orderSpy{Redis: g}
		release := spy.holdFirst()
		q := newQueue(t, spy, &Options{JoinBatch: 4})
		js := &roomJoins{t: t, q: q, room: "drop"}
		join, waiting := js.join, js.waiting
		// v00 goes alone (joinAtScript, held by g); four wait behind it.
		join("v00")
		waitfor.Until(t, 5*time.Second, "the first join on its way", func() bool { return len(g.calls()) == 1 })
		for i := 1; i <= 4; i++ {
			join(fmt.Sprintf("v%02d", i))
			waitfor.Until(t, 5*time.Second, fmt.Sprintf("join %d waiting", i), func() bool { return waiting() == i })
		}
		// A lone join keeps no order, so nothing leaves beside it.
		if tries, _ := spy.record(); len(tries) != 0 {
			t.Fatalf("ordered calls beside a lone join: %+v", tries)
		}
		close(g.gate)
		// The four leave as call 1, held; two more leave beside it as
		// call 2, which Redis answers as early.
		waitfor.Until(t, 5*time.Second, "call 1 left", func() bool { return waiting() == 0 })
		join("v05")
		waitfor.Until(t, 5*time.Second, "v05 waiting", func() bool { return waiting() == 1 })
		join("v06")
		waitfor.Until(t, 5*time.Second, "call 2 back early", func() bool {
			tries, _ := spy.record()
			return len(tries) == 1 && tries[0].seq == "2" && tries[0].prev == "1" && tries[0].early
		})
		close(release)
		tickets := js.wait()
		tries, _ := spy.record()
		if len(tries) != 3 || tries[1].seq != "1" || tries[1].early || tries[2].seq != "2" || tries[2].prev != "0" || tries[2].early {
			t.Fatalf("attempts %+v, want call 2 early, call 1, call 2 again", tries)
		}
		for i := range 7 {
			if v := fmt.Sprintf("v%02d", i); tickets[v] != int64(i+1) {
				t.Fatalf("tickets %v, want v00 to v06 in order", tickets)
			}
		}
		ranInOrder(t, tries, tickets)
	})
}

// Redis that lost the calls' order record (gone and back empty) sends a
// call that checks it back early once, then it runs.
func TestJoinCallOrderLost(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q, spy := orderedQueue(t, r)
		key := batchKey{room: "lost"}
		c1 := &batchCall{seq: 1, done: make(chan struct{})}
		// Call 2 left while call 1 was on its way; call 1 ran, and then
		// Redis lost its record.
		run1 := []*batchJoin{{visitor: "a"}, {visitor: "b"}}
		q.joinBatch(ctx, key, run1, c1)
		close(c1.done)
		if _, err := r.Do(ctx, "DEL", prefix("lost")+"order"); err != nil {
			t.Fatal(err)
		}
		c2 := &batchCall{seq: 2, prev: c1, done: make(chan struct{})}
		run2 := []*batchJoin{{visitor: "c"}, {visitor: "d"}}
		q.joinBatch(ctx, key, run2, c2)
		for _, j := range slices.Concat(run1, run2) {
			if j.err != nil {
				t.Fatalf("%s: %v", j.visitor, j.err)
			}
		}
		if got := fmt.Sprint(run1[0].ticket.Seq, run1[1].ticket.Seq, run2[0].ticket.Seq, run2[1].ticket.Seq); got != "1 2 3 4" {
			t.Fatalf("tickets %s", got)
		}
		tries, _ := spy.record()
		if len(tries) != 3 || !tries[1].early || tries[2].early {
			t.Fatalf("attempts %+v, want call 1, call 2 early, call 2 again", tries)
		}
	})
}

// A call whose connection was closed under it may still reach Redis, after
// the call that left behind it went again and ran: it then does nothing,
// so its joins take no tickets behind joins that arrived after them.
func TestJoinCallOvertakenDoesNothing(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q, spy := orderedQueue(t, r)
		key := batchKey{room: "late"}
		// Call 1 failed on its way (done, never at Redis yet); call 2,
		// which left behind it, came early, went again once call 1 was
		// back, and ran.
		c1 := &batchCall{seq: 1, done: make(chan struct{})}
		close(c1.done)
		c2 := &batchCall{seq: 2, prev: c1, done: make(chan struct{})}
		run2 := []*batchJoin{{visitor: "c"}, {visitor: "d"}}
		q.joinBatch(ctx, key, run2, c2)
		for _, j := range run2 {
			if j.err != nil || j.ticket.Seq == 0 {
				t.Fatalf("%s: ticket %d, %v", j.visitor, j.ticket.Seq, j.err)
			}
		}
		// Call 1 reaches Redis now.
		run1 := []*batchJoin{{visitor: "a"}, {visitor: "b"}}
		q.joinBatch(ctx, key, run1, c1)
		tries, _ := spy.record()
		if len(tries) != 3 || tries[0].seq != "2" || !tries[0].early || tries[1].seq != "2" || tries[1].early || tries[2].seq != "1" {
			t.Fatalf("attempts %+v, want call 2 early, call 2 again, call 1", tries)
		}
		for _, j := range run1 {
			if !errors.Is(j.err, errOvertaken) {
				t.Fatalf("%s: %v, want errOvertaken", j.visitor, j.err)
			}
			if v, err := r.Do(ctx, "ZSCORE", prefix("late")+"q", j.visitor); err != nil || v != nil {
				t.Fatalf("%s queued by a call that came after a later one: %v %v", j.visitor, v, err)
			}
		}
		// The chain goes on: call 3 runs, and a and b join again behind c and d.
		c3 := &batchCall{seq: 3, done: make(chan struct{})}
		run3 := []*batchJoin{{visitor: "a"}, {visitor: "b"}}
		q.joinBatch(ctx, key, run3, c3)
		for i, j := range run3 {
			if j.err != nil || j.ticket.Seq <= run2[1].ticket.Seq {
				t.Fatalf("%s again: ticket %d (c, d: %d, %d), %v", j.visitor, j.ticket.Seq, run2[0].ticket.Seq, run2[1].ticket.Seq, j.err)
			}
			if i > 0 && j.ticket.Seq <= run3[i-1].ticket.Seq {
				t.Fatalf("tickets out of order: %d then %d", run3[i-1].ticket.Seq, j.ticket.Seq)
			}
		}
	})
}

// The joins of a room at two settings versions are two chains of calls,
// each checked apart: a call of one version that ran says nothing of the
// call of the other version before the one being checked.
func TestJoinCallChainsApart(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q, spy := orderedQueue(t, r)
		if err := q.SetRoomConfig(ctx, "two", RoomConfig{Batch: 1}); err != nil {
			t.Fatal(err)
		}
		cfg, err := q.RoomConfig(ctx, "two")
		if err != nil {
			t.Fatal(err)
		}
		older, newer := batchKey{room: "two", settings: cfg.Version() - 1}, batchKey{room: "two", settings: cfg.Version()}
		// Call 1 of the older version is on its way (not yet at Redis);
		// call 2, of the newer, runs; call 3, of the older, left behind
		// call 1 and must not run before it.
		c1 := &batchCall{seq: 1, done: make(chan struct{})}
		c2 := &batchCall{seq: 2, done: make(chan struct{})}
		q.joinBatch(ctx, newer, []*batchJoin{{visitor: "n1"}, {visitor: "n2"}}, c2)
		c3 := &batchCall{seq: 3, prev: c1, done: make(chan struct{})}
		run3 := []*batchJoin{{visitor: "o3"}, {visitor: "o4"}}
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			q.joinBatch(ctx, older, run3, c3)
		}()
		waitfor.Until(t, 5*time.Second, "call 3 back early", func() bool {
			tries, _ := spy.record()
			return len(tries) == 2 && tries[1].seq == "3" && tries[1].early
		})
		close(c1.done) // call 1 failed and will not run
		<-finished
		if tries, _ := spy.record(); len(tries) != 3 || tries[2].early {
			t.Fatalf("attempts %+v, want call 2, call 3 early, call 3 again", tries)
		}
		if !errors.Is(run3[0].err, ErrSettingsChanged) {
			t.Fatalf("a join at the older version: %v", run3[0].err)
		}
	})
}

// roomJoins makes joins of room on q, each in a goroutine of its own,
// and records the tickets they get.
type roomJoins struct {
	t    *testing.T
	q    *Queue
	room string

	wg      sync.WaitGroup
	mu      sync.Mutex
	tickets map[string]int64
}

func (j *roomJoins) join(v string) {
	j.wg.Go(func() {
		_, tk, err := j.q.JoinAt(context.Background(), j.room, v, Invite{}, 0)
		if err != nil {
			j.t.Error(err)
			return
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.tickets == nil {
			j.tickets = map[string]int64{}
		}
		j.tickets[v] = tk.Seq
	})
}

// waiting is how many joins of the room wait for a call.
func (j *roomJoins) waiting() int {
	bs := j.q.batches
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.rooms[batchKey{room: j.room}]; b != nil {
		return len(b.waiting)
	}
	return 0
}

// wait returns the tickets, by visitor, once every join is back.
func (j *roomJoins) wait() map[string]int64 {
	j.wg.Wait()
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tickets
}

// heldLone holds the single join script's calls while armed, until
// released.
type heldLone struct {
	Redis
	mu   sync.Mutex
	gate chan struct{} // nil: not armed
	held int
}

func (h *heldLone) arm() {
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
}

func (h *heldLone) release() {
	h.mu.Lock()
	close(h.gate)
	h.gate = nil
	h.mu.Unlock()
}

func (h *heldLone) waiting() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

func (h *heldLone) Eval(ctx context.Context, s *Script, keys []string, args ...string) (any, error) {
	if s == joinAtScript {
		h.mu.Lock()
		g := h.gate
		if g != nil {
			h.held++
		}
		h.mu.Unlock()
		if g != nil {
			<-g
		}
	}
	return h.Redis.Eval(ctx, s, keys, args...)
}

// No call leaves beside a lone join, whose script keeps no order, even
// when the room's call before the lone join was one that kept it: a call
// beside the lone join, checked against that earlier call, which ran,
// could run before the lone join.
func TestNoJoinCallBesideALoneJoin(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		hl := &heldLone{Redis: r}
		spy := &orderSpy{Redis: hl}
		release1 := spy.holdFirst()
		q := newQueue(t, spy, &Options{JoinBatch: 4})
		js := &roomJoins{t: t, q: q, room: "drop"}
		join, waiting := js.join, js.waiting
		// v00 alone, held; v01 and v02 behind it go as call 1, held too.
		hl.arm()
		join("v00")
		waitfor.Until(t, 5*time.Second, "v00 on its way", func() bool { return hl.waiting() == 1 })
		join("v01")
		waitfor.Until(t, 5*time.Second, "v01 waiting", func() bool { return waiting() == 1 })
		join("v02")
		waitfor.Until(t, 5*time.Second, "v02 waiting", func() bool { return waiting() == 2 })
		hl.release()
		waitfor.Until(t, 5*time.Second, "call 1 left", func() bool { return waiting() == 0 })
		// v03 arrives during call 1, alone: when call 1 is back it goes
		// as a lone join, held; v04 and v05 wait behind it.
		hl.arm()
		join("v03")
		waitfor.Until(t, 5*time.Second, "v03 waiting", func() bool { return waiting() == 1 })
		close(release1)
		waitfor.Until(t, 5*time.Second, "v03 on its way", func() bool { return hl.waiting() == 2 })
		join("v04")
		waitfor.Until(t, 5*time.Second, "v04 waiting", func() bool { return waiting() == 1 })
		join("v05")
		waitfor.Until(t, 5*time.Second, "v05 waiting", func() bool { return waiting() == 2 })
		if tries, _ := spy.record(); len(tries) != 1 {
			t.Fatalf("ordered calls %+v: one left beside the lone join", tries)
		}
		hl.release()
		tickets := js.wait()
		for i := range 6 {
			if v := fmt.Sprintf("v%02d", i); tickets[v] != int64(i+1) {
				t.Fatalf("tickets %v, want v00 to v05 in order", tickets)
			}
		}
	})
}
