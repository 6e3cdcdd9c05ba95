package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var clients = []string{"rueidis", "go-redis"}

// each runs f against real Redis and the embedded one, with both clients.
func each(t *testing.T, f func(t *testing.T, srv *redistest.Server, client string)) {
	for _, kind := range redistest.Kinds {
		for _, client := range clients {
			t.Run(kind+"/"+client, func(t *testing.T) { f(t, redistest.Start(t, kind), client) })
		}
	}
}

// recorder is an Auditor counting each room's transitions, and what
// Options.OnTransition was told.
type recorder struct {
	mu   sync.Mutex
	got  []string // room/event/action
	told []string // room/event/action, with the event's end time
}

func (r *recorder) transition(_ context.Context, room string, e Event, action string) {
	r.mu.Lock()
	r.told = append(r.told, room+"/"+e.Name+"/"+action+"@"+e.EndsAt.UTC().Format(time.RFC3339Nano))
	r.mu.Unlock()
}

func (r *recorder) AuditTransition(_ context.Context, room string, e Event, action string, _, _ settings.Room) {
	r.mu.Lock()
	r.got = append(r.got, room+"/"+e.Name+"/"+action)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

type instance struct {
	q *queue.Queue
	s *Schedule
	r rediscall.Redis
}

// newInstance is a queue and a schedule on srv, closed when the test ends.
func newInstance(t *testing.T, srv *redistest.Server, client string, audit Auditor) instance {
	t.Helper()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rc, err := redisconn.Open(context.Background(), redisconn.Options{URL: srv.URL(), Client: client}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	signer, err := visitorsig.NewSigner([]byte("0123456789abcdef-test-secret"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(rc.Redis(), signer, &queue.Options{Capacity: queue.Capacity{Batch: 10, Tick: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	o := &Options{Tick: 20 * time.Millisecond, Retry: 10 * time.Millisecond, Audit: audit, Logger: log}
	if rec, ok := audit.(*recorder); ok {
		o.OnTransition = rec.transition
	}
	return instance{q: q, s: New(rc.Redis(), q, o), r: rc.Redis()}
}

// run runs s's loop until the test ends.
func run(t *testing.T, s *Schedule) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	})
}

func event(t *testing.T, format string, args ...any) Event {
	t.Helper()
	e, err := Parse([]byte(fmt.Sprintf(format, args...)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func at(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

func TestPutRefuses(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		in := newInstance(t, srv, client, nil)
		base := time.Now().Add(time.Hour)
		a := event(t, `{"name":"a","startsAt":%q,"endsAt":%q}`, at(base), at(base.Add(time.Hour)))
		if err := in.s.Put(ctx, "drop", a, true); err != nil {
			t.Fatal(err)
		}
		wantCode(t, in.s.Put(ctx, "drop", a, true), "event_exists")
		b := event(t, `{"name":"b","startsAt":%q,"endsAt":%q}`, at(base.Add(30*time.Minute)), at(base.Add(2*time.Hour)))
		err := in.s.Put(ctx, "drop", b, true)
		wantCode(t, err, "event_overlap")
		if !strings.Contains(err.Error(), "event b") || !strings.Contains(err.Error(), "event a") {
			t.Fatalf("overlap names: %v", err)
		}
		wantCode(t, in.s.Put(ctx, "drop", b, false), "event_not_found")
		past := event(t, `{"name":"p","startsAt":%q,"endsAt":%q}`, at(time.Now().Add(-time.Hour)), at(time.Now().Add(-time.Minute)))
		wantCode(t, in.s.Put(ctx, "drop", past, true), "event_in_past")
		bad := event(t, `{"name":"m","startsAt":%q,"endsAt":%q,"settings":{"strategy":"max-active"}}`, at(base.Add(3*time.Hour)), at(base.Add(4*time.Hour)))
		err = in.s.Put(ctx, "drop", bad, true)
		wantCode(t, err, "invalid_field")
		if e := (*Error)(nil); errors.As(err, &e) && e.Field != "settings.maxActive" {
			t.Fatalf("field %q", e.Field)
		}
		for i := range MaxUpcoming - 1 {
			e := event(t, `{"name":"e%d","startsAt":%q,"endsAt":%q}`, i, at(base.Add(time.Duration(10+i)*time.Hour)), at(base.Add(time.Duration(10+i)*time.Hour+time.Minute)))
			if err := in.s.Put(ctx, "drop", e, true); err != nil {
				t.Fatal(err)
			}
		}
		more := event(t, `{"name":"more","startsAt":%q,"endsAt":%q}`, at(base.Add(50*time.Hour)), at(base.Add(51*time.Hour)))
		wantCode(t, in.s.Put(ctx, "drop", more, true), "too_many_events")
		if err := in.s.Delete(ctx, "drop", "e0"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, in.s.Delete(ctx, "drop", "e0"), "event_not_found")
		list, err := in.s.List(ctx, "drop")
		if err != nil || len(list) != MaxUpcoming-1 || list[0].Name != "a" {
			t.Fatalf("list %v %v", list, err)
		}
	})
}

// Three instances run one room's sequence of events: each transition
// happens once, and the room ends with its base settings exactly.
func TestTransitionsOnceAcrossInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		ins := []instance{newInstance(t, srv, client, rec), newInstance(t, srv, client, rec), newInstance(t, srv, client, rec)}
		baseCfg := settings.Room{Batch: 7, Message: "Base.", JoinRate: 5}
		if err := ins[0].q.SetRoomConfig(ctx, "drop", baseCfg); err != nil {
			t.Fatal(err)
		}
		want, _ := ins[0].q.RoomConfig(ctx, "drop")
		t0 := time.Now().Add(300 * time.Millisecond)
		step := 150 * time.Millisecond
		evs := []Event{
			event(t, `{"name":"one","prequeueAt":%q,"startsAt":%q,"endsAt":%q,"settings":{"batch":50,"message":"One."}}`,
				at(t0), at(t0.Add(step)), at(t0.Add(2*step))),
			// Back to back with one: its base is the room's base again.
			event(t, `{"name":"two","prequeueAt":%q,"startsAt":%q,"endsAt":%q,"shuffleAtStart":true,"settings":{"paused":false,"seats":100}}`,
				at(t0.Add(2*step)), at(t0.Add(3*step)), at(t0.Add(4*step))),
			event(t, `{"name":"three","startsAt":%q,"endsAt":%q,"settings":{"message":"Three."},"atEnd":"close"}`,
				at(t0.Add(5*step)), at(t0.Add(6*step))),
		}
		for _, e := range evs {
			if err := ins[0].s.Put(ctx, "drop", e, true); err != nil {
				t.Fatal(err)
			}
		}
		for _, in := range ins {
			run(t, in.s)
		}
		wantAudit := []string{"drop/one/event-prequeue", "drop/one/event-start", "drop/one/event-end",
			"drop/two/event-prequeue", "drop/two/event-start", "drop/two/event-end", "drop/three/event-start", "drop/three/event-end"}
		waitfor.Until(t, 10*time.Second, "every transition", func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return len(rec.got) >= len(wantAudit) && len(rec.told) >= len(wantAudit)
		})
		if got := rec.list(); strings.Join(got, " ") != strings.Join(wantAudit, " ") {
			t.Fatalf("transitions\n%v\nwant\n%v", got, wantAudit)
		}
		// OnTransition was told each once, with the whole event.
		rec.mu.Lock()
		told := append([]string(nil), rec.told...)
		rec.mu.Unlock()
		var wantTold []string
		for _, w := range wantAudit {
			name := strings.Split(w, "/")[1]
			for _, e := range evs {
				if e.Name == name {
					wantTold = append(wantTold, w+"@"+e.EndsAt.UTC().Format(time.RFC3339Nano))
				}
			}
		}
		if strings.Join(told, " ") != strings.Join(wantTold, " ") {
			t.Fatalf("told\n%v\nwant\n%v", told, wantTold)
		}
		got, err := ins[1].q.RoomConfig(ctx, "drop")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range settings.Fields {
			if !f.Equal(got, want) {
				t.Errorf("%s is %v after the events, want %v", f.Name, f.Value(got), f.Value(want))
			}
		}
		// A few more ticks change nothing.
		v := got.Version()
		for _, in := range ins {
			if err := in.s.step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if again, _ := ins[2].q.RoomConfig(ctx, "drop"); again.Version() != v || len(rec.list()) != len(wantAudit) {
			t.Fatalf("settings written again: version %d -> %d, %d transitions", v, again.Version(), len(rec.list()))
		}
	})
}

// An event that ends with close takes the waiting out of the queue; they
// are told closed with the event's message, others are not.
func TestEndCloses(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		t0 := time.Now().Add(200 * time.Millisecond)
		e := event(t, `{"name":"sale","startsAt":%q,"endsAt":%q,"settings":{"message":"Sold through."},"atEnd":"close"}`, at(t0), at(t0.Add(200*time.Millisecond)))
		if err := in.s.Put(ctx, "drop", e, true); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"v1", "v2"} {
			if _, err := in.q.Join(ctx, "drop", v); err != nil {
				t.Fatal(err)
			}
		}
		run(t, in.s)
		waitfor.Until(t, 10*time.Second, "the end", func() bool { return len(rec.list()) == 2 })
		for _, v := range []string{"v1", "v2"} {
			msg, ok, err := in.s.Closed(ctx, "drop", v)
			if err != nil || !ok || msg != "Sold through." {
				t.Fatalf("%s: closed %q %v %v", v, msg, ok, err)
			}
			st, err := in.q.Status(ctx, "drop", v)
			if err != nil || st.Status != "not_in_queue" {
				t.Fatalf("%s still queued: %+v %v", v, st, err)
			}
		}
		if _, ok, err := in.s.Closed(ctx, "drop", "v3"); ok || err != nil {
			t.Fatalf("v3 closed: %v %v", ok, err)
		}
	})
}

