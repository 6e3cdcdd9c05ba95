package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// hanging is a server whose every path is an endpoint that never
// answers until the test ends; it counts the requests it holds.
type hanging struct {
	*httptest.Server
	now, most, total atomic.Int64
}

func newHanging(t *testing.T) *hanging {
	t.Helper()
	release := make(chan struct{})
	h := &hanging{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.now.Add(1)
		h.total.Add(1)
		for {
			m := h.most.Load()
			if n <= m || h.most.CompareAndSwap(m, n) {
				break
			}
		}
		defer h.now.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(h.Close)
	t.Cleanup(func() { close(release) }) // after Run has returned
	return h
}

// A room whose ten receivers all hang holds no more than its share of
// the attempts in flight: another room's event reaches its receiver while
// they still hang, however many of the first room's wait.
func TestHangingRoomIsolated(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		hang := newHanging(t)
		good := newReceiver(t, nil)
		r := newRedis(t, srv, client)
		o := fast()
		o.Timeout = time.Minute // far past the test: only the isolation lets B through
		h := newHooks(t, r, nil, o)
		ctx := context.Background()
		var eps []Endpoint
		for i := range MaxRoomEndpoints {
			eps = append(eps, Endpoint{URL: fmt.Sprintf("%s/a%d", hang.URL, i), Secret: NewSecret()})
		}
		if err := h.SetRoomEndpoints(ctx, "room-a", eps); err != nil {
			t.Fatal(err)
		}
		if err := h.SetRoomEndpoints(ctx, "room-b", []Endpoint{good.endpoint()}); err != nil {
			t.Fatal(err)
		}
		for i := range 5 { // 50 deliveries, all due before room B's
			if err := h.Emit(ctx, "room-a", RoomPaused, map[string]int{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		run(t, h)
		waitfor.Until(t, 10*time.Second, "room A's receivers hanging", func() bool {
			return hang.now.Load() == int64(h.o.MaxPerRoom)
		})
		sent := time.Now()
		if err := h.Emit(ctx, "room-b", RoomResumed, nil); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, "room B's event", func() bool {
			seen, _ := good.counts()
			return len(seen) == 1
		})
		t.Logf("room B's event arrived %v after it was sent, while %d of room A's deliveries hung", time.Since(sent).Round(time.Millisecond), hang.now.Load())
		if n := hang.now.Load(); n != int64(h.o.MaxPerRoom) {
			t.Fatalf("%d of room A's attempts hang, want %d", n, h.o.MaxPerRoom)
		}
		if m := hang.most.Load(); m > int64(h.o.MaxPerRoom) {
			t.Fatalf("room A had %d attempts at once, more than %d", m, h.o.MaxPerRoom)
		}
	})
}

// One receiver that hangs holds at most MaxPerEndpoint attempts; the
// other endpoints of its room go on.
func TestHangingEndpointIsolated(t *testing.T) {
	srv := redistest.StartMini(t)
	hang := newHanging(t)
	good := newReceiver(t, nil)
	r := newRedis(t, srv, "rueidis")
	o := fast()
	o.Timeout = time.Minute
	h := newHooks(t, r, nil, o)
	ctx := context.Background()
	if err := h.SetRoomEndpoints(ctx, "drop", []Endpoint{{URL: hang.URL + "/x", Secret: NewSecret()}, good.endpoint()}); err != nil {
		t.Fatal(err)
	}
	run(t, h)
	const n = 10
	for i := range n {
		if err := h.Emit(ctx, "drop", RoomPaused, map[string]int{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, 10*time.Second, "the healthy endpoint's events", func() bool {
		seen, _ := good.counts()
		return len(seen) == n
	})
	if now, most := hang.now.Load(), hang.most.Load(); now != int64(h.o.MaxPerEndpoint) || most != now {
		t.Fatalf("the hanging endpoint holds %d attempts (at most %d), want %d", now, most, h.o.MaxPerEndpoint)
	}
}

// An endpoint keeps at most MaxPending deliveries waiting: the oldest
// that no attempt holds are dropped, said in the log and counted by
// scope, and the newest reach the receiver once it is called again.
func TestPendingBound(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		roomRC, deployRC := newReceiver(t, nil), newReceiver(t, nil)
		r := newRedis(t, srv, client)
		var mu sync.Mutex
		droppedBy := map[string]int{}
		o := fast()
		o.MaxPending = 5
		o.OnDropped = func(scope string, n int) {
			mu.Lock()
			defer mu.Unlock()
			droppedBy[scope] += n
		}
		h := newHooks(t, r, []Endpoint{deployRC.endpoint()}, o)
		ctx := context.Background()
		if err := h.SetRoomEndpoints(ctx, "drop", []Endpoint{roomRC.endpoint()}); err != nil {
			t.Fatal(err)
		}
		emit := func(i int) {
			t.Helper()
			if err := h.Emit(ctx, "drop", SettingsChanged, map[string]int{"n": i}); err != nil {
				t.Fatal(err)
			}
		}
		emit(0)
		// An attempt holds event 0 to the room's endpoint (claimed, as by
		// an instance whose receiver is slow): it is never dropped.
		held, err := claim(ctx, r, claimReq{n: 1, lease: time.Minute, name: "slow:1", epMost: 1, roomMost: 1,
			busy: map[string]int{endpointOf("deployment", "", deployRC.URL+"/hook"): 1}})
		if err != nil || len(held.jobs) != 1 || held.jobs[0].Scope != "room" {
			t.Fatalf("claim: %+v %v", held.jobs, err)
		}
		for i := 1; i < 12; i++ {
			emit(i)
		}
		v, err := r.Do(ctx, "HLEN", jobsKey)
		if n, _ := v.(int64); err != nil || n != 10 {
			t.Fatalf("%v deliveries wait, want 5 per endpoint (%v)", v, err)
		}
		mu.Lock()
		if droppedBy["room"] != 7 || droppedBy["deployment"] != 7 || len(droppedBy) != 2 {
			t.Fatalf("dropped %v, want 7 of each", droppedBy)
		}
		mu.Unlock()
		// The held attempt is answered; the rest go out.
		if _, err := deliverOne(ctx, h, "slow:1", held.jobs[0]); err != nil {
			t.Fatal(err)
		}
		run(t, h)
		waitfor.Until(t, 10*time.Second, "what was kept", func() bool {
			a, _ := roomRC.counts()
			b, _ := deployRC.counts()
			return len(a) == 5 && len(b) == 5
		})
		outboxEmpty(t, r)
		numbers := func(rc *receiver) []int {
			var ns []int
			for _, p := range rc.ofType(SettingsChanged) {
				var d struct{ N int }
				_ = json.Unmarshal(p.Data, &d)
				ns = append(ns, d.N)
			}
			slices.Sort(ns)
			return ns
		}
		if got := numbers(roomRC); !slices.Equal(got, []int{0, 8, 9, 10, 11}) {
			t.Errorf("the room's endpoint got %v, want the held one and the newest", got)
		}
		if got := numbers(deployRC); !slices.Equal(got, []int{7, 8, 9, 10, 11}) {
			t.Errorf("the deployment's endpoint got %v, want the newest", got)
		}
	})
}

// deliverOne makes the attempt at j that claim name holds.
func deliverOne(ctx context.Context, h *Hooks, name string, j job) (int, error) {
	h.attempt(ctx, name, j)
	v, err := h.r.Do(ctx, "HEXISTS", jobsKey, j.ID)
	n, _ := v.(int64)
	return int(n), err
}

// Deliveries an earlier build left in its one queue move to the
// endpoints' queues and go out, retries keeping their due time.
func TestLegacyOutboxAdopted(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		r := newRedis(t, srv, client)
		h := newHooks(t, r, []Endpoint{rc.endpoint()}, fast())
		ctx := context.Background()
		later := time.Now().Add(time.Hour).UnixMilli()
		for i, due := range []int64{0, 0, later} {
			j := job{ID: fmt.Sprintf("msg_old%d.0", i), Msg: fmt.Sprintf("msg_old%d", i), Room: "drop", Scope: "deployment", URL: rc.URL + "/hook",
				Type: RoomPaused, Body: `{"type":"room.paused","timestamp":"2026-12-01T00:00:00Z","data":{"room":"drop"}}`, CreatedMs: 1}
			b, _ := json.Marshal(j)
			for _, cmd := range [][]string{{"HSET", jobsKey, j.ID, string(b)}, {"ZADD", legacyDueKey, fmt.Sprint(due), j.ID}} {
				if _, err := r.Do(ctx, cmd...); err != nil {
					t.Fatal(err)
				}
			}
		}
		// One whose job cannot be read, and one whose job is gone.
		for _, cmd := range [][]string{{"HSET", jobsKey, "msg_bad.0", "{"}, {"ZADD", legacyDueKey, "0", "msg_bad.0"}, {"ZADD", legacyDueKey, "0", "msg_gone.0"}} {
			if _, err := r.Do(ctx, cmd...); err != nil {
				t.Fatal(err)
			}
		}
		run(t, h)
		waitfor.Until(t, 10*time.Second, "the due ones delivered", func() bool {
			seen, _ := rc.counts()
			return seen["msg_old0"] == 1 && seen["msg_old1"] == 1
		})
		waitfor.Until(t, 10*time.Second, "the legacy queue gone", func() bool {
			v, err := r.Do(ctx, "EXISTS", legacyDueKey)
			n, _ := v.(int64)
			return err == nil && n == 0
		})
		q := prefix + "q:" + endpointOf("deployment", "", rc.URL+"/hook")
		v, err := r.Do(ctx, "ZRANGEBYSCORE", q, fmt.Sprint(later), fmt.Sprint(later))
		if ids, _ := v.([]any); err != nil || len(ids) != 1 || ids[0] != "msg_old2.0" {
			t.Fatalf("the retry waiting an hour: %v (%v)", v, err)
		}
		if seen, _ := rc.counts(); len(seen) != 2 {
			t.Fatalf("seen %v", seen)
		}
	})
}
