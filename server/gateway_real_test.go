package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/testlane"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// The gateways from the examples, as real processes: nginx (auth_request)
// and Caddy (forward_auth), each on a free port with examples/ templated
// to the test's ports, in front of a Go upstream that records headers,
// with waitroom on a real redis-server.

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// gatewayBin finds kind's binary: on PATH, or (Traefik, which Debian does
// not package) where make deps-traefik builds it.
func gatewayBin(t *testing.T, kind string) string {
	t.Helper()
	testlane.Need(t, kind)
	if bin, err := exec.LookPath(kind); err == nil {
		return bin
	}
	if kind == "traefik" {
		dir := os.Getenv("WAITROOM_BIN")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "waitroom", "bin")
		}
		if bin := filepath.Join(dir, "traefik"); fileExists(bin) {
			return bin
		}
	}
	t.Fatalf("%s is not installed (make deps installs it)", kind)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startGatewayProcess starts kind ("nginx", "caddy" or "traefik") with its example
// config, waitroom at wr and the app at app; it returns the base URL. A
// free port can be taken by another process before the gateway binds it:
// then it tries another.
func startGatewayProcess(t *testing.T, kind, wr, app string, replace ...string) string {
	t.Helper()
	for attempt := 0; ; attempt++ {
		base, err := tryGatewayProcess(t, kind, wr, app, replace...)
		if err == nil {
			return base
		}
		if attempt == 2 {
			t.Fatal(err)
		}
		t.Logf("%s did not start (%v); another port", kind, err)
	}
}

// replace are more old, new pairs for the configuration's text.
func tryGatewayProcess(t *testing.T, kind, wr, app string, replace ...string) (string, error) {
	t.Helper()
	bin := gatewayBin(t, kind)
	name := map[string]string{"nginx": "nginx.conf", "caddy": "Caddyfile", "traefik": "traefik.yml"}[kind]
	src, err := os.ReadFile(filepath.Join("..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	port := freeTCPPort(t)
	conf := strings.NewReplacer("127.0.0.1:8080", wr, "127.0.0.1:3000", app,
		"listen 8000;", fmt.Sprintf("listen 127.0.0.1:%d;", port),
		// The tests' room is gw: Traefik returns the cookies it is told of.
		"- wr_drop_session", "- wr_session_gw",
		":8000 {", fmt.Sprintf(":%d {\n\tbind 127.0.0.1", port)).Replace(string(src))
	conf = strings.NewReplacer(replace...).Replace(conf)
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmd *exec.Cmd
	switch kind {
	case "nginx":
		cmd = exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"),
			"-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+"; error_log "+filepath.Join(dir, "error.log")+";")
	case "traefik":
		// The example is the dynamic configuration; the static one is
		// flags, as its header comment shows.
		cmd = exec.Command(bin, fmt.Sprintf("--entryPoints.web.address=127.0.0.1:%d", port),
			"--providers.file.filename="+path, "--log.level=ERROR",
			"--global.checkNewVersion=false", "--global.sendAnonymousUsage=false")
		cmd.Env = append(os.Environ(), "HOME="+dir)
	default:
		cmd = exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir, "HOME="+dir)
	}
	out, _ := os.Create(filepath.Join(dir, "out.log"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	logs := func() string {
		l, _ := os.ReadFile(filepath.Join(dir, "out.log"))
		e, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return string(l) + string(e)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		out.Close()
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			out.Close()
			return "", fmt.Errorf("exited: %s", logs())
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("not listening on %s: %s", addr, logs())
		}
		// Not waitfor.Until: a proxy that exits or never listens is an
		// error the caller retries (on another port), not a failed test.
		time.Sleep(20 * time.Millisecond) // polling interval of a condition with a deadline
	}
	if kind == "traefik" {
		// Traefik listens before its file provider has loaded the
		// routers: until then every path is its own 404.
		if err := untilRouted(addr, exited, time.Now().Add(15*time.Second)); err != nil {
			stop()
			return "", fmt.Errorf("%v: %s", err, logs())
		}
	}
	select {
	case <-exited:
		// Another process held the port: what answered was not ours.
		out.Close()
		return "", fmt.Errorf("exited after its port answered: %s", logs())
	default:
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", kind, logs())
		}
	})
	return "http://" + addr, nil
}

// untilRouted waits until Traefik at addr routes /waitroom/healthz, and
// fails early if the process exits (its port was taken by another).
func untilRouted(addr string, exited <-chan struct{}, deadline time.Time) error {
	for {
		if resp, err := http.Get("http://" + addr + "/waitroom/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before routing")
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("no routers loaded in time")
		}
		time.Sleep(20 * time.Millisecond) // polling interval of a condition with a deadline
	}
}

// redisCalls is the total of commands redis-server has run (INFO
// commandstats), not counting this INFO; a later call counts it. HELLO,
// which every client (this one too) sends once per connection, is not
// counted; the client skips CLIENT SETINFO, so connecting adds nothing.
func redisCalls(t *testing.T, addr string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_hello:") {
			continue
		}
		if _, rest, ok := strings.Cut(line, "calls="); ok {
			v, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			total += v
		}
	}
	return total
}

