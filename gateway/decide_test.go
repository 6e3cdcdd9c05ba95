package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/wire"
)

// fakeStore is the queue as a map of sessions, with failures on demand.
type fakeStore struct {
	mu        sync.Mutex
	touchErr  error     // returned by Touch when set
	touched   int       // Touch calls
	slidTo    time.Time // the expiry Touch hands out
	statusOf  map[string]wire.State
	ended     []Session
	degraded  bool
	admitted  map[string]time.Time // visitor -> its entry's idle expiry
	free      int                  // Pass lets in this many more on the spot
	passes    int                  // Pass calls
	passErr   error                // returned by Pass when set
	elsewhere bool                 // Join refuses with ErrJoinElsewhere
	joined    []string             // visitors Join put in the queue, in order
}

func (f *fakeStore) Touch(_ context.Context, sess Session) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched++
	return f.slidTo, f.touchErr
}

func (f *fakeStore) Status(_ context.Context, room, visitor string) (wire.State, error) {
	if st, ok := f.statusOf[visitor]; ok {
		return st, nil
	}
	return wire.State{Room: room, Status: wire.StatusNotInQueue}, nil
}

func (f *fakeStore) Session(_ context.Context, _, visitor string) (time.Time, time.Time, bool, error) {
	exp, ok := f.admitted[visitor]
	return exp.Add(-time.Hour), exp, ok, nil
}

func (f *fakeStore) Pass(_ context.Context, _, visitor string) (time.Time, time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passes++
	if f.passErr != nil {
		return time.Time{}, time.Time{}, false, f.passErr
	}
	if exp, ok := f.admitted[visitor]; ok {
		return exp.Add(-time.Hour), exp, true, nil
	}
	if f.free == 0 {
		return time.Time{}, time.Time{}, false, nil
	}
	f.free--
	now := time.Now()
	if f.admitted == nil {
		f.admitted = map[string]time.Time{}
	}
	f.admitted[visitor] = now.Add(time.Hour)
	return now, now.Add(time.Hour), true, nil
}

// Join gives a known visitor its state, else puts the visitor (new when
// cred is not valid) at the back of the queue.
func (f *fakeStore) Join(_ context.Context, room, cred string, _ netip.Addr) (wire.State, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.elsewhere {
		return wire.State{}, "", ErrJoinElsewhere
	}
	id, err := fakeVisitors{}.ParseVisitor(cred)
	if err != nil {
		id, cred = fakeVisitors{}.NewVisitor()
	}
	if st, ok := f.statusOf[id]; ok {
		return st, cred, nil
	}
	for i, v := range f.joined {
		if v == id {
			return wire.State{Room: room, Status: wire.StatusWaiting, Position: int64(i + 1), NextPoll: 500 * time.Millisecond}, cred, nil
		}
	}
	f.joined = append(f.joined, id)
	return wire.State{Room: room, Status: wire.StatusWaiting, Position: int64(len(f.joined)), NextPoll: 500 * time.Millisecond}, cred, nil
}

func (f *fakeStore) EndSession(_ context.Context, sess Session, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, sess)
	return nil
}

func (f *fakeStore) Degraded() bool { return f.degraded }

type fakeRooms struct {
	failClosed bool
	missing    bool // every room is gone
	busy       bool // every room's activation is busy
}

func (r fakeRooms) Busy(string) bool { return r.busy }

func (r fakeRooms) Exists(context.Context, string) (bool, error) { return !r.missing, nil }

func (fakeRooms) IdleTTL(string) time.Duration { return 0 }
func (r fakeRooms) FailClosed(string) bool     { return r.failClosed }
func (fakeRooms) AllowFailOpen(string) bool    { return true }

// fakeVisitors accepts credentials "cred-ID" for visitor ID.
type fakeVisitors struct{}

func (fakeVisitors) ParseVisitor(cred string) (string, error) {
	id, ok := strings.CutPrefix(cred, "cred-")
	if !ok {
		return "", errors.New("bad credential")
	}
	return id, nil
}

