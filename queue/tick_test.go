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

	"github.com/waitroom/waitroom/internal/redistest"
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
		if err := q.SetRoomConfig(ctx, "victim", RoomConfig{}); err != nil {
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
		if err := q.SetRoomConfig(ctx, "kept", RoomConfig{}); err != nil {
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
