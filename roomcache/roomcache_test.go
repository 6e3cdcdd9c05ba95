package roomcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"golang.org/x/time/rate"
)

// TestDefaults: a room nobody configured has no settings of its own, the
// deployment's fail mode, and the label "other"; nil options mean fail open.
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *Options
		want string
	}{
		{"nil options", nil, settings.FailOpen},
		{"empty options", &Options{}, settings.FailOpen},
		{"closed", &Options{FailMode: settings.FailClosed}, settings.FailClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(newFakeStore(), tc.opts)
			if got := c.FailMode("any"); got != tc.want {
				t.Errorf("fail mode %q, want %q", got, tc.want)
			}
			if got := c.Label("any"); got != "other" {
				t.Errorf("label %q, want other", got)
			}
			if r, b := c.JoinLimit("any"); r != 0 || b != 0 {
				t.Errorf("join limit %v/%d, want none", r, b)
			}
			if c.TokenTTL("any") != 0 || c.PowBits("any") != 0 || c.Version("any") != 0 {
				t.Error("a room nobody configured has settings")
			}
			if _, ok := c.RoomSettings("any"); ok {
				t.Error("settings of a room never read")
			}
		})
	}
}

// TestSettingsRead: what Reload read is what the cache answers with.
func TestSettingsRead(t *testing.T) {
	f := newFakeStore()
	f.put("shop", settings.Room{FailMode: settings.FailClosed, JoinRate: 2.5, TokenTTL: time.Minute, PowBits: 12}, 3, queue.RoomStats{})
	f.put("burst", settings.Room{JoinRate: 4, JoinBurst: 9}, 1, queue.RoomStats{})
	f.put("slow", settings.Room{JoinRate: 0.5}, 1, queue.RoomStats{})
	c := New(f, &Options{FailMode: settings.FailOpen})
	for _, room := range []string{"shop", "burst", "slow"} {
		if err := c.Reload(context.Background(), room); err != nil {
			t.Fatal(err)
		}
	}
	if c.FailMode("shop") != settings.FailClosed || c.TokenTTL("shop") != time.Minute || c.PowBits("shop") != 12 {
		t.Errorf("shop: fail %q ttl %v pow %d", c.FailMode("shop"), c.TokenTTL("shop"), c.PowBits("shop"))
	}
	if c.Version("shop") != 3 || c.Label("shop") != "shop" {
		t.Errorf("shop: version %d label %q", c.Version("shop"), c.Label("shop"))
	}
	for _, tc := range []struct {
		room  string
		rate  float64
		burst int
	}{{"shop", 2.5, 2}, {"burst", 4, 9}, {"slow", 0.5, 1}} {
		if r, b := c.JoinLimit(tc.room); r != tc.rate || b != tc.burst {
			t.Errorf("%s: join limit %v/%d, want %v/%d", tc.room, r, b, tc.rate, tc.burst)
		}
	}
}

// TestExistsRemembers: a room found is read in full and answered from
// memory after; a room not found is believed missing for missingFor, then
// asked again; an unreachable store is an error, not an answer.
func TestExistsRemembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := newFakeStore()
		f.put("made", settings.Room{FailMode: settings.FailClosed}, 2, queue.RoomStats{})
		c := New(f, nil)
		for range 3 {
			if ok, err := c.Exists(ctx, "made"); !ok || err != nil {
				t.Fatalf("made: %v %v", ok, err)
			}
		}
		if n := f.exists.Load(); n != 1 {
			t.Errorf("%d store calls for a room known, want 1", n)
		}
		if c.FailMode("made") != settings.FailClosed || c.Version("made") != 2 {
			t.Error("a room found was not read in full")
		}

		for range 3 {
			if ok, err := c.Exists(ctx, "later"); ok || err != nil {
				t.Fatalf("later: %v %v", ok, err)
			}
		}
		if n := f.exists.Load(); n != 2 {
			t.Errorf("%d store calls after a missing room asked 3 times, want 2", n)
		}
		f.put("later", settings.Room{}, 1, queue.RoomStats{})
		if ok, _ := c.Exists(ctx, "later"); ok {
			t.Error("a room believed missing was asked for again within missingFor")
		}
		time.Sleep(missingFor)
		if ok, err := c.Exists(ctx, "later"); !ok || err != nil {
			t.Errorf("later after missingFor: %v %v", ok, err)
		}

		f.setDown(true)
		if _, err := c.Exists(ctx, "unknown"); !errors.Is(err, errDown) {
			t.Errorf("store down: %v, want its error", err)
		}
		if ok, err := c.Exists(ctx, "made"); !ok || err != nil {
			t.Errorf("a known room while the store is down: %v %v", ok, err)
		}
	})
}

