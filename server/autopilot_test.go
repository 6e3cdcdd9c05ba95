//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
)

// healthPost posts body to room's health endpoint with key (none when
// empty).
func healthPost(v *visitor, room, key, body string) reply {
	v.tb.Helper()
	hdr := []string{"Content-Type", "application/json"}
	if key != "" {
		hdr = append(hdr, "Authorization", "Bearer "+key)
	}
	return v.do("POST", "/api/v1/rooms/"+room+"/health", body, hdr...)
}

// samples is a health report of n samples of ms milliseconds, ok or not.
func samples(n int, ms float64, ok bool) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf(`{"ms":%v,"ok":%v}`, ms, ok)
	}
	return `{"samples":[` + strings.Join(s, ",") + `]}`
}

// apStatus is the autopilot field of room's stats (nil: none).
func apStatus(v *visitor, room string) map[string]any {
	v.tb.Helper()
	return apStatusAt(v, "", room)
}

// apStatusAt is apStatus with the API under prefix (the gateway's page).
func apStatusAt(v *visitor, prefix, room string) map[string]any {
	v.tb.Helper()
	r := v.do("GET", prefix+"/api/v1/admin/rooms/"+room+"/stats", "", "Authorization", "Bearer "+testAdminKey)
	if r.Code != 200 {
		v.tb.Fatalf("stats: %d %s", r.Code, r.Raw)
	}
	ap, _ := r.Body["autopilot"].(map[string]any)
	return ap
}