var minted atomic.Int64

func (fakeVisitors) NewVisitor() (string, string) {
	id := "n" + strconv.FormatInt(minted.Add(1), 10)
	return id, "cred-" + id
}

// fakeProxies trusts every peer or none (fiber's test requests come from
// 0.0.0.0).
type fakeProxies struct{ trusted bool }

func (p fakeProxies) Contains(netip.Addr) bool                    { return p.trusted }
func (p fakeProxies) Client(peer netip.Addr, _ string) netip.Addr { return peer }

type fakeAPI struct{}

func (fakeAPI) Room(c *fiber.Ctx) (string, error) { return c.Params("room"), nil }
func (fakeAPI) Visitor(c *fiber.Ctx) (string, error) {
	return fakeVisitors{}.ParseVisitor(c.Get("X-Visitor"))
}
func (fakeAPI) StoreError(*fiber.Ctx, error) error {
	return httperr.New(503, "unavailable", "the queue store is unreachable; retry shortly")
}

// fakeFeed delivers what a test sends on msgs, after marking the feed down
// when down is set.
type fakeFeed struct {
	down bool
	msgs chan string
}

func (f *fakeFeed) Run(ctx context.Context, r hub.Receiver) error {
	if f.down {
		r.Down(errors.New("connection lost"))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-f.msgs:
			r.Message("revoked", []byte(m))
		}
	}
}

func (f *fakeFeed) Subscribe(context.Context, string) error { return nil }

type testGateway struct {
	*Gateway
	store *fakeStore
	app   *fiber.App
}

// newTestGateway is a gateway guarding */checkout/* with room gw, /static/
// bypassed, behind a peer trusted when trusted is set.
func newTestGateway(t testing.TB, trusted bool, feed Feed) *testGateway {
	t.Helper()
	cfg, err := Parse("routes.yaml", []byte("routes:\n  - {match: 'shop.example.com/checkout/*', room: gw}\nbypass:\n  paths: ['/checkout/static/*']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.NameCookies(); err != nil {
		t.Fatal(err)
	}
	store := &fakeStore{slidTo: time.Now().Add(time.Hour)}
	deps := Deps{Routes: cfg, Signer: NewSigner([]byte("test secret")), Store: store, Rooms: fakeRooms{},
		Visitors: fakeVisitors{}, Proxies: fakeProxies{trusted}, API: fakeAPI{}}
	if feed != nil {
		deps.Broker = feed
	}
	g, err := New(deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler)), DisableStartupMessage: true})
	app.All("/api/v1/check", g.Check)
	app.All("/api/v1/check-end", g.CheckEnd)
	app.All("/api/v1/check/*", g.Check)
	app.Delete("/api/v1/rooms/:room/session", g.EndOwnSession)
	app.Get("/api/v1/rooms/:room/enter", g.Enter)
	return &testGateway{Gateway: g, store: store, app: app}
}

// session signs a session of visitor id in room gw, slid at slid.
func (tg *testGateway) session(id string, slid time.Time) string {
	now := time.Now()
	return tg.sessions.Sign(Session{Room: "gw", Visitor: id, NotBefore: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour), SlidAt: slid})
}

// do sends req to the test app and returns the response and its body.
func (tg *testGateway) do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := tg.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// forwarded is a Traefik-shaped check of GET uri on shop.example.com.
func forwarded(uri string, header ...string) *http.Request {
	return forwardedTo("/api/v1/check", uri, header...)
}

// forwardedTo is forwarded sent to target.
func forwardedTo(target, uri string, header ...string) *http.Request {
	req := httptest.NewRequest("GET", target, nil)
	req.Header.Set("X-Forwarded-Uri", uri)
	req.Header.Set("X-Forwarded-Host", "shop.example.com")
	req.Header.Set("X-Forwarded-Method", "GET")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	return req
}

func errorCode(body string) string {
	_, rest, ok := strings.Cut(body, `"code":"`)
	if !ok {
		return ""
	}
	code, _, _ := strings.Cut(rest, `"`)
	return code
}

