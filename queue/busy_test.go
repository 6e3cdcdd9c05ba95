package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

func mustPass(t *testing.T, q *Queue, room, visitor string) Pass {
	t.Helper()
	p, err := q.PassBusy(context.Background(), room, visitor)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPassBusyMaxActive: a busy max-active room lets visitors in on the
// spot up to its free slots, then refuses; a visitor holding a token gets
// it back; once anyone waits nobody passes.
func TestPassBusyMaxActive(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "shop", settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 3, Activation: settings.ActivationBusy}); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			p := mustPass(t, q, "shop", fmt.Sprintf("v%d", i))
			if !p.Admitted || !p.New {
				t.Fatalf("visitor %d under the threshold: %+v, want admitted now", i, p)
			}
			if d := time.Until(p.Token.NotBefore); d > time.Second || d < -5*time.Second {
				t.Fatalf("notBefore %v is not now", p.Token.NotBefore)
			}
		}
		if p := mustPass(t, q, "shop", "v3"); p.Admitted || p.Refused != BusyFull {
			t.Fatalf("at the threshold: %+v, want refused full", p)
		}
		again := mustPass(t, q, "shop", "v1")
		if !again.Admitted || again.New {
			t.Fatalf("a visitor holding a token: %+v, want it back", again)
		}
		st, err := q.Status(ctx, "shop", "v0")
		if err != nil || st.Status != "admitted" {
			t.Fatalf("status of a visitor let in: %+v, %v", st, err)
		}
		// A slot frees; the next in the queue goes first.
		if _, err := q.Join(ctx, "shop", "w0"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Leave(ctx, "shop", "v0"); err != nil {
			t.Fatal(err)
		}
		if p := mustPass(t, q, "shop", "v4"); p.Admitted || p.Refused != BusyWaiting {
			t.Fatalf("with someone waiting: %+v, want refused waiting", p)
		}
	})
}

// TestPassBusyRefusals: activation always, a pause, a scheduled opening,
// an invite-only room, a proof of work and sold-out seats each refuse.
func TestPassBusyRefusals(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		cases := []struct {
			cfg  settings.Room
			want string
		}{
			{settings.Room{}, BusyAlways},
			{settings.Room{Activation: settings.ActivationAlways}, BusyAlways},
			{settings.Room{Activation: settings.ActivationBusy, Paused: true}, BusyPaused},
			{settings.Room{Activation: settings.ActivationBusy, OpensAt: time.Now().Add(time.Hour)}, BusyNotOpen},
			{settings.Room{Activation: settings.ActivationBusy, InviteOnly: true}, BusyInviteOnly},
			{settings.Room{Activation: settings.ActivationBusy, PowBits: 8}, BusyPow},
			{settings.Room{Activation: settings.ActivationBusy, Method: settings.MethodReject}, BusyClosed},
		}
		for i, c := range cases {
			room := fmt.Sprintf("r%d", i)
			if err := q.SetRoomConfig(ctx, room, c.cfg); err != nil {
				t.Fatal(err)
			}
			if p := mustPass(t, q, room, "v"); p.Admitted || p.Refused != c.want {
				t.Errorf("%+v: %+v, want refused %s", c.cfg, p, c.want)
			}
		}
		if err := q.SetRoomConfig(ctx, "seats", settings.Room{Activation: settings.ActivationBusy, Seats: 1}); err != nil {
			t.Fatal(err)
		}
		if p := mustPass(t, q, "seats", "a"); !p.Admitted {
			t.Fatalf("first of one seat: %+v", p)
		}
		if p := mustPass(t, q, "seats", "b"); p.Refused != BusySoldOut {
			t.Fatalf("second of one seat: %+v, want sold_out", p)
		}
	})
}

// TestPassBusyFixedRate: under the fixed strategy the room lets in at most
// its rate (batch per tick times ticks per second) in one second of Redis
// time.
func TestPassBusyFixedRate(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "shop", settings.Room{Batch: 2, Activation: settings.ActivationBusy}); err != nil {
			t.Fatal(err)
		}
		const rate = 20 // 2 a tick, 10 ticks a second
		// The calls of one attempt must fall in one second of Redis time;
		// an attempt that spans two is tried again.
		for attempt := 0; ; attempt++ {
			if attempt == 5 {
				t.Fatal("no attempt fell within one second")
			}
			start := redisSecond(t, r)
			passed, refused := 0, 0
			for i := range rate + 5 {
				p := mustPass(t, q, "shop", fmt.Sprintf("a%d-%d", attempt, i))
				if p.Admitted {
					passed++
				} else if p.Refused == BusyFull {
					refused++
				}
			}
			if redisSecond(t, r) != start {
				continue
			}
			if passed > rate {
				t.Fatalf("%d let in within one second, want at most %d", passed, rate)
			}
			if attempt == 0 && (passed != rate || refused != 5) {
				t.Fatalf("first second: %d let in, %d refused; want %d and 5", passed, refused, rate)
			}
			return
		}
	})
}

