package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
	"github.com/waitroom/waitroom/wire"
)

// TestActivationNoticed: two instances on one Redis watch a room with
// activation busy. The admin stats, the metrics and the webhooks say when
// it starts queueing (someone waits) and when it lets visitors straight
// through again; each change reaches the endpoint once.
func TestActivationNoticed(t *testing.T) {
	srv := redistest.StartReal(t)
	rc := newHookReceiver(t, webhook.NewSecret())
	file := filepath.Join(t.TempDir(), "webhooks.yaml")
	text := "- url: " + rc.URL + "/in\n  secret: " + rc.secret + "\n  events: [room.queueing, room.passing]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var insts []*testServer
	for range 2 {
		insts = append(insts, startServerOpts(t, srv, "rueidis", fastHooks(), func(c *config) {
			withAdmin(c)
			c.Webhooks = file
		}))
	}
	first := insts[0]
	if err := first.q.SetRoomConfig(context.Background(), "shop", settings.Room{Activation: settings.ActivationBusy}); err != nil {
		t.Fatal(err)
	}
	admin := newVisitor(t, first.URL)
	state := func() (string, string) {
		r := admin.do("GET", "/api/v1/admin/rooms/shop/stats", "", "Authorization", "Bearer "+testAdminKey)
		var st struct {
			Activation struct{ Mode, State, Since string }
		}
		if r.Code != 200 || json.Unmarshal([]byte(r.Raw), &st) != nil || st.Activation.Mode != "busy" {
			t.Fatalf("stats: %d %s", r.Code, r.Raw)
		}
		return st.Activation.State, st.Activation.Since
	}
	metric := func(ts *testServer) string {
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+testAdminKey)
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, `waitroom_room_queueing{room="shop"} `) {
				return strings.TrimPrefix(line, `waitroom_room_queueing{room="shop"} `)
			}
		}
		return ""
	}
	waitfor.Until(t, 10*time.Second, "the room noticed passing", func() bool {
		s, _ := state()
		return s == "passing" && metric(first) == "0" && metric(insts[1]) == "0"
	})
	v := newVisitor(t, first.URL)
	v.join("shop")
	waitfor.Until(t, 10*time.Second, "room.queueing", func() bool {
		got, _, _ := rc.events()
		s, _ := state()
		return len(got) == 1 && s == "queueing" && metric(first) == "1" && metric(insts[1]) == "1"
	})
	if r := v.do("DELETE", "/api/v1/rooms/shop/queue", ""); r.Code != 204 {
		t.Fatalf("leave: %d %s", r.Code, r.Raw)
	}
	waitfor.Until(t, 10*time.Second, "room.passing", func() bool {
		got, _, _ := rc.events()
		return len(got) == 2
	})
	outboxDrained(t, first)
	got, ids, bad := rc.events()
	if bad != 0 || len(got) != 2 || len(ids) != 2 || got[0].Type != "room.queueing" || got[1].Type != "room.passing" || got[0].Data.Room != "shop" {
		t.Fatalf("got %+v, %d refused", got, bad)
	}
	if s, since := state(); s != "passing" || since == "" {
		t.Fatalf("stats after: %q since %q", s, since)
	}
}

