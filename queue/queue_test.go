package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

var clients = []string{"rueidis", "go-redis"}

// newRedis connects the named client to srv.
func newRedis(tb testing.TB, srv *redistest.Server, client string) Redis {
	tb.Helper()
	switch client {
	case "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr}, DisableCache: true,
			ForceSingleClient: true, AlwaysRESP2: srv.Kind == "mini",
		})
		if err != nil {
			tb.Fatalf("rueidis: %v", err)
		}
		tb.Cleanup(c.Close)
		return redisconn.NewRueidis(c)
	case "go-redis":
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64, Protocol: 2})
		tb.Cleanup(func() { _ = c.Close() })
		return redisconn.NewGoRedis(c)
	}
	tb.Fatalf("unknown client %q", client)
	return nil
}

var testSecret = []byte("0123456789abcdef-test-secret")

func newQueue(tb testing.TB, r Redis, opts *Options) *Queue {
	tb.Helper()
	s, err := visitorsig.NewSigner(testSecret)
	if err != nil {
		tb.Fatal(err)
	}
	q, err := New(r, s, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// each runs f on a real redis-server with rueidis, the default client.
// go-redis and the embedded Redis are held to the same replies by the
// parity suite (parity_test.go), which runs every script and the pub/sub
// path once on each combination, not every scenario four times.
func each(t *testing.T, f func(t *testing.T, srv *redistest.Server, r Redis)) {
	t.Run("real/rueidis", func(t *testing.T) {
		srv := redistest.StartReal(t)
		f(t, srv, newRedis(t, srv, "rueidis"))
	})
}

// eachClient runs f on a real redis-server with each client, for what
// depends on how a client sends its calls (its pool, its pipeline), not
// only on the scripts.
func eachClient(t *testing.T, f func(t *testing.T, srv *redistest.Server, r Redis)) {
	for _, client := range clients {
		t.Run("real/"+client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			f(t, srv, newRedis(t, srv, client))
		})
	}
}

func fixedBatch(batch int, tick time.Duration) *Options {
	return &Options{Capacity: Capacity{Batch: batch, Tick: tick}}
}

func TestJoinPositions(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(14, 100*time.Millisecond))
		const n = 1000
		positions := make([]int64, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				s, err := q.Join(ctx, "drop", fmt.Sprintf("v%04d", i))
				if err != nil {
					errs <- err
					return
				}
				positions[i] = s.Position
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		sorted := append([]int64(nil), positions...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		for i, p := range sorted {
			if p != int64(i+1) {
				t.Fatalf("positions are not exactly 1..%d: sorted[%d] = %d", n, i, p)
			}
		}
		// A re-join keeps the place.
		for _, i := range []int{0, 17, 999} {
			s, err := q.Join(ctx, "drop", fmt.Sprintf("v%04d", i))
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != wire.StatusWaiting || s.Position != positions[i] {
				t.Fatalf("re-join of v%04d: %+v, want position %d", i, s, positions[i])
			}
		}
		// Positions shrink as admissions happen.
		last := findPos(positions, n)
		before, _ := q.Status(ctx, "drop", last)
		res, err := q.Admit(ctx, "drop")
		if err != nil || !res.Taken || len(res.Admitted) != 14 {
			t.Fatalf("admit: %+v %v", res, err)
		}
		after, _ := q.Status(ctx, "drop", last)
		if after.Position != before.Position-14 {
			t.Fatalf("position after a batch of 14: %d, want %d", after.Position, before.Position-14)
		}
		first := findPos(positions, 1)
		s, _ := q.Status(ctx, "drop", first)
		if s.Status != wire.StatusAdmitted || s.Token == "" {
			t.Fatalf("first in line after admit: %+v", s)
		}
		// The rooms set knows the room.
		rooms, err := q.Rooms(ctx)
		if err != nil || len(rooms) != 1 || rooms[0] != "drop" {
			t.Fatalf("rooms: %v %v", rooms, err)
		}
	})
}

func findPos(positions []int64, want int64) string {
	for i, p := range positions {
		if p == want {
			return fmt.Sprintf("v%04d", i)
		}
	}
	return ""
}

func TestAdmitOneBatchPerTickAcrossInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		queues := []*Queue{
			newQueue(t, r, fixedBatch(14, tick)),
			newQueue(t, newRedis(t, srv, "go-redis"), fixedBatch(14, tick)),
			newQueue(t, newRedis(t, srv, "rueidis"), fixedBatch(14, tick)),
		}
		const n = 1500
		visitors := make([]string, n)
		for i := range visitors {
			visitors[i] = fmt.Sprintf("v%04d", i)
			if _, err := queues[0].Join(ctx, "drop", visitors[i]); err != nil {
				t.Fatal(err)
			}
		}
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var wg sync.WaitGroup
		for _, q := range queues {
			wg.Go(func() { _ = q.Run(runCtx) })
		}
		wg.Wait()
		cancel()

		states, err := queues[0].StatusMany(ctx, "drop", visitors)
		if err != nil {
			t.Fatal(err)
		}
		perTick := map[int64]int{}
		admitted := 0
		for i, s := range states {
			if s.Status != wire.StatusAdmitted {
				continue
			}
			admitted++
			// Admitted in tick t => notBefore in window t+1.
			perTick[s.NotBefore.UnixMilli()/tick.Milliseconds()-1]++
			if i > 0 && states[i-1].Status != wire.StatusAdmitted {
				t.Fatalf("not in ticket order: %s admitted but %s waiting", visitors[i], visitors[i-1])
			}
		}
		maxPerTick := 0
		for _, c := range perTick {
			maxPerTick = max(maxPerTick, c)
		}
		t.Logf("3 instances, 3 s: %d admitted over %d ticks, at most %d in one tick", admitted, len(perTick), maxPerTick)
		if maxPerTick > 14 {
			t.Fatalf("a tick admitted %d (> batch 14)", maxPerTick)
		}
		if admitted > 14*32 {
			t.Fatalf("admitted %d in 3 s: more than one batch per tick", admitted)
		}
		if admitted == 0 {
			t.Fatal("nothing admitted")
		}
	})
}

func TestJitterStratified(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const tick = 100 * time.Millisecond
		q := newQueue(t, r, fixedBatch(14, tick))
		for i := range 30 {
			if _, err := q.Join(ctx, "lecture-42", fmt.Sprintf("v%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		var prevEnd int64
		for round := 0; round < 2; round++ {
			res := admitTaken(t, q, "lecture-42")
			if len(res.Admitted) != 14 {
				t.Fatalf("admitted %d, want 14", len(res.Admitted))
			}
			start := (res.Tick + 1) * tick.Milliseconds()
			k := int64(len(res.Admitted))
			nbs := make([]int64, k)
			for i, a := range res.Admitted {
				nbs[i] = a.NotBefore.UnixMilli()
				if a.ExpiresAt.Sub(a.NotBefore) != 300*time.Second {
					t.Fatalf("expiresAt - notBefore = %v", a.ExpiresAt.Sub(a.NotBefore))
				}
			}
			sort.Slice(nbs, func(i, j int) bool { return nbs[i] < nbs[j] })
			for i, nb := range nbs {
				lo := start + int64(i)*tick.Milliseconds()/k
				hi := start + int64(i+1)*tick.Milliseconds()/k
				if nb < lo || nb >= hi {
					t.Fatalf("slot %d: notBefore %d outside its sub-window [%d,%d)", i, nb, lo, hi)
				}
			}
			if nbs[0] <= prevEnd {
				t.Fatalf("batches overlap: %d <= %d", nbs[0], prevEnd)
			}
			prevEnd = nbs[k-1]
			// The admission happened in tick res.Tick, so every notBefore is
			// after it.
			if start <= res.Tick*tick.Milliseconds() {
				t.Fatal("notBefore window not after the admitting tick")
			}
		}
	})
}

// admitTaken calls Admit until it takes a tick (another call may have taken
// the current one).
func admitTaken(t *testing.T, q *Queue, room string) Result {
	t.Helper()
	var res Result
	waitfor.Until(t, 5*time.Second, "a tick taken", func() bool {
		var err error
		if res, err = q.Admit(context.Background(), room); err != nil {
			t.Fatal(err)
		}
		return res.Taken
	})
	return res
}

func TestTokenLifecycle(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		// A 1 s tick: the last of three slots becomes valid at least 667 ms
		// after the admission, room enough for a busy machine.
		q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 5, Tick: time.Second}, TokenTTL: time.Second})
		for _, v := range []string{"a", "b", "c"} {
			if _, err := q.Join(ctx, "drop", v); err != nil {
				t.Fatal(err)
			}
		}
		res := admitTaken(t, q, "drop")
		if len(res.Admitted) != 3 {
			t.Fatalf("admitted %d", len(res.Admitted))
		}
		tokens := map[string]visitorsig.Token{}
		for _, a := range res.Admitted {
			tokens[a.Visitor] = visitorsig.Token{Room: "drop", Visitor: a.Visitor, NotBefore: a.NotBefore, ExpiresAt: a.ExpiresAt}
		}
		// Right after admission, every token is too early: the last one
		// surely still is.
		last := tokens["a"]
		for _, tok := range tokens {
			if tok.NotBefore.After(last.NotBefore) {
				last = tok
			}
		}
		var early *TooEarlyError
		if _, err := q.Consume(ctx, last, Spend); !errors.As(err, &early) || early.Wait <= 0 {
			t.Fatalf("consume before notBefore: %v", err)
		}
		waitUntil(t, tokens["a"].NotBefore)
		if _, err := q.Consume(ctx, tokens["a"], Spend); err != nil {
			t.Fatalf("consume valid: %v", err)
		}
		if _, err := q.Consume(ctx, tokens["a"], Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("second use: %v", err)
		}
		if s, _ := q.Status(ctx, "drop", "a"); s.Status != wire.StatusNotInQueue {
			t.Fatalf("after use: %s", s.Status)
		}
		// A token of an earlier admission does not match a later record.
		old := tokens["b"]
		old.NotBefore = old.NotBefore.Add(-time.Millisecond)
		if _, err := q.Consume(ctx, old, Check); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("mismatched notBefore: %v", err)
		}
		// Leave gives a token back.
		if ok, err := q.Leave(ctx, "drop", "b"); !ok || err != nil {
			t.Fatalf("leave: %v %v", ok, err)
		}
		if _, err := q.Consume(ctx, tokens["b"], Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("after leave: %v", err)
		}
		// c's token expires unused (1 s TTL).
		waitUntil(t, tokens["c"].ExpiresAt)
		if _, err := q.Consume(ctx, tokens["c"], Spend); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("expired: %v", err)
		}
		if s, _ := q.Status(ctx, "drop", "c"); s.Status != wire.StatusExpired {
			t.Fatalf("status after expiry: %s", s.Status)
		}
		// Joining again after expiry takes a new ticket at the back.
		if _, err := q.Join(ctx, "drop", "z"); err != nil {
			t.Fatal(err)
		}
		s, err := q.Join(ctx, "drop", "c")
		if err != nil || s.Status != wire.StatusWaiting || s.Position != 2 {
			t.Fatalf("re-join after expiry: %+v %v", s, err)
		}
	})
}

