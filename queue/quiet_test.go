package queue

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// countingLooks counts the tick loop's looks at the rooms.
type countingLooks struct {
	Redis
	looks atomic.Int64
	// late counts calls that failed, past their tick's deadline on a busy
	// machine: each makes the loop look again at the next tick, as it
	// should when Redis seems slow.
	late atomic.Int64
}

func (c *countingLooks) Eval(ctx context.Context, sc *rediscall.Script, keys []string, args ...string) (any, error) {
	if sc == tickRoomsScript.Script {
		c.looks.Add(1)
	}
	v, err := c.Redis.Eval(ctx, sc, keys, args...)
	if err != nil {
		c.late.Add(1)
	}
	return v, err
}

// runLoop runs q's tick loop until the test ends.
// runLoop runs q's tick loop until the test ends or the returned stop is
// called (which waits for the loop to return).
func runLoop(t *testing.T, q *Queue) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- q.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-ran; err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// admittedIn counts what OnAdmit reports, by room.
type admittedIn struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *admittedIn) add(room string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[room] += n
}

func (a *admittedIn) of(room string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[room]
}

// TestQuietTickLoop: while every room is paused, the tick loop looks at
// the rooms about every quietEvery instead of every tick; a join, a resume
// and places given back on this instance wake it at once (here with the
// quiet wait an hour long, so nothing else could), and a resume made by
// another instance is seen within quietEvery and a paused room's second.
func TestQuietTickLoop(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		other := newQueue(t, r, fixedBatch(2, tick)) // an instance without a tick loop
		if err := other.SetRoomConfig(ctx, "calm", settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		joinN(t, other, "calm", 4, "c")

		counting := &countingLooks{Redis: r}
		var got admittedIn
		q := newQueue(t, counting, &Options{Capacity: Capacity{Batch: 2, Tick: tick}, OnAdmit: got.add})
		start := time.Now()
		stopQ := runLoop(t, q)
		// Four looks take at least three quiet waits; a loop that looked
		// every tick would make them in three ticks. A call that ran past
		// its tick's deadline (a busy machine) earns one look more.
		const looks = 4
		waitfor.Until(t, 10*time.Second, "four looks at the paused rooms", func() bool { return counting.looks.Load() >= looks })
		if span, late := time.Since(start), counting.late.Load(); int64(span/quietEvery)+2+late < looks {
			t.Fatalf("%d looks at the rooms in %v with every room paused and %d late calls, want at most one each %v", looks, span, late, quietEvery)
		}

		// Resumed by the other instance: seen without a wake.
		if _, err := other.UpdateRoomConfig(ctx, "calm", func(c *settings.Room) error { c.Paused = false; return nil }); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "the resume made elsewhere admitted", func() bool { return got.of("calm") == 4 })
		// From here on only q2's loop may admit: q's would take the rooms
		// the rest waits for q2 to admit.
		stopQ()

		// An instance whose quiet wait is an hour: only a wake ticks it.
		counting2 := &countingLooks{Redis: r}
		var got2 admittedIn
		// The look of the tick that last admitted: the tick after it
		// finds nothing to do, and its look is the last before the
		// hour-long quiet wait.
		var lookAtAdmit atomic.Int64
		onAdmit := func(room string, n int) {
			lookAtAdmit.Store(counting2.looks.Load())
			got2.add(room, n)
		}
		quietAgain := func() bool { return counting2.looks.Load() > lookAtAdmit.Load() }
		q2 := newQueue(t, counting2, &Options{Capacity: Capacity{Batch: 2, Tick: tick}, OnAdmit: onAdmit})
		q2.quiet = time.Hour
		if err := q2.SetRoomConfig(ctx, "asleep", settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q2, "asleep", 2, "a")
		runLoop(t, q2)
		looked := func(n int64) func() bool { return func() bool { return counting2.looks.Load() >= n } }
		waitfor.Until(t, 10*time.Second, "the first look", looked(1))

		// A join here into a room nobody paused.
		joinN(t, q2, "fresh", 2, "f")
		waitfor.Until(t, 10*time.Second, "the join admitted", func() bool { return got2.of("fresh") == 2 })

		// A resume made here.
		waitfor.Until(t, 10*time.Second, "quiet again", quietAgain)
		if _, err := q2.UpdateRoomConfig(ctx, "asleep", func(c *settings.Room) error { c.Paused = false; return nil }); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "the resume made here admitted", func() bool { return got2.of("asleep") == 2 })

		// Places given back after a loss.
		waitfor.Until(t, 10*time.Second, "quiet again", quietAgain)
		_, tk, err := other.JoinTicket(ctx, "back", "b1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Do(ctx, "DEL", queueKey("back")); err != nil { // its place lost
			t.Fatal(err)
		}
		if res, err := q2.Retake(ctx, "back", []string{"b1"}, []wire.Ticket{tk}); err != nil || res.Tickets != 1 {
			t.Fatalf("retake: %+v %v", res, err)
		}
		waitfor.Until(t, 10*time.Second, "the place given back admitted", func() bool { return got2.of("back") == 1 })
	})
}

// TestLossSeenWithoutAFailedCall: Redis loses everything between two looks
// of a quiet tick loop and no call fails (a restart shorter than the wait,
// here a FLUSHALL). The next look sees the marker gone and puts back what
// the instance remembers: the settings and the last ticket it admitted.
func TestLossSeenWithoutAFailedCall(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		opts := fixedBatch(2, tick)
		opts.Settings = settingsOf{"kept": {Paused: true, Seats: 40, Batch: 2}}
		q := newQueue(t, r, opts)
		if err := q.SetRoomConfig(ctx, "kept", settings.Room{Seats: 40, Batch: 2}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "kept", 5, "k")
		if res := admitTaken(t, q, "kept"); len(res.Admitted) != 2 {
			t.Fatalf("admitted %d", len(res.Admitted))
		}
		if err := q.SetRoomConfig(ctx, "kept", settings.Room{Paused: true, Seats: 40, Batch: 2}); err != nil {
			t.Fatal(err)
		}
		runLoop(t, q)
		alive := func() bool {
			v, err := r.Do(ctx, "EXISTS", aliveKey)
			n, _ := asInt(v)
			return err == nil && n == 1
		}
		waitfor.Until(t, 10*time.Second, "the marker written", alive)

		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "the marker written again", alive)
		c, err := q.RoomConfig(ctx, "kept")
		if err != nil || !c.Paused || c.Seats != 40 {
			t.Fatalf("settings after the loss: %+v %v", c, err)
		}
		v, err := r.Do(ctx, "HGET", prefix("kept")+"stats", "floor")
		if floor, _ := strconv.Atoi(toString(v)); err != nil || floor != 2 {
			t.Fatalf("the last ticket admitted written back as %v (%v), want 2", v, err)
		}
	})
}
