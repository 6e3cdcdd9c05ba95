package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestPresenceSettingsAndStats: the presence settings go through the admin
// API with their bounds, and the stats carry who is there.
func TestPresenceSettingsAndStats(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		v.join("drop")
		r := v.admin("GET", "/rooms/drop", "")
		if r.Code != 200 || r.Body["presence"] != true || r.num("awayAfterSeconds") != 60 || r.num("dropAfterSeconds") != 600 {
			t.Fatalf("defaults: %d %s", r.Code, r.Raw)
		}
		for body, field := range map[string]string{
			`{"awayAfterSeconds":5}`:                         "awayAfterSeconds",
			`{"awayAfterSeconds":60,"dropAfterSeconds":30}`:  "dropAfterSeconds",
			`{"presence":"yes"}`:                             "presence",
			`{"dropAfterSeconds":100000}`:                    "dropAfterSeconds",
			`{"awayAfterSeconds":-1}`:                        "awayAfterSeconds",
			`{"awayAfterSeconds":900}`:                       "awayAfterSeconds",
			`{"awayAfterSeconds":30,"dropAfterSeconds":"x"}`: "dropAfterSeconds",
		} {
			r := v.admin("PUT", "/rooms/drop", body)
			e, _ := r.Body["error"].(map[string]any)
			if r.Code != 400 || r.errCode() != "invalid_field" || e["field"] != field || !strings.Contains(fmt.Sprint(e["message"]), field) {
				t.Fatalf("%s: %d %s, want 400 naming %s", body, r.Code, r.Raw, field)
			}
		}
		r = v.admin("PUT", "/rooms/drop", `{"awayAfterSeconds":30,"dropAfterSeconds":120}`)
		if r.Code != 200 || r.num("awayAfterSeconds") != 30 || r.num("dropAfterSeconds") != 120 || r.Body["presence"] != true {
			t.Fatalf("put: %d %s", r.Code, r.Raw)
		}
		r = v.admin("GET", "/rooms/drop/stats", "")
		p, _ := r.Body["presence"].(map[string]any)
		if r.Code != 200 || p["on"] != true || p["waitingPresent"] != float64(1) || p["away"] != float64(0) ||
			p["madeUpTotal"] != float64(0) || p["madeUpPerMinute"] != float64(0) {
			t.Fatalf("stats: %d %s", r.Code, r.Raw)
		}
		r = v.admin("PUT", "/rooms/drop", `{"presence":false}`)
		if r.Code != 200 || r.Body["presence"] != false || r.num("awayAfterSeconds") != 30 {
			t.Fatalf("presence off: %d %s", r.Code, r.Raw)
		}
		r = v.admin("GET", "/rooms/drop/stats", "")
		if p, _ := r.Body["presence"].(map[string]any); p["on"] != false {
			t.Fatalf("stats with presence off: %s", r.Raw)
		}
	})
}