// TestExistsBoundsMissing: the rooms remembered as missing never pass
// maxMissing, however many are asked for.
func TestExistsBoundsMissing(t *testing.T) {
	c := New(newFakeStore(), nil)
	for i := range maxMissing + 10 {
		if ok, err := c.Exists(context.Background(), fmt.Sprintf("r%d", i)); ok || err != nil {
			t.Fatal(ok, err)
		}
		if n := len(c.missing); n > maxMissing {
			t.Fatalf("%d rooms remembered missing, more than %d", n, maxMissing)
		}
	}
}

// TestLostSettingsStay: when the store loses a room's settings, the ones
// read before stay (to gate joins and be written back) and only the version
// follows the store; once written back, the store's settings count again.
func TestLostSettingsStay(t *testing.T) {
	ctx := context.Background()
	f := newFakeStore()
	f.put("kept", settings.Room{JoinRate: 50, Message: "Doors at nine."}, 4, queue.RoomStats{})
	c := New(f, nil)
	if err := c.Reload(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	f.lose("kept")
	if err := c.Reload(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	if v := c.Version("kept"); v != 0 {
		t.Errorf("version %d after the loss, want the store's 0", v)
	}
	cfg, ok := c.RoomSettings("kept")
	if !ok || cfg.Message != "Doors at nine." {
		t.Errorf("settings after the loss: %v %+v", ok, cfg)
	}
	if r, _ := c.JoinLimit("kept"); r != 50 {
		t.Errorf("join rate %v after the loss, want 50", r)
	}
	if !slices.Contains(c.SettingsRooms(), "kept") {
		t.Errorf("SettingsRooms %v lacks kept", c.SettingsRooms())
	}

	f.put("kept", settings.Room{JoinRate: 50, Message: "Doors at nine."}, 1, queue.RoomStats{})
	if err := c.Reload(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	if v := c.Version("kept"); v != 1 {
		t.Errorf("version %d once written back, want 1", v)
	}
}

// TestRefreshKeepsWhatItCannotRead: a refresh reads every configured room;
// a room it cannot read keeps its settings and counters, and the refresh
// says so.
func TestRefreshKeepsWhatItCannotRead(t *testing.T) {
	ctx := context.Background()
	f := newFakeStore()
	f.put("a", settings.Room{PowBits: 5}, 1, queue.RoomStats{Waiting: 7})
	f.put("b", settings.Room{PowBits: 6}, 1, queue.RoomStats{Waiting: 8})
	c := New(f, nil)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	got := c.Stats()
	if got["a"].Waiting != 7 || got["b"].Waiting != 8 || len(got) != 2 {
		t.Fatalf("stats %+v", got)
	}
	got["a"] = queue.RoomStats{}
	if c.Stats()["a"].Waiting != 7 {
		t.Error("Stats handed out the cache's own map")
	}

	f.put("a", settings.Room{PowBits: 9}, 2, queue.RoomStats{Waiting: 1})
	f.setFail("b", true)
	if err := c.Refresh(ctx); !errors.Is(err, errDown) {
		t.Fatalf("refresh with a room failing: %v", err)
	}
	if c.PowBits("a") != 9 || c.Stats()["a"].Waiting != 1 {
		t.Error("a room read was not updated")
	}
	if c.PowBits("b") != 6 || c.Stats()["b"].Waiting != 8 {
		t.Error("a room not read lost what was read before")
	}

	f.setDown(true)
	if err := c.Refresh(ctx); !errors.Is(err, errDown) {
		t.Fatalf("refresh with the store down: %v", err)
	}
	if c.PowBits("a") != 9 || c.Label("b") != "b" {
		t.Error("a refresh that read nothing dropped settings")
	}
}

// TestRefreshBoundsReads: one refresh has at most refreshWorkers reads in
// flight, and uses them all.
func TestRefreshBoundsReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStore()
		for i := range 5 * refreshWorkers {
			f.put(fmt.Sprintf("r%03d", i), settings.Room{}, 1, queue.RoomStats{})
		}
		f.hold = make(chan struct{})
		c := New(f, nil)
		done := make(chan error, 1)
		go func() { done <- c.Refresh(context.Background()) }()
		synctest.Wait()
		if n := f.inFlight.Load(); n != refreshWorkers {
			t.Errorf("%d reads in flight, want %d", n, refreshWorkers)
		}
		close(f.hold)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := f.most.Load(); n > refreshWorkers {
			t.Errorf("%d reads in flight at most, want at most %d", n, refreshWorkers)
		}
		if n := len(c.Stats()); n != 5*refreshWorkers {
			t.Errorf("%d rooms read, want %d", n, 5*refreshWorkers)
		}
	})
}

