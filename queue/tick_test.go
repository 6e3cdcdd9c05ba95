package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

// waitNextTick waits until the clock is just past the next tick boundary.
func waitNextTick(t *testing.T, tick time.Duration) {
	t.Helper()
	now := time.Now()
	next := now.Truncate(tick).Add(tick + tick/10)
	time.Sleep(next.Sub(now)) // waiting for a clock boundary, not for another goroutine
}

// TestTickIgnoresRoomFlood: thousands of rooms that visitors made (with
// open rooms) do not slow down the admission of a room an operator
// configured: it gets its batch in every tick.
func TestTickIgnoresRoomFlood(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		var victim atomic.Int64
		q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 14, Tick: tick}, OnAdmit: func(room string, n int) {
			if room == "victim" {
				victim.Add(int64(n))
			}
		}})
		if err := q.SetRoomConfig(ctx, "victim", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, err := q.Join(ctx, "victim", fmt.Sprintf("v%03d", i)); err != nil {
				t.Fatal(err)
			}
		}
		flood := 20000
		if srv.Kind == "mini" {
			flood = 4000
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := range 50 {
			wg.Go(func() {
				for i := w; i < flood; i += 50 {
					if _, err := q.Join(ctx, fmt.Sprintf("flood-%d", i), "x"); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if failed.Load() > 0 {
			t.Fatalf("%d flood joins failed", failed.Load())
		}
		const ticks = 5
		for range ticks {
			waitNextTick(t, tick)
			q.tickOnce(ctx)
		}
		if got := victim.Load(); got != ticks*14 {
			t.Fatalf("victim admitted %d in %d ticks among %d rooms, want %d", got, ticks, flood, ticks*14)
		}
	})
}

// failingSADD is a Redis whose next SADD fails.
type failingSADD struct {
	Redis
	fail atomic.Bool
}

func (f *failingSADD) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) > 0 && args[0] == "SADD" && f.fail.CompareAndSwap(true, false) {
		return nil, errors.New("injected failure")
	}
	return f.Redis.Do(ctx, args...)
}

// TestJoinNeverOrphansAQueue: when listing the room for the tick loop
// fails, the join fails, and its retry lists the room.
func TestJoinNeverOrphansAQueue(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		f := &failingSADD{Redis: r}
		q := newQueue(t, f, fixedBatch(14, 100*time.Millisecond))
		f.fail.Store(true)
		if _, err := q.Join(ctx, "orphan", "a"); err == nil {
			t.Fatal("join succeeded although the room was not listed")
		}
		if _, err := q.Join(ctx, "orphan", "a"); err != nil {
			t.Fatal(err)
		}
		rooms, err := q.Rooms(ctx)
		if err != nil || !slices.Contains(rooms, "orphan") {
			t.Fatalf("rooms %v, %v: the queue is not ticked", rooms, err)
		}
	})
}

// TestIdleRoomKeysExpire: the counters of a room nobody configured expire
// when it is idle; a configured room's do not; a ticket counter that went
// keeps new joiners behind those still waiting.
func TestIdleRoomKeysExpire(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(1, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "kept", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		for _, room := range []string{"flood-1", "kept"} {
			for _, v := range []string{"a", "b", "c"} {
				if _, err := q.Join(ctx, room, v); err != nil {
					t.Fatal(err)
				}
			}
			admitTaken(t, q, room)
		}
		pttl := func(key string) int64 {
			v, err := r.Do(ctx, "PTTL", key)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := asInt(v)
			return n
		}
		for _, k := range []string{"seq", "stats", "active"} {
			if ttl := pttl(prefix("flood-1") + k); ttl <= 0 {
				t.Errorf("flood-1 %s: PTTL %d, want an expiry", k, ttl)
			}
			if ttl := pttl(prefix("kept") + k); ttl != -1 {
				t.Errorf("kept %s: PTTL %d, want none", k, ttl)
			}
		}
		// The counter is gone (expired) while b and c still wait.
		if _, err := r.Do(ctx, "DEL", prefix("flood-1")+"seq"); err != nil {
			t.Fatal(err)
		}
		st, err := q.Join(ctx, "flood-1", "d")
		if err != nil || st.Position != 3 {
			t.Fatalf("join after the counter went: %+v %v, want position 3", st, err)
		}
	})
}

// stuckRoom is a Redis whose script calls on one room's keys hang until
// released, whatever their context says: a node that stopped answering
// and a client that does not give up. hung counts the admit calls among
// them, and back the calls that hung and have returned.
type stuckRoom struct {
	Redis
	room    string
	armed   atomic.Bool
	release chan struct{}
	hung    atomic.Int64
	back    atomic.Int64
}

func (s *stuckRoom) Eval(ctx context.Context, sc *rediscall.Script, keys []string, args ...string) (any, error) {
	if s.armed.Load() && len(keys) > 0 && keys[0] == queueKey(s.room) {
		if sc == admitScript.Script {
			s.hung.Add(1)
			defer s.back.Add(1)
		}
		<-s.release
	}
	return s.Redis.Eval(ctx, sc, keys, args...)
}