// Redis comes back empty while an event runs: the instance writes the
// event and its base back, and the end restores the base.
func TestRecoverAfterRedisLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		if err := in.q.SetRoomConfig(ctx, "drop", settings.Room{Batch: 7}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().Add(100 * time.Millisecond)
		e := event(t, `{"name":"sale","startsAt":%q,"endsAt":%q,"settings":{"batch":40}}`, at(t0), at(t0.Add(time.Second)))
		if err := in.s.Put(ctx, "drop", e, true); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "the start", func() bool {
			if err := in.s.step(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.list()) == 1
		})
		if err := in.s.step(ctx); err != nil { // reads the base
			t.Fatal(err)
		}
		if _, err := in.r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		// The queue's recovery writes the settings in force back.
		if err := in.q.SetRoomConfig(ctx, "drop", settings.Room{Batch: 40}); err != nil {
			t.Fatal(err)
		}
		run(t, in.s)
		waitfor.Until(t, 10*time.Second, "the end", func() bool { return len(rec.list()) == 2 })
		if got := strings.Join(rec.list(), " "); got != "drop/sale/event-start drop/sale/event-end" {
			t.Fatalf("transitions %s", got)
		}
		if cfg, _ := in.q.RoomConfig(ctx, "drop"); cfg.Batch != 7 {
			t.Fatalf("batch %d after the end, want the base 7", cfg.Batch)
		}
		if list, err := in.s.List(ctx, "drop"); err != nil || len(list) != 1 {
			t.Fatalf("events after the restore: %v %v", list, err)
		}
	})
}

