package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestPausedRoomMetric: waitroom_room_paused says which configured room
// is paused, as of the room cache's last refresh.
func TestPausedRoomMetric(t *testing.T) {
	ts := startServerOpts(t, nil, "rueidis", &serverOptions{}, func(c *config) { withAdmin(c); c.PublicMetrics = true })
	admin := newVisitor(t, ts.URL)
	for _, room := range []string{"shop", "sale"} {
		if r := admin.admin("PUT", "/rooms/"+room, `{}`); r.Code != 200 {
			t.Fatalf("put %s: %d %s", room, r.Code, r.Raw)
		}
	}
	if r := admin.admin("POST", "/rooms/sale/pause", ""); r.Code != 200 {
		t.Fatalf("pause: %d %s", r.Code, r.Raw)
	}
	if err := ts.rooms.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := noKeepAlive.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`waitroom_room_paused{room="sale"} 1`, `waitroom_room_paused{room="shop"} 0`} {
		if !strings.Contains(string(b), want+"\n") {
			t.Errorf("no %s in /metrics", want)
		}
	}
}