// redisCalls counts the commands run between two calls, and its own INFO
// once: the connection it dials adds none.
func TestRealRedisCalls(t *testing.T) {
	srv := redistest.StartReal(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil { // the connection, dialled before counting
		t.Fatal(err)
	}
	before := redisCalls(t, srv.Addr)
	if d := redisCalls(t, srv.Addr) - before; d != 1 {
		t.Fatalf("nothing run between two counts: %d calls, want 1 (the first INFO)", d)
	}
	before = redisCalls(t, srv.Addr)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if d := redisCalls(t, srv.Addr) - before; d != 3 {
		t.Fatalf("SET and GET between two counts: %d calls, want 3", d)
	}
}

// stateOf polls the visitor's state through the gateway.
func stateOf(t *testing.T, b *browser, room string) map[string]any {
	t.Helper()
	resp, body := b.get("GET", "/waitroom/api/v1/rooms/"+room+"/status", "Accept", "application/json")
	if resp.StatusCode != 200 {
		t.Fatalf("status: %d %s", resp.StatusCode, body)
	}
	var st map[string]any
	_ = json.Unmarshal([]byte(body), &st)
	return st
}

// admittedNow waits until the visitor's state is admitted and its
// notBefore has passed.
func admittedNow(t *testing.T, b *browser, room string) {
	t.Helper()
	waitfor.Until(t, 20*time.Second, "admitted", func() bool {
		st := stateOf(t, b, room)
		if st["status"] != "admitted" {
			return false
		}
		nb, _ := time.Parse(time.RFC3339Nano, st["notBefore"].(string))
		return time.Now().After(nb)
	})
}

func TestGatewayNginx(t *testing.T) { testRealGateway(t, "nginx") }
func TestGatewayCaddy(t *testing.T) { testRealGateway(t, "caddy") }

// TestGatewayTraefik runs examples/traefik.yml in a real Traefik v3 (make
// deps-traefik builds it).
func TestGatewayTraefik(t *testing.T) { testRealGateway(t, "traefik") }

func testRealGateway(t *testing.T, kind string) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(routes, []byte("routes:\n  - {match: '*/checkout/*', room: gw}\nbypass:\n  paths: ['/checkout/static/*']\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, srv, "rueidis", func(c *config) {
		c.RoutesFile = routes
		// The test drives admission one tick at a time, and Redis sees no
		// tick loop while requests are counted.
		// Sessions slide every second (TTL/10), so the test sees one.
		c.TokenTTL = 10 * time.Second
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
		withAdmin(c)
	})
	ctx := context.Background()
	if err := ts.q.SetRoomConfig(ctx, "gw", settings.Room{Strategy: "max-active", MaxActive: 1}); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ts.URL)
	appURL, _ := url.Parse(up.URL)
	base := startGatewayProcess(t, kind, u.Host, appURL.Host)
	a, b := newBrowser(t, base), newBrowser(t, base)

	// Unprotected and bypassed paths pass and never touch Redis.
	before := redisCalls(t, srv.Addr)
	// The background (housekeeping every 2 s, about 17 commands; the
	// reports, the schedule and the webhook outbox) makes tens of calls
	// in a window of a few seconds on a busy machine; one call per
	// request would be n at least, so half of n tells the two apart.
	const n = 200
	for i := range n {
		p := "/about"
		if i%2 == 1 {
			p = "/checkout/static/app.js"
		}
		if resp, body := a.get("GET", p); resp.StatusCode != 200 || body != "page "+p {
			t.Fatalf("%s: %d %q", p, resp.StatusCode, body)
		}
	}
	d := redisCalls(t, srv.Addr) - before - 1 // the first INFO
	t.Logf("%d unprotected and bypassed requests: %d Redis calls (background included)", n, d)
	if d > n/2 {
		t.Fatalf("%d unprotected and bypassed requests made %d Redis calls", n, d)
	}
	if up.header("/about", "X-Waitroom-Room") != "" {
		t.Fatalf("an unprotected request reached the app with a room header %q", up.header("/about", "X-Waitroom-Room"))
	}

	// A protected path without a session: the waiting page.
	orig := base + "/checkout/page?x=1"
	resp, _ := a.get("GET", "/checkout/page?x=1")
	want := "/waitroom/?room=gw&return=" + url.QueryEscape(orig)
	// Relative, or absolute on the original host (the X-Forwarded-*
	// shape, which Traefik would otherwise resolve against the check).
	if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || loc != want && loc != base+want {
		t.Fatalf("without a session: %d %q, want 302 %q", resp.StatusCode, loc, want)
	}
	if resp, body := a.get("GET", want); resp.StatusCode != 200 || !strings.Contains(body, "waitroom.js") {
		t.Fatalf("waiting page: %d", resp.StatusCode)
	}
	resp, body := a.get("GET", "/checkout/page", "Accept", "application/json")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"type":"state"`) {
		t.Fatalf("API client: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}

	// Join, get admitted by the tick, enter, land on the original URL.
	if resp, body := a.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 {
		t.Fatalf("join: %d %s", resp.StatusCode, body)
	}
	if res := ts.admitTick(t, "gw"); len(res.Admitted) != 1 {
		t.Fatalf("the first tick admitted %d", len(res.Admitted))
	}
	admittedNow(t, a, "gw")
	resp, _ = a.get("GET", "/waitroom/api/v1/rooms/gw/enter?return="+url.QueryEscape(orig))
	if resp.StatusCode != 302 || resp.Header.Get("Location") != orig {
		t.Fatalf("enter: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	aID := strings.SplitN(cookieValue(a, visitorCookie), ".", 2)[0]
	before = redisCalls(t, srv.Addr)
	for range n {
		if resp, body := a.get("GET", "/checkout/page?x=1", "X-Waitroom-Visitor", "forged"); resp.StatusCode != 200 || body != "page /checkout/page" {
			t.Fatalf("with a session: %d %q", resp.StatusCode, body)
		}
	}
	d = redisCalls(t, srv.Addr) - before - 1
	t.Logf("%d requests with a valid session: %d Redis calls (background included)", n, d)
	if d > n/2 {
		t.Fatalf("%d requests with a valid session made %d Redis calls", n, d)
	}
	if r, v := up.header("/checkout/page", "X-Waitroom-Room"), up.header("/checkout/page", "X-Waitroom-Visitor"); r != "gw" || v != aID {
		t.Fatalf("the app saw room %q visitor %q, want gw %q", r, v, aID)
	}

	// A slid session's new cookie comes back through the gateway.
	first := cookieValue(a, "wr_session_gw")
	waitfor.Until(t, 10*time.Second, "a slid session cookie through "+kind, func() bool {
		if resp, _ := a.get("GET", "/checkout/page"); resp.StatusCode != 200 {
			t.Fatalf("with a session: %d", resp.StatusCode)
		}
		return cookieValue(a, "wr_session_gw") != first
	})

	// b waits while a holds the only slot, for several ticks.
	if resp, _ := b.get("POST", "/waitroom/api/v1/rooms/gw/join"); resp.StatusCode != 200 {
		t.Fatal("join b")
	}
	for range 3 {
		if res := ts.admitTick(t, "gw"); len(res.Admitted) != 0 {
			t.Fatalf("a tick admitted %d with a's slot held", len(res.Admitted))
		}
	}
	if st := stateOf(t, b, "gw"); st["status"] != "waiting" {
		t.Fatalf("b is %v with a's slot held", st["status"])
	}

	// The app ends a's session: the slot goes to b at the next tick.
	if kind == "nginx" {
		resp, body = a.get("POST", "/checkout/pay")
		if resp.StatusCode != 200 || body != "paid" || resp.Header.Get("Waitroom-Session") != "" {
			t.Fatalf("pay: %d %q %q", resp.StatusCode, body, resp.Header.Get("Waitroom-Session"))
		}
	} else {
		// Caddy cannot call waitroom after the response: the header is
		// stripped, and the visitor ends the session (as the app's page
		// would, with a fetch).
		resp, body = a.get("POST", "/checkout/pay")
		if resp.StatusCode != 200 || resp.Header.Get("Waitroom-Session") != "" {
			t.Fatalf("pay: %d %q %q", resp.StatusCode, body, resp.Header.Get("Waitroom-Session"))
		}
		if resp, body := a.get("DELETE", "/waitroom/api/v1/rooms/gw/session"); resp.StatusCode != 204 {
			t.Fatalf("end own session: %d %s", resp.StatusCode, body)
		}
	}
	// nginx calls waitroom after the response has gone (post_action).
	waitfor.Until(t, 10*time.Second, "a's session ended", func() bool {
		_, _, ok, err := ts.q.Session(ctx, "gw", aID)
		return err == nil && !ok
	})
	if res := ts.admitTick(t, "gw"); len(res.Admitted) != 1 {
		t.Fatalf("the next tick admitted %d, want b", len(res.Admitted))
	}
	admittedNow(t, b, "gw")
	if resp, _ := a.get("GET", "/checkout/page"); resp.StatusCode != 302 {
		t.Fatalf("a after its session ended: %d", resp.StatusCode)
	}
	resp, _ = b.get("GET", "/waitroom/api/v1/rooms/gw/enter?return="+url.QueryEscape(base+"/checkout/b"))
	if resp.StatusCode != 302 {
		t.Fatalf("b enter: %d", resp.StatusCode)
	}
	if resp, body := b.get("GET", "/checkout/b"); resp.StatusCode != 200 || body != "page /checkout/b" {
		t.Fatalf("b with a session: %d %q", resp.StatusCode, body)
	}
}

// admitTick runs the admission of room's next tick (waiting for a tick
// not taken yet) and returns what it did.
func (ts *testServer) admitTick(t *testing.T, room string) queue.Result {
	t.Helper()
	var res queue.Result
	waitfor.Until(t, 5*time.Second, "a tick", func() bool {
		var err error
		if res, err = ts.q.Admit(context.Background(), room); err != nil {
			t.Fatal(err)
		}
		return res.Taken
	})
	return res
}