// TestActivationInVisitorStates: in a room with activation busy, what a
// visitor is told (join, status poll, WebSocket, on any instance) says
// whether the room is queueing and since when, its other fields as before;
// the first visitor to wait is told queueing at once, before any
// housekeeping has noticed, and after the last one leaves the room says
// passing again. A room with activation always says nothing of it.
func TestActivationInVisitorStates(t *testing.T) {
	srv := redistest.StartReal(t)
	a := startServer(t, srv, "rueidis", nil)
	b := startServer(t, srv, "rueidis", nil)
	ctx := context.Background()
	// Paused, so a join waits: the room queues as long as it holds anyone.
	if err := a.q.SetRoomConfig(ctx, "shop", settings.Room{Activation: settings.ActivationBusy, Paused: true}); err != nil {
		t.Fatal(err)
	}
	if err := a.q.SetRoomConfig(ctx, "plain", settings.Room{Paused: true}); err != nil {
		t.Fatal(err)
	}
	var passing wire.Activation
	waitfor.Until(t, 10*time.Second, "both instances noted the room passing", func() bool {
		pa, pb := a.acts.of(ctx, "shop", false), b.acts.of(ctx, "shop", false)
		passing = pa
		return !pa.IsZero() && !pa.Queueing && pa == pb
	})
	activation := func(r reply) (state, since string) {
		t.Helper()
		m, ok := r.Body["activation"].(map[string]any)
		if !ok {
			return "", ""
		}
		state, _ = m["state"].(string)
		since, _ = m["since"].(string)
		return state, since
	}

	v := newVisitor(t, a.URL)
	r := v.join("shop")
	state, since := activation(r)
	if r.str("status") != "waiting" || r.num("position") != 1 || r.Body["paused"] != true || state != "queueing" {
		t.Fatalf("join: %s", r.Raw)
	}
	at, err := time.Parse(time.RFC3339Nano, since)
	if err != nil || at.Before(passing.Since) {
		t.Fatalf("queueing since %q, passing since %s", since, passing.Since)
	}
	// The series say the same at once: the join noted the change.
	if q, sn := gaugeValue(t, a, "waitroom_room_queueing"), gaugeValue(t, a, "waitroom_room_queueing_since_timestamp_seconds"); q != 1 || math.Abs(sn-float64(at.UnixMilli())/1e3) > 1e-3 {
		t.Fatalf("series: queueing %v since %v, want 1 since %s", q, sn, since)
	}
	if r := v.status("shop"); r.str("status") != "waiting" {
		t.Fatalf("status: %s", r.Raw)
	} else if s, sn := activation(r); s != "queueing" || sn != since {
		t.Fatalf("status on the joining instance: %s", r.Raw)
	}
	other := newVisitor(t, b.URL)
	if r := other.do("GET", "/api/v1/rooms/shop/status", "", "X-Visitor", v.cred); r.Code != 200 || r.num("position") != 1 {
		t.Fatalf("status on the other instance: %d %s", r.Code, r.Raw)
	} else if s, sn := activation(r); s != "queueing" || sn != since {
		t.Fatalf("status on the other instance: %s", r.Raw)
	}
	ws := dialWS(t, b.URL, "shop", v.cred)
	waitfor.Until(t, 5*time.Second, "the pushed state", func() bool {
		for _, m := range ws.messages() {
			var st struct {
				Status     string
				Position   int64
				Activation struct{ State, Since string }
			}
			if json.Unmarshal([]byte(m.raw), &st) == nil && st.Status == "waiting" && st.Position == 1 {
				if st.Activation.State != "queueing" || st.Activation.Since != since {
					t.Fatalf("pushed: %s", m.raw)
				}
				return true
			}
		}
		return false
	})
	if r := newVisitor(t, a.URL).join("plain"); r.Body["activation"] != nil || r.str("status") != "waiting" {
		t.Fatalf("a room with activation always: %s", r.Raw)
	}

	if r := v.do("DELETE", "/api/v1/rooms/shop/queue", ""); r.Code != 204 {
		t.Fatalf("leave: %d %s", r.Code, r.Raw)
	}
	waitfor.Until(t, 10*time.Second, "passing again", func() bool {
		r := v.status("shop")
		s, sn := activation(r)
		again, err := time.Parse(time.RFC3339Nano, sn)
		return r.str("status") == "not_in_queue" && s == "passing" && err == nil && !again.Before(at)
	})
}

// gaugeValue sums every series of the gauge name on ts.
func gaugeValue(tb testing.TB, ts *testServer, name string) float64 {
	tb.Helper()
	mfs, err := ts.metrics.Registry().Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestReclaimedPollTold: a poll that finds its visitor lost in Redis and
// gets its place back from its credential's ticket (the explicit
// write-back after the read) is told what any poll is told: in a room
// with activation busy, whether the room is queueing.
func TestReclaimedPollTold(t *testing.T) {
	srv := redistest.StartReal(t)
	a := startServer(t, srv, "rueidis", nil)
	ctx := context.Background()
	if err := a.q.SetRoomConfig(ctx, "shop", settings.Room{Activation: settings.ActivationBusy, Paused: true}); err != nil {
		t.Fatal(err)
	}
	v := newVisitor(t, a.URL)
	if r := v.join("shop"); r.str("status") != "waiting" {
		t.Fatalf("join: %s", r.Raw)
	}
	if _, err := a.redis.Do(ctx, "FLUSHALL"); err != nil {
		t.Fatal(err)
	}
	r := v.status("shop")
	m, _ := r.Body["activation"].(map[string]any)
	if r.str("status") != "waiting" || r.num("position") != 1 || m["state"] != "queueing" {
		t.Fatalf("poll after the loss: %s", r.Raw)
	}
}
