package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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
		// fasthttp (with ReduceMemoryUsage) drops the answers to pipelined
		// requests that are not flushed before the next one is served, so
		// only some answers may come; each that comes must be the check's,
		// ending with the last request's 429.
		c, br := dial(t)
		send(t, c, upgrade+guarded("text/html", "")+guarded("application/json", "Connection: close\r\n"))
		var last *http.Response
		for {
			resp, body, err := read(br)
			if err != nil {
				break
			}
			if body == "paid" {
				t.Fatalf("a pipelined request after a refused upgrade reached the app: %d %q", resp.StatusCode, body)
			}
			last = resp
		}
		if last == nil || last.StatusCode != 429 {
			t.Fatalf("the last answer: %v, want the check's 429", last)
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
	s, err := newServer(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil {
		s.redis.Close()
	}
	return err
}
