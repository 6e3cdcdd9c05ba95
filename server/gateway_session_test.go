package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/settings"
)

// Gateway sessions and the built-in proxy's tunnel, tried the way an
// attacker or a busy visitor would.

// TestGatewayUpgradeRefused: an upgrade request the upstream answers with
// a plain 200 (not 101) is relayed as a response, and the connection goes
// back to request handling: the next requests on it, to a guarded path,
// are checked (302 for a browser, 429 for an API client) and never reach
// the app, which never sees the visitor's own X-Waitroom-Visitor.
func TestGatewayUpgradeRefused(t *testing.T) {
	up := newUpstreamApp(t)
	ts := startServer(t, nil, "rueidis", func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/checkout/*', room: gw}"}
	})
	addr := strings.TrimPrefix(ts.URL, "http://")
	upgrade := "GET /about HTTP/1.1\r\nHost: " + addr + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Waitroom-Visitor: alice\r\n\r\n"
	guarded := func(accept, more string) string {
		return "GET /checkout/pay HTTP/1.1\r\nHost: " + addr + "\r\nAccept: " + accept + "\r\nX-Waitroom-Visitor: alice\r\n" + more + "\r\n"
	}
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		return c, bufio.NewReader(c)
	}
	send := func(t *testing.T, c net.Conn, s string) {
		t.Helper()
		if _, err := io.WriteString(c, s); err != nil {
			t.Fatal(err)
		}
	}
	read := func(br *bufio.Reader) (*http.Response, string, error) {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body), err
	}

	t.Run("one after the other", func(t *testing.T) {
		c, br := dial(t)
		send(t, c, upgrade)
		if resp, body, err := read(br); err != nil || resp.StatusCode != 200 || body != "page /about" {
			t.Fatalf("the refused upgrade: %v %q %v", resp, body, err)
		}
		send(t, c, guarded("text/html", ""))
		resp, body, err := read(br)
		if err != nil || resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), "/waitroom/?room=gw") {
			t.Fatalf("a guarded request after a refused upgrade: %v %q %v, want 302 to the waiting page", resp, body, err)
		}
		send(t, c, guarded("application/json", ""))
		if resp, body, err := read(br); err != nil || resp.StatusCode != 429 || !strings.Contains(body, `"type":"state"`) {
			t.Fatalf("a guarded API request after a refused upgrade: %v %q %v, want 429", resp, body, err)
		}
	})

	t.Run("pipelined", func(t *testing.T) {
		// Every request gets its answer (server/pipeline_test.go), and none
		// is the app's: the refused upgrade's, then the check's two.
		c, br := dial(t)
		send(t, c, upgrade+guarded("text/html", "")+guarded("application/json", "Connection: close\r\n"))
		var answers []*http.Response
		for {
			resp, body, err := read(br)
			if err != nil {
				break
			}
			if body == "paid" {
				t.Fatalf("a pipelined request after a refused upgrade reached the app: %d %q", resp.StatusCode, body)
			}
			answers = append(answers, resp)
		}
		if len(answers) != 3 || answers[2].StatusCode != 429 {
			t.Fatalf("%d answers to 3 pipelined requests, the last %v; want 3, the last the check's 429", len(answers), answers)
		}
	})

	up.mu.Lock()
	defer up.mu.Unlock()
	if n := up.calls["/checkout/pay"]; n != 0 {
		t.Fatalf("the app served /checkout/pay %d times, with X-Waitroom-Visitor %q", n, up.seen["/checkout/pay"].Get("X-Waitroom-Visitor"))
	}
	if up.calls["/about"] != 2 || up.seen["/about"].Get("X-Waitroom-Visitor") != "" {
		t.Fatalf("the app saw /about %d times, the last with X-Waitroom-Visitor %q", up.calls["/about"], up.seen["/about"].Get("X-Waitroom-Visitor"))
	}
}

// sessionOnly sends a request with the given Cookie header (and more
// header pairs) and no cookie jar; it returns the status and body.
func sessionOnly(base, method, path, cookie string, hdr ...string) (int, string, error) {
	req, _ := http.NewRequest(method, base+path, nil)
	req.Header.Set("Accept", "text/html")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// TestGatewaySessionNeedsVisitor: a session cookie passes only with the
// credential of the visitor it was issued to, on every instance. Twenty
// clients in parallel on two instances (one real redis-server) sending A's
// session alone, or with B's credential, are denied as if they had no
// session (302 to the waiting page, 429 with the state for an API client)
// and never reach the app; A passes with its cookie or with X-Visitor. Only
// A ends A's session.
func TestGatewaySessionNeedsVisitor(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	mutate := func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/checkout/*', room: gw}"}
	}
	one := startServer(t, srv, "rueidis", mutate)
	two := startServer(t, srv, "go-redis", mutate)
	a, b := newBrowser(t, one.URL), newBrowser(t, two.URL)
	aID := gatewayAdmit(t, one, a, "gw", one.URL+"/checkout/a")
	gatewayAdmit(t, two, b, "gw", two.URL+"/checkout/b")
	session := cookieValue(a, "wr_session_gw")
	aCred, bCred := cookieValue(a, visitorCookie), cookieValue(b, visitorCookie)
	if session == "" || aCred == "" || bCred == "" {
		t.Fatalf("session %q, credentials %q %q", session, aCred, bCred)
	}
	// C waits. An admitted visitor's own credential lets an API client
	// through as itself (no /enter step), so the thief holding another
	// visitor's credential is C.
	c := newBrowser(t, one.URL)
	if resp, body := c.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 || !strings.Contains(body, `"status":"waiting"`) {
		t.Fatalf("join C: %d %s", resp.StatusCode, body)
	}
	cCred := cookieValue(c, visitorCookie)

	for _, ts := range []*testServer{one, two} {
		if code, body, err := sessionOnly(ts.URL, "GET", "/checkout/a", "wr_session_gw="+session+"; wr_visitor="+aCred); err != nil || code != 200 || body != "page /checkout/a" {
			t.Fatalf("A with its credential: %d %q %v", code, body, err)
		}
		if code, _, err := sessionOnly(ts.URL, "GET", "/checkout/a", "wr_session_gw="+session, "X-Visitor", aCred, "Accept", "application/json"); err != nil || code != 200 {
			t.Fatalf("A with X-Visitor: %d %v", code, err)
		}
	}
	if v := up.header("/checkout/a", "X-Waitroom-Visitor"); v != aID {
		t.Fatalf("the app saw visitor %q, want %q", v, aID)
	}

	// Thieves: A's session alone, with B's credential (cookie or header),
	// or with a forged one; browsers and API clients; both instances.
	thefts := []struct {
		name, cookie string
		hdr          []string
		want         int
	}{
		{"session alone", "wr_session_gw=" + session, nil, 302},
		{"session alone, API", "wr_session_gw=" + session, []string{"Accept", "application/json"}, 429},
		{"another visitor's cookie", "wr_session_gw=" + session + "; wr_visitor=" + bCred, nil, 302},
		{"another visitor's header", "wr_session_gw=" + session, []string{"X-Visitor", cCred, "Accept", "application/json"}, 429},
		{"another visitor's header over A's cookie", "wr_session_gw=" + session + "; wr_visitor=" + aCred, []string{"X-Visitor", bCred}, 302},
		{"a forged credential", "wr_session_gw=" + session + "; wr_visitor=" + aID + ".AAAAAAAAAAAAAAAAAAAAAA", nil, 302},
	}
	const clients = 20
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			ts := []*testServer{one, two}[i%2]
			for round := range 5 {
				th := thefts[(i+round)%len(thefts)]
				code, body, err := sessionOnly(ts.URL, "GET", "/checkout/stolen", th.cookie, th.hdr...)
				if err != nil || code != th.want {
					errs <- fmt.Errorf("client %d, %s: %d %q %v, want %d", i, th.name, code, body, err, th.want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	up.mu.Lock()
	stolen := up.calls["/checkout/stolen"]
	up.mu.Unlock()
	if stolen != 0 {
		t.Fatalf("the app served %d requests of a copied session, as %q", stolen, up.header("/checkout/stolen", "X-Waitroom-Visitor"))
	}

	// A copy of the cookie alone does not end A's session; A does.
	for _, tc := range []struct {
		cookie, code string
		status       int
	}{
		{"wr_session_gw=" + session, "missing_visitor", 401},
		{"wr_session_gw=" + session + "; wr_visitor=" + bCred, "wrong_visitor", 403},
	} {
		code, body, err := sessionOnly(two.URL, "DELETE", "/waitroom/api/v1/rooms/gw/session", tc.cookie)
		if err != nil || code != tc.status || !strings.Contains(body, `"code":"`+tc.code+`"`) {
			t.Fatalf("end with %q: %d %s %v, want %d %s", tc.cookie, code, body, err, tc.status, tc.code)
		}
	}
	if _, _, ok, err := one.q.Session(context.Background(), "gw", aID); err != nil || !ok {
		t.Fatalf("A's session after the thieves' attempts to end it: %v %v", ok, err)
	}
	if resp, body := a.get("DELETE", "/waitroom/api/v1/rooms/gw/session"); resp.StatusCode != 204 {
		t.Fatalf("A ends its session: %d %s", resp.StatusCode, body)
	}
}

// TestGatewaySessionNeedsVisitorNginx: through the real nginx recipe, a
// copied session cookie without its visitor's credential is sent to the
// waiting page; the visitor's browser passes.
func TestGatewaySessionNeedsVisitorNginx(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - {match: '*/checkout/*', room: gw}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, srv, "rueidis", func(c *config) {
		c.RoutesFile = routes
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
	})
	u, _ := url.Parse(ts.URL)
	appURL, _ := url.Parse(up.URL)
	base := startGatewayProcess(t, "nginx", u.Host, appURL.Host)
	a := newBrowser(t, base)
	aID := gatewayAdmit(t, ts, a, "gw", base+"/checkout/a")
	if resp, body := a.get("GET", "/checkout/a"); resp.StatusCode != 200 || body != "page /checkout/a" || up.header("/checkout/a", "X-Waitroom-Visitor") != aID {
		t.Fatalf("the visitor: %d %q as %q", resp.StatusCode, body, up.header("/checkout/a", "X-Waitroom-Visitor"))
	}
	session := cookieValue(a, "wr_session_gw")
	req, _ := http.NewRequest("GET", base+"/checkout/stolen", nil)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Cookie", "wr_session_gw="+session)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), base+"/waitroom/?room=gw") {
		t.Fatalf("a copied session through nginx: %d %q, want 302 to the waiting page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, _, err := sessionOnly(base, "GET", "/checkout/stolen", "wr_session_gw="+session, "Accept", "application/json"); err != nil || code != 429 {
		t.Fatalf("a copied session through nginx, API: %d %v", code, err)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if n := up.calls["/checkout/stolen"]; n != 0 {
		t.Fatalf("nginx passed a copied session %d times", n)
	}
}

// TestGatewaySlideShortRoom: in a room whose idle TTL (5 s) is far under
// -token-ttl (300 s), a session used every half second slides (new
// cookies) and keeps passing well past its TTL; its slide interval is the
// room's, so between two slides a valid session still touches no Redis.
func TestGatewaySlideShortRoom(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	ts := startServer(t, srv, "rueidis", func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/short/*', room: short}", "{match: '*/long/*', room: long}"}
	})
	ctx := context.Background()
	const ttl = 5 * time.Second
	for room, d := range map[string]time.Duration{"short": ttl, "long": 100 * time.Second} {
		if err := ts.q.SetRoomConfig(ctx, room, settings.Room{TokenTTL: d}); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 10*time.Second, room+"'s settings in memory", func() bool { return ts.rooms.TokenTTL(room) == d })
	}
	if ts.cfg.TokenTTL != 300*time.Second {
		t.Fatalf("-token-ttl is %s, want the default", ts.cfg.TokenTTL)
	}

	a := newBrowser(t, ts.URL)
	gatewayAdmit(t, ts, a, "short", ts.URL+"/short/x")
	first, err := ts.gw.Sessions().Parse(cookieValue(a, "wr_session_short"))
	if err != nil {
		t.Fatal(err)
	}
	// Used every half second until a whole TTL past the first expiry.
	until := first.ExpiresAt.Add(ttl)
	slides, last := 0, cookieValue(a, "wr_session_short")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		if resp, body := a.get("GET", "/short/x"); resp.StatusCode != 200 {
			t.Fatalf("%s after the first expiry (%d slides): %d %q", now.Sub(first.ExpiresAt).Round(time.Millisecond), slides, resp.StatusCode, body)
		}
		if v := cookieValue(a, "wr_session_short"); v != last {
			slides, last = slides+1, v
		}
		if now.After(until) {
			break
		}
	}
	t.Logf("a session of a %s room used every 500 ms: %d slid cookies, still passing %s past its first expiry", ttl, slides, time.Since(first.ExpiresAt).Round(time.Millisecond))
	if slides < 3 {
		t.Fatalf("%d slid cookies in two TTLs of use", slides)
	}

	// A session that needs no slide touches no Redis (the long room slides
	// every 10 s).
	b := newBrowser(t, ts.URL)
	gatewayAdmit(t, ts, b, "long", ts.URL+"/long/x")
	if resp, _ := b.get("GET", "/long/x"); resp.StatusCode != 200 {
		t.Fatalf("long: %d", resp.StatusCode)
	}
	before := redisCalls(t, srv.Addr)
	const n = 100
	for range n {
		if resp, _ := b.get("GET", "/long/x"); resp.StatusCode != 200 {
			t.Fatalf("long: %d", resp.StatusCode)
		}
	}
	d := redisCalls(t, srv.Addr) - before - 1
	t.Logf("%d requests with a valid session: %d Redis calls (background included)", n, d)
	if d > n/2 { // the background's tens of calls, or one a request (gateway_real_test.go)
		t.Fatalf("%d requests with a valid session made %d Redis calls", n, d)
	}
}

// TestGatewayCookiePerRoom: each room has its own session cookie, so a
// visitor with sessions in two rooms visiting both alternately keeps both;
// a route's cookie: still names the room's cookie.
func TestGatewayCookiePerRoom(t *testing.T) {
	up := newUpstreamApp(t)
	ts := startServer(t, nil, "rueidis", func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/a/*', room: ra}", "{match: '*/b/*', room: rb}", "{match: '*/c/*', room: rc, cookie: shop_c}"}
	})
	v := newBrowser(t, ts.URL)
	for _, r := range []string{"ra", "rb", "rc"} {
		gatewayAdmit(t, ts, v, r, ts.URL+"/"+r[1:]+"/x")
	}
	names := map[string]string{"a": "wr_session_ra", "b": "wr_session_rb", "c": "shop_c"}
	for name, ck := range names {
		if cookieValue(v, ck) == "" {
			t.Fatalf("no cookie %s for /%s/ after entering", ck, name)
		}
	}
	for i := range 12 {
		p := []string{"a", "b", "c"}[i%3]
		if resp, body := v.get("GET", "/"+p+"/x"); resp.StatusCode != 200 || body != "page /"+p+"/x" {
			t.Fatalf("visit %d of /%s/: %d %q", i, p, resp.StatusCode, body)
		}
		for name, ck := range names {
			if cookieValue(v, ck) == "" {
				t.Fatalf("visit %d of /%s/ lost the session of /%s/ (%s)", i, p, name, ck)
			}
		}
	}
	if err := routesError(t, "{match: '*/x/*', room: one, cookie: same}", "{match: '*/y/*', room: two, cookie: same}"); err == nil || !strings.Contains(err.Error(), `cookie "same"`) {
		t.Fatalf("two rooms with one cookie: %v", err)
	}
}

// routesError is the error of a server start with these inline routes.
func routesError(t *testing.T, routes ...string) error {
	t.Helper()
	cfg, err := parseConfig([]string{"-secret", testSecret}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Routes = routes
	s, err := newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	if err == nil {
		s.redis.Close()
	}
	return err
}
