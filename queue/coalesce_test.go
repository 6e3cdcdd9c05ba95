package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// A batch of joins gives each visitor what its own join, made one after
// the other, would have: room "one" takes the joins one call each, room
// "many" the same joins in one call of the batch script, in rooms set up
// alike (a visitor waiting, one admitted, the settings of each case),
// and the two must agree visitor for visitor, a repeated visitor and a
// stale settings version included.
func TestJoinBatchMatchesJoins(t *testing.T) {
	cases := []struct {
		name  string
		cfg   *settings.Room
		stale bool
		setup func(t *testing.T, q *Queue, room string, version int64)
	}{
		{name: "open"},
		{name: "fifo", cfg: &settings.Room{Batch: 1}},
		{name: "paused", cfg: &settings.Room{Batch: 1, Paused: true, Message: "back soon"}},
		{name: "prequeue", cfg: &settings.Room{Batch: 1, OpensAt: time.Now().Add(time.Hour)}},
		{name: "invite-only", cfg: &settings.Room{Batch: 1, InviteOnly: true}},
		{name: "reject", cfg: &settings.Room{Batch: 1, Method: "reject"}},
		{name: "passthrough", cfg: &settings.Room{Batch: 1, Method: "passthrough"}},
		{name: "random", cfg: &settings.Room{Batch: 2, Method: "random"}}, // the lottery admits both: which one alone would be a draw
		{name: "no-presence", cfg: &settings.Room{Batch: 1, NoPresence: true}},
		{name: "stale", cfg: &settings.Room{Batch: 1}, stale: true},
		{name: "counter-lost", cfg: &settings.Room{Batch: 1}, setup: func(t *testing.T, q *Queue, room string, _ int64) {
			if _, err := q.r.Do(context.Background(), "DEL", prefix(room)+"seq"); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "priority", cfg: &settings.Room{Batch: 1}, setup: func(t *testing.T, q *Queue, room string, version int64) {
			code := Invite{ID: room + "-code", Uses: 5, Expires: time.Now().Add(time.Hour), Priority: true}
			if _, _, err := q.JoinAt(context.Background(), room, "pv", code, version); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "expired-token", setup: func(t *testing.T, q *Queue, room string, _ int64) {
			if _, err := q.r.Do(context.Background(), "SET", prefix(room)+"t:n2", "1000:2000:2000", "PX", "60000"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 1, Tick: time.Minute}, JoinBatch: -1})
		if q.batches != nil {
			t.Fatal("JoinBatch -1 still coalesces")
		}
		batch := []string{"n1", "n2", "w", "n1", "adm", "n3"}
		for _, c := range cases {
			results := map[string][]string{}
			for _, room := range []string{c.name + "-one", c.name + "-many"} {
				var version int64
				if c.cfg != nil {
					if err := q.SetRoomConfig(ctx, room, *c.cfg); err != nil {
						t.Fatal(err)
					}
					got, err := q.RoomConfig(ctx, room)
					if err != nil {
						t.Fatal(err)
					}
					version = got.Version()
				}
				// "adm" joins first and is admitted, "w" waits behind it.
				for _, v := range []string{"adm", "w"} {
					if _, _, err := q.JoinAt(ctx, room, v, Invite{}, version); err != nil &&
						!errors.Is(err, ErrInviteRequired) {
						t.Fatalf("%s: %s joins: %v", room, v, err)
					}
				}
				if _, err := q.Admit(ctx, room); err != nil {
					t.Fatal(err)
				}
				if c.setup != nil {
					c.setup(t, q, room, version)
				}
				if c.stale {
					version++
				}
				var out []string
				if room == c.name+"-one" {
					for _, v := range batch {
						st, tk, err := q.JoinAt(ctx, room, v, Invite{}, version)
						out = append(out, joinOutcome(st, tk, err))
					}
				} else {
					run := make([]*batchJoin, len(batch))
					for i, v := range batch {
						run[i] = &batchJoin{visitor: v}
					}
					q.joinBatch(ctx, batchKey{room: room, settings: version}, run)
					for _, j := range run {
						out = append(out, joinOutcome(j.state, j.ticket, j.err))
					}
				}
				results[room] = out
			}
			one, many := results[c.name+"-one"], results[c.name+"-many"]
			for i := range batch {
				if one[i] != many[i] {
					t.Errorf("%s: %s: one call each gives %s, the batch %s", c.name, batch[i], one[i], many[i])
				}
			}
		}
	})
}

// joinOutcome is what two rooms set up alike must agree on about a join.
func joinOutcome(st wire.State, tk wire.Ticket, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprintf("%s position %d paused %v token %v seq %d prio %v message %q",
		st.Status, st.Position, st.Paused, st.Token != "", tk.Seq, tk.Priority, st.Message)
}

// gatedRedis holds the reply of every call of the single join script
// until its gate is opened, and records the calls of the join scripts
// (one of the batch script once it has run).
type gatedRedis struct {
	Redis
	gate chan struct{}
	mu   sync.Mutex
	runs [][]string // per join script call, the visitors it joined
}

func (g *gatedRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	switch s {
	case joinAtScript.Script:
		g.record([]string{args[1]})
		v, err := g.Redis.Eval(ctx, s, keys, args...)
		<-g.gate
		return v, err
	case joinBatchScript.Script:
		v, err := g.Redis.Eval(ctx, s, keys, args...)
		g.record(args[12:]) // the visitors follow join.lua's 12 ARGV
		return v, err
	}
	return g.Redis.Eval(ctx, s, keys, args...)
}

func (g *gatedRedis) record(visitors []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs = append(g.runs, append([]string(nil), visitors...))
}

func (g *gatedRedis) calls() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.runs...)
}