// TestHealthEndpoint: a health report needs a service key (an admin key
// is refused), bad reports get a clear 400 with a stable code, a report
// into a room nobody made is 404; the samples of good reports show in
// the room's stats once its autopilot decided, and a room without
// autopilot shows none.
func TestHealthEndpoint(t *testing.T) {
	eachServer(t, withServiceKeys(t, func(c *config) { withAdmin(c); c.OpenRooms = false }), func(t *testing.T, ts *testServer) {
		ctx := context.Background()
		if err := ts.q.SetRoomConfig(ctx, "drop", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		v := newVisitor(t, ts.URL)
		good := samples(3, 40, true)
		for _, tc := range []struct {
			key, room, body string
			code            int
			err             string
		}{
			{"", "drop", good, 401, "invalid_service_key"},
			{testAdminKey, "drop", good, 401, "invalid_service_key"},
			{"wrong-key-wrong-key-wrong", "drop", good, 401, "invalid_service_key"},
			{testServiceKey, "drop", `[1]`, 400, "invalid_json"},
			{testServiceKey, "drop", `{"samples":[]}`, 400, "invalid_samples"},
			{testServiceKey, "drop", `{}`, 400, "invalid_samples"},
			{testServiceKey, "drop", `{"samples":[{"ms":-1,"ok":true}]}`, 400, "invalid_samples"},
			{testServiceKey, "drop", `{"samples":[{"ms":10}]}`, 400, "invalid_samples"},
			{testServiceKey, "drop", `{"samples":[{"ok":true}]}`, 400, "invalid_samples"},
			{testServiceKey, "drop", `{"samples":[{"ms":"10","ok":true}]}`, 400, "invalid_json"},
			{testServiceKey, "drop", samples(1001, 10, true), 400, "invalid_samples"},
			{testServiceKey, "nowhere", good, 404, "room_not_found"},
		} {
			if r := healthPost(v, tc.room, tc.key, tc.body); r.Code != tc.code || r.errCode() != tc.err {
				t.Errorf("key %q, room %s, body %.40s: %d %s, want %d %s", tc.key, tc.room, tc.body, r.Code, r.Raw, tc.code, tc.err)
			}
		}
		if r := healthPost(v, "drop", testServiceKey, samples(1000, 40, true)); r.Code != 200 || r.num("accepted") != 1000 {
			t.Fatalf("a full report: %d %s", r.Code, r.Raw)
		}
		if ap := apStatus(v, "drop"); ap != nil {
			t.Fatalf("autopilot off, stats show %v", ap)
		}
		if r := v.admin("PUT", "/rooms/drop", `{"autopilot":true}`); r.Code != 200 {
			t.Fatalf("autopilot on: %d %s", r.Code, r.Raw)
		}
		// Failures past maxErrorRate: the rate is cut, with its reason in
		// the stats and the audit trail, and the room's batch follows.
		var ap map[string]any
		waitfor.Until(t, 10*time.Second, "a cut on errors", func() bool {
			if r := healthPost(v, "drop", testServiceKey, samples(50, 40, false)); r.Code != 200 {
				t.Fatalf("report: %d %s", r.Code, r.Raw)
			}
			ap = apStatus(v, "drop")
			return ap != nil && ap["overloaded"] == true && ap["samples"].(float64) > 0
		})
		// The reason names the cause (the window's error rate, which the
		// stats show too: the good samples sent before may still be in the
		// window), the rate before and the rate after, which is the rate
		// the stats show.
		reason, _ := ap["reason"].(string)
		m := regexp.MustCompile(`^errors ([0-9.]+) % over 1 % limit: 140 → ([0-9.]+)/s`).FindStringSubmatch(reason)
		if m == nil || ap["on"] != true {
			t.Errorf("status %v", ap)
		} else {
			pct, _ := strconv.ParseFloat(m[1], 64)
			after, _ := strconv.ParseFloat(m[2], 64)
			if er := ap["errorRate"].(float64); er <= 0.01 || math.Abs(pct-100*er) > 0.1 {
				t.Errorf("reason %q against the stats' error rate %v", reason, er)
			}
			if after >= 140 || after != ap["rate"].(float64) {
				t.Errorf("reason %q: the rate after is not the stats' rate %v, under 140", reason, ap["rate"])
			}
		}
		if _, err := time.Parse(time.RFC3339, ap["changedAt"].(string)); err != nil {
			t.Errorf("changedAt %v", ap["changedAt"])
		}
		if o, r := gaugeValue(t, ts, "waitroom_autopilot_overloaded"), gaugeValue(t, ts, "waitroom_autopilot_rate"); o != 1 || r <= 0 || r >= 140 {
			t.Errorf("series: overloaded %v, rate %v; want 1 and under 140", o, r)
		}
		waitfor.Until(t, 5*time.Second, "the batch cut", func() bool {
			return v.admin("GET", "/rooms/drop", "").num("batch") < 14
		})
		r := v.admin("GET", "/rooms/drop/audit", "")
		var trail struct {
			Entries []struct {
				Who, Action, Reason string
			}
		}
		if err := json.Unmarshal([]byte(r.Raw), &trail); err != nil || len(trail.Entries) == 0 {
			t.Fatalf("audit: %d %s", r.Code, r.Raw)
		}
		// The cut the stats showed is in the trail with its reason (a
		// later decision may have come after it).
		if e := trail.Entries[0]; e.Who != "autopilot" || e.Action != "autopilot" {
			t.Errorf("newest audit entry %+v, want the autopilot's", e)
		}
		if !slices.ContainsFunc(trail.Entries, func(e struct{ Who, Action, Reason string }) bool {
			return e.Who == "autopilot" && e.Reason == reason
		}) {
			t.Errorf("no audit entry with the reason %q: %+v", reason, trail.Entries)
		}
		// Manual control: off, the room keeps the rate the autopilot set
		// last (its newest entry in the trail), and it writes no more.
		if r := v.admin("PUT", "/rooms/drop", `{"autopilot":false}`); r.Code != 200 {
			t.Fatalf("autopilot off: %d %s", r.Code, r.Raw)
		}
		var after struct {
			Entries []struct {
				Who     string
				Changes []struct {
					Field string
					To    any
				}
			}
		}
		if err := json.Unmarshal([]byte(v.admin("GET", "/rooms/drop/audit", "").Raw), &after); err != nil || len(after.Entries) < 2 {
			t.Fatalf("audit: %v", err)
		}
		if e := after.Entries[0]; e.Who != "admin" || len(e.Changes) != 1 || e.Changes[0].Field != "autopilot" {
			t.Errorf("newest entry %+v, want the change to manual control", e)
		}
		for _, e := range after.Entries {
			if e.Who == "autopilot" {
				if got := v.admin("GET", "/rooms/drop", "").num("batch"); e.Changes[0].Field != "batch" || int64(e.Changes[0].To.(float64)) != got {
					t.Errorf("batch %d after autopilot off, want the last set, %+v", got, e)
				}
				break
			}
		}
		if ap := apStatus(v, "drop"); ap != nil {
			t.Errorf("autopilot off, stats show %v", ap)
		}
		if n := directionCount(t, ts, "waitroom_autopilot_changes_total", "down"); n < 1 {
			t.Errorf("changes down %v, want at least 1", n)
		}
		waitfor.Until(t, 5*time.Second, "the room's gauges gone", func() bool {
			return gaugeValue(t, ts, "waitroom_autopilot_rate") == 0
		})
	})
}

// directionCount is the sum of the series of counter name whose direction
// label is dir.
func directionCount(tb testing.TB, ts *testServer, name, dir string) float64 {
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
			for _, l := range m.GetLabel() {
				if l.GetName() == "direction" && l.GetValue() == dir {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestProxyRecordsHealth: the built-in proxy records each request it
// passes to the app on a guarded route, under the route's room whatever
// the request's headers say; a 5xx is a failure. A room without autopilot
// gets nothing written.
func TestProxyRecordsHealth(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(503)
		}
		io.WriteString(w, "page "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	eachServer(t, func(c *config) {
		c.Upstream = app.URL
		c.Routes = []string{"{match: '*/checkout/*', room: gw}", "{match: '*/plain/*', room: plain}"}
		withAdmin(c)
	}, func(t *testing.T, ts *testServer) {
		ctx := context.Background()
		for _, room := range []string{"gw", "shop"} {
			if err := ts.q.SetRoomConfig(ctx, room, settings.Room{Autopilot: true}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ts.q.SetRoomConfig(ctx, "plain", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, ts.URL)
		gatewayAdmit(t, ts, b, "gw", ts.URL+"/checkout/ok")
		gatewayAdmit(t, ts, b, "plain", ts.URL+"/plain/ok")
		v := newVisitor(t, ts.URL)
		page := strings.TrimSuffix(ts.gw.Page(), "/")
		waitfor.Until(t, 10*time.Second, "the proxy's samples in a decision", func() bool {
			for _, p := range []string{"/checkout/ok", "/checkout/ok", "/checkout/fail", "/plain/ok"} {
				// Headers a client might send to steer the samples elsewhere.
				b.get("GET", p, "X-Waitroom-Room", "shop", "X-Forwarded-Host", "shop.example", "Host", "shop.example")
			}
			ap := apStatusAt(v, page, "gw")
			return ap != nil && ap["samples"].(float64) >= 3
		})
		ap := apStatusAt(v, page, "gw")
		if e := ap["errorRate"].(float64); e < 0.2 || e > 0.5 {
			t.Errorf("gw: error rate %v, want about a third", e)
		}
		if ap := apStatusAt(v, page, "shop"); ap != nil && ap["samples"].(float64) != 0 {
			t.Errorf("shop got samples: %v", ap)
		}
		if keys, err := ts.redis.Do(ctx, "KEYS", "wr:{plain}:ap*"); err != nil || len(keys.([]any)) != 0 {
			t.Errorf("room plain, autopilot off: keys %v, %v; want none", keys, err)
		}
	})
}

// TestETAFollowsAutopilot: before any admission is measured, a waiting
// visitor's ETA comes from the room's planned rate, and that follows the
// batch the autopilot writes.
func TestETAFollowsAutopilot(t *testing.T) {
	eachRedis(t, func(t *testing.T, srv *redistest.Server, client string) {
		ts := startServerOpts(t, srv, client, manualAdmission(), withServiceKeys(t, withAdmin))
		ctx := context.Background()
		if err := ts.q.SetRoomConfig(ctx, "drop", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		const n = 1000
		for i := range n {
			if _, err := ts.q.Join(ctx, "drop", fmt.Sprintf("v%04d", i)); err != nil {
				t.Fatal(err)
			}
		}
		eta := func() int64 {
			st, err := ts.q.Status(ctx, "drop", fmt.Sprintf("v%04d", n-1))
			if err != nil {
				t.Fatal(err)
			}
			return st.ETASeconds
		}
		if got := eta(); got != 8 { // ceil(1000 / 140)
			t.Fatalf("ETA %d s at 140/s, want 8", got)
		}
		v := newVisitor(t, ts.URL)
		if r := v.admin("PUT", "/rooms/drop", `{"autopilot":true}`); r.Code != 200 {
			t.Fatalf("autopilot on: %d %s", r.Code, r.Raw)
		}
		var batch int64
		waitfor.Until(t, 15*time.Second, "the ETA at the autopilot's rate", func() bool {
			if r := healthPost(v, "drop", testServiceKey, samples(20, 40, false)); r.Code != 200 {
				t.Fatalf("report: %d %s", r.Code, r.Raw)
			}
			batch = v.admin("GET", "/rooms/drop", "").num("batch")
			return batch < 14 && eta() == int64(math.Ceil(n/(float64(batch)*10)))
		})
	})
}

// TestAutopilotWebhooks: a cut on errors sends origin.overloaded, the
// first healthy decision after it origin.recovered, each once; the
// autopilot's changes of the rate (up to one a second) are no
// settings.changed.
func TestAutopilotWebhooks(t *testing.T) {
	eachRedis(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newHookReceiver(t, webhook.NewSecret())
		file := filepath.Join(t.TempDir(), "webhooks.yaml")
		if err := os.WriteFile(file, []byte("webhooks:\n  - url: "+rc.URL+"/in\n    secret: "+rc.secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ts := startServerOpts(t, srv, client, fastHooks(), withServiceKeys(t, func(c *config) {
			withAdmin(c)
			c.Webhooks = file
		}))
		v := newVisitor(t, ts.URL)
		if r := v.admin("PUT", "/rooms/drop", `{"autopilot":true}`); r.Code != 200 {
			t.Fatalf("autopilot on: %d %s", r.Code, r.Raw)
		}
		count := func(typ, who string) int {
			got, _, _ := rc.events()
			n := 0
			for _, e := range got {
				if e.Type == typ && (who == "" || e.Data.Audit.Who == who) {
					n++
				}
			}
			return n
		}
		waitfor.Until(t, 10*time.Second, "origin.overloaded", func() bool {
			healthPost(v, "drop", testServiceKey, samples(20, 40, false))
			return count(webhook.OriginOverloaded, "") == 1
		})
		waitfor.Until(t, 10*time.Second, "origin.recovered", func() bool {
			healthPost(v, "drop", testServiceKey, samples(20, 40, true))
			return count(webhook.OriginRecovered, "") == 1
		})
		outboxDrained(t, ts)
		if n, m := count(webhook.OriginOverloaded, ""), count(webhook.OriginRecovered, ""); n != 1 || m != 1 {
			t.Errorf("origin.overloaded %d, origin.recovered %d, want 1 each", n, m)
		}
		if n := count(webhook.SettingsChanged, "autopilot"); n != 0 {
			t.Errorf("%d settings.changed by the autopilot, want none", n)
		}
	})
}
