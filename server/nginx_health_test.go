//go:build integration

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/healthrelay"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/settings"
)

// TestNginxReportsHealth runs examples/nginx.conf in a real nginx with
// healthrelay listening for its syslog lines: each request nginx passes to
// the app on a guarded route reaches the room's autopilot, a 503 as a
// failure, under the room the check named whatever the request's headers
// say; unguarded paths are not counted.
func TestNginxReportsHealth(t *testing.T) {
	srv := redistest.StartReal(t)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/fail") {
			w.WriteHeader(503)
		}
		io.WriteString(w, "page "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - {match: '*/checkout/*', room: gw}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, srv, "rueidis", withServiceKeys(t, func(c *config) {
		c.RoutesFile = routes
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
		withAdmin(c)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	for _, room := range []string{"gw", "shop"} {
		if err := ts.q.SetRoomConfig(ctx, room, settings.Room{Autopilot: true}); err != nil {
			t.Fatal(err)
		}
	}
	rep := entry.NewReporter(ts.URL, testServiceKey, &entry.ReporterOptions{Every: 100 * time.Millisecond})
	relay, err := healthrelay.Listen("127.0.0.1:0", rep, testLog())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = rep.Run(ctx) })
	wg.Go(func() {
		if err := relay.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	u, _ := url.Parse(ts.URL)
	appURL, _ := url.Parse(app.URL)
	base := startGatewayProcess(t, "nginx", u.Host, appURL.Host, "127.0.0.1:5140", relay.Addr())
	b := newBrowser(t, base)
	if resp, body := b.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	if res := ts.admitTick(t, "gw"); len(res.Admitted) != 1 {
		t.Fatalf("admitted %v", res.Admitted)
	}
	admittedNow(t, b, "gw")
	orig := base + "/checkout/ok"
	if resp, _ := b.get("GET", "/waitroom/api/v1/rooms/gw/enter?return="+url.QueryEscape(orig)); resp.StatusCode != 302 {
		t.Fatalf("enter: %d", resp.StatusCode)
	}
	v := newVisitor(t, ts.URL)
	waitfor.Until(t, 20*time.Second, "nginx's samples in a decision", func() bool {
		for _, p := range []string{"/checkout/ok", "/checkout/ok", "/checkout/fail", "/about"} {
			resp, _ := b.get("GET", p, "X-Waitroom-Room", "shop", "X-Forwarded-Host", "shop.example")
			if want := map[bool]int{true: 503, false: 200}[strings.HasSuffix(p, "/fail")]; resp.StatusCode != want {
				t.Fatalf("%s: %d, want %d", p, resp.StatusCode, want)
			}
		}
		ap := apStatus(v, "gw")
		return ap != nil && ap["samples"].(float64) >= 6
	})
	ap := apStatus(v, "gw")
	if e := ap["errorRate"].(float64); e < 0.2 || e > 0.5 {
		t.Errorf("gw: error rate %v, want about a third (/about is not guarded)", e)
	}
	if ap := apStatus(v, "shop"); ap != nil && ap["samples"].(float64) != 0 {
		t.Errorf("shop got samples: %v", ap)
	}
	if relay.Skipped() != 0 || rep.Dropped() != 0 {
		t.Errorf("relay skipped %d lines, reporter dropped %d samples", relay.Skipped(), rep.Dropped())
	}
}
