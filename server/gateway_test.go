package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

// upstreamApp is the app behind the gateway in tests: it records the
// headers of every request, ends the session on /checkout/pay, streams on
// /checkout/stream and echoes WebSocket messages on /checkout/ws.
type upstreamApp struct {
	*httptest.Server
	mu     sync.Mutex
	seen   map[string]http.Header // path -> last request's headers
	calls  map[string]int
	second chan struct{} // lets /checkout/stream write its second chunk
}

func newUpstreamApp(t *testing.T) *upstreamApp {
	t.Helper()
	u := &upstreamApp{seen: map[string]http.Header{}, calls: map[string]int{}, second: make(chan struct{}, 1)}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen[r.URL.Path] = r.Header.Clone()
		u.calls[r.URL.Path]++
		u.mu.Unlock()
		switch r.URL.Path {
		case "/checkout/pay":
			w.Header().Set("Waitroom-Session", "end")
			io.WriteString(w, "paid")
		case "/checkout/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-u.second:
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
			io.WriteString(w, "data: two\n\n")
		case "/checkout/ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			_ = c.Write(r.Context(), typ, append([]byte("echo: "), msg...))
			_, _, _ = c.Read(r.Context())
		default:
			io.WriteString(w, "page "+r.URL.Path)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstreamApp) header(path, name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[path].Get(name)
}

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(c.CloseIdleConnections)
	return &browser{t: t, base: base, c: c}
}