// Joins that arrive while a join of their room is on the way wait for it
// and then go together, in arrival order, in calls of at most JoinBatch,
// one call of the room on the way at a time: the first join alone goes at
// once; the 10 that arrive behind it wait, even once a full batch of 4
// is waiting, and go as batches of 4, 4 and 2 when it is back. Every one
// gets its own place, and the tickets follow arrival.
func TestJoinsCoalesce(t *testing.T) {
	eachClient(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		g := &gatedRedis{Redis: r, gate: make(chan struct{})}
		q := newQueue(t, g, &Options{JoinBatch: 4})
		type outcome struct {
			st  wire.State
			tk  wire.Ticket
			err error
		}
		const n = 11
		outs := make([]outcome, n)
		var wg sync.WaitGroup
		// The first caller's room is a string of its own, the others'
		// one literal: what a batch returns must alias neither (a
		// caller's room may be a request buffer, reused once it returns).
		first, literal := strings.Clone("drop"), "drop"
		join := func(i int) {
			room := literal
			if i == 0 {
				room = first
			}
			wg.Go(func() {
				st, tk, err := q.JoinAt(ctx, room, fmt.Sprintf("v%02d", i), Invite{}, 0)
				outs[i] = outcome{st, tk, err}
			})
		}
		room := func() (waiting, calls int) {
			q.batches.mu.Lock()
			defer q.batches.mu.Unlock()
			if b := q.batches.rooms[batchKey{room: "drop"}]; b != nil {
				return len(b.waiting), b.calls
			}
			return 0, 0
		}
		waiting := func() int { w, _ := room(); return w }
		join(0)
		waitfor.Until(t, 5*time.Second, "the first join on its way", func() bool { return len(g.calls()) == 1 })
		for i := 1; i < n; i++ {
			join(i)
			waitfor.Until(t, 5*time.Second, fmt.Sprintf("join %d waiting", i), func() bool { return waiting() == i })
			if w, calls := room(); calls != 1 || len(g.calls()) != 1 {
				t.Fatalf("with %d waiting: %d calls on the way, %d made; want the first alone", w, calls, len(g.calls()))
			}
		}
		close(g.gate)
		wg.Wait()
		want := [][]string{{"v00"}, {"v01", "v02", "v03", "v04"}, {"v05", "v06", "v07", "v08"}, {"v09", "v10"}}
		if got := g.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("join calls %v, want %v", got, want)
		}
		for i, o := range outs {
			if o.err != nil || o.st.Status != wire.StatusWaiting || o.st.Position != int64(i+1) || o.tk.Seq != int64(i+1) {
				t.Fatalf("v%02d: %+v ticket %+v %v, want waiting at %d", i, o.st, o.tk, o.err, i+1)
			}
			if p := unsafe.StringData(o.st.Room); p == unsafe.StringData(first) || p == unsafe.StringData(literal) {
				t.Fatalf("v%02d: its state's room is a caller's string", i)
			}
		}
		// The last call's joins are answered before it takes its room off
		// the list (runBatch), so a caller may return first.
		left := func() int {
			q.batches.mu.Lock()
			defer q.batches.mu.Unlock()
			return len(q.batches.rooms)
		}
		waitfor.Until(t, 5*time.Second, "no room listed with no join on the way", func() bool { return left() == 0 })
	})
}

// listGate holds every SADD of the rooms set until its gate is opened.
type listGate struct {
	Redis
	gate  chan struct{}
	held  chan struct{} // closed when the first SADD is held
	once  sync.Once
	mu    sync.Mutex
	calls int // join script calls made
}

func (g *listGate) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) > 1 && args[0] == "SADD" && args[1] == roomsKey {
		g.once.Do(func() { close(g.held) })
		<-g.gate
	}
	return g.Redis.Do(ctx, args...)
}

func (g *listGate) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s == joinAtScript.Script || s == joinBatchScript.Script {
		g.mu.Lock()
		g.calls++
		g.mu.Unlock()
	}
	return g.Redis.Eval(ctx, s, keys, args...)
}

