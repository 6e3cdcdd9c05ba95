package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/settings"
)

func TestGatewayBusyNginx(t *testing.T)   { testRealGatewayBusy(t, "nginx") }
func TestGatewayBusyCaddy(t *testing.T)   { testRealGatewayBusy(t, "caddy") }
func TestGatewayBusyTraefik(t *testing.T) { testRealGatewayBusy(t, "traefik") }

// testRealGatewayBusy runs a room with activation busy behind the
// example recipe of kind: under the threshold a fresh browser and a fresh
// API client reach the app in one round trip (the browser with its new
// cookies, which its next request passes with), at the threshold the next
// fresh browser goes to the waiting page, and while it waits nobody passes
// straight through, even with a slot free.
func testRealGatewayBusy(t *testing.T, kind string) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - {match: '*/checkout/*', room: gw}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, srv, "rueidis", func(c *config) {
		c.RoutesFile = routes
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
		withAdmin(c)
	})
	setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 2, Activation: settings.ActivationBusy})
	u, _ := url.Parse(ts.URL)
	appURL, _ := url.Parse(up.URL)
	base := startGatewayProcess(t, kind, u.Host, appURL.Host)

	a := newBrowser(t, base)
	resp, body := a.get("GET", "/checkout/page")
	if resp.StatusCode != 200 || body != "page /checkout/page" {
		t.Fatalf("fresh browser under the threshold: %d %q, want the app's page in one round trip", resp.StatusCode, body)
	}
	aID := strings.SplitN(cookieValue(a, visitorCookie), ".", 2)[0]
	if aID == "" || cookieValue(a, "wr_session_gw") == "" {
		t.Fatalf("cookies after the pass: visitor %q session %q", cookieValue(a, visitorCookie), cookieValue(a, "wr_session_gw"))
	}
	if v := up.header("/checkout/page", "X-Waitroom-Visitor"); v != aID {
		t.Fatalf("the app saw visitor %q, want %q", v, aID)
	}
	if resp, body := a.get("GET", "/checkout/cart"); resp.StatusCode != 200 || body != "page /checkout/cart" {
		t.Fatalf("its next request: %d %q", resp.StatusCode, body)
	}

	// A fresh API client passes too; where the gateway hands on the
	// check's headers it is given the session to send back.
	resp = apiGet(t, base+"/checkout/api")
	if resp.StatusCode != 200 {
		t.Fatalf("fresh API client: %d", resp.StatusCode)
	}
	if sess, cred := resp.Header.Get("X-Waitroom-Session"), resp.Header.Get("X-Visitor"); kind != "traefik" {
		if sess == "" || cred == "" {
			t.Fatalf("API client: session %q visitor %q in headers", sess, cred)
		}
		if resp := apiGet(t, base+"/checkout/api2", "X-Waitroom-Session", sess, "X-Visitor", cred); resp.StatusCode != 200 {
			t.Fatalf("API client with its headers: %d", resp.StatusCode)
		}
	}

	// Both slots held: the next fresh browser queues.
	b := newBrowser(t, base)
	resp, _ = b.get("GET", "/checkout/page")
	if resp.StatusCode != 302 || !strings.Contains(resp.Header.Get("Location"), "/waitroom/?room=gw") {
		t.Fatalf("at the threshold: %d %q, want the waiting page", resp.StatusCode, resp.Header.Get("Location"))
	}
	st, err := ts.q.Stats(context.Background(), "gw")
	if err != nil || st.ActiveTokens != 2 {
		t.Fatalf("%d live tokens (%v), want 2", st.ActiveTokens, err)
	}

	// b waits; a's session ends, so a slot is free, but nobody passes
	// straight through while b waits.
	if resp, body := b.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 || !strings.Contains(body, `"status":"waiting"`) {
		t.Fatalf("join through the gateway: %d %s", resp.StatusCode, body)
	}
	if r := newVisitor(t, ts.URL).do("DELETE", "/api/v1/admin/rooms/gw/sessions/"+aID, "", "Authorization", "Bearer "+testAdminKey); r.Code != 204 {
		t.Fatalf("end a's session: %d %s", r.Code, r.Raw)
	}
	if st, err := ts.q.Stats(context.Background(), "gw"); err != nil || st.ActiveTokens != 1 || st.Waiting != 1 {
		t.Fatalf("after a's end: %d live tokens, %d waiting (%v), want 1 and 1", st.ActiveTokens, st.Waiting, err)
	}
	c := newBrowser(t, base)
	if resp, _ := c.get("GET", "/checkout/page"); resp.StatusCode != 302 {
		t.Fatalf("a fresh browser with a slot free while b waits: %d, want 302", resp.StatusCode)
	}
	if resp := apiGet(t, base+"/checkout/api"); resp.StatusCode != 429 {
		t.Fatalf("a fresh API client with a slot free while b waits: %d, want 429", resp.StatusCode)
	}
}
