package webhook

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// logged records the messages of the records at warn level and above.
type logged struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logged) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

func (l *logged) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// After Redis lost its data, a room's endpoints come back from the
// instances that remember them: the next event reaches them, and the
// delivery loops put them back without one. A room whose endpoints were
// removed stays without.
func TestRoomEndpointsRestoredAfterLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		ctx := context.Background()
		r1, r2 := newRedis(t, srv, client), newRedis(t, srv, client)
		h1 := newHooks(t, r1, nil, fast())
		h2 := newHooks(t, r2, nil, fast())
		if err := h1.SetRoomEndpoints(ctx, "drop", []Endpoint{rc.endpoint(RoomPaused)}); err != nil {
			t.Fatal(err)
		}
		if err := h1.SetRoomEndpoints(ctx, "gone", []Endpoint{rc.endpoint(RoomResumed)}); err != nil {
			t.Fatal(err)
		}
		// The other instance reads both, then the second is removed.
		for _, room := range []string{"drop", "gone"} {
			if eps, err := h2.RoomEndpoints(ctx, room); err != nil || len(eps) != 1 {
				t.Fatalf("%s: %v %v", room, eps, err)
			}
		}
		if err := h1.SetRoomEndpoints(ctx, "gone", nil); err != nil {
			t.Fatal(err)
		}
		// The other instance's next read sees the removal, not a key
		// lost: nothing is put back, and it remembers none.
		if err := h2.Emit(ctx, "gone", RoomResumed, nil); err != nil {
			t.Fatal(err)
		}
		if v, err := r2.Do(ctx, "GET", roomKey("gone")); err != nil || v != "[]" {
			t.Fatalf("removed: %v %v", v, err)
		}
		if _, err := r1.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		// The instance that reads first after the loss puts them back.
		if err := h2.Emit(ctx, "drop", RoomPaused, nil); err != nil {
			t.Fatal(err)
		}
		for _, h := range []*Hooks{h1, h2} {
			if eps, err := h.RoomEndpoints(ctx, "drop"); err != nil || len(eps) != 1 || eps[0].Secret != rc.secret {
				t.Fatalf("drop: %v %v", eps, err)
			}
			if err := h.Emit(ctx, "gone", RoomResumed, nil); err != nil {
				t.Fatal(err)
			}
		}
		run(t, h1)
		waitfor.Until(t, 10*time.Second, "the event after the loss", func() bool {
			seen, _ := rc.counts()
			return len(seen) == 1
		})
		outboxEmpty(t, r1)
		if got := rc.ofType(RoomResumed); len(got) != 0 {
			t.Fatalf("a removed endpoint came back: %v", got)
		}
	})
}

// The delivery loop notices the outbox's marker gone: the instance that
// notices says once that the waiting deliveries are lost, and every
// instance puts back the endpoints it remembers, with no event needed.
func TestOutboxLossNoticed(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		ctx := context.Background()
		var hs []*Hooks
		var logs []*logged
		for i := range 2 {
			l := &logged{}
			o := fast()
			o.Logger = slog.New(l)
			h := newHooks(t, newRedis(t, srv, client), nil, o)
			room := []string{"room-a", "room-b"}[i]
			if err := h.SetRoomEndpoints(ctx, room, []Endpoint{rc.endpoint()}); err != nil {
				t.Fatal(err)
			}
			hs, logs = append(hs, h), append(logs, l)
			run(t, h)
		}
		waitfor.Until(t, 10*time.Second, "both loops seeing the marker", func() bool {
			for _, h := range hs {
				h.mu.Lock()
				e := h.epoch
				h.mu.Unlock()
				if e == "" {
					return false
				}
			}
			return true
		})
		if _, err := hs[0].r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "both rooms' endpoints back", func() bool {
			for _, room := range []string{"room-a", "room-b"} {
				v, err := hs[0].r.Do(ctx, "GET", roomKey(room))
				if s, _ := v.(string); err != nil || !strings.Contains(s, rc.URL) {
					return false
				}
			}
			return true
		})
		const lost = "webhook outbox lost"
		waitfor.Until(t, 10*time.Second, "the loss logged", func() bool {
			return logs[0].count(lost)+logs[1].count(lost) == 1
		})
		for _, h := range hs {
			if err := h.Emit(ctx, "room-a", RoomPaused, nil); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 10*time.Second, "the events after the loss", func() bool {
			seen, _ := rc.counts()
			return len(seen) == 2
		})
		if n := logs[0].count(lost) + logs[1].count(lost); n != 1 {
			t.Fatalf("the loss logged %d times", n)
		}
	})
}