// A pre-queue with shuffleAtStart is placed at the start in the order of
// the room's draw (queue.DrawOrder with the seed it reveals); one without
// keeps the order of arrival and admits nobody before the start.
func TestPrequeue(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		t0 := time.Now().Add(150 * time.Millisecond)
		for _, room := range []string{"shuffled", "ordered"} {
			if err := in.q.SetRoomConfig(ctx, room, settings.Room{Batch: 1}); err != nil {
				t.Fatal(err)
			}
			e := event(t, `{"name":"drop","prequeueAt":%q,"startsAt":%q,"endsAt":%q,"shuffleAtStart":%v}`,
				at(t0), at(t0.Add(700*time.Millisecond)), at(t0.Add(time.Hour)), room == "shuffled")
			if err := in.s.Put(ctx, room, e, true); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 5*time.Second, "the pre-queues", func() bool {
			if err := in.s.step(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.list()) == 2
		})
		ids := []string{"v1", "v2", "v3", "v4", "v5"}
		for _, room := range []string{"shuffled", "ordered"} {
			for _, id := range ids {
				st, err := in.q.Join(ctx, room, id)
				if err != nil {
					t.Fatal(err)
				}
				if room == "shuffled" && !st.PreQueue() || room == "ordered" && (!st.Paused || st.Position == 0) {
					t.Fatalf("%s: %s joined as %+v", room, id, st)
				}
			}
			if res, _ := in.q.Admit(ctx, room); len(res.Admitted) != 0 {
				t.Fatalf("%s admitted %d before the start", room, len(res.Admitted))
			}
		}
		waitfor.Until(t, 5*time.Second, "the starts", func() bool {
			if err := in.s.step(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.list()) == 4
		})
		d, err := in.q.Draw(ctx, "shuffled", 0, 100)
		for err == nil && !d.Opened {
			_, _ = in.q.Admit(ctx, "shuffled") // the tick opens the room at opensAt
			d, err = in.q.Draw(ctx, "shuffled", 0, 100)
		}
		if err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "the draw placed", func() bool {
			d, err = in.q.Draw(ctx, "shuffled", 0, 100)
			return err == nil && !d.Placing
		})
		for room, order := range map[string][]string{"shuffled": queue.DrawOrder(d.Seed, ids), "ordered": ids} {
			for i, id := range order {
				st, err := in.q.Status(ctx, room, id)
				if err != nil {
					t.Fatal(err)
				}
				// One was admitted by the tick that opened the room.
				if st.Status == "admitted" && i == 0 || st.Status == "waiting" && st.Position > 0 {
					continue
				}
				t.Fatalf("%s: %s (%d in order) is %+v", room, id, i, st)
			}
			var prev int64
			for _, id := range order[1:] {
				st, _ := in.q.Status(ctx, room, id)
				if st.Position <= prev {
					t.Fatalf("%s: %s at %d after %d: not in order %v", room, id, st.Position, prev, order)
				}
				prev = st.Position
			}
		}
	})
}

