package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

var clientKinds = []string{"rueidis", "go-redis"}

const testSecret = "test-secret-0123456789abcdef"

type testServer struct {
	*server
	srv       *redistest.Server // the real Redis it runs on; nil for the embedded one
	URL       string
	done      chan error
	stop      context.CancelFunc
	listeners []opsListener // its operations listeners (-ops-addr, -metrics-addr)
}

// startServer runs an in-process server on a free port against srv (nil =
// embedded). Admission is driven by the test (manualAdmission).
func startServer(tb testing.TB, srv *redistest.Server, client string, mutate func(*config)) *testServer {
	tb.Helper()
	return launchServer(tb, srv, client, testLog(), manualAdmission(), mutate)
}

// startServerOpts is startServer with opts instead of manualAdmission:
// &serverOptions{} runs the admission loop as production does.
func startServerOpts(tb testing.TB, srv *redistest.Server, client string, opts *serverOptions, mutate func(*config)) *testServer {
	tb.Helper()
	return launchServer(tb, srv, client, testLog(), opts, mutate)
}

// startServerWithLog is startServer logging to log.
func startServerWithLog(tb testing.TB, srv *redistest.Server, client string, log *slog.Logger, mutate func(*config)) *testServer {
	tb.Helper()
	return launchServer(tb, srv, client, log, manualAdmission(), mutate)
}

// manualAdmission is the tests' default server options: no admission
// loop, the test calls Admit.
func manualAdmission() *serverOptions { return &serverOptions{NoTick: true} }

// testLog logs warnings to stderr, everything with WAITROOM_TEST_LOG set.
func testLog() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("WAITROOM_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// launchServer starts a server built with opts and the test flags changed
// by mutate, and stops it when the test ends.
func launchServer(tb testing.TB, srv *redistest.Server, client string, log *slog.Logger, opts *serverOptions, mutate func(*config)) *testServer {
	tb.Helper()
	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-redis-client", client, "-secret", testSecret, "-shutdown-timeout", "5s", "-drain-window", "200ms"}, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	if srv != nil {
		cfg.Redis = srv.URL()
	}
	cfg.OpenRooms = true // tests that need rooms to exist turn it off
	cfg.Demo = true      // many tests order; TestNoDemo turns it off
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.validate(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := newServer(ctx, cfg, opts, log)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	ops, err := s.listenOps() // -ops-addr, -metrics-addr as the test set them
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	ts := &testServer{server: s, srv: srv, URL: "http://" + ln.Addr().String(), done: make(chan error, 1), stop: cancel, listeners: ops}
	go func() { ts.done <- s.run(ctx, ln, ops...) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-ts.done:
			if err != nil {
				tb.Errorf("server run: %v", err)
			}
		case <-time.After(15 * time.Second):
			tb.Errorf("server did not shut down in time")
		}
	})
	ts.waitReadyz(tb, 5*time.Second, 200)
	return ts
}

// waitReadyz waits until /readyz answers code (under the gateway page's
// prefix with -upstream, where the root is the app's).
func (ts *testServer) waitReadyz(tb testing.TB, within time.Duration, code int) {
	tb.Helper()
	path := "/readyz"
	if ts.cfg.Upstream != "" {
		path = ts.gw.Page() + "readyz"
	}
	waitfor.Until(tb, within, fmt.Sprintf("readyz %d", code), func() bool {
		resp, err := noKeepAlive.Get(ts.URL + path)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == code
	})
}

// noKeepAlive is an HTTP client that leaves no idle connection behind.
var noKeepAlive = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// eachServer runs f against a server on a real redis-server with rueidis,
// the default client. go-redis and the embedded Redis are held to the
// same answers by TestServerParity (parity_test.go), not by every test.
func eachServer(t *testing.T, mutate func(*config), f func(t *testing.T, ts *testServer)) {
	eachRedis(t, func(t *testing.T, srv *redistest.Server, client string) {
		f(t, startServer(t, srv, client, mutate))
	})
}

// eachRedis runs f with a real redis-server and rueidis, for a test that
// starts its servers itself.
func eachRedis(t *testing.T, f func(t *testing.T, srv *redistest.Server, client string)) {
	t.Run("real/rueidis", func(t *testing.T) {
		f(t, redistest.StartReal(t), "rueidis")
	})
}

// visitor is an HTTP client with its own cookie jar, like one browser.
type visitor struct {
	tb   testing.TB
	base string
	http *http.Client
	cred string
}

