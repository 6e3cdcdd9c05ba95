package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestRedisDataLoss: Redis without persistence dies with 1,000 visitors
// waiting on two instances (500 on WebSocket and SSE, 500 polling) and
// 100 holding unused entry tokens, and comes back empty. Within 10 s every
// waiting visitor has its place again, in exactly the order before (the
// queue in Redis is the same, member for member and score for score; 10 s
// is the target, reported, not asserted),
// nobody admitted before is back in the queue, nobody ever heard
// not_in_queue, every earlier token works exactly once, and the room's
// settings are back.
func TestRedisDataLoss(t *testing.T) {
	srv := redistest.StartReal(t)
	mutate := func(c *config) {
		withAdmin(c)
		c.OpenRooms = false
		c.JoinRate = 0
		c.Capacity.Tick = time.Second // one batch of 100 between resume and pause
		c.Capacity.ServiceTime = time.Millisecond
	}
	a := startServerOpts(t, srv, "rueidis", &serverOptions{}, mutate)
	b := startServerOpts(t, srv, "go-redis", &serverOptions{}, mutate)
	servers := []*testServer{a, b}
	const room = "drop"
	admin := newVisitor(t, a.URL)
	if r := admin.admin("PUT", "/rooms/"+room, `{"paused":true,"batch":100,"seats":5000,"failMode":"closed"}`); r.Code != 200 {
		t.Fatalf("create room: %d %s", r.Code, r.Raw)
	}
	rdb := redisCmd(t, srv.Addr)

	// 100 visitors are let in before the loss and keep their tokens unused.
	var early []*visitor
	for i := range 100 {
		v := newVisitor(t, servers[i%2].URL)
		v.join(room)
		early = append(early, v)
	}
	admin.admin("POST", "/rooms/"+room+"/resume", "")
	waitfor.Until(t, 10*time.Second, "the first batch", func() bool { return rdb("ZCARD", "wr:{"+room+"}:q") == "0" })
	admin.admin("POST", "/rooms/"+room+"/pause", "")
	tokens := make([]string, len(early))
	for i, v := range early {
		r := v.status(room)
		if r.str("status") != "admitted" {
			t.Fatalf("early visitor %d: %s", i, r.Raw)
		}
		tokens[i] = r.str("token")
	}
	// Half of them keep a push connection open after admission, as the
	// page does.
	var earlyPushed []*pushClient
	for i := 0; i < len(early); i += 2 {
		earlyPushed = append(earlyPushed, dial(t, "ws", servers[(i+1)%2].URL, room, early[i].cred))
	}

	// 1,000 waiting visitors: even ones push (WS and SSE, on the other
	// instance than they joined), odd ones poll.
	const n = 1000
	visitors := make([]*visitor, n)
	var pushed []*pushClient
	for i := range n {
		v := newVisitor(t, servers[i%2].URL)
		v.join(room)
		visitors[i] = v
	}
	before := rdb("ZRANGE", "wr:{"+room+"}:q", "0", "-1", "WITHSCORES")
	if got := len(strings.Fields(before)); got != 2*n {
		t.Fatalf("queue before the loss holds %d entries, want %d", got/2, n)
	}
	for i := 0; i < n; i += 2 {
		kind := "ws"
		if i%4 == 2 {
			kind = "sse"
		}
		pushed = append(pushed, dial(t, kind, servers[(i+1)%2].URL, room, visitors[i].cred))
	}
	waitfor.Until(t, 20*time.Second, "every push client's first state", func() bool {
		for _, p := range pushed {
			if len(p.messages()) == 0 {
				return false
			}
		}
		return true
	})

	// Pollers ask at the nextPollMs they are given, until the test ends.
	var lostSeen atomic.Int64
	var lastPoll sync.Map // index -> reply body of the last poll
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for i := 1; i < n; i += 2 {
		v := visitors[i]
		wg.Go(func() {
			for ctx.Err() == nil {
				req, ok := v.try("GET", "/api/v1/rooms/"+room+"/status")
				if req.str("status") == "not_in_queue" {
					lostSeen.Add(1)
				}
				if ok && req.Code == 200 {
					lastPoll.Store(i, req)
				}
				wait := time.Duration(req.num("nextPollMs")) * time.Millisecond
				if wait <= 0 {
					wait = 500 * time.Millisecond
				}
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		})
	}

	srv.Stop()
	for _, ts := range servers {
		ts.waitReadyz(t, 10*time.Second, 503)
	}
	srv.Restart(t)
	back := time.Now()
	// The target is 10 s (measured and reported); the deadline is generous
	// for a busy machine.
	var queued string
	placesBack := false
	defer func() { // runs too when the wait below fails the test
		if placesBack {
			return
		}
		missing := map[string]int{}
		for i, v := range visitors {
			id, _, _ := strings.Cut(v.cred, ".")
			if rdb("ZSCORE", "wr:{"+room+"}:q", id) == "" {
				missing[[]string{"pushed", "polling"}[i%2]+" via instance "+fmt.Sprint((i+1)%2)]++
			}
		}
		t.Logf("places missing: %v", missing)
	}()
	waitfor.Until(t, 30*time.Second, "every place back after Redis was", func() bool {
		if q := rdb("ZCARD", "wr:{"+room+"}:q"); q != queued {
			queued = q
			t.Logf("%v after Redis was back: %s places", time.Since(back).Round(time.Millisecond), q)
		}
		return queued == fmt.Sprint(n)
	})
	placesBack = true
	t.Logf("every place back %v after Redis was", time.Since(back).Round(time.Millisecond))
	if after := rdb("ZRANGE", "wr:{"+room+"}:q", "0", "-1", "WITHSCORES"); after != before {
		t.Fatalf("the queue after the loss differs from the queue before it")
	}
	// The clients see their places: the same position as before the loss.
	waitfor.Until(t, 30*time.Second, "every client sees its place", func() bool {
		for _, p := range pushed {
			if last := lastState(p); last.Status != "waiting" || last.Position == 0 {
				return false
			}
		}
		for i := 1; i < n; i += 2 {
			r, ok := lastPoll.Load(i)
			if !ok || r.(reply).str("status") != "waiting" {
				return false
			}
		}
		return true
	})
	for i, p := range pushed {
		for _, m := range p.messages() {
			if m.Status == "not_in_queue" || m.Status == "expired" {
				t.Fatalf("push client %d heard %s", 2*i, m.Status)
			}
		}
	}
	if lostSeen.Load() > 0 {
		t.Fatalf("pollers heard not_in_queue %d times", lostSeen.Load())
	}

	// Settings are back as they were.
	r := admin.admin("GET", "/rooms/"+room, "")
	if r.Body["paused"] != true || r.num("seats") != 5000 || r.num("batch") != 100 || r.str("failMode") != "closed" {
		t.Fatalf("settings after the loss: %s", r.Raw)
	}

	// Nobody let in before the loss is back in the queue, even when
	// asking; a page that shows its token hears admitted, with that token.
	// A 503 (a Redis call that timed out on a busy machine: the room fails
	// closed) is asked again, as a client does after Retry-After.
	ask := func(v *visitor, hdr ...string) reply {
		var r reply
		for range 10 {
			if r = v.do("GET", "/api/v1/rooms/"+room+"/status", "", hdr...); r.Code != http.StatusServiceUnavailable {
				break
			}
		}
		return r
	}
	for i, v := range early {
		var r reply
		if i%4 == 1 {
			r = ask(v, "Authorization", "Bearer "+tokens[i])
			if r.str("status") != "admitted" || r.str("token") != tokens[i] {
				t.Fatalf("an admitted visitor asking with its token: %s", r.Raw)
			}
			continue
		}
		if r = ask(v); r.str("status") == "waiting" {
			t.Fatalf("an admitted visitor got a place again: %s", r.Raw)
		}
	}
	for i, p := range earlyPushed {
		for _, m := range p.messages() {
			if m.Status == "not_in_queue" || m.Status == "waiting" || m.Status == "expired" {
				t.Fatalf("admitted push client %d heard %s", 2*i, m.Status)
			}
		}
	}
	if got := rdb("ZCARD", "wr:{"+room+"}:q"); got != fmt.Sprint(n) {
		t.Fatalf("queue holds %s after the admitted asked, want %d", got, n)
	}

	// Every earlier token works exactly once, whichever instance sees it,
	// a 503 asked again as above.
	order := func(ts *testServer, i int) reply {
		v := &visitor{tb: t, base: ts.URL, http: early[i].http}
		var r reply
		for range 10 {
			r = v.do("POST", "/api/v1/rooms/"+room+"/orders", "",
				"Authorization", "Bearer "+tokens[i], "X-Visitor", early[i].cred)
			if r.Code != http.StatusServiceUnavailable {
				break
			}
		}
		return r
	}
	var owg sync.WaitGroup
	for i := range early {
		owg.Go(func() {
			if r := order(servers[i%2], i); r.Code != 201 {
				t.Errorf("token %d first use: %d %s", i, r.Code, r.Raw)
			}
			if r := order(servers[(i+1)%2], i); r.Code != 401 || r.errCode() != "token_used" {
				t.Errorf("token %d second use: %d %s", i, r.Code, r.Raw)
			}
		})
	}
	owg.Wait()

	var restored float64
	for _, ts := range servers {
		restored += counterValue(t, ts, "waitroom_redis_state_restored_total")
	}
	if restored < n {
		t.Fatalf("waitroom_redis_state_restored_total = %v, want at least %d", restored, n)
	}
}

// counterValue sums every series of the counter name on ts.
func counterValue(tb testing.TB, ts *testServer, name string) float64 {
	tb.Helper()
	mfs, err := ts.metrics.Registry().Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// try is a GET or DELETE for a goroutine of a test: a transport error (a
// busy machine's client timeout) is no failure, the caller asks again.
func (v *visitor) try(method, path string) (reply, bool) {
	req, _ := http.NewRequest(method, v.base+path, nil)
	resp, err := v.http.Do(req)
	if err != nil {
		return reply{}, false
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Code: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if json.Unmarshal(raw, &r.Body) != nil {
		return r, false
	}
	return r, true
}

// TestRestoreSettingsWithRoomsFile: settings Redis lost come back as this
// instance last read them, with what the rooms file sets on top; a room
// only the file declares comes back from the file.
func TestRestoreSettingsWithRoomsFile(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    seats: 500\n  calm:\n    batch: 7\n")
	srv := redistest.StartReal(t)
	ts := startServer(t, srv, "go-redis", func(c *config) { withAdmin(c); c.RoomsFile = rooms; c.OpenRooms = false })
	v := newVisitor(t, ts.URL)
	if r := v.admin("PUT", "/rooms/drop", `{"paused":true,"failMode":"closed"}`); r.Code != 200 {
		t.Fatalf("live change: %d %s", r.Code, r.Raw)
	}
	ctx := context.Background()
	waitfor.Until(t, 10*time.Second, "the room cache read the live change", func() bool {
		c, ok := ts.rooms.RoomSettings("drop")
		return ok && c.Paused
	})
	redisCmd(t, srv.Addr)("FLUSHALL")
	for _, room := range []string{"drop", "calm"} {
		if r, err := ts.q.Retake(ctx, room, nil, nil); err != nil || !r.Settings {
			t.Fatalf("%s: %+v %v", room, r, err)
		}
	}
	if r := v.admin("GET", "/rooms/drop", ""); r.Body["paused"] != true || r.str("failMode") != "closed" || r.num("seats") != 500 {
		t.Fatalf("drop after the loss: %s", r.Raw)
	}
	if r := v.admin("GET", "/rooms/calm", ""); r.num("batch") != 7 {
		t.Fatalf("calm after the loss: %s", r.Raw)
	}
	if r := v.join("calm"); r.str("status") != "waiting" {
		t.Fatalf("join after the loss: %s", r.Raw)
	}
}

// lastState is the last state message p received (heartbeats and other
// messages aside).
func lastState(p *pushClient) pushMsg {
	m := p.messages()
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].Type == "state" {
			return m[i]
		}
	}
	return pushMsg{}
}
