package main

import (
	"context"
	"encoding/json"
	"io"
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
