package autopilot

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

func newRedis(tb testing.TB, srv *redistest.Server) rediscall.Redis {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true, ForceSingleClient: true, AlwaysRESP2: srv.Kind == "mini"})
	if err != nil {
		tb.Fatalf("rueidis: %v", err)
	}
	tb.Cleanup(c.Close)
	return redisconn.NewRueidis(c)
}

// room is a room's stored settings, shared by the test's instances as
// Redis shares them in the server.
type room struct {
	mu  sync.Mutex
	cfg settings.Room
}

func (r *room) settings(string) (settings.Room, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg, true
}

func (r *room) update(_ context.Context, _ string, change func(*settings.Room) error) (settings.Room, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cfg
	if err := change(&c); err != nil {
		return settings.Room{}, err
	}
	r.cfg = c
	return c, nil
}

// TestOneDecisionPerSecondMini is testOneDecisionPerSecond on the
// embedded Redis (the default without -redis); pilot_real_test.go runs it
// on a real redis-server.
func TestOneDecisionPerSecondMini(t *testing.T) { testOneDecisionPerSecond(t, redistest.StartMini(t)) }

// TestOffHoldsMini is testOffHolds on the embedded Redis.
func TestOffHoldsMini(t *testing.T) { testOffHolds(t, redistest.StartMini(t)) }

// testOneDecisionPerSecond: three instances, each with its own client,
// stepping two rooms as fast as they can, take exactly one decision per
// room per second between them; the samples each records add up in the
// window the decision reads, and the rate each decision sets is written
// once.
func testOneDecisionPerSecond(t *testing.T, srv *redistest.Server) {
	rooms := map[string]*room{
		"drop": {cfg: settings.Room{Autopilot: true, Strategy: settings.StrategyFixed, Batch: 1, MaxRate: 500}},
		"shop": {cfg: settings.Room{Autopilot: true, Strategy: settings.StrategyMaxActive, MaxActive: 10, MaxRate: 500}},
	}
	type key struct {
		room string
		sec  int64
	}
	var mu sync.Mutex
	decided := map[key]int{}
	seen := map[key]bool{}
	changes := map[string]int{}
	pilots := make([]*Pilot, 3)
	for i := range pilots {
		pilots[i] = New(newRedis(t, srv), Options{
			Tick:     100 * time.Millisecond,
			Settings: func(name string) (settings.Room, bool) { return rooms[name].settings(name) },
			Waiting:  func(context.Context, string) (int64, error) { return 1000, nil },
			Update: func(ctx context.Context, name string, change func(*settings.Room) error) (settings.Room, error) {
				return rooms[name].update(ctx, name, change)
			},
			OnChange: func(_ context.Context, name string, before, after settings.Room, d Decision) {
				mu.Lock()
				changes[name]++
				mu.Unlock()
				if d.State.Reason == "" || before.Batch == after.Batch && before.MaxActive == after.MaxActive {
					t.Errorf("%s: a change without a reason or a new rate: %+v → %+v, %+v", name, before, after, d)
				}
			},
		})
	}
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for _, p := range pilots {
		for name := range rooms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Since(start) < 3500*time.Millisecond {
					// Every instance hears its own share of the origin's
					// requests: all fast and ok.
					var w Window
					for range 5 {
						w.Add(Sample{Latency: 40 * time.Millisecond, OK: true})
					}
					if err := p.Store().Record(ctx, name, w); err != nil {
						t.Error(err)
						return
					}
					sec, took, err := p.Step(ctx, name)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[key{name, sec}] = true
					if took {
						decided[key{name, sec}]++
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if len(seen) < 6 {
		t.Fatalf("%d room-seconds seen, want at least 3 per room", len(seen))
	}
	for k := range seen {
		if decided[k] != 1 {
			t.Errorf("%s, second %d: %d decisions, want 1", k.room, k.sec, decided[k])
		}
	}
	for name, r := range rooms {
		st, ok, err := pilots[0].Store().Status(ctx, name)
		if err != nil || !ok {
			t.Fatalf("%s: status %v %v", name, ok, err)
		}
		if st.Samples < 15 || st.P95Ms > 50 || st.P95Ms < 30 || st.ErrorRate != 0 {
			t.Errorf("%s: status %+v, want the three instances' samples of 40 ms", name, st)
		}
		r.mu.Lock()
		if changes[name] == 0 || r.cfg.Batch <= 1 && r.cfg.MaxActive <= 10 {
			t.Errorf("%s: %d changes, settings %+v: want the rate raised", name, changes[name], r.cfg)
		}
		r.mu.Unlock()
	}
}

// testOffHolds: a room whose autopilot is off is not stepped and keeps
// its settings; one turned off after the instance last read its settings
// (the operator took control) keeps the rate it had when the decision is
// written.
func testOffHolds(t *testing.T, srv *redistest.Server) {
	r := &room{cfg: settings.Room{Batch: 7}}
	stale := false // the instance still believes the autopilot on
	p := New(newRedis(t, srv), Options{
		Tick: 100 * time.Millisecond,
		Settings: func(name string) (settings.Room, bool) {
			c, ok := r.settings(name)
			c.Autopilot = c.Autopilot || stale
			return c, ok
		},
		Waiting: func(context.Context, string) (int64, error) { return 10, nil },
		Update:  r.update,
	})
	ctx := context.Background()
	if _, took, err := p.Step(ctx, "drop"); took || err != nil {
		t.Fatalf("off: took %v, %v", took, err)
	}
	if _, ok, _ := p.Store().Status(ctx, "drop"); ok {
		t.Fatal("a room with autopilot off has a state")
	}
	stale = true
	var w Window
	for range 10 {
		w.Add(Sample{Latency: 10 * time.Millisecond, OK: true})
	}
	if err := p.Store().Record(ctx, "drop", w); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 5*time.Second, "a decision that saw the samples", func() bool {
		_, took, err := p.Step(ctx, "drop")
		if err != nil {
			t.Fatal(err)
		}
		st, _, _ := p.Store().Status(ctx, "drop")
		return took && st.Samples > 0
	})
	st, _, _ := p.Store().Status(ctx, "drop")
	if st.Rate <= 70 || r.cfg.Batch != 7 || r.cfg.Autopilot {
		t.Errorf("status %+v, settings %+v: want a rise decided, batch 7 kept and autopilot off", st, r.cfg)
	}
}
