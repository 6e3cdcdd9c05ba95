package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// TestParity holds the other Redis and client combinations to what every
// other test checks on real Redis with rueidis (each): one scenario that
// calls every script the queue loads (ScriptNames) runs on real Redis and
// the embedded one, with each client, and must give the same outcomes on
// all four, times and tokens aside; on each, a subscriber of that client
// hears the admit event of a tick. A script that the scenario does not call
// fails it: a new script is added to the scenario.
func TestParity(t *testing.T) {
	type run struct {
		name string
		log  []string
	}
	if len(loadedScripts()) < 10 {
		t.Fatalf("only %d scripts found (%v): the check of the scripts called would say nothing", len(loadedScripts()), ScriptNames())
	}
	var runs []run
	for _, kind := range redistest.Kinds {
		for _, client := range clients {
			name := kind + "/" + client
			t.Run(name, func(t *testing.T) {
				srv := redistest.Start(t, kind)
				c := &scriptCalls{Redis: newRedis(t, srv, client)}
				log := parityScenario(t, srv, client, c)
				for _, s := range loadedScripts() {
					if c.count(s) == 0 {
						t.Errorf("script %s was not called: the parity scenario must call every script", s)
					}
				}
				runs = append(runs, run{name, log})
			})
		}
	}
	if len(runs) < 2 {
		return
	}
	want := runs[0]
	for _, got := range runs[1:] {
		for i := range max(len(want.log), len(got.log)) {
			w, g := "(nothing)", "(nothing)"
			if i < len(want.log) {
				w = want.log[i]
			}
			if i < len(got.log) {
				g = got.log[i]
			}
			if w != g {
				t.Errorf("%s differs from %s at step %d:\n  %s: %s\n  %s: %s\nall the steps of %s:\n  %s\nof %s:\n  %s",
					got.name, want.name, i+1, want.name, w, got.name, g,
					want.name, strings.Join(want.log, "\n  "), got.name, strings.Join(got.log, "\n  "))
				break
			}
		}
	}
}

// loadedScripts is ScriptNames without the scripts tests make for
// themselves: those of the queue are the files of lua/ (loadScript).
func loadedScripts() []string {
	var names []string
	for _, name := range ScriptNames() {
		if _, err := luaFS.Open("lua/" + strings.ReplaceAll(name, "+", "_") + ".lua"); err == nil {
			names = append(names, name)
		}
	}
	return names
}

// scriptCalls counts the calls of each script by name, and can hold the
// reply of a call of one script until it is let go.
type scriptCalls struct {
	Redis
	mu    sync.Mutex
	calls map[string]int
	held  *rediscall.Script // while set, its calls wait for gate after their reply
	gate  chan struct{}     // closed to let held calls return
}

func (c *scriptCalls) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	c.mu.Lock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[s.Name]++
	var gate chan struct{}
	if s == c.held {
		gate = c.gate
	}
	c.mu.Unlock()
	v, err := c.Redis.Eval(ctx, s, keys, args...)
	if gate != nil {
		<-gate
	}
	return v, err
}

func (c *scriptCalls) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[name]
}

// hold makes the calls of s wait after their reply until the returned
// function is called.
func (c *scriptCalls) hold(s *rediscall.Script) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gate := make(chan struct{})
	c.held, c.gate = s, gate
	return func() {
		c.mu.Lock()
		c.held, c.gate = nil, nil
		c.mu.Unlock()
		close(gate)
	}
}