func (g *listGate) made() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// The listing of the room that follows a call of its joins does not hold
// up the next call, and the joins of a call are answered only once their
// room is listed: while the first call's listing is held, the joins that
// arrived behind it go in a call of their own, and nobody is answered.
func TestJoinListingBesideNextCall(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		g := &listGate{Redis: r, gate: make(chan struct{}), held: make(chan struct{})}
		q := newQueue(t, g, &Options{JoinBatch: 4})
		var answered atomic.Int32
		var wg sync.WaitGroup
		join := func(v string) {
			wg.Go(func() {
				st, _, err := q.JoinAt(ctx, "drop", v, Invite{}, 0)
				if err != nil || st.Status != wire.StatusWaiting {
					t.Errorf("%s: %+v %v", v, st, err)
				}
				answered.Add(1)
			})
		}
		join("v0")
		select {
		case <-g.held:
		case <-time.After(5 * time.Second):
			t.Fatal("the first join's listing never came")
		}
		join("v1")
		join("v2")
		waitfor.Until(t, 5*time.Second, "the next call while the listing is held", func() bool { return g.made() >= 2 })
		if n := answered.Load(); n != 0 {
			t.Fatalf("%d joins answered before their room was listed", n)
		}
		close(g.gate)
		wg.Wait()
		listed, err := q.Rooms(ctx)
		if err != nil || len(listed) != 1 || listed[0] != "drop" {
			t.Fatalf("rooms %v %v", listed, err)
		}
	})
}

// statusGate holds the reply of the first status call until its gate is
// opened, and records the visitors of every status call.
type statusGate struct {
	Redis
	gate chan struct{}
	mu   sync.Mutex
	runs [][]string
}

func (g *statusGate) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s != statusScript.Script {
		return g.Redis.Eval(ctx, s, keys, args...)
	}
	v, err := g.Redis.Eval(ctx, s, keys, args...)
	g.mu.Lock()
	g.runs = append(g.runs, append([]string(nil), args[3:]...))
	first := len(g.runs) == 1
	g.mu.Unlock()
	if first {
		<-g.gate
	}
	return v, err
}

func (g *statusGate) calls() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.runs...)
}

// Status reads of a room that arrive while one is on its way go together
// in one call of the status script, and each gets its own state.
func TestStatusReadsCoalesce(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		g := &statusGate{Redis: r, gate: make(chan struct{})}
		q := newQueue(t, g, nil)
		const n = 6
		for i := range n {
			if _, err := q.Join(ctx, "drop", fmt.Sprintf("v%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		states := make([]wire.State, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		read := func(i int) {
			wg.Go(func() { states[i], errs[i] = q.Status(ctx, "drop", fmt.Sprintf("v%d", i)) })
		}
		waiting := func() int {
			q.batches.mu.Lock()
			defer q.batches.mu.Unlock()
			if b := q.batches.rooms[batchKey{room: "drop", status: true}]; b != nil {
				return len(b.waiting)
			}
			return 0
		}
		read(0)
		waitfor.Until(t, 5*time.Second, "the first read on its way", func() bool { return len(g.calls()) == 1 })
		for i := 1; i < n; i++ {
			read(i)
			waitfor.Until(t, 5*time.Second, fmt.Sprintf("read %d waiting", i), func() bool { return waiting() == i })
		}
		close(g.gate)
		wg.Wait()
		want := [][]string{{"v0"}, {"v1", "v2", "v3", "v4", "v5"}}
		if got := g.calls(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("status calls %v, want %v", got, want)
		}
		for i := range n {
			if errs[i] != nil || states[i].Status != wire.StatusWaiting || states[i].Position != int64(i+1) {
				t.Fatalf("v%d: %+v %v, want waiting at %d", i, states[i], errs[i], i+1)
			}
		}
		if _, err := q.Status(ctx, "drop", "bad visitor!"); !errors.Is(err, visitorsig.ErrInvalidToken) {
			t.Fatalf("a bad visitor id: %v", err)
		}
	})
}

// joinCallsOnWay records the most calls of the join scripts on the way at once.
type joinCallsOnWay struct {
	Redis
	mu       sync.Mutex
	now, max int
}

func (f *joinCallsOnWay) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s != joinAtScript.Script && s != joinBatchScript.Script {
		return f.Redis.Eval(ctx, s, keys, args...)
	}
	f.mu.Lock()
	f.now++
	f.max = max(f.max, f.now)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.now--
		f.mu.Unlock()
	}()
	return f.Redis.Eval(ctx, s, keys, args...)
}

// TestOneJoinCallOnTheWay: a herd of joins of one room, many more than a
// batch, never has two calls of the room's joins on the way at once (two
// could reach Redis out of order), and every visitor gets a ticket of its
// own.
func TestOneJoinCallOnTheWay(t *testing.T) {
	eachClient(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		f := &joinCallsOnWay{Redis: r}
		q := newQueue(t, f, &Options{JoinBatch: 4})
		const callers, each = 64, 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		seqs := make(map[int64]bool)
		for c := range callers {
			wg.Go(func() {
				for i := range each {
					_, tk, err := q.JoinAt(ctx, "herd", fmt.Sprintf("c%d-%d", c, i), Invite{}, 0)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seqs[tk.Seq] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if f.max != 1 {
			t.Fatalf("%d calls of the room's joins on the way at once, want 1", f.max)
		}
		if len(seqs) != callers*each {
			t.Fatalf("%d distinct tickets for %d joins", len(seqs), callers*each)
		}
	})
}