// waitUntil waits for a point in time that the Redis clock must pass too;
// the small margin covers rounding to ms.
func waitUntil(t *testing.T, at time.Time) {
	t.Helper()
	if d := time.Until(at) + 5*time.Millisecond; d > 0 {
		time.Sleep(d) // waiting for a wall-clock moment is the behaviour under test
	}
}

func TestLeaveAndInvalid(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, nil)
		if _, err := q.Join(ctx, "Bad_Room", "v"); !errors.Is(err, wire.ErrInvalidRoom) {
			t.Fatalf("bad room: %v", err)
		}
		if _, err := q.Join(ctx, "ok", strings.Repeat("x", 65)); !errors.Is(err, visitorsig.ErrInvalidToken) {
			t.Fatalf("bad visitor: %v", err)
		}
		for _, v := range []string{"a", "b", "c"} {
			if _, err := q.Join(ctx, "ok", v); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := q.Leave(ctx, "ok", "a"); !ok || err != nil {
			t.Fatalf("leave: %v %v", ok, err)
		}
		if ok, _ := q.Leave(ctx, "ok", "a"); ok {
			t.Fatal("second leave removed something")
		}
		s, _ := q.Status(ctx, "ok", "c")
		if s.Position != 2 {
			t.Fatalf("position after someone ahead left: %d", s.Position)
		}
		if s, _ := q.Status(ctx, "ok", "a"); s.Status != wire.StatusNotInQueue {
			t.Fatalf("after leave: %s", s.Status)
		}
	})
}

func TestForgetRoomWhenEmpty(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if _, err := q.Join(ctx, "r1", "v"); err != nil {
			t.Fatal(err)
		}
		q.tickOnce(ctx)
		waitfor.Until(t, 5*time.Second, "the emptied room no longer listed", func() bool {
			if rooms, _ := q.Rooms(ctx); len(rooms) == 0 {
				return true
			}
			q.tickOnce(ctx)
			return false
		})
	})
}

// TestStatusManyMatchesStatus: the batched rank walk gives the same answer
// as one status read per visitor, whatever the batch's order and with
// visitors admitted, gone or never there.
func TestStatusManyMatchesStatus(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(7, 100*time.Millisecond))
		var all []string
		for i := range 300 {
			v := fmt.Sprintf("v%03d", i)
			all = append(all, v)
			if _, err := q.Join(ctx, "walk", v); err != nil {
				t.Fatal(err)
			}
		}
		admitTaken(t, q, "walk")
		for _, v := range []string{"v010", "v150", "v299"} {
			if _, err := q.Leave(ctx, "walk", v); err != nil {
				t.Fatal(err)
			}
		}
		batch := append([]string{"nobody"}, all...)
		// A shuffled batch, and one every third visitor (sparse, as on one of
		// several instances).
		for _, b := range [][]string{shuffled(batch), every(batch, 3)} {
			got, err := q.StatusMany(ctx, "walk", b)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range b {
				one, err := q.Status(ctx, "walk", v)
				if err != nil {
					t.Fatal(err)
				}
				if got[i].Status != one.Status || got[i].Position != one.Position || !got[i].NotBefore.Equal(one.NotBefore) {
					t.Fatalf("%s: batch %+v, alone %+v", v, got[i], one)
				}
			}
		}
	})
}

func shuffled(s []string) []string {
	out := append([]string(nil), s...)
	for i := len(out) - 1; i > 0; i-- {
		j := (i * 7919) % (i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func every(s []string, k int) []string {
	var out []string
	for i := 0; i < len(s); i += k {
		out = append(out, s[i])
	}
	return out
}