func TestCheckNoSessionGoesToWaitingPage(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	resp, _ := tg.do(t, forwarded("/checkout/cart?x=1", "Accept", "text/html"))
	if resp.StatusCode != 302 {
		t.Fatalf("status %d, want 302", resp.StatusCode)
	}
	want := "http://shop.example.com/waitroom/?room=gw&return=http%3A%2F%2Fshop.example.com%2Fcheckout%2Fcart%3Fx%3D1"
	if got := resp.Header.Get("Location"); got != want {
		t.Errorf("Location %q, want %q", got, want)
	}
	if got := resp.Header.Get("X-Waitroom-Room"); got != "gw" {
		t.Errorf("X-Waitroom-Room %q", got)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
}

func TestCheckValidSessionPasses(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	cookie := "wr_session_gw=" + tg.session("v1", time.Now()) + "; wr_visitor=cred-v1"
	resp, body := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Waitroom-Room") != "gw" || resp.Header.Get("X-Waitroom-Visitor") != "v1" {
		t.Errorf("pass headers %v", resp.Header)
	}
	if tg.store.touched != 0 || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("a fresh session slid: %d touches, Set-Cookie %q", tg.store.touched, resp.Header.Get("Set-Cookie"))
	}
}

func TestCheckSessionOfAnotherVisitorIsDenied(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	cookie := "wr_session_gw=" + tg.session("v1", time.Now()) + "; wr_visitor=cred-v2"
	resp, _ := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie))
	if resp.StatusCode != 302 {
		t.Fatalf("status %d, want 302", resp.StatusCode)
	}
	if sc := resp.Header.Get("Set-Cookie"); sc != "" {
		t.Errorf("another visitor's session cleared: %q", sc)
	}
}

func TestCheckSlides(t *testing.T) {
	t.Run("slid", func(t *testing.T) {
		tg := newTestGateway(t, true, nil)
		cookie := "wr_session_gw=" + tg.session("v1", time.Now().Add(-time.Hour)) + "; wr_visitor=cred-v1"
		resp, _ := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie))
		if resp.StatusCode != 200 || tg.store.touched != 1 {
			t.Fatalf("status %d, %d touches", resp.StatusCode, tg.store.touched)
		}
		sc := resp.Header.Get("Set-Cookie")
		if !strings.HasPrefix(sc, "wr_session_gw=") || !strings.Contains(sc, "max-age=900") || !strings.Contains(strings.ToLower(sc), "httponly") {
			t.Errorf("slid cookie %q", sc)
		}
	})
	t.Run("over", func(t *testing.T) {
		tg := newTestGateway(t, true, nil)
		tg.store.touchErr = ErrSessionOver
		cookie := "wr_session_gw=" + tg.session("v1", time.Now().Add(-time.Hour)) + "; wr_visitor=cred-v1"
		resp, _ := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie))
		if resp.StatusCode != 302 {
			t.Fatalf("status %d, want 302", resp.StatusCode)
		}
		if sc := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(sc, "wr_session_gw=;") || !strings.Contains(sc, "expires=") {
			t.Errorf("an ended session's cookie not cleared: %q", sc)
		}
	})
	t.Run("store down, fail closed", func(t *testing.T) {
		tg := newTestGateway(t, true, nil)
		tg.rooms = fakeRooms{failClosed: true}
		tg.store.touchErr = errors.New("connection refused")
		cookie := "wr_session_gw=" + tg.session("v1", time.Now().Add(-time.Hour)) + "; wr_visitor=cred-v1"
		resp, body := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie, "Accept", "application/json"))
		if resp.StatusCode != 503 || errorCode(body) != "unavailable" || resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("status %d, body %s", resp.StatusCode, body)
		}
	})
}