func redisSecond(t *testing.T, r Redis) int64 {
	t.Helper()
	v, err := r.Do(context.Background(), "TIME")
	if err != nil {
		t.Fatal(err)
	}
	arr, _ := v.([]any)
	s, _ := arr[0].(string)
	var n int64
	fmt.Sscan(s, &n)
	return n
}

// TestPassBusyConcurrent: many visitors at once into a room with 50 free
// slots: exactly 50 are let in.
func TestPassBusyConcurrent(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "shop", settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 50, Activation: settings.ActivationBusy}); err != nil {
			t.Fatal(err)
		}
		var passed, full atomic.Int64
		var wg sync.WaitGroup
		for i := range 300 {
			wg.Go(func() {
				p, err := q.PassBusy(ctx, "shop", fmt.Sprintf("v%03d", i))
				switch {
				case err != nil:
					t.Error(err)
				case p.Admitted:
					passed.Add(1)
				case p.Refused == BusyFull:
					full.Add(1)
				}
			})
		}
		wg.Wait()
		if passed.Load() != 50 || full.Load() != 250 {
			t.Fatalf("%d let in, %d refused full; want 50 and 250", passed.Load(), full.Load())
		}
	})
}

// TestPassBusyFixedRateInstances: under the fixed strategy, three
// instances (each with its own client) asking at once let in exactly the
// room's rate within one second of Redis time, not three times it.
func TestPassBusyFixedRateInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		var qs []*Queue
		for i := range 3 {
			rr := r
			if i > 0 {
				rr = newRedis(t, srv, "rueidis")
			}
			qs = append(qs, newQueue(t, rr, fixedBatch(10, 100*time.Millisecond)))
		}
		if err := qs[0].SetRoomConfig(ctx, "shop", settings.Room{Batch: 2, Activation: settings.ActivationBusy}); err != nil {
			t.Fatal(err)
		}
		const rate = 20 // 2 a tick, 10 ticks a second
		// The calls of one attempt must fall in one second of Redis time;
		// an attempt that spans two is tried again.
		for attempt := 0; ; attempt++ {
			if attempt == 5 {
				t.Fatal("no attempt fell within one second")
			}
			start := redisSecond(t, r)
			var passed, full atomic.Int64
			var wg sync.WaitGroup
			for i := range 90 {
				wg.Go(func() {
					p, err := qs[i%3].PassBusy(ctx, "shop", fmt.Sprintf("a%d-%d", attempt, i))
					switch {
					case err != nil:
						t.Error(err)
					case p.Admitted:
						passed.Add(1)
					case p.Refused == BusyFull:
						full.Add(1)
					}
				})
			}
			wg.Wait()
			if redisSecond(t, r) != start {
				continue
			}
			if passed.Load() != rate || full.Load() != 90-rate {
				t.Fatalf("within one second: %d let in, %d refused full; want %d and %d", passed.Load(), full.Load(), rate, 90-rate)
			}
			return
		}
	})
}

// TestNoteActivation: a room's state is recorded once, turns queueing
// when someone waits and passing when nobody does, with the moment it
// changed; of several callers that notice one change, one is told.
func TestNoteActivation(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "shop", settings.Room{Activation: settings.ActivationBusy}); err != nil {
			t.Fatal(err)
		}
		note := func() Activation {
			t.Helper()
			a, err := q.NoteActivation(ctx, "shop")
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		if _, ok, err := q.ActivationOf(ctx, "shop"); ok || err != nil {
			t.Fatalf("before any note: ok %v, %v", ok, err)
		}
		first := note()
		if first.Queueing || !first.First || first.Changed {
			t.Fatalf("first note: %+v, want passing, first", first)
		}
		if a := note(); a.Changed || a.First || !a.Since.Equal(first.Since) {
			t.Fatalf("again: %+v, want unchanged since %v", a, first.Since)
		}
		if _, err := q.Join(ctx, "shop", "w"); err != nil {
			t.Fatal(err)
		}
		var told atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				a, err := q.NoteActivation(ctx, "shop")
				if err != nil || !a.Queueing {
					t.Errorf("with someone waiting: %+v, %v", a, err)
				}
				if a.Changed {
					told.Add(1)
				}
			})
		}
		wg.Wait()
		if told.Load() != 1 {
			t.Fatalf("%d callers told of the change, want 1", told.Load())
		}
		got, ok, err := q.ActivationOf(ctx, "shop")
		if err != nil || !ok || !got.Queueing || got.Since.Before(first.Since) {
			t.Fatalf("read back: %+v %v %v", got, ok, err)
		}
		if _, err := q.Leave(ctx, "shop", "w"); err != nil {
			t.Fatal(err)
		}
		if a := note(); a.Queueing || !a.Changed {
			t.Fatalf("nobody waiting again: %+v, want passing, changed", a)
		}
	})
}