// Deliveries waiting for a retry when Redis lost its data go back, from
// the instances that made their attempts (two here), keeping their wait:
// each is attempted again, and once.
func TestRetriesRestoredAfterLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		var healthy atomicBool
		rc := newReceiver(t, func(string, int) int {
			if healthy.get() {
				return 200
			}
			return 503
		})
		ctx := context.Background()
		r := newRedis(t, srv, client)
		l := &logged{}
		o := fast()
		o.Logger = slog.New(l)
		// Long enough for the loss to come before any retry, short
		// enough that the restored retries, due when they were, run
		// within the test.
		o.Backoff = []time.Duration{2 * time.Second}
		var restored atomicInt
		o.OnRestored = func(rooms, deliveries int) { restored.add(deliveries) }
		h := newHooks(t, r, []Endpoint{rc.endpoint()}, o)
		// Another instance: whichever made an attempt keeps the retry.
		other := newHooks(t, newRedis(t, srv, client), []Endpoint{rc.endpoint()}, o)
		run(t, h)
		run(t, other)
		for i := range 3 {
			if err := h.Emit(ctx, "drop", RoomPaused, map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 10*time.Second, "a first attempt at each", func() bool {
			seen, _ := rc.counts()
			return len(seen) == 3
		})
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		healthy.set(true)
		waitfor.Until(t, 10*time.Second, "each attempted again", func() bool {
			seen, _ := rc.counts()
			for _, c := range seen {
				if c < 2 {
					return false
				}
			}
			return len(seen) == 3
		})
		outboxEmpty(t, r)
		if seen, _ := rc.counts(); len(seen) != 3 {
			t.Fatalf("seen %v", seen)
		}
		for id, c := range func() map[string]int { s, _ := rc.counts(); return s }() {
			if c != 2 {
				t.Errorf("%s seen %d times, want 2", id, c)
			}
		}
		if n := restored.get(); n != 3 {
			t.Errorf("%d deliveries counted as restored, want 3", n)
		}
		if n := l.count("webhook deliveries restored"); n < 1 || n > 2 {
			t.Errorf("restore logged %d times", n)
		}
		if n := l.count("webhook outbox lost"); n != 1 {
			t.Errorf("the loss logged %d times", n)
		}
		// Done, they are kept no more.
		waitfor.Until(t, 10*time.Second, "nothing kept", func() bool {
			h.kmu.Lock()
			defer h.kmu.Unlock()
			other.kmu.Lock()
			defer other.kmu.Unlock()
			return len(h.kept)+len(other.kept) == 0
		})
	})
}

// Deliveries another instance made are forgotten by the instance that
// put them in the outbox, once it sees them gone from Redis.
func TestKeptDeliveriesPruned(t *testing.T) {
	srv := redistest.StartMini(t)
	rc := newReceiver(t, nil)
	ctx := context.Background()
	h := newHooks(t, newRedis(t, srv, "go-redis"), []Endpoint{rc.endpoint()}, fast())
	other := newHooks(t, newRedis(t, srv, "go-redis"), []Endpoint{rc.endpoint()}, fast())
	for range 5 {
		if err := h.Emit(ctx, "drop", RoomPaused, nil); err != nil {
			t.Fatal(err)
		}
	}
	run(t, other)
	waitfor.Until(t, 10*time.Second, "the deliveries", func() bool {
		seen, _ := rc.counts()
		return len(seen) == 5
	})
	h.kmu.Lock()
	n := len(h.kept)
	h.kmu.Unlock()
	if n != 5 {
		t.Fatalf("%d kept before the instance looked, want 5", n)
	}
	// Its loop sees the marker, then looks every pruneEvery polls.
	run(t, h)
	waitfor.Until(t, 10*time.Second, "nothing kept", func() bool {
		h.kmu.Lock()
		defer h.kmu.Unlock()
		return len(h.kept) == 0
	})
}

type atomicInt struct {
	mu sync.Mutex
	v  int
}

func (a *atomicInt) add(n int) { a.mu.Lock(); defer a.mu.Unlock(); a.v += n }
func (a *atomicInt) get() int  { a.mu.Lock(); defer a.mu.Unlock(); return a.v }