// An event may end as late as the year 3000, further than a
// time.Duration reaches: the mark of its applied start still outlasts it
// (it had expired after a minute, and the start ran again every minute).
func TestMarkOfAFarEnd(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		end := time.Date(2999, 12, 31, 0, 0, 0, 0, time.UTC)
		e := event(t, `{"name":"forever","startsAt":%q,"endsAt":%q,"settings":{"message":"Open."}}`, at(time.Now().Add(50*time.Millisecond)), at(end))
		if err := in.s.Put(ctx, "drop", e, true); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "the start", func() bool {
			if err := in.s.step(ctx); err != nil {
				t.Fatal(err)
			}
			return len(rec.list()) == 1
		})
		stored, err := in.s.Get(ctx, "drop", "forever")
		if err != nil || stored.ID == "" {
			t.Fatalf("stored: %+v %v", stored, err)
		}
		v, err := in.r.Do(ctx, "PTTL", markKey("drop", transitions(stored)[0]))
		if err != nil {
			t.Fatal(err)
		}
		if ttl, _ := v.(int64); ttl != -1 && ttl < (365*24*time.Hour).Milliseconds() {
			t.Fatalf("the start's mark expires in %d ms", ttl)
		}
		if keep := keepFor(e, time.Now()); keep < maxExpiry {
			t.Fatalf("kept %v", keep)
		}
		// An end an hour away: its marks expire a week after it.
		got := expiry(keepFor(Event{EndsAt: time.Now().Add(time.Hour)}, time.Now()))
		if n, err := strconv.ParseInt(got[len(got)-1], 10, 64); len(got) != 2 || err != nil || n < (markKeep+time.Hour-time.Minute).Milliseconds() || n > (markKeep+time.Hour).Milliseconds() {
			t.Fatalf("a near end's expiry: %v", got)
		}
	})
}

