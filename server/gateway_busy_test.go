package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
)

// setRoom stores room's settings and has ts read them at once.
func setRoom(t *testing.T, ts *testServer, room string, cfg settings.Room) {
	t.Helper()
	ctx := context.Background()
	if err := ts.q.SetRoomConfig(ctx, room, cfg); err != nil {
		t.Fatal(err)
	}
	if err := ts.rooms.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
}

// apiGet is one request of an API client that keeps no cookies: Accept
// application/json and the headers hdr.
func apiGet(t *testing.T, url string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestGatewayBusy walks activation busy through the built-in proxy: under
// the threshold a fresh browser and a fresh API client reach the app in
// one round trip; at the threshold the next one queues; while anyone
// waits nobody passes straight through, even with a slot free, and a
// bypassed path passes as ever, given nothing and counted nowhere; with
// activation always a fresh browser goes to the waiting page as before.
func TestGatewayBusy(t *testing.T) {
	up := newUpstreamApp(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - {match: '*/checkout/*', room: gw}\nbypass:\n  paths: ['/checkout/static/*']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eachServer(t, func(c *config) {
		c.Upstream = up.URL
		c.RoutesFile = routes
	}, func(t *testing.T, ts *testServer) {
		ctx := context.Background()
		setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 2, Activation: settings.ActivationBusy})

		a := newBrowser(t, ts.URL)
		resp, body := a.get("GET", "/checkout/page")
		if resp.StatusCode != 200 || body != "page /checkout/page" {
			t.Fatalf("fresh browser under the threshold: %d %q, want the app's page", resp.StatusCode, body)
		}
		aID := strings.SplitN(cookieValue(a, visitorCookie), ".", 2)[0]
		if aID == "" || cookieValue(a, "wr_session_gw") == "" || up.header("/checkout/page", "X-Waitroom-Visitor") != aID {
			t.Fatalf("cookies %q %q, upstream saw visitor %q", cookieValue(a, visitorCookie), cookieValue(a, "wr_session_gw"), up.header("/checkout/page", "X-Waitroom-Visitor"))
		}
		if resp, body := a.get("GET", "/checkout/cart"); resp.StatusCode != 200 || body != "page /checkout/cart" {
			t.Fatalf("its next request: %d %q", resp.StatusCode, body)
		}

		// An API client that keeps no cookies: the session and the
		// credential in headers, which it sends back.
		resp = apiGet(t, ts.URL+"/checkout/api")
		sess, cred := resp.Header.Get("X-Waitroom-Session"), resp.Header.Get("X-Visitor")
		if resp.StatusCode != 200 || sess == "" || cred == "" {
			t.Fatalf("fresh API client: %d session %q visitor %q", resp.StatusCode, sess, cred)
		}
		if resp := apiGet(t, ts.URL+"/checkout/api", "X-Waitroom-Session", sess, "X-Visitor", cred); resp.StatusCode != 200 {
			t.Fatalf("API client with its headers: %d", resp.StatusCode)
		}
		if n := counterValue(t, ts, "waitroom_passed_total"); n != 2 {
			t.Fatalf("waitroom_passed_total %v, want 2 (the browser and the API client)", n)
		}

		// Both slots held: the next fresh browser queues.
		b := newBrowser(t, ts.URL)
		if resp, _ := b.get("GET", "/checkout/page"); resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), "/waitroom/?room=gw") {
			t.Fatalf("at the threshold: %d %q, want the waiting page", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp, body := b.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 || !strings.Contains(body, `"status":"waiting"`) {
			t.Fatalf("join: %d %s", resp.StatusCode, body)
		}
		// a ends its session: a slot is free, but b waits, so a fresh
		// visitor queues behind b.
		if resp, body := a.get("POST", "/checkout/pay"); resp.StatusCode != 200 || body != "paid" {
			t.Fatalf("pay: %d %q", resp.StatusCode, body)
		}
		c := newBrowser(t, ts.URL)
		if resp, _ := c.get("GET", "/checkout/page"); resp.StatusCode != 302 {
			t.Fatalf("a slot free while b waits: %d, want 302", resp.StatusCode)
		}
		if resp := apiGet(t, ts.URL+"/checkout/api"); resp.StatusCode != 429 {
			t.Fatalf("an API client while b waits: %d, want 429", resp.StatusCode)
		}
		// A bypassed path is never queued, and lets nobody in.
		if resp, body := c.get("GET", "/checkout/static/app.css"); resp.StatusCode != 200 || body != "page /checkout/static/app.css" || len(resp.Cookies()) != 0 {
			t.Fatalf("a bypassed path while b waits: %d %q, cookies %v", resp.StatusCode, body, resp.Cookies())
		}
		if n := counterValue(t, ts, "waitroom_passed_total"); n != 2 {
			t.Fatalf("waitroom_passed_total %v after the bypassed request, want 2", n)
		}
		waitfor.Until(t, 5*time.Second, "b admitted", func() bool {
			res, err := ts.q.Admit(ctx, "gw")
			if err != nil {
				t.Fatal(err)
			}
			return len(res.Admitted) == 1
		})

		// activation always: as before.
		setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 100, Activation: settings.ActivationAlways})
		d := newBrowser(t, ts.URL)
		if resp, _ := d.get("GET", "/checkout/page"); resp.StatusCode != 302 || cookieValue(d, visitorCookie) != "" {
			t.Fatalf("activation always: %d, visitor cookie %q; want 302 and none", resp.StatusCode, cookieValue(d, visitorCookie))
		}
	})
}

