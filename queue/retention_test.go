package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// TestJoinSaysPaused: join answers what status answers about a pause, so a
// page does not show an ETA before it learns the room is paused.
func TestJoinSaysPaused(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "held", settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"first", "first", "second"} { // a refresh too
			js, err := q.Join(ctx, "held", v)
			if err != nil {
				t.Fatal(err)
			}
			ss, err := q.Status(ctx, "held", v)
			if err != nil {
				t.Fatal(err)
			}
			if !js.Paused || !ss.Paused || js.Status != wire.StatusWaiting {
				t.Fatalf("join %+v, status %+v: both should be waiting and paused", js, ss)
			}
		}
		js, err := q.Join(ctx, "open", "third")
		if err != nil {
			t.Fatal(err)
		}
		if js.Paused {
			t.Fatalf("join in a room that is not paused: %+v", js)
		}
	})
}

// TestRedisKeysFollowLiveVisitors: visitors pass through (joined, admitted,
// most use their token, a fifth never do), and one retention period after
// the last token's cap Redis holds about the keys it held before: token
// records, spent markers and the active set's entries are gone, whether or
// not anyone waits any more. BenchmarkRedisKeysFollowLiveVisitors runs the
// same with 50,000 visitors.
func TestRedisKeysFollowLiveVisitors(t *testing.T) {
	for _, client := range clients {
		n := 10000
		if client != clients[0] || testing.Short() {
			n = 5000
		}
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			passThrough(t, newRedis(t, srv, client), n)
		})
	}
}

// BenchmarkRedisKeysFollowLiveVisitors: 50,000 visitors pass through per
// iteration (see TestRedisKeysFollowLiveVisitors); it fails if Redis does
// not come back to its keys.
func BenchmarkRedisKeysFollowLiveVisitors(b *testing.B) {
	srv := redistest.StartReal(b)
	r := newRedis(b, srv, clients[0])
	for b.Loop() {
		if _, err := r.Do(context.Background(), "FLUSHALL"); err != nil {
			b.Fatal(err)
		}
		passThrough(b, r, 50000)
	}
}

// passThrough runs n visitors through a room and waits until Redis is back
// to the room's own keys.
func passThrough(tb testing.TB, r Redis, n int) {
	tb.Helper()
	ctx := context.Background()
	// Long enough that the pollers below use most tokens before they
	// lapse, even on a busy machine.
	ttl, retention := 8*time.Second, time.Second
	if n > 10000 {
		ttl = 20 * time.Second
	}
	q := newQueue(tb, r, &Options{
		Capacity: Capacity{Batch: 500, Tick: 100 * time.Millisecond},
		TokenTTL: ttl, TokenMax: ttl, Retention: retention,
	})
	const room = "soak"
	// The room exists before (settings), so the baseline counts its
	// keys; a visitor-made room's counters would be there after too.
	if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
		tb.Fatal(err)
	}
	before := dbsize(tb, r)

	ids := make([]string, n)
	for i := range ids {
		ids[i], _ = q.signer.NewVisitor()
	}
	parallel(tb, n, func(i int) error {
		_, err := q.Join(ctx, room, ids[i])
		return err
	})
	// Admission starts once everyone is in line (5,000 a second), so
	// the pollers below keep up with it and most tokens are used.
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.Run(runCtx) })
	defer func() { stop(); wg.Wait() }()
	// Every fifth visitor abandons: never uses the token. The others
	// use theirs as soon as it is valid.
	var used, abandoned, lapsed atomic.Int64
	parallel(tb, n, func(i int) error {
		for {
			st, err := q.Status(ctx, room, ids[i])
			if err != nil {
				return err
			}
			switch st.Status {
			case wire.StatusWaiting:
				time.Sleep(50 * time.Millisecond) // a poller's pace, not synchronisation
				continue
			case wire.StatusAdmitted:
			case wire.StatusExpired, wire.StatusNotInQueue:
				// Admitted while the pollers were busy elsewhere, and
				// lapsed before its turn came: an abandon too.
				lapsed.Add(1)
				return nil
			default:
				return errors.New("visitor " + ids[i] + " is " + string(st.Status))
			}
			if i%5 == 0 {
				abandoned.Add(1)
				return nil
			}
			tok, err := q.signer.ParseToken(st.Token)
			if err != nil {
				return err
			}
			for {
				_, err = q.Consume(ctx, tok, Spend)
				var early *TooEarlyError
				if errors.As(err, &early) {
					time.Sleep(early.Wait) // the token's own moment of validity, a clock moment
					continue
				}
				break
			}
			switch {
			case err == nil:
				used.Add(1)
			case errors.Is(err, ErrTokenExpired), errors.Is(err, ErrTokenUnknown):
				lapsed.Add(1)
			default:
				return err
			}
			return nil
		}
	})
	tb.Logf("%d visitors: %d used their token, %d abandoned, %d lapsed before use; %d keys at the peak",
		n, used.Load(), abandoned.Load(), lapsed.Load(), dbsize(tb, r))
	if used.Load() < int64(n)/10 {
		tb.Fatalf("only %d of %d visitors used their token: the run did not exercise the used path", used.Load(), n)
	}

	// One token cap and one retention period later (with the tick's
	// sweep), only the room's own keys are left.
	const slack = 8
	var keys, na int64
	cleared := false
	defer func() { // runs too when the wait below fails the test
		all, _ := r.Do(ctx, "KEYS", "*")
		tb.Logf("keys %d before, %d after (slack %d), %d entries left in the active set (cleared: %v): %v", before, keys, slack, na, cleared, all)
	}()
	waitfor.Until(tb, ttl+retention+20*time.Second, "only the room's own keys left and the active set empty", func() bool {
		keys = dbsize(tb, r)
		active, _ := r.Do(ctx, "ZCARD", prefix(room)+"active")
		na, _ = asInt(active)
		return keys <= before+slack && na == 0
	})
	cleared = true
}

func dbsize(t testing.TB, r Redis) int64 {
	t.Helper()
	v, err := r.Do(context.Background(), "DBSIZE")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := asInt(v)
	return n
}

// parallel runs f for 0..n-1 on 64 goroutines and fails on the first error.
func parallel(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || first.Load() != nil {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		t.Fatal(*p)
	}
}
