package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

func newHooks(t *testing.T, r Redis, deploy []Endpoint, o *Options) *Hooks {
	t.Helper()
	h, err := New(r, deploy, o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Three instances share the outbox, each running the delivery loop: every
// event reaches the receiver exactly once, signed.
func TestDeliverExactlyOnceAcrossInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		deploy := []Endpoint{rc.endpoint()}
		var hs []*Hooks
		for range 3 {
			h := newHooks(t, newRedis(t, srv, client), deploy, fast())
			run(t, h)
			hs = append(hs, h)
		}
		ctx := context.Background()
		const n = 30
		for i := range n {
			if err := hs[i%3].Emit(ctx, fmt.Sprintf("room-%d", i%4), RoomPaused, map[string]any{"n": i}); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 10*time.Second, "every event delivered", func() bool {
			seen, _ := rc.counts()
			return len(seen) == n
		})
		outboxEmpty(t, hs[0].r)
		seen, bad := rc.counts()
		if len(bad) > 0 {
			t.Fatalf("refused: %v", bad)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("%s seen %d times", id, c)
			}
		}
		got := map[float64]bool{}
		for _, p := range rc.ofType(RoomPaused) {
			var d struct {
				Room string
				N    float64
			}
			if json.Unmarshal(p.Data, &d) != nil || d.Room != fmt.Sprintf("room-%d", int(d.N)%4) {
				t.Errorf("data %s", p.Data)
			}
			if _, err := time.Parse(time.RFC3339Nano, p.Timestamp); err != nil {
				t.Errorf("timestamp %q", p.Timestamp)
			}
			got[d.N] = true
		}
		if len(got) != n {
			t.Fatalf("%d distinct events, want %d", len(got), n)
		}
	})
}

// A receiver that answers 500 first sees the event again, with the same
// webhook-id and a valid signature, and then no more.
func TestRetryAfterServerError(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, func(_ string, n int) int {
			if n == 1 {
				return 500
			}
			return 200
		})
		r := newRedis(t, srv, client)
		h := newHooks(t, r, []Endpoint{rc.endpoint()}, fast())
		run(t, h)
		for i := range 5 {
			if err := h.Emit(context.Background(), "drop", RoomResumed, map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 10*time.Second, "every event seen twice", func() bool {
			seen, _ := rc.counts()
			twice := 0
			for _, c := range seen {
				if c >= 2 {
					twice++
				}
			}
			return twice == 5
		})
		outboxEmpty(t, r)
		seen, bad := rc.counts()
		if len(bad) > 0 || len(seen) != 5 {
			t.Fatalf("seen %v, refused %v", seen, bad)
		}
		for id, c := range seen {
			if c != 2 {
				t.Errorf("%s seen %d times, want 2", id, c)
			}
		}
	})
}

// After the last attempt a delivery is dead; redelivered, it reaches the
// receiver again under its webhook-id.
func TestDeadAndRedeliver(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		var healthy atomicBool
		rc := newReceiver(t, func(string, int) int {
			if healthy.get() {
				return 200
			}
			return 503
		})
		r := newRedis(t, srv, client)
		h := newHooks(t, r, []Endpoint{rc.endpoint()}, fast())
		run(t, h)
		ctx := context.Background()
		if err := h.Emit(ctx, "drop", SettingsChanged, nil); err != nil {
			t.Fatal(err)
		}
		var dead []Dead
		waitfor.Until(t, 10*time.Second, "a dead delivery", func() bool {
			var err error
			dead, err = h.Dead(ctx, 10)
			return err == nil && len(dead) == 1
		})
		d := dead[0]
		if d.Attempts != 3 || d.LastStatus != 503 || d.Room != "drop" || d.Type != SettingsChanged || d.URL != rc.URL+"/hook" || d.DiedAt.Before(d.CreatedAt) {
			t.Fatalf("dead %+v", d)
		}
		if seen, _ := rc.counts(); seen[d.Msg] != 3 {
			t.Fatalf("seen %v, want 3 attempts of %s", seen, d.Msg)
		}
		healthy.set(true)
		if err := h.Redeliver(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "the redelivery", func() bool {
			seen, _ := rc.counts()
			return seen[d.Msg] == 4
		})
		outboxEmpty(t, r)
		if dead, _ := h.Dead(ctx, 10); len(dead) != 0 {
			t.Fatalf("still dead: %+v", dead)
		}
		if err := h.Redeliver(ctx, d.ID); !errors.Is(err, ErrNotDead) {
			t.Fatalf("second redeliver: %v", err)
		}
	})
}

// A delivery claimed by an instance that then dies is made by another
// once the lease has run out; the dead instance's late word is ignored.
func TestLeaseOutlivesInstance(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		r := newRedis(t, srv, client)
		ep := []Endpoint{rc.endpoint()}
		ctx := context.Background()
		dying := newHooks(t, r, ep, &Options{Timeout: 100 * time.Millisecond, Lease: 400 * time.Millisecond, Logger: quiet, Allow: loopback})
		if err := dying.Emit(ctx, "drop", RoomCreated, nil); err != nil {
			t.Fatal(err)
		}
		name := dying.claimName()
		got, err := claim(ctx, r, claimReq{n: 10, lease: dying.o.Lease, name: name, epMost: 2, roomMost: 4})
		jobs := got.jobs
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		// It dies holding the claim: the survivor may not take it yet.
		if again, err := claim(ctx, r, claimReq{n: 10, lease: time.Minute, name: "other:1", epMost: 2, roomMost: 4}); err != nil || len(again.jobs) != 0 {
			t.Fatalf("claimed twice: %v %v", again.jobs, err)
		}
		survivor := newHooks(t, r, ep, fast())
		run(t, survivor)
		waitfor.Until(t, 10*time.Second, "the survivor's delivery", func() bool {
			seen, _ := rc.counts()
			return seen[jobs[0].Msg] == 1
		})
		outboxEmpty(t, r)
		if err := finish(ctx, r, name, "retry", jobs[0], 0, 10); !errors.Is(err, errLost) {
			t.Fatalf("late finish: %v", err)
		}
		outboxEmpty(t, r)
		if seen, _ := rc.counts(); len(seen) != 1 {
			t.Fatalf("seen %v", seen)
		}
	})
}