func TestCheckPasses(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	for _, uri := range []string{"/checkout/static/app.js", "/about"} {
		resp, _ := tg.do(t, forwarded(uri))
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d, want 200", uri, resp.StatusCode)
		}
		if _, ok := resp.Header["X-Waitroom-Room"]; !ok || resp.Header.Get("X-Waitroom-Room") != "" {
			t.Errorf("%s: X-Waitroom-Room %q, want present and empty", uri, resp.Header.Values("X-Waitroom-Room"))
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted bool
		req     *http.Request
		status  int
		code    string
	}{
		{"untrusted peer", false, forwarded("/checkout/cart"), 403, "untrusted_gateway"},
		{"untrusted nginx shape", false, func() *http.Request {
			r := httptest.NewRequest("GET", "/api/v1/check", nil)
			r.Header.Set("X-Original-URI", "/checkout/cart")
			return r
		}(), 403, "untrusted_gateway"},
		{"both shapes", true, forwarded("/checkout/cart", "X-Original-URI", "/about"), 403, "ambiguous_forward"},
		{"encoded slash", true, forwarded("/checkout%2Fcart"), 400, "invalid_path"},
		{"dot dot above root", true, forwarded("/../checkout/cart"), 400, "invalid_path"},
		{"unknown host", true, func() *http.Request {
			r := forwarded("/checkout/cart")
			r.Header.Set("X-Forwarded-Host", "evil.example.net")
			return r
		}(), 421, "unknown_host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTestGateway(t, tc.trusted, nil)
			resp, body := tg.do(t, tc.req)
			if resp.StatusCode != tc.status || errorCode(body) != tc.code {
				t.Fatalf("status %d body %s, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
		})
	}
}

func TestCheckUntrustedEnvoyShapeDecides(t *testing.T) {
	// Envoy states nothing in headers: an untrusted peer's own request is
	// decided as itself.
	tg := newTestGateway(t, false, nil)
	req := httptest.NewRequest("GET", "/api/v1/check/checkout/cart", nil)
	req.Host = "shop.example.com"
	req.Header.Set("Accept", "text/html")
	resp, _ := tg.do(t, req)
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), "/waitroom/?room=gw&") {
		t.Fatalf("status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

func TestCheckNginxAndJSON(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	req := httptest.NewRequest("GET", "/api/v1/check", nil)
	req.Host = "shop.example.com"
	req.Header.Set("X-Original-URI", "/checkout/cart")
	req.Header.Set("X-Original-Method", "GET")
	resp, _ := tg.do(t, req)
	if resp.StatusCode != 401 || resp.Header.Get("X-Waitroom-Room") != "gw" {
		t.Errorf("nginx: status %d, room %q; want 401 gw", resp.StatusCode, resp.Header.Get("X-Waitroom-Room"))
	}

	tg.store.statusOf = map[string]wire.State{"v3": {Room: "gw", Status: wire.StatusWaiting, NextPoll: 2500 * time.Millisecond}}
	resp, body := tg.do(t, forwarded("/checkout/cart", "Accept", "application/json", "X-Visitor", "cred-v3"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(body, `"status":"waiting"`) {
		t.Errorf("API client: status %d Retry-After %q body %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestCheckEnd(t *testing.T) {
	end := func(method string, withHeader bool, cookie string) *http.Request {
		r := forwardedTo("/api/v1/check-end", "/checkout/cart", "Cookie", cookie)
		r.Method = method
		if withHeader {
			r.Header.Set("X-Waitroom-End", "1")
		}
		return r
	}
	tg := newTestGateway(t, true, nil)
	cookie := "wr_session_gw=" + tg.session("v1", time.Now()) + "; wr_visitor=cred-v1"
	if resp, body := tg.do(t, end("GET", true, cookie)); resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: status %d %s", resp.StatusCode, body)
	}
	if resp, body := tg.do(t, end("POST", false, cookie)); resp.StatusCode != 403 || errorCode(body) != "not_gateway" {
		t.Errorf("no X-Waitroom-End: status %d %s", resp.StatusCode, body)
	}
	untrusted := newTestGateway(t, false, nil)
	if resp, body := untrusted.do(t, end("POST", true, cookie)); resp.StatusCode != 403 || errorCode(body) != "not_gateway" {
		t.Errorf("untrusted peer: status %d %s", resp.StatusCode, body)
	}
	if len(tg.store.ended)+len(untrusted.store.ended) != 0 {
		t.Fatal("a refused end-of-session call ended the session")
	}

	if resp, body := tg.do(t, end("POST", true, cookie)); resp.StatusCode != 204 {
		t.Fatalf("gateway's call: status %d %s", resp.StatusCode, body)
	}
	if len(tg.store.ended) != 1 || tg.store.ended[0].Visitor != "v1" {
		t.Fatalf("ended %+v", tg.store.ended)
	}
	// Revoked here at once: the same cookie no longer passes.
	resp, _ := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie))
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "wr_session_gw=;") {
		t.Errorf("after the end: status %d Set-Cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
}

func TestEndOwnSession(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	sess := tg.session("v1", time.Now())
	req := func(cred string) *http.Request {
		r := httptest.NewRequest("DELETE", "/api/v1/rooms/gw/session", nil)
		r.Header.Set("Cookie", "wr_session_gw="+sess)
		if cred != "" {
			r.Header.Set("X-Visitor", cred)
		}
		return r
	}
	for _, tc := range []struct {
		cred   string
		status int
		code   string
	}{{"", 401, "missing_visitor"}, {"junk", 401, "invalid_visitor"}, {"cred-v2", 403, "wrong_visitor"}} {
		if resp, body := tg.do(t, req(tc.cred)); resp.StatusCode != tc.status || errorCode(body) != tc.code {
			t.Errorf("credential %q: status %d %s, want %d %s", tc.cred, resp.StatusCode, body, tc.status, tc.code)
		}
	}
	if len(tg.store.ended) != 0 {
		t.Fatal("ended by another visitor")
	}
	resp, _ := tg.do(t, req("cred-v1"))
	if resp.StatusCode != 204 || len(tg.store.ended) != 1 || !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "wr_session_gw=;") {
		t.Errorf("own session: status %d, ended %d, Set-Cookie %q", resp.StatusCode, len(tg.store.ended), resp.Header.Get("Set-Cookie"))
	}
}

func TestEnter(t *testing.T) {
	tg := newTestGateway(t, false, nil)
	tg.store.admitted = map[string]time.Time{"v1": time.Now().Add(time.Hour)}
	enter := func(cred, ret string) *http.Request {
		r := httptest.NewRequest("GET", "/api/v1/rooms/gw/enter?return="+url.QueryEscape(ret), nil)
		r.Host = "shop.example.com"
		r.Header.Set("X-Visitor", cred)
		return r
	}
	if resp, body := tg.do(t, enter("cred-v1", "https://evil.example.net/")); resp.StatusCode != 400 || errorCode(body) != "invalid_return" {
		t.Errorf("foreign return URL: status %d %s", resp.StatusCode, body)
	}
	resp, _ := tg.do(t, enter("cred-v2", "/checkout/cart"))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/waitroom/?room=gw&return=%2Fcheckout%2Fcart" || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("not admitted: status %d Location %q Set-Cookie %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Set-Cookie"))
	}
	resp, _ = tg.do(t, enter("cred-v1", "/checkout/cart"))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/checkout/cart" {
		t.Fatalf("admitted: status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	raw, _, _ := strings.Cut(strings.TrimPrefix(resp.Header.Get("Set-Cookie"), "wr_session_gw="), ";")
	sess, err := tg.sessions.Parse(raw)
	if err != nil || sess.Room != "gw" || sess.Visitor != "v1" {
		t.Fatalf("session cookie %q: %+v %v", resp.Header.Get("Set-Cookie"), sess, err)
	}
	// The cookie it set passes the check with its visitor's credential.
	resp, body := tg.do(t, forwarded("/checkout/cart", "Cookie", "wr_session_gw="+raw+"; wr_visitor=cred-v1"))
	if resp.StatusCode != 403 || errorCode(body) != "untrusted_gateway" {
		t.Fatalf("untrusted check: status %d %s", resp.StatusCode, body)
	}
	req := httptest.NewRequest("GET", "/api/v1/check/checkout/cart", nil)
	req.Host = "shop.example.com"
	req.Header.Set("Cookie", "wr_session_gw="+raw+"; wr_visitor=cred-v1")
	if resp, body := tg.do(t, req); resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Visitor") != "v1" {
		t.Errorf("entered session: status %d %s", resp.StatusCode, body)
	}
}

func TestFeed(t *testing.T) {
	feed := &fakeFeed{down: true, msgs: make(chan string)}
	tg := newTestGateway(t, true, feed)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tg.Run(ctx) }()
	sess := tg.session("v1", time.Now())
	parsed, err := tg.sessions.Parse(sess)
	if err != nil {
		t.Fatal(err)
	}
	// An unbuffered send: Run's receiver has the message once it returns,
	// and Down was called before the feed reads any.
	feed.msgs <- parsed.Key() + " " + strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	feed.msgs <- "malformed"
	if !tg.Down() {
		t.Error("feed down not seen")
	}
	// Down, fail open: a request without a session passes, marked.
	resp, _ := tg.do(t, forwarded("/checkout/cart"))
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Fail-Open") != "1" {
		t.Errorf("fail open: status %d headers %v", resp.StatusCode, resp.Header)
	}
	if !tg.cache.Revoked(parsed.Key()) {
		t.Error("revocation from the feed not held")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDecideSession is the common path of the gateway: a valid
// session with its visitor's credential that needs no slide (two HMACs,
// the revocation cache and the room's settings in memory; no store).
func BenchmarkDecideSession(b *testing.B) {
	tg := newTestGateway(b, true, nil)
	cookies := map[string]string{"wr_session_gw": tg.session("v1", time.Now()), "wr_visitor": "cred-v1"}
	o := original{method: "GET", proto: "https", host: "shop.example.com", uri: "/checkout/a", path: "/checkout/a",
		header: func(string) string { return "" }, cookie: func(k string) string { return cookies[k] }}
	if v := tg.decide(context.Background(), &o); !v.pass || v.visitor != "v1" || v.cookie != nil {
		b.Fatalf("verdict %+v", v)
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := tg.decide(context.Background(), &o); !v.pass {
			b.Fatal("refused")
		}
	}
}

func TestCheckRouteToMissingRoom(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.rooms = fakeRooms{missing: true}
	cookie := "wr_session_gw=" + tg.session("v1", time.Now().Add(-time.Hour)) + "; wr_visitor=cred-v1"
	resp, body := tg.do(t, forwarded("/checkout/cart", "Cookie", cookie, "Accept", "application/json"))
	if resp.StatusCode != 503 || errorCode(body) != "room_not_found" || resp.Header.Get("X-Waitroom-Room") != "gw" {
		t.Fatalf("API client: status %d, body %s", resp.StatusCode, body)
	}
	resp, body = tg.do(t, forwarded("/checkout/cart", "Accept", "text/html"))
	if resp.StatusCode != 503 || !strings.Contains(string(body), `data-code="room_not_found"`) || resp.Header.Get("Location") != "" {
		t.Fatalf("browser: status %d, Location %q, body %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	if resp, _ := tg.do(t, forwarded("/checkout/static/app.css")); resp.StatusCode != 200 {
		t.Fatalf("a bypassed path: status %d", resp.StatusCode)
	}
}

func TestMissingRoomWarnedOncePerMinute(t *testing.T) {
	var m missingRooms
	start := time.Now()
	for i, tc := range []struct {
		room string
		at   time.Duration
		want bool
	}{
		{"a", 0, true}, {"a", time.Second, false}, {"b", time.Second, true},
		{"a", 59 * time.Second, false}, {"a", 61 * time.Second, true}, {"a", 62 * time.Second, false},
	} {
		if got := m.due(tc.room, start.Add(tc.at)); got != tc.want {
			t.Errorf("%d: due(%s, +%v) = %v, want %v", i, tc.room, tc.at, got, tc.want)
		}
	}
}
