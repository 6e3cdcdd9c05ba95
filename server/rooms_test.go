package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

// TestRoomsExistOnlyWhenMade: without -open-rooms a join into a room no
// operator created is 404 room_not_found, on every instance; once an
// operator PUTs it, joins work at once.
func TestRoomsExistOnlyWhenMade(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false }, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		for range 2 { // the second answer comes from the instance's memory
			if r := v.do("POST", "/api/v1/rooms/nobody/join", ""); r.Code != 404 || r.errCode() != "room_not_found" {
				t.Fatalf("join unknown room: %d %s", r.Code, r.Raw)
			}
		}
		if r := v.admin("PUT", "/rooms/made", `{}`); r.Code != 200 {
			t.Fatalf("create: %d %s", r.Code, r.Raw)
		}
		if r := v.join("made"); r.Code != 200 || r.str("status") != "waiting" {
			t.Fatalf("join made room: %d %s", r.Code, r.Raw)
		}
		// Another instance on the same Redis knows it too.
		if ts.srv != nil {
			other := startServer(t, ts.srv, "rueidis", func(c *config) { withAdmin(c); c.OpenRooms = false })
			w := newVisitor(t, other.URL)
			if r := w.join("made"); r.Code != 200 {
				t.Fatalf("join on another instance: %d %s", r.Code, r.Raw)
			}
			if r := w.do("POST", "/api/v1/rooms/nobody/join", ""); r.Code != 404 {
				t.Fatalf("unknown room on another instance: %d %s", r.Code, r.Raw)
			}
		}
	})
}

// TestOutageKeepsRulesAndRefusesReplays: while Redis is down, a room's
// settings are the ones it had however many rooms exist (fail-closed stays
// closed), a token used before the outage stays used, a token let through
// during the outage is let through once, and a token without its visitor's
// credential is refused.
func TestOutageKeepsRulesAndRefusesReplays(t *testing.T) {
	srv := redistest.StartReal(t)
	ts := startServer(t, srv, "rueidis", func(c *config) { withAdmin(c); c.Capacity.Batch = 40 })
	ctx := context.Background()
	admin := newVisitor(t, ts.URL)
	if r := admin.admin("PUT", "/rooms/shut", `{"failMode":"closed"}`); r.Code != 200 {
		t.Fatalf("put: %d %s", r.Code, r.Raw)
	}
	for i := range 1200 { // more rooms than a refresh used to read
		if err := ts.q.SetRoomConfig(ctx, fmt.Sprintf("room-%04d", i), settings.Room{}); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := newVisitor(t, ts.URL), newVisitor(t, ts.URL), newVisitor(t, ts.URL)
	a.join("open")
	b.join("open")
	c.join("shut")
	ta := ts.admitUntil(t, a, "open")
	tb := ts.admitUntil(t, b, "open")
	tc := ts.admitUntil(t, c, "shut")
	var last time.Time
	for _, st := range []reply{ta, tb, tc} {
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		if nb.After(last) {
			last = nb
		}
	}
	waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(last) })
	order := func(v *visitor, room string, tok reply, withCred bool) reply {
		hdr := []string{"Authorization", "Bearer " + tok.str("token")}
		if !withCred {
			// A fresh client: no cookie, no header.
			v = newVisitor(t, ts.URL)
		}
		return v.do("POST", "/api/v1/rooms/"+room+"/orders", "", hdr...)
	}
	if r := order(a, "open", ta, true); r.Code != 201 {
		t.Fatalf("order before the outage: %d %s", r.Code, r.Raw)
	}
	if err := ts.rooms.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	ts.waitReadyz(t, 10*time.Second, 503)
	if r := order(a, "open", ta, true); r.Code != 401 || r.errCode() != "token_used" {
		t.Fatalf("token used before the outage: %d %s", r.Code, r.Raw)
	}
	if r := order(b, "open", tb, false); r.Code != 401 {
		t.Fatalf("token without its credential: %d %s", r.Code, r.Raw)
	}
	if r := order(b, "open", tb, true); r.Code != 201 || r.Header.Get("X-Waitroom-Fail-Open") != "1" {
		t.Fatalf("fail-open order: %d %s", r.Code, r.Raw)
	}
	for range 3 {
		if r := order(b, "open", tb, true); r.Code != 401 || r.errCode() != "token_used" {
			t.Fatalf("replay during the outage: %d %s", r.Code, r.Raw)
		}
	}
	if r := order(c, "shut", tc, true); r.Code != 503 || r.errCode() != "unavailable" {
		t.Fatalf("fail-closed room among %d: %d %s", 1200, r.Code, r.Raw)
	}
	srv.Restart(t)
}