func newVisitor(tb testing.TB, base string) *visitor {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{}}
	tb.Cleanup(c.CloseIdleConnections)
	return &visitor{tb: tb, base: base, http: c}
}

type reply struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r reply) str(k string) string { s, _ := r.Body[k].(string); return s }
func (r reply) num(k string) int64  { f, _ := r.Body[k].(float64); return int64(f) }
func (r reply) errCode() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (v *visitor) do(method, path, body string, hdr ...string) reply {
	v.tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, v.base+path, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := v.http.Do(req)
	if err != nil {
		v.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Code: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			v.tb.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return r
}

func (v *visitor) join(room string) reply {
	v.tb.Helper()
	r := v.do("POST", "/api/v1/rooms/"+room+"/join", "")
	if r.Code != 200 {
		v.tb.Fatalf("join: %d %s", r.Code, r.Raw)
	}
	v.cred = r.str("visitor")
	return r
}

func (v *visitor) status(room string) reply {
	v.tb.Helper()
	return v.do("GET", "/api/v1/rooms/"+room+"/status", "")
}

// admitUntil drives admission for room until the visitor is admitted.
func (ts *testServer) admitUntil(tb testing.TB, v *visitor, room string) reply {
	tb.Helper()
	var r reply
	waitfor.Until(tb, 10*time.Second, "admission", func() bool {
		if _, err := ts.q.Admit(context.Background(), room); err != nil {
			tb.Fatal(err)
		}
		ts.visit.Polls().Forget(room, strings.SplitN(v.cred, ".", 2)[0])
		r = v.status(room)
		return r.str("status") == "admitted"
	})
	return r
}

func TestConfig(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := parseConfig(nil, env(map[string]string{"WAITROOM_BATCH": "500", "WAITROOM_TICK": "50ms"}))
	if err != nil || cfg.Capacity.Batch != 500 || cfg.Capacity.Tick != 50*time.Millisecond {
		t.Fatalf("env fallback: %+v %v", cfg.Capacity, err)
	}
	cfg, err = parseConfig([]string{"-batch", "7"}, env(map[string]string{"WAITROOM_BATCH": "500"}))
	if err != nil || cfg.Capacity.Batch != 7 {
		t.Fatalf("flag over env: %v %v", cfg.Capacity.Batch, err)
	}
	cfg, _ = parseConfig(nil, env(nil))
	if cfg.Capacity.BatchSize() != 14 {
		t.Fatalf("default batch %d", cfg.Capacity.BatchSize())
	}
	// Token records are kept for recent visitors, not for everyone ever seen.
	if cfg.TokenKeep <= 0 || cfg.TokenKeep > cfg.TokenMax {
		t.Fatalf("default -token-retention %v: want positive and no longer than -token-max %v", cfg.TokenKeep, cfg.TokenMax)
	}
	if cfg, err = parseConfig([]string{"-token-retention", "0s"}, env(nil)); err != nil || cfg.TokenKeep != 0 {
		t.Fatalf("-token-retention 0s: %v %v", cfg.TokenKeep, err)
	}
	for _, args := range [][]string{
		{"-redis", "redis://127.0.0.1:6379"},
		{"-redis", "http://x", "-secret", testSecret},
		{"-redis-client", "jedis"},
		{"-safety", "1.5"},
		{"-db-pool", "0"},
		{"-tick", "0s"},
		{"-secret", "short"},
		{"-addr", "nope"},
		{"-token-ttl", "10ms"},
		{"-token-retention", "-1s"},
		{"-join-rate", "-1"},
		{"-join-burst", "0"},
		{"-trusted-proxies", "10.0.0.0/99"},
		{"-webhook-allow-cidrs", "10.0.0.0/99"},
		{"-webhook-allow-cidrs", "localhost"},
		{"-metrics-addr", "9100"},
		{"-bogus"},
		{"extra"},
	} {
		if _, err := parseConfig(args, env(nil)); err == nil {
			t.Errorf("%v accepted", args)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error is not one line: %q", args, err)
		}
	}
	// Webhooks reach no internal address unless the operator lists it.
	if cfg, err := parseConfig(nil, env(nil)); err != nil || len(cfg.WebhookAllow) != 0 {
		t.Fatalf("default -webhook-allow-cidrs: %v %v", cfg.WebhookAllow, err)
	}
	cfg, err = parseConfig(nil, env(map[string]string{"WAITROOM_WEBHOOK_ALLOW_CIDRS": "10.1.2.0/24, ::1"}))
	if err != nil || fmt.Sprint(cfg.WebhookAllow) != "[10.1.2.0/24 ::1/128]" {
		t.Fatalf("WAITROOM_WEBHOOK_ALLOW_CIDRS: %v %v", cfg.WebhookAllow, err)
	}
	if _, err := parseConfig(nil, env(map[string]string{"WAITROOM_DB_POOL": "many"})); err == nil {
		t.Error("bad env accepted")
	}
}

func TestVersionFlag(t *testing.T) {
	cfg, err := parseConfig([]string{"-version", "-addr", "not-an-address"}, func(string) string { return "" })
	if err != nil || !cfg.ShowVersion {
		t.Fatalf("-version: %+v, %v; want ShowVersion and no validation", cfg.ShowVersion, err)
	}
	var b strings.Builder
	printVersion(&b, build{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26"})
	if got, want := b.String(), "waitroom v1.2.3 (commit abc, go1.26)\n"; got != want {
		t.Fatalf("printVersion = %q, want %q", got, want)
	}
	bi := buildInfo()
	if bi.Version == "" || bi.Revision == "" || bi.GoVersion == "" {
		t.Fatalf("buildInfo has an empty part: %+v", bi)
	}
}

func TestLogFormat(t *testing.T) {
	if _, err := parseConfig([]string{"-log-format", "yaml"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "-log-format") {
		t.Fatalf("-log-format yaml: %v, want an error naming the flag", err)
	}
	cfg, err := parseConfig([]string{"-log-format", "json"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	newLogger(&b, cfg).Info("hello", "room", "drop")
	var line map[string]any
	if err := json.Unmarshal([]byte(b.String()), &line); err != nil || line["msg"] != "hello" || line["room"] != "drop" {
		t.Fatalf("json log line %q: %v", b.String(), err)
	}
}

func TestBannerPage(t *testing.T) {
	if got := bannerPage("/", true, nil); got != "?room=demo" {
		t.Errorf("open rooms: %q", got)
	}
	if got := bannerPage("/", false, []string{"zeta", "drop"}); got != "?room=drop" {
		t.Errorf("rooms: %q", got)
	}
	if got := bannerPage("/", false, nil); strings.Contains(got, "demo") {
		t.Errorf("no rooms: %q advertises a room that does not exist", got)
	}
	if got := bannerPage("/waitroom/", false, nil); !strings.Contains(got, " /waitroom/admin ") {
		t.Errorf("no rooms, with -upstream: %q does not point at /waitroom/admin", got)
	}
}

func TestVersionNotFromEnvironment(t *testing.T) {
	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0"}, func(k string) string {
		if k == "WAITROOM_VERSION" {
			return "1.4.2" // a deployment's own label
		}
		return ""
	})
	if err != nil || cfg.ShowVersion {
		t.Fatalf("WAITROOM_VERSION set -version: %v, %v", cfg.ShowVersion, err)
	}
}

func TestProductionGuards(t *testing.T) {
	env := func(string) string { return "" }
	cfg, err := parseConfig([]string{"-redis", "redis://127.0.0.1:1", "-secret", testSecret}, env)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "-admin-key (WAITROOM_ADMIN_KEY)") || !strings.Contains(err.Error(), "-admin-keys (WAITROOM_ADMIN_KEYS)") {
		t.Fatalf("-redis without an admin key: %v, want the guard naming both flags and variables", err)
	}
	for _, args := range [][]string{
		{"-redis", "redis://127.0.0.1:1", "-secret", testSecret, "-admin-key", testAdminKey},
		{}, // the embedded Redis: one instance, its invented key is printed
	} {
		cfg, err := parseConfig(args, env)
		if err != nil {
			t.Fatal(err)
		}
		if err := productionGuards(cfg); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

func TestRouteToMissingRoomRefused(t *testing.T) {
	env := func(string) string { return "" }
	cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-route", "{match: '*/checkout/*', room: nowhere}"}, env)
	if err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), `room "nowhere"`) || !strings.Contains(err.Error(), "-open-rooms") {
		t.Fatalf("a route to a room nobody made: %v, want a start-up error naming the room", err)
	}

	// A room the rooms file declares is there before any route is served.
	dir := t.TempDir()
	rooms := dir + "/rooms.yaml"
	if err := os.WriteFile(rooms, []byte("rooms:\n  nowhere:\n    batch: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.RoomsFile = rooms
	s, err := newServer(context.Background(), cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.redis.Close()
	if err := s.routesNameRooms(context.Background()); err != nil {
		t.Fatalf("room from the rooms file: %v", err)
	}
}