// TestGatewayBusyBurst: 500 fresh visitors at once through 3 instances
// sharing one Redis into a busy room with 50 free slots: exactly 50 reach
// the app; of the other 450, browsers are sent to the waiting page, and
// API clients are each given a place of their own on the spot (450
// waiting, places 1 to 450 once each).
//
// Fairly: requests that reach an instance at the same moment have no
// order, so the last run makes arrival order observable: each instance
// takes its visitors one after the other, the three instances at once.
// Again exactly 50 pass and 450 queue, and at each instance the answers
// are passes, then only 429s (nobody passes straight through once anyone
// waits) with places that increase in the order the visitors arrived.
func TestGatewayBusyBurst(t *testing.T) {
	for _, accept := range []string{"text/html", "application/json"} {
		t.Run(accept, func(t *testing.T) { testBusyBurst(t, accept, false) })
	}
	t.Run("application/json, in order at each instance", func(t *testing.T) { testBusyBurst(t, "application/json", true) })
}

// testBusyBurst sends the burst with Accept accept: all at once, or, with
// inOrder, one after the other at each instance.
func testBusyBurst(t *testing.T, accept string, inOrder bool) {
	up := newUpstreamApp(t)
	srv := redistest.StartReal(t)
	var instances []*testServer
	for range 3 {
		instances = append(instances, startServer(t, srv, "rueidis", func(c *config) {
			c.Upstream = up.URL
			c.Routes = []string{"{match: '*/checkout/*', room: gw}"}
		}))
	}
	setRoom(t, instances[0], "gw", settings.Room{Strategy: "max-active", MaxActive: 50, Activation: settings.ActivationBusy})
	for _, ts := range instances[1:] {
		if err := ts.rooms.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	const n = 500
	codes := make([]int, n)
	positions := make([]int, n)
	visit := func(i int) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/checkout/item/%d", instances[i%3].URL, i), nil)
		req.Header.Set("Accept", accept)
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer c.CloseIdleConnections()
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		var st struct{ Position int }
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		codes[i], positions[i] = resp.StatusCode, st.Position
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	if inOrder {
		// Visitor i arrives at instance i%3 once the one before it
		// there (i-3) has its answer.
		for lane := range 3 {
			wg.Go(func() {
				<-start
				for i := lane; i < n; i += 3 {
					visit(i)
				}
			})
		}
	} else {
		for i := range n {
			wg.Go(func() {
				<-start
				visit(i)
			})
		}
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	queued := 302
	if accept == "application/json" {
		queued = 429
	}
	if count[200] != 50 || count[queued] != 450 {
		t.Fatalf("answers %v, want 50 × 200 and 450 × %d", count, queued)
	}
	st, err := instances[0].q.Stats(context.Background(), "gw")
	if err != nil {
		t.Fatal(err)
	}
	if st.ActiveTokens != 50 {
		t.Fatalf("%d live tokens, want 50", st.ActiveTokens)
	}
	if queued == 302 {
		return
	}
	if st.Waiting != 450 {
		t.Fatalf("%d waiting, want 450", st.Waiting)
	}
	seen := map[int]bool{}
	for i, p := range positions {
		if codes[i] == 429 {
			if p < 1 || p > 450 || seen[p] {
				t.Fatalf("place %d given twice or out of 1..450", p)
			}
			seen[p] = true
		}
	}
	if !inOrder {
		return
	}
	for lane := range 3 {
		last, queuedAt := 0, -1
		for i := lane; i < n; i += 3 {
			switch {
			case codes[i] == 200 && queuedAt >= 0:
				t.Fatalf("instance %d: visitor %d passed after visitor %d queued there", lane, i, queuedAt)
			case codes[i] == 429 && positions[i] <= last:
				t.Fatalf("instance %d: visitor %d got place %d after an earlier arrival got %d", lane, i, positions[i], last)
			case codes[i] == 429:
				last = positions[i]
				if queuedAt < 0 {
					queuedAt = i
				}
			}
		}
	}
}

// TestGatewayAPIClientFlow is the documented flow of an API client through
// the built-in proxy, in a room with activation always: its first request
// is 429 with its place taken on the spot, a retry keeps the place, and
// once admitted its next request passes with its credential alone (no
// /enter step), handing it the session to send back.
func TestGatewayAPIClientFlow(t *testing.T) {
	up := newUpstreamApp(t)
	eachServer(t, func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/checkout/*', room: gw}"}
	}, func(t *testing.T, ts *testServer) {
		setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 1})
		first := apiGet(t, ts.URL+"/checkout/api")
		cred := first.Header.Get("X-Visitor")
		if first.StatusCode != 429 || cred == "" || first.Header.Get("Retry-After") == "" {
			t.Fatalf("first request: %d X-Visitor %q Retry-After %q", first.StatusCode, cred, first.Header.Get("Retry-After"))
		}
		// A second client joins behind it.
		other := apiGet(t, ts.URL+"/checkout/api")
		if other.StatusCode != 429 || other.Header.Get("X-Visitor") == cred {
			t.Fatalf("second client: %d", other.StatusCode)
		}
		if resp := apiGet(t, ts.URL+"/checkout/api", "X-Visitor", cred); resp.StatusCode != 429 {
			t.Fatalf("retry before admission: %d", resp.StatusCode)
		}
		var sess string
		waitfor.Until(t, 10*time.Second, "the first client passes", func() bool {
			if _, err := ts.q.Admit(context.Background(), "gw"); err != nil {
				t.Fatal(err)
			}
			resp := apiGet(t, ts.URL+"/checkout/api", "X-Visitor", cred)
			sess = resp.Header.Get("X-Waitroom-Session")
			return resp.StatusCode == 200
		})
		id := strings.SplitN(cred, ".", 2)[0]
		if sess == "" || up.header("/checkout/api", "X-Waitroom-Visitor") != id {
			t.Fatalf("session header %q, the app saw %q, want %q", sess, up.header("/checkout/api", "X-Waitroom-Visitor"), id)
		}
		if resp := apiGet(t, ts.URL+"/checkout/api", "X-Visitor", cred, "X-Waitroom-Session", sess); resp.StatusCode != 200 {
			t.Fatalf("with the session header: %d", resp.StatusCode)
		}
		// The second is still waiting: the only slot is held.
		if resp := apiGet(t, ts.URL+"/checkout/api", "X-Visitor", other.Header.Get("X-Visitor")); resp.StatusCode != 429 {
			t.Fatalf("second client: %d, want 429", resp.StatusCode)
		}
	})
}

// TestGatewayAPIClientGatedRoom: in a room with a proof of work or invite
// codes the gateway puts no one in the queue: the 429 says not_in_queue
// and where to join.
func TestGatewayAPIClientGatedRoom(t *testing.T) {
	up := newUpstreamApp(t)
	ts := startServer(t, redistest.StartReal(t), "rueidis", func(c *config) {
		c.Upstream = up.URL
		c.Routes = []string{"{match: '*/pow/*', room: pow}", "{match: '*/inv/*', room: inv}"}
	})
	setRoom(t, ts, "pow", settings.Room{PowBits: 4})
	setRoom(t, ts, "inv", settings.Room{InviteOnly: true})
	for _, path := range []string{"/pow/x", "/inv/x"} {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		room := strings.Split(path, "/")[1]
		if resp.StatusCode != 429 || !strings.Contains(string(body), `"status":"not_in_queue"`) ||
			!strings.Contains(string(body), `"join":"/waitroom/api/v1/rooms/`+room+`/join"`) || resp.Header.Get("X-Visitor") != "" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	st, err := ts.q.Stats(context.Background(), "inv")
	if err != nil || st.Waiting != 0 {
		t.Fatalf("invite-only room: %d waiting (%v)", st.Waiting, err)
	}
}
