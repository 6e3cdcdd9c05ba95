package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// fillPreQueue puts n visitors named name+i into room's pre-queue, as
// joins before opening would, in a few big SADDs.
func fillPreQueue(tb testing.TB, r Redis, room, name string, n int) []string {
	tb.Helper()
	vs := make([]string, n)
	for i := range vs {
		vs[i] = fmt.Sprintf("%s%07d", name, i)
	}
	for chunk := range slices.Chunk(vs, 10000) {
		if _, err := r.Do(context.Background(), append([]string{"SADD", prefix(room) + "pre"}, chunk...)...); err != nil {
			tb.Fatal(err)
		}
	}
	return vs
}

// openEvents subscribes to room's channel and returns the open events
// that arrive.
func openEvents(t *testing.T, srv *redistest.Server, room string) <-chan wire.Event {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	ps := c.Subscribe(context.Background(), wire.Channel(room))
	if _, err := ps.Receive(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := make(chan wire.Event, 16)
	go func() {
		for m := range ps.Channel() {
			if e, err := wire.DecodeEvent([]byte(m.Payload)); err == nil && e.Type == wire.EventOpen {
				out <- e
			}
		}
	}()
	t.Cleanup(func() { _ = ps.Close() })
	return out
}

func drawUnderWay(t *testing.T, r Redis, room string) bool {
	t.Helper()
	v, err := r.Do(context.Background(), "EXISTS", prefix(room)+"draw")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := asInt(v)
	return n == 1
}

func queued(t *testing.T, r Redis, room string) []string {
	t.Helper()
	v, err := r.Do(context.Background(), "ZRANGE", queueKey(room), "0", "-1")
	if err != nil {
		t.Fatal(err)
	}
	arr, _ := v.([]any)
	out := make([]string, len(arr))
	for i, e := range arr {
		out[i], _ = e.(string)
	}
	return out
}

// TestPreQueueDrawInSlices opens a pre-queue larger than one slice and,
// while calls of every kind draw it slice by slice, checks that the order
// of those drawn never changes, that visitors joining after opening stand
// behind the whole pre-queue (and are told so), that admission takes only
// drawn visitors, that visitors not drawn yet hear a pre-queue state, and
// that the open event goes out once, when the draw is complete.
func TestPreQueueDrawInSlices(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "big-drop"
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{OpensAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		const n = 9000 // several slices
		pre := fillPreQueue(t, r, room, "p", n)
		events := openEvents(t, srv, room)
		// Opening time has come: the next call opens the room.
		if err := q.SetRoomConfig(ctx, room, settings.Room{Batch: 1500, OpensAt: time.Now().Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}

		var (
			drawn    []string // pre-queued visitors in their drawn order
			late     []string
			admitted = map[string]bool{}
			calls    int
		)
		isPre := func(v string) bool { return strings.HasPrefix(v, "p") }
		for step := 0; drawUnderWay(t, r, room) || step == 0; step++ {
			if step > 200 {
				t.Fatal("the draw does not end")
			}
			calls++
			switch step % 3 {
			case 0:
				v := fmt.Sprintf("late%02d", len(late))
				late = append(late, v)
				s, err := q.Join(ctx, room, v)
				if err != nil {
					t.Fatal(err)
				}
				if ahead := int64(n - len(admitted)); s.Status != wire.StatusWaiting || s.Position <= ahead {
					t.Fatalf("joined after opening: %+v, want behind the %d pre-queued", s, ahead)
				}
			case 1:
				sample := []string{pre[step], pre[n-1-step], late[0]}
				states, err := q.StatusMany(ctx, room, sample)
				if err != nil {
					t.Fatal(err)
				}
				for i, s := range states {
					if s.PreQueue() && (s.OpensAt.Year() < 2000 || s.Position != 0) {
						t.Fatalf("%s not drawn yet: %+v", sample[i], s)
					}
					if s.Status != wire.StatusWaiting && s.Status != wire.StatusAdmitted {
						t.Fatalf("%s during the draw: %+v", sample[i], s)
					}
				}
				if ahead := int64(n - len(admitted)); states[2].Position <= ahead {
					t.Fatalf("late joiner at %d during the draw, want behind the %d pre-queued", states[2].Position, ahead)
				}
			case 2:
				res := admitTaken(t, q, room)
				for _, a := range res.Admitted {
					if !isPre(a.Visitor) {
						t.Fatalf("%s admitted before the pre-queue was through", a.Visitor)
					}
					admitted[a.Visitor] = true
				}
			}
			// The queue holds the drawn visitors not admitted yet, in the
			// order drawn so far, then later joiners.
			var now []string
			sawLate := false
			for _, v := range queued(t, r, room) {
				if !isPre(v) {
					sawLate = true
					continue
				}
				if sawLate {
					t.Fatalf("step %d: %s queued behind a later joiner", step, v)
				}
				now = append(now, v)
			}
			var kept []string
			for _, v := range drawn {
				if !admitted[v] {
					kept = append(kept, v)
				}
			}
			if len(now) < len(kept) || !slices.Equal(now[:len(kept)], kept) {
				t.Fatalf("step %d: the drawn order changed", step)
			}
			drawn = append(drawn, now[len(kept):]...)
			// Slices are at least 20 ms apart (Redis TIME).
			waitUntil(t, time.Now().Add(20*time.Millisecond))
			if drawUnderWay(t, r, room) {
				select {
				case e := <-events:
					t.Fatalf("open event %+v before the draw was complete", e)
				default:
				}
			}
		}
		if calls < 4 {
			t.Fatalf("drawn in %d calls: not in slices", calls)
		}
		if len(drawn) != n {
			t.Fatalf("drew %d of %d", len(drawn), n)
		}
		sorted := slices.Sorted(slices.Values(drawn))
		if !slices.Equal(sorted, pre) {
			t.Fatal("the draw is not a permutation of the pre-queue")
		}
		if slices.Equal(drawn, pre) {
			t.Fatal("the draw kept the pre-queue's order")
		}
		select {
		case e := <-events:
			if e.Count != n {
				t.Fatalf("open event count %d, want %d", e.Count, n)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no open event after the draw")
		}
		s, err := q.Join(ctx, room, "after")
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(n - len(admitted) + len(late) + 1); s.Position != want {
			t.Fatalf("joined after the draw: position %d, want %d", s.Position, want)
		}
	})
}

// TestOpensAtClearedOrPastOpensNow: clearing opensAt, or moving it into
// the past, opens the room at once with the fair draw.
func TestOpensAtClearedOrPastOpensNow(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  settings.Room
	}{
		{"cleared", settings.Room{}},
		{"past", settings.Room{OpensAt: time.Now().Add(-time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
				ctx := context.Background()
				q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
				if err := q.SetRoomConfig(ctx, "drop", settings.Room{OpensAt: time.Now().Add(time.Hour)}); err != nil {
					t.Fatal(err)
				}
				const n = 40
				early := joinN(t, q, "drop", n, "e")
				if s, _ := q.Status(ctx, "drop", early[0]); !s.PreQueue() {
					t.Fatalf("before opening: %+v", s)
				}
				events := openEvents(t, srv, "drop")
				if err := q.SetRoomConfig(ctx, "drop", tc.cfg); err != nil {
					t.Fatal(err)
				}
				states, err := q.StatusMany(ctx, "drop", early)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[int64]bool{}
				for i, s := range states {
					if s.Status != wire.StatusWaiting || s.PreQueue() || s.Position < 1 || s.Position > n || seen[s.Position] {
						t.Fatalf("%s after opening: %+v", early[i], s)
					}
					seen[s.Position] = true
				}
				if s, _ := q.Join(ctx, "drop", "late"); s.Position != n+1 {
					t.Fatalf("first joiner after opening: %+v, want position %d", s, n+1)
				}
				select {
				case e := <-events:
					if e.Count != n {
						t.Fatalf("open event count %d", e.Count)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no open event")
				}
			})
		})
	}
}

// BenchmarkDraw measures the draw of 1,000,000 pre-queued visitors on a
// real redis-server: status calls every 5 ms draw it (at most one slice
// each, and one slice per 20 ms), and SLOWLOG gives how long each script
// held Redis. slowest-slice-ms is the worst of them (the goal is well
// under 50 ms); calls/draw counts every call, with or without a slice.
//
//	go test -run '^$' -bench Draw ./queue/
func BenchmarkDraw(b *testing.B) {
	const n = 1000000
	srv := redistest.StartReal(b)
	r := newRedis(b, srv, "rueidis")
	q := newQueue(b, r, nil)
	ctx := context.Background()
	var slowest, total time.Duration
	calls := 0
	for i := range b.N {
		b.StopTimer()
		room := "draw-" + strconv.Itoa(i)
		fillPreQueue(b, r, room, "v", n)
		if _, err := r.Do(ctx, "HSET", prefix(room)+"cfg", "opensAt", "1"); err != nil {
			b.Fatal(err)
		}
		for _, cmd := range [][]string{
			{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
			{"CONFIG", "SET", "slowlog-max-len", "100000"},
			{"SLOWLOG", "RESET"},
		} {
			if _, err := r.Do(ctx, cmd...); err != nil {
				b.Fatal(err)
			}
		}
		tk := time.NewTicker(5 * time.Millisecond) // callers arriving, as polls would
		b.StartTimer()
		for {
			<-tk.C
			if _, err := q.Status(ctx, room, "nobody"); err != nil {
				b.Fatal(err)
			}
			calls++
			v, err := r.Do(ctx, "EXISTS", prefix(room)+"draw")
			if err != nil {
				b.Fatal(err)
			}
			if n, _ := asInt(v); n == 0 {
				break
			}
		}
		b.StopTimer()
		tk.Stop()
		v, err := r.Do(ctx, "SLOWLOG", "GET", "-1")
		if err != nil {
			b.Fatal(err)
		}
		entries, _ := v.([]any)
		for _, e := range entries {
			f, _ := e.([]any)
			if len(f) < 4 {
				continue
			}
			args, _ := f[3].([]any)
			if len(args) == 0 {
				continue
			}
			if cmd, _ := args[0].(string); !strings.HasPrefix(strings.ToUpper(cmd), "EVAL") {
				continue
			}
			us, _ := asInt(f[2])
			d := time.Duration(us) * time.Microsecond
			slowest = max(slowest, d)
			total += d
		}
		if _, err := r.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "10000"); err != nil {
			b.Fatal(err)
		}
		if v, _ := r.Do(ctx, "ZCARD", queueKey(room)); v != int64(n) {
			b.Fatalf("drew %v of %d", v, n)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(slowest.Microseconds())/1000, "slowest-slice-ms")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/draw")
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "redis-ms/draw")
}

// A Redis that comes back empty before the opening gets a new committed
// seed when the settings are put back, and the opening draws with it: the
// draw never runs on an uncommitted seed after a loss.
func TestDrawSeedAfterLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "drop"
		opens := time.Now().Add(1500 * time.Millisecond)
		opts := fixedBatch(10, 100*time.Millisecond)
		opts.Settings = settingsOf{room: {OpensAt: opens}}
		q := newQueue(t, r, opts)
		if err := q.SetRoomConfig(ctx, room, settings.Room{OpensAt: opens}); err != nil {
			t.Fatal(err)
		}
		before, err := q.Draw(ctx, room, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		if res, err := q.Retake(ctx, room, nil, nil); err != nil || !res.Settings {
			t.Fatalf("write back: %+v %v", res, err)
		}
		during, err := q.Draw(ctx, room, 0, 0)
		if err != nil {
			t.Fatalf("draw after the loss: %v", err)
		}
		if len(during.Commitment) != 64 || during.Commitment == before.Commitment || during.Opened {
			t.Fatalf("draw after the loss: %+v (before: %s), want a new commitment, not opened", during, before.Commitment)
		}
		ids := joinN(t, q, room, 20, "p")
		waitfor.Until(t, 10*time.Second, "the opening", func() bool {
			s, err := q.Status(ctx, room, ids[0])
			return err == nil && !s.PreQueue()
		})
		after, err := q.Draw(ctx, room, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !after.Opened || len(after.Seed) != 64 || Commitment(after.Seed) != during.Commitment {
			t.Fatalf("opened draw %+v does not reveal the seed committed after the loss (%s)", after, during.Commitment)
		}
		if len(after.IDs) != len(ids) {
			t.Fatalf("the draw lists %d ids, want %d", len(after.IDs), len(ids))
		}
	})
}