// TestTickDoesNotWaitForAStuckRoom: while one room's admit call hangs,
// the other rooms go on getting a batch each tick, the stuck room gets no
// second call piled on the first, and Run returns only once that call has.
func TestTickDoesNotWaitForAStuckRoom(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		stuck := &stuckRoom{Redis: r, room: "stuck", release: make(chan struct{})}
		var admitted atomic.Int64
		q := newQueue(t, stuck, &Options{Capacity: Capacity{Batch: 1, Tick: tick}, OnAdmit: func(room string, n int) {
			if room == "moving" {
				admitted.Add(int64(n))
			}
		}})
		for _, room := range []string{"stuck", "moving"} {
			if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
				t.Fatal(err)
			}
			joinN(t, q, room, 30, "v")
		}
		stuck.armed.Store(true)
		rctx, cancel := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- q.Run(rctx) }()
		released, returned := false, false
		release := func() {
			if !released {
				released = true
				close(stuck.release)
			}
		}
		defer func() {
			release()
			cancel()
			if !returned {
				<-ran
			}
		}()
		waitfor.Until(t, 20*time.Second, "10 admitted in the other room while one room hung", func() bool { return admitted.Load() >= 10 })
		if n := stuck.hung.Load(); n != 1 {
			t.Fatalf("%d admit calls hung on the stuck room, want 1 (no call piled on a running one)", n)
		}
		cancel()
		select {
		case <-ran:
			t.Fatal("Run returned while an admit call was still running")
		default:
		}
		// Whenever Run returns, the hung call must have returned first.
		release()
		returned = true
		if err := <-ran; err != nil {
			t.Fatal(err)
		}
		if back, hung := stuck.back.Load(), stuck.hung.Load(); back < hung {
			t.Fatalf("Run returned with %d of %d hung calls still running", hung-back, hung)
		}
	})
}

// countingAdmits counts the admit calls made for one room.
type countingAdmits struct {
	Redis
	room  string
	calls atomic.Int64
}

func (c *countingAdmits) Eval(ctx context.Context, sc *rediscall.Script, keys []string, args ...string) (any, error) {
	if sc == admitScript.Script && len(keys) > 0 && keys[0] == queueKey(c.room) {
		c.calls.Add(1)
	}
	return c.Redis.Eval(ctx, sc, keys, args...)
}

// TestPausedRoomTickedOncePerSecond: the tick loop looks at a paused room
// about once a second instead of every tick, and a resume written by
// another instance is admitted from within about a second.
func TestPausedRoomTickedOncePerSecond(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		counting := &countingAdmits{Redis: r, room: "quiet"}
		var admitted atomic.Int64
		q := newQueue(t, counting, &Options{Capacity: Capacity{Batch: 2, Tick: tick}, OnAdmit: func(room string, n int) {
			if room == "quiet" {
				admitted.Add(int64(n))
			}
		}})
		other := newQueue(t, r, fixedBatch(2, tick)) // an instance without a tick loop
		if err := other.SetRoomConfig(ctx, "quiet", settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "quiet", 10, "v")
		start := time.Now()
		rctx, cancel := context.WithCancel(ctx)
		ran := make(chan error, 1)
		go func() { ran <- q.Run(rctx) }()
		defer func() {
			cancel()
			if err := <-ran; err != nil {
				t.Error(err)
			}
		}()

		// Four admit calls of a paused room take at least three skips of
		// pausedEvery each; a loop that called it every tick would make
		// them in three ticks. A busy machine only makes the span longer.
		const calls = 4
		waitfor.Until(t, 20*time.Second, "four admit calls of the paused room", func() bool { return counting.calls.Load() >= calls })
		if span := time.Since(start); int64(span/pausedEvery)+2 < calls {
			t.Fatalf("%d admit calls in %v of a paused room, want at most one each %v", calls, span, pausedEvery)
		}
		if n := admitted.Load(); n != 0 {
			t.Fatalf("%d admitted while paused", n)
		}

		// Resumed by the other instance: admitted again, and from then on
		// the room is no longer skipped.
		if _, err := other.UpdateRoomConfig(ctx, "quiet", func(c *settings.Room) error { c.Paused = false; return nil }); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "all 10 admitted after the resume", func() bool { return admitted.Load() >= 10 })
		if q.skipTick("quiet", time.Now()) {
			t.Fatal("the resumed room is still skipped")
		}
	})
}

// TestPausedRoomResumedHereAtOnce: a change of settings made by the
// instance itself has its tick loop admit the room from the next tick,
// however recently it found the room paused.
func TestPausedRoomResumedHereAtOnce(t *testing.T) {
	q := newQueue(t, nil, nil)
	now := time.Now()
	q.notePaused("r", true, now)
	after := time.Now()
	if !q.skipTick("r", now.Add(pausedEvery/2)) || q.skipTick("r", after.Add(pausedEvery+time.Millisecond)) {
		t.Fatal("a paused room is not skipped for pausedEvery")
	}
	q.settingsChanged("r")
	if q.skipTick("r", time.Now()) {
		t.Fatal("a room changed here is still skipped")
	}
	// A call that started before the change says nothing of the room.
	q.notePaused("r", true, now)
	if q.skipTick("r", time.Now()) {
		t.Fatal("a call from before the change had the room skipped")
	}
	q.notePaused("r", true, time.Now())
	if !q.skipTick("r", time.Now()) {
		t.Fatal("a call after the change found it paused but it is not skipped")
	}
	q.notePaused("r", false, time.Now())
	if p := q.roomMemOf("r").paused; q.skipTick("r", time.Now()) || p != (pausedRoom{}) {
		t.Fatalf("a room found open is still held: %+v", p)
	}
	// A room never found paused gets no memory from the tick loop's note.
	q.notePaused("open", false, time.Now())
	if q.roomMemOf("open") != nil {
		t.Fatal("a room found open was given memory")
	}

	// The room of a change may be a request's buffer, reused after it:
	// the change is kept under the room's name, not the buffer's.
	buf := []byte("drop")
	q.settingsChanged(unsafe.String(unsafe.SliceData(buf), len(buf)))
	copy(buf, "zzzz")
	var names []string
	q.rooms.Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	slices.Sort(names)
	if !slices.Equal(names, []string{"drop", "r"}) {
		t.Fatalf("the rooms held are %q, want drop and r", names)
	}
}