// parityScenario drives rooms through every script and returns what it
// saw, one line a step, without what differs from run to run (times,
// tokens, seeds).
func parityScenario(t *testing.T, srv *redistest.Server, client string, c *scriptCalls) []string {
	ctx := context.Background()
	const tick = 50 * time.Millisecond
	ticked := make(chan Result, 1) // the first tick of the loop that admitted in room parity
	onTick := func(room string, r Result) {
		if room == "parity" && len(r.Admitted) > 0 {
			select {
			case ticked <- r:
			default:
			}
		}
	}
	q := newQueue(t, c, &Options{Capacity: Capacity{Batch: 3, Tick: tick}, JoinBatch: 4, OnTick: onTick})
	var log []string
	note := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	state := func(st wire.State, err error) string {
		if err != nil {
			return "error " + err.Error()
		}
		return fmt.Sprintf("%s position %d paused %v token %v message %q", st.Status, st.Position, st.Paused, st.Token != "", st.Message)
	}

	// setcfg (and lottery's end, for a room that is not random), with
	// text that is not ASCII.
	cfg := settings.Room{
		Batch: 3, Message: "Welcome · ようこそ",
		BrandTitle: "Acme Drop · 東京", BrandAccent: "#c2185b",
		BrandFooter: `<p>© Acme · <a href="https://acme.example/terms">Terms</a></p>`,
	}
	must(q.SetRoomConfig(ctx, "parity", cfg))
	got, err := q.RoomConfig(ctx, "parity")
	must(err)
	note("room config %q", got.Hash())

	// join, and the join that checks invite codes.
	for _, v := range []string{"a", "b", "c"} {
		note("join %s: %s", v, state(q.Join(ctx, "parity", v)))
	}
	st, tk, err := q.JoinInvite(ctx, "parity", "d", Invite{})
	note("join with no code d: %s seq %d", state(st, err), tk.Seq)

	// fresh+invite+join: at another settings version it does nothing.
	version := got.Version()
	_, _, err = q.JoinAt(ctx, "parity", "e", Invite{}, version+1)
	note("join e at another version: settings changed %v", errors.Is(err, ErrSettingsChanged))

	// joinbatch: the joins that arrive while one is on its way go in one
	// call, in arrival order.
	release := c.hold(joinAtScript.Script)
	key := batchKey{room: "parity", settings: version}
	waiting := func() int {
		q.batches.mu.Lock()
		defer q.batches.mu.Unlock()
		if b := q.batches.rooms[key]; b != nil {
			return len(b.waiting)
		}
		return 0
	}
	joiners := []string{"e", "f", "g", "h"}
	outs := make([]string, len(joiners))
	tickets := make([]wire.Ticket, len(joiners))
	var wg sync.WaitGroup
	before := c.count(joinAtScript.Name)
	for i, v := range joiners {
		wg.Go(func() {
			st, tk, err := q.JoinAt(ctx, "parity", v, Invite{}, version)
			outs[i], tickets[i] = fmt.Sprintf("%s seq %d", state(st, err), tk.Seq), tk
		})
		if i == 0 {
			waitfor.Until(t, 5*time.Second, "the first join on its way", func() bool { return c.count(joinAtScript.Name) == before+1 })
		} else {
			waitfor.Until(t, 5*time.Second, fmt.Sprintf("join of %s waiting", v), func() bool { return waiting() == i })
		}
	}
	release()
	wg.Wait()
	for i, v := range joiners {
		note("join %s: %s", v, outs[i])
	}
	note("join calls: %d alone, %d together", c.count(joinAtScript.Name)-before, c.count(joinBatchScript.Name))

	// status, alone and for many.
	note("status a: %s", state(q.Status(ctx, "parity", "a")))
	sts, err := q.StatusMany(ctx, "parity", []string{"h", "a", "nobody"})
	must(err)
	for _, st := range sts {
		note("status many: %s", state(st, nil))
	}

	// admit.
	res := admitTaken(t, q, "parity")
	note("admit: %v, %d waiting", admittedVisitors(res.Admitted), res.Waiting)
	toks := map[string]visitorsig.Token{}
	var last time.Time
	for _, v := range []string{"a", "b", "c"} {
		st, err := q.Status(ctx, "parity", v)
		note("status %s: %s", v, state(st, err))
		toks[v] = visitorsig.Token{Room: "parity", Visitor: v, NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}
		if st.NotBefore.After(last) {
			last = st.NotBefore
		}
	}
	waitUntil(t, last)

	// consume in its modes, then restore.
	outcome := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, ErrTokenUnknown):
			return "unknown"
		}
		return "error " + err.Error()
	}
	_, err = q.Consume(ctx, toks["a"], Check)
	note("check a: %s", outcome(err))
	_, err = q.Consume(ctx, toks["a"], Touch)
	note("touch a: %s", outcome(err))
	exp, err := q.Consume(ctx, toks["a"], Spend)
	note("spend a: %s", outcome(err))
	_, err = q.Consume(ctx, toks["a"], Spend)
	note("spend a again: %s", outcome(err))
	must(q.Restore(ctx, toks["a"], exp))
	_, err = q.Consume(ctx, toks["a"], Spend)
	note("spend a after restore: %s", outcome(err))

	// revive: a token whose record Redis lost works by its signature.
	_, err = c.Do(ctx, "DEL", prefix("parity")+"t:b")
	must(err)
	_, err = q.Consume(ctx, toks["b"], Check)
	note("check b after its record was lost: %s", outcome(err))

	// endsession.
	ended, err := q.EndSession(ctx, "parity", "c", toks["c"].NotBefore, "session-c", time.Now().Add(time.Minute))
	must(err)
	note("end session c: %v", ended)
	ended, err = q.EndSession(ctx, "parity", "c", toks["c"].NotBefore, "session-c", time.Now().Add(time.Minute))
	must(err)
	note("end session c again: %v", ended)

	// leave.
	for range 2 {
		left, err := q.Leave(ctx, "parity", "d")
		must(err)
		note("leave d: %v", left)
	}

	// seen in both modes, presencestats, roomstats.
	every, err := q.Seen(ctx, "parity", []string{"e", "f"})
	must(err)
	note("seen e f: again in %v", every)
	every, err = q.Left(ctx, "parity", []string{"g"})
	must(err)
	note("left g: again in %v", every)
	ps, err := q.Presence(ctx, "parity")
	must(err)
	note("presence: %+v", ps)
	rs, err := q.Stats(ctx, "parity")
	must(err)
	rs.Rate = 0 // measured: depends on when the calls ran
	note("stats: %+v", rs)

	// commit and reveal: a room that opens later commits to its draw's
	// seed before anyone joins.
	must(q.SetRoomConfig(ctx, "pre", settings.Room{OpensAt: time.Now().Add(time.Hour)}))
	note("join x before opening: %s", state(q.Join(ctx, "pre", "x")))
	d, err := q.Draw(ctx, "pre", 0, 10)
	must(err)
	note("draw before opening: committed %v opened %v seed %v count %d", d.Commitment != "", d.Opened, d.Seed != "", d.Count)

	// lottery (commit, read, end) and the lottery's log.
	must(q.SetRoomConfig(ctx, "lot", settings.Room{Method: settings.MethodRandom, Batch: 1}))
	for _, v := range []string{"y", "z"} {
		st, err := q.Join(ctx, "lot", v)
		note("join %s in a lottery: %s in a draw of %d", v, state(st, err), st.InDraw)
	}
	l, err := q.ReadLottery(ctx, "lot")
	must(err)
	note("lottery: committed %v ended %v seed %v", l.Commitment != "", l.Ended, l.Seed != "")
	res = admitTaken(t, q, "lot")
	note("lottery admit: %d admitted, %d waiting", len(res.Admitted), res.Waiting)
	lg, err := q.ReadLotteryLog(ctx, "lot", 0, 10)
	must(err)
	var events []string
	for _, e := range lg.Entries {
		events = append(events, e.Event)
	}
	note("lottery log: first %d events %v more %v", lg.First, events, lg.More)
	must(q.SetRoomConfig(ctx, "lot", settings.Room{Batch: 1}))
	l, err = q.ReadLottery(ctx, "lot")
	must(err)
	note("lottery after it ended: ended %v seed matches %v", l.Ended, l.Seed != "" && Commitment(l.Seed) == l.Commitment)

	// tickrooms and admit in the tick loop, and the admit event they
	// publish, heard by a subscriber of this client. e and f were seen,
	// g left, h was heard of when it joined: g is set aside.
	events2 := subscribe(t, srv, client, c, q.channel("parity"))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Run(runCtx) }()
	var heard wire.Event
	select {
	case heard = <-events2:
	case <-time.After(10 * time.Second):
		t.Fatal("no admit event heard within 10 s")
	}
	// The loop has the tick's reply too (what the retake below remembers
	// of the room) before it stops.
	var took Result
	select {
	case took = <-ticked:
	case <-time.After(10 * time.Second):
		t.Fatal("the tick loop did not report its admission within 10 s")
	}
	stop()
	must(<-done)
	note("admit event: room %s admitted %v", heard.Room, admittedVisitors(heard.Admitted))
	note("the tick that published it: admitted %v", admittedVisitors(took.Admitted))

	// retake: Redis loses everything. i, who joined after the last
	// admission, comes back with its ticket; e (admitted) does not, nor g,
	// whose ticket is under the last one admitted.
	st, ti, err := q.JoinTicket(ctx, "parity", "i")
	note("join i: %s seq %d", state(st, err), ti.Seq)
	_, err = c.Do(ctx, "FLUSHALL")
	must(err)
	rest, err := q.Retake(ctx, "parity", []string{"g", "e", "i"}, []wire.Ticket{tickets[2], tickets[0], ti})
	must(err)
	note("retake: %+v", rest)
	for _, v := range []string{"e", "g", "i"} {
		note("status %s after the retake: %s", v, state(q.Status(ctx, "parity", v)))
	}

	// A room that queues only when busy: the first visitor goes in on the
	// spot, the second finds its one slot taken; the room's state is noted
	// once as passing, then as queueing once someone waits.
	if err := q.SetRoomConfig(ctx, "busy", settings.Room{Activation: "busy", Strategy: "max-active", MaxActive: 1}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"b1", "b2"} {
		p, err := q.PassBusy(ctx, "busy", v)
		if err != nil {
			t.Fatal(err)
		}
		note("pass %s in a busy room: admitted %v new %v refused %q", v, p.Admitted, p.New, p.Refused)
	}
	a, err := q.NoteActivation(ctx, "busy")
	if err != nil {
		t.Fatal(err)
	}
	note("activation: queueing %v first %v changed %v", a.Queueing, a.First, a.Changed)
	note("join b2 in the full busy room: %s", state(q.Join(ctx, "busy", "b2")))
	if a, err = q.NoteActivation(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	note("activation once b2 waits: queueing %v changed %v", a.Queueing, a.Changed)
	return log
}