// TestLimiterShare: a fail-open limiter admits this instance's share of
// its room's rate (batch per tick over the live instances); configured
// rooms have their own, all others share one.
func TestLimiterShare(t *testing.T) {
	ctx := context.Background()
	f := newFakeStore() // batch 10 per 100 ms: 100/s
	f.put("big", settings.Room{Batch: 40}, 1, queue.RoomStats{})
	c := New(f, nil)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(room string, lim rate.Limit, burst int) {
		t.Helper()
		l := c.Limiter(room)
		if l.Limit() != lim || l.Burst() != burst {
			t.Errorf("%s: %v/s burst %d, want %v/s burst %d", room, l.Limit(), l.Burst(), lim, burst)
		}
	}
	check("big", 400, 40)
	check("open", 100, 10)
	if c.Limiter("open") != c.Limiter("another") {
		t.Error("two rooms nobody configured have limiters of their own")
	}
	if big := c.Limiter("big"); c.Limiter("big") != big {
		t.Error("a configured room got a new limiter")
	}

	c.SetInstances(4)
	check("big", 100, 10)
	check("open", 25, 2)
	c.SetInstances(0)
	check("big", 400, 40)

	f.put("big", settings.Room{Batch: 20}, 2, queue.RoomStats{})
	if err := c.Reload(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	check("big", 200, 20)
}

// TestKeepsItsOwnNames: a room name given in a buffer the caller reuses
// afterwards (a request's path) is not changed in the cache by the reuse.
func TestKeepsItsOwnNames(t *testing.T) {
	ctx := context.Background()
	f := newFakeStore()
	f.put("drop", settings.Room{}, 1, queue.RoomStats{})
	c := New(f, nil)
	buf := []byte("drop")
	name := unsafe.String(unsafe.SliceData(buf), len(buf))
	if ok, err := c.Exists(ctx, name); err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	c.Limiter(name)
	gone := []byte("none")
	if ok, _ := c.Exists(ctx, unsafe.String(unsafe.SliceData(gone), len(gone))); ok {
		t.Fatal("none exists")
	}
	copy(buf, "xxxx")
	copy(gone, "yyyy")
	if got := c.SettingsRooms(); !slices.Equal(got, []string{"drop"}) {
		t.Errorf("SettingsRooms %q after the buffer's reuse, want [drop]", got)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range []map[string]bool{keys(c.cfg), keys(c.read), keys(c.limiters), keys(c.missing)} {
		for k := range m {
			if k != "drop" && k != "none" {
				t.Errorf("the cache holds %q, a name changed by the caller's reuse of its buffer", k)
			}
		}
	}
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