// An event whose start cannot be applied (an admin set maxActive to 0
// after it was made, which its strategy max-active needs) is tried
// MaxTries times, then failed: the API's read shows why, a pre-queue it
// held is given back, the room's next event starts on time, and the failed
// one may be deleted (it had been tried four times a second for ever,
// holding the next event back, and could not be deleted).
func TestFailedEvent(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		t0 := time.Now().Add(300 * time.Millisecond)
		for _, room := range []string{"drop", "pre"} {
			if err := in.q.SetRoomConfig(ctx, room, settings.Room{MaxActive: 50, Message: "Base."}); err != nil {
				t.Fatal(err)
			}
			pre := ""
			if room == "pre" {
				pre = fmt.Sprintf(`"prequeueAt":%q,`, at(t0.Add(-100*time.Millisecond)))
			}
			bad := event(t, `{"name":"bad",%s"startsAt":%q,"endsAt":%q,"settings":{"strategy":"max-active","message":"Bad."}}`, pre, at(t0), at(t0.Add(time.Hour)))
			next := event(t, `{"name":"next","startsAt":%q,"endsAt":%q,"settings":{"message":"Next."}}`, at(t0.Add(time.Hour)), at(t0.Add(2*time.Hour)))
			if room == "drop" { // back to back: bad ends as next starts
				bad = event(t, `{"name":"bad","startsAt":%q,"endsAt":%q,"settings":{"strategy":"max-active","message":"Bad."}}`, at(t0), at(t0.Add(600*time.Millisecond)))
				next = event(t, `{"name":"next","startsAt":%q,"endsAt":%q,"settings":{"message":"Next."}}`, at(t0.Add(600*time.Millisecond)), at(t0.Add(time.Hour)))
			}
			for _, e := range []Event{bad, next} {
				if err := in.s.Put(ctx, room, e, true); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := in.q.UpdateRoomConfig(ctx, room, func(c *settings.Room) error { c.MaxActive = 0; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		run(t, in.s)
		has := func(want string) bool { return slices.Contains(rec.list(), want) }
		waitfor.Until(t, 10*time.Second, "the next event's start", func() bool {
			return has("drop/next/event-start") && has("pre/bad/event-failed") && time.Now().After(t0.Add(100*time.Millisecond))
		})
		for _, room := range []string{"drop", "pre"} {
			for _, not := range []string{"bad/event-prequeue", "bad/event-start", "bad/event-end"} {
				if has(room + "/" + not) {
					t.Fatalf("%s: %v", room, rec.list())
				}
			}
			// Its pre-queue applies the event's settings: it fails first.
			want := map[string]string{"drop": "start", "pre": "prequeue"}[room]
			e, err := in.s.Get(ctx, room, "bad")
			if err != nil || e.Failed == nil || e.Failed.Transition != want || e.Failed.Tries != MaxTries ||
				!strings.Contains(e.Failed.Reason, "maxActive") {
				t.Fatalf("%s: the failed event: %+v %v", room, e.Failed, err)
			}
			wantCode(t, in.s.Put(ctx, room, event(t, `{"name":"bad","startsAt":%q,"endsAt":%q}`, at(t0), at(t0.Add(time.Hour))), false), "event_failed")
		}
		if cfg, _ := in.q.RoomConfig(ctx, "drop"); cfg.Message != "Next." || cfg.Strategy != "" {
			t.Fatalf("drop during the next event: %+v", cfg)
		}
		// The failed pre-queue left the room as it was, and its start,
		// due since, was not made.
		if cfg, _ := in.q.RoomConfig(ctx, "pre"); cfg.Paused || cfg.Message != "Base." || cfg.Strategy != "" {
			t.Fatalf("pre after its failed pre-queue: %+v", cfg)
		}
		if err := in.s.Delete(ctx, "drop", "bad"); err != nil {
			t.Fatalf("delete the failed event: %v", err)
		}
		if err := in.s.Delete(ctx, "pre", "bad"); err != nil {
			t.Fatalf("delete the failed event: %v", err)
		}
		// Made again under its name and times, it is a new event.
		again := event(t, `{"name":"bad","startsAt":%q,"endsAt":%q,"settings":{"message":"Again."}}`, at(t0), at(t0.Add(time.Hour)))
		if err := in.s.Put(ctx, "pre", again, true); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "the new event's start", func() bool { return has("pre/bad/event-start") })
	})
}

// A start that fails after its pre-queue applied gives back what the
// pre-queue changed (its settings, and the pause that held the pre-queue).
func TestFailedStartGivesBackThePrequeue(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		ctx := context.Background()
		rec := &recorder{}
		in := newInstance(t, srv, client, rec)
		if err := in.q.SetRoomConfig(ctx, "drop", settings.Room{MaxActive: 30}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now().Add(100 * time.Millisecond)
		e := event(t, `{"name":"sale","prequeueAt":%q,"startsAt":%q,"endsAt":%q,"settings":{"maxActive":0}}`, at(t0), at(t0.Add(500*time.Millisecond)), at(t0.Add(time.Hour)))
		if err := in.s.Put(ctx, "drop", e, true); err != nil {
			t.Fatal(err)
		}
		run(t, in.s)
		waitfor.Until(t, 5*time.Second, "the pre-queue", func() bool { return slices.Contains(rec.list(), "drop/sale/event-prequeue") })
		// During the pre-queue an admin makes the room max-active: the
		// start's maxActive 0 no longer fits.
		if _, err := in.q.UpdateRoomConfig(ctx, "drop", func(c *settings.Room) error {
			c.Strategy, c.MaxActive = settings.StrategyMaxActive, 50
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "the failure", func() bool { return slices.Contains(rec.list(), "drop/sale/event-failed") })
		cfg, _ := in.q.RoomConfig(ctx, "drop")
		if cfg.Paused || cfg.MaxActive != 30 || cfg.Strategy != settings.StrategyMaxActive {
			t.Fatalf("after the failed start: %+v", cfg)
		}
		if got, err := in.s.Get(ctx, "drop", "sale"); err != nil || got.Failed == nil || got.Failed.Transition != "start" {
			t.Fatalf("the failed event: %+v %v", got, err)
		}
		if v, _ := in.r.Do(ctx, "EXISTS", baseKey("drop", "sale")); v != int64(0) {
			t.Fatalf("the base is kept: %v", v)
		}
	})
}