func admittedVisitors(as []wire.Admission) []string {
	vs := make([]string, len(as))
	for i, a := range as {
		vs[i] = a.Visitor
	}
	slices.Sort(vs)
	return vs
}

// subscribe subscribes to channel through the named client's own pub/sub
// and returns the admit events it hears, once Redis counts the
// subscriber.
func subscribe(t *testing.T, srv *redistest.Server, client string, r Redis, channel string) <-chan wire.Event {
	t.Helper()
	out := make(chan wire.Event, 16)
	deliver := func(payload string) {
		if e, err := wire.DecodeEvent([]byte(payload)); err == nil && e.Type == wire.EventAdmit {
			select {
			case out <- e:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	switch client {
	case "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr}, DisableCache: true,
			ForceSingleClient: true, AlwaysRESP2: srv.Kind == "mini",
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = c.Receive(ctx, c.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) { deliver(m.Message) })
		}()
		t.Cleanup(func() { cancel(); <-done; c.Close() })
	case "go-redis":
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
		ps := c.Subscribe(ctx, channel)
		if _, err := ps.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for m := range ps.Channel() {
				deliver(m.Payload)
			}
		}()
		t.Cleanup(func() { cancel(); _ = ps.Close(); <-done; _ = c.Close() })
	default:
		cancel()
		t.Fatalf("unknown client %q", client)
	}
	waitfor.Until(t, 5*time.Second, "subscribed", func() bool {
		v, err := r.Do(context.Background(), "PUBSUB", "NUMSUB", channel)
		if err != nil {
			t.Fatal(err)
		}
		arr, _ := v.([]any)
		return len(arr) == 2 && fmt.Sprint(arr[1]) == "1"
	})
	return out
}