// TestAdminUpdatesNotLost: concurrent pause and PUT of another field both
// keep their change.
func TestAdminUpdatesNotLost(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		admin := newVisitor(t, ts.URL)
		const pairs = 40
		for i := range pairs {
			room := fmt.Sprintf("race-%02d", i)
			var wg sync.WaitGroup
			wg.Go(func() {
				if r := admin.admin("POST", "/rooms/"+room+"/pause", ""); r.Code != 200 {
					t.Errorf("pause: %d %s", r.Code, r.Raw)
				}
			})
			wg.Go(func() {
				if r := admin.admin("PUT", "/rooms/"+room, `{"seats":100}`); r.Code != 200 {
					t.Errorf("put: %d %s", r.Code, r.Raw)
				}
			})
			wg.Wait()
			cfg, err := ts.q.RoomConfig(context.Background(), room)
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.Paused || cfg.Seats != 100 {
				t.Fatalf("pair %d: paused=%v seats=%d, want both changes", i, cfg.Paused, cfg.Seats)
			}
		}
	})
}

// TestJoinLimitPerRoom: a room's own joinRate and joinBurst apply to it,
// and other rooms keep the deployment's limit.
func TestJoinLimitPerRoom(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withAdmin)
	admin := newVisitor(t, ts.URL)
	if r := admin.admin("PUT", "/rooms/tight", `{"joinRate":0.5,"joinBurst":2}`); r.Code != 200 || r.num("joinBurst") != 2 {
		t.Fatalf("put: %d %s", r.Code, r.Raw)
	}
	if r := admin.admin("PUT", "/rooms/tight", `{"joinBurst":-1}`); r.Code != 400 || r.errCode() != "invalid_field" {
		t.Fatalf("bad burst: %d %s", r.Code, r.Raw)
	}
	if err := ts.rooms.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := func(room string) reply { return newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/"+room+"/join", "") }
	for i := range 2 {
		if r := fresh("tight"); r.Code != 200 {
			t.Fatalf("join %d: %d %s", i, r.Code, r.Raw)
		}
	}
	if r := fresh("tight"); r.Code != 429 || r.errCode() != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third join: %d %s", r.Code, r.Raw)
	}
	for i := range 10 {
		if r := fresh("roomy"); r.Code != 200 {
			t.Fatalf("other room, join %d: %d %s", i, r.Code, r.Raw)
		}
	}
}

// TestMetricsNameOnlyConfiguredRooms: rooms visitors made (open rooms) add
// no metric series of their own; configured rooms do.
func TestMetricsNameOnlyConfiguredRooms(t *testing.T) {
	ts := startServerOpts(t, nil, "rueidis", &serverOptions{}, func(c *config) { withAdmin(c); c.PublicMetrics = true })
	admin := newVisitor(t, ts.URL)
	if r := admin.admin("PUT", "/rooms/shop", `{}`); r.Code != 200 {
		t.Fatalf("put: %d %s", r.Code, r.Raw)
	}
	if err := ts.rooms.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	rooms := []string{"shop"}
	for i := range 30 {
		rooms = append(rooms, fmt.Sprintf("made-up-%d", i))
	}
	for _, room := range rooms {
		newVisitor(t, ts.URL).join(room)
	}
	var body string
	waitfor.Until(t, 10*time.Second, "admissions counted", func() bool {
		resp, err := noKeepAlive.Get(ts.URL + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return strings.Contains(body, `waitroom_admissions_total{room="other"} 30`) && strings.Contains(body, `waitroom_admissions_total{room="shop"} 1`)
	})
	if strings.Contains(body, "made-up-") {
		t.Fatal("a room nobody configured has metric series")
	}
	for _, want := range []string{`waitroom_admissions_total{room="shop"}`, `waitroom_admissions_total{room="other"}`, `waitroom_waiting{room="shop"}`} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %s in /metrics", want)
		}
	}
}