func (b *browser) get(method, path string, hdr ...string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.base+path, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// gatewayAdmit joins b to room through the gateway prefix, drives
// admission until it is admitted and its notBefore has passed, and enters:
// it returns the visitor id.
func gatewayAdmit(t *testing.T, ts *testServer, b *browser, room, ret string) string {
	t.Helper()
	resp, body := b.get("POST", "/waitroom/api/v1/rooms/"+room+"/join")
	if resp.StatusCode != 200 {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	id := strings.SplitN(cookieValue(b, visitorCookie), ".", 2)[0]
	waitfor.Until(t, 10*time.Second, "admitted", func() bool {
		if _, err := ts.q.Admit(context.Background(), room); err != nil {
			t.Fatal(err)
		}
		nb, _, ok, err := ts.q.Session(context.Background(), room, id)
		return err == nil && ok && time.Now().After(nb)
	})
	resp, body = b.get("GET", "/waitroom/api/v1/rooms/"+room+"/enter?return="+url.QueryEscape(ret))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != ret {
		t.Fatalf("enter: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	return id
}

func cookieValue(b *browser, name string) string {
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// TestGatewayProxy walks the built-in proxy through the flow:
// unprotected paths pass, a protected one sends a browser to the waiting
// page and an API client gets 429 with the state, the admitted visitor
// lands on the original URL with the room and visitor headers upstream,
// Waitroom-Session: end frees the only max-active slot for the next
// visitor, streams and WebSockets pass through, and a dead upstream is 502.
func TestGatewayProxy(t *testing.T) {
	up := newUpstreamApp(t)
	eachServer(t, func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/checkout/*', room: gw}"}
		withAdmin(c)
	}, func(t *testing.T, ts *testServer) {
		ctx := context.Background()
		if err := ts.q.SetRoomConfig(ctx, "gw", settings.Room{Strategy: "max-active", MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
		a, b := newBrowser(t, ts.URL), newBrowser(t, ts.URL)

		if resp, body := a.get("GET", "/about"); resp.StatusCode != 200 || body != "page /about" || up.header("/about", "X-Waitroom-Room") != "" {
			t.Fatalf("unprotected: %d %q", resp.StatusCode, body)
		}
		orig := ts.URL + "/checkout/page?x=1"
		resp, _ := a.get("GET", "/checkout/page?x=1")
		if want := "/waitroom/?room=gw&return=" + url.QueryEscape(orig); resp.StatusCode != 302 || resp.Header.Get("Location") != want {
			t.Fatalf("browser without session: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
		}
		// An API client without a session is put in the queue on the
		// spot (another client: a's jar would keep the credential).
		resp = apiGet(t, ts.URL+"/checkout/page")
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("X-Visitor") == "" {
			t.Fatalf("API client without session: %d %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Visitor"))
		}
		apiCred := resp.Header.Get("X-Visitor")
		if resp := apiGet(t, ts.URL+"/checkout/page", "X-Visitor", apiCred); resp.StatusCode != 429 {
			t.Fatalf("its retry: %d", resp.StatusCode)
		}
		// It leaves, so the slot goes to a below.
		if r := newVisitor(t, ts.URL).do("DELETE", "/waitroom/api/v1/rooms/gw/queue", "", "X-Visitor", apiCred); r.Code != 204 {
			t.Fatalf("API client leaves: %d %s", r.Code, r.Raw)
		}
		if resp, body := a.get("GET", "/waitroom/?room=gw"); resp.StatusCode != 200 || !strings.Contains(body, "waitroom.js") {
			t.Fatalf("waiting page under the prefix: %d", resp.StatusCode)
		}
		if resp, body := a.get("GET", "/waitroom/api/v1/rooms/gw/enter?return="+url.QueryEscape("https://evil.example/")); resp.StatusCode != 400 || !strings.Contains(body, "invalid_return") {
			t.Fatalf("open redirect: %d %s", resp.StatusCode, body)
		}

		aID := gatewayAdmit(t, ts, a, "gw", orig)
		resp, body := a.get("GET", "/checkout/page?x=1", "X-Waitroom-Visitor", "forged")
		if resp.StatusCode != 200 || body != "page /checkout/page" {
			t.Fatalf("with a session: %d %q", resp.StatusCode, body)
		}
		if r, v := up.header("/checkout/page", "X-Waitroom-Room"), up.header("/checkout/page", "X-Waitroom-Visitor"); r != "gw" || v != aID {
			t.Fatalf("upstream saw room %q visitor %q, want gw %q", r, v, aID)
		}

		// b waits behind a's slot.
		if resp, _ := b.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 {
			t.Fatal("join b")
		}
		for range 3 {
			if res, err := ts.q.Admit(ctx, "gw"); err != nil || len(res.Admitted) != 0 {
				t.Fatalf("admitted %v with the only slot held (%v)", res.Admitted, err)
			}
		}
		oldCookie := cookieValue(a, "wr_session_gw")
		resp, body = a.get("POST", "/checkout/pay")
		if resp.StatusCode != 200 || body != "paid" || resp.Header.Get("Waitroom-Session") != "" {
			t.Fatalf("pay: %d %q header %q", resp.StatusCode, body, resp.Header.Get("Waitroom-Session"))
		}
		waitfor.Until(t, 5*time.Second, "b admitted into the freed slot", func() bool {
			res, err := ts.q.Admit(ctx, "gw")
			if err != nil {
				t.Fatal(err)
			}
			return len(res.Admitted) == 1
		})
		// a's session is over, even replayed by hand.
		resp, _ = a.get("GET", "/checkout/page", "Cookie", "wr_session_gw="+oldCookie)
		if resp.StatusCode != 302 {
			t.Fatalf("ended session replayed: %d", resp.StatusCode)
		}

		// b enters; a stream comes through as it is written.
		b2 := gatewayAdmit(t, ts, b, "gw", ts.URL+"/checkout/stream")
		req, _ := http.NewRequest("GET", ts.URL+"/checkout/stream", nil)
		bCookies := "wr_session_gw=" + cookieValue(b, "wr_session_gw") + "; wr_visitor=" + cookieValue(b, visitorCookie)
		req.Header.Set("Cookie", bCookies)
		sresp, err := http.DefaultClient.Do(req)
		if err != nil || sresp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", sresp, err)
		}
		rd := bufio.NewReader(sresp.Body)
		if line, _ := rd.ReadString('\n'); line != "data: one\n" {
			t.Fatalf("first chunk %q", line)
		}
		up.second <- struct{}{}
		rest, _ := io.ReadAll(rd)
		sresp.Body.Close()
		if !strings.Contains(string(rest), "data: two") {
			t.Fatalf("second chunk %q", rest)
		}

		// WebSocket through the proxy.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		h := http.Header{}
		h.Set("Cookie", bCookies)
		wc, _, err := websocket.Dial(wctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/checkout/ws", &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Fatalf("ws dial: %v", err)
		}
		if err := wc.Write(wctx, websocket.MessageText, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, msg, err := wc.Read(wctx); err != nil || string(msg) != "echo: hi" {
			t.Fatalf("ws echo %q %v", msg, err)
		}
		wc.Close(websocket.StatusNormalClosure, "")
		if v := up.header("/checkout/ws", "X-Waitroom-Visitor"); v != b2 {
			t.Fatalf("ws upstream saw visitor %q", v)
		}

		// The admin ends b's session.
		ar := newVisitor(t, ts.URL).do("DELETE", "/waitroom/api/v1/admin/rooms/gw/sessions/"+b2, "", "Authorization", "Bearer "+testAdminKey)
		if ar.Code != 204 {
			t.Fatalf("admin end: %d %s", ar.Code, ar.Raw)
		}
		if resp, _ := b.get("GET", "/checkout/page"); resp.StatusCode != 302 {
			t.Fatalf("after the admin ended it: %d", resp.StatusCode)
		}
		ar = newVisitor(t, ts.URL).do("DELETE", "/waitroom/api/v1/admin/rooms/gw/sessions/"+b2, "", "Authorization", "Bearer "+testAdminKey)
		if ar.Code != 404 || ar.errCode() != "session_not_found" {
			t.Fatalf("admin end again: %d %s", ar.Code, ar.Raw)
		}
	})
}

// TestGatewayUpstreamDown: a dead upstream is 502 upstream_unavailable, as
// JSON for API clients and as a page for browsers; a visitor ends their own
// session.
func TestGatewayUpstreamDown(t *testing.T) {
	up := newUpstreamApp(t)
	addr := up.URL
	ts := startServer(t, nil, "rueidis", func(c *config) {
		c.Upstream = addr
		c.Routes = []string{"{match: '*/checkout/*', room: down}"}
	})
	a := newBrowser(t, ts.URL)
	gatewayAdmit(t, ts, a, "down", ts.URL+"/checkout/x")
	up.Close()
	resp, body := a.get("GET", "/checkout/x", "Accept", "application/json")
	if resp.StatusCode != 502 || !strings.Contains(body, `"upstream_unavailable"`) {
		t.Fatalf("json: %d %s", resp.StatusCode, body)
	}
	resp, body = a.get("GET", "/checkout/x")
	if resp.StatusCode != 502 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "upstream_unavailable") {
		t.Fatalf("html: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.get("DELETE", "/waitroom/api/v1/rooms/down/session"); resp.StatusCode != 204 {
		t.Fatalf("end own session: %d %s", resp.StatusCode, body)
	}
	if resp, _ := a.get("GET", "/checkout/x"); resp.StatusCode != 302 {
		t.Fatalf("after ending it: %d", resp.StatusCode)
	}
}

// TestGatewayConfig: bad gateway settings stop start-up with one line.
func TestGatewayConfig(t *testing.T) {
	env := func(string) string { return "" }
	for _, args := range [][]string{
		{"-gateway-page", "waitroom"},
		{"-gateway-page", "/waitroom"},
		{"-gateway-page", "/", "-upstream", "http://127.0.0.1:3000"},
	} {
		if _, err := parseConfig(args, env); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for _, mutate := range []func(*config){
		func(c *config) { c.Upstream = "ftp://x" },
		func(c *config) { c.Routes = []string{"{match: nohost, room: a}"} },
		func(c *config) { c.RoutesFile = "/nonexistent/routes.yaml" },
	} {
		cfg, err := parseConfig([]string{"-secret", testSecret}, env)
		if err != nil {
			t.Fatal(err)
		}
		mutate(&cfg)
		s, err := newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
		if err == nil {
			s.redis.Close()
			t.Errorf("%+v accepted", cfg)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}
