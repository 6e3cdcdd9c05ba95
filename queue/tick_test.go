package queue

import (
	"context"
	"fmt"
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
