package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/testlane"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
)

// What the check decides on, whatever the client sends: these tests put
// the examples' nginx, Caddy and Traefik (real processes) and the built-in
// proxy in front of apps, and send what an attacker would: forwarded
// headers of its own, other spellings of the Host and of the path, the
// gateway's own headers with underscores.

// gatewayKinds are the gateways every test here runs through: the real
// ones from examples/ and waitroom's built-in proxy.
var gatewayKinds = []string{"nginx", "caddy", "traefik", "proxy"}

// rawResponse is an answer read off a bare connection.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// rawRequest sends one request as written (the target is not cleaned or
// escaped, a # goes as is) to addr (host:port) and reads the answer.
func rawRequest(t *testing.T, addr, method, target string, hdr ...string) rawResponse {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", method, target)
	host := addr
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			host = hdr[i+1]
			continue
		}
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	fmt.Fprintf(&b, "Host: %s\r\nConnection: close\r\n", host)
	if method == "POST" {
		b.WriteString("Content-Length: 0\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		// Closed without an answer: refused, as far as the app goes.
		t.Logf("%s %s via %s: no answer (%v)", method, target, addr, err)
		return rawResponse{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func hostOf(u string) string {
	p, _ := url.Parse(u)
	return p.Host
}

// writeRoutes writes a routes file and returns its path.
func writeRoutes(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fronts starts one gateway of each kind in front of app (host:port):
// the real ones ask the check server wr (host:port); the built-in proxy is
// a waitroom of its own on srv with the same routes and -upstream app (no
// -trusted-proxies: it faces visitors). It returns kind -> host:port.
func fronts(t *testing.T, srv *redistest.Server, routes, wr, app string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kind := range gatewayKinds {
		if kind == "proxy" {
			ps := startServer(t, srv, "rueidis", func(c *config) {
				c.RoutesFile = routes
				c.Upstream = "http://" + app
			})
			out[kind] = hostOf(ps.URL)
			continue
		}
		out[kind] = hostOf(startGatewayProcess(t, kind, wr, app))
	}
	return out
}

// checkServer is the waitroom that nginx, Caddy and Traefik ask.
func checkServer(t *testing.T, srv *redistest.Server, routes string) *testServer {
	t.Helper()
	return startServer(t, srv, "rueidis", func(c *config) {
		c.RoutesFile = routes
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
		withAdmin(c)
	})
}

// TestGatewayForwardedHeaders: the check decides on the request the
// gateway forwards, whatever forwarded headers the client sends (issue 24,
// item 1); the gateway's own headers in underscore spelling never reach
// the app, and enter believes X-Forwarded-Host only from a trusted proxy
// (item 16).
func TestGatewayForwardedHeaders(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := writeRoutes(t, "routes:\n"+
		"  - {match: 'shop.example.com/checkout/*', room: gw}\n"+
		"  - {match: 'shop.example.com/api/cart', room: gw, methods: [POST]}\n")
	ts := checkServer(t, srv, routes)
	gws := fronts(t, srv, routes, hostOf(ts.URL), hostOf(up.URL))
	const shop = "shop.example.com"
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			addr := gws[kind]
			// Control: the guarded path without a session goes to the
			// waiting page, the unguarded one reaches the app.
			if r := rawRequest(t, addr, "GET", "/checkout/pay", "Host", shop, "Accept", "text/html"); r.status != 302 {
				t.Fatalf("control: %d %q", r.status, r.body)
			}
			if r := rawRequest(t, addr, "GET", "/about", "Host", shop); r.status != 200 || r.body != "page /about" {
				t.Fatalf("control /about: %d %q", r.status, r.body)
			}
			for _, tc := range []struct {
				method, target string
				hdr            []string
			}{
				{"GET", "/checkout/pay", []string{"X-Forwarded-Uri", "/"}},
				{"GET", "/checkout/pay", []string{"X-Forwarded-Uri", "/", "X-Forwarded-Method", "GET", "X-Forwarded-Host", "other.example"}},
				{"GET", "/checkout/pay", []string{"X-Forwarded-Host", "other.example"}},
				{"GET", "/checkout/pay", []string{"X-Original-URI", "/"}},
				{"GET", "/checkout/pay", []string{"X-Original-URI", "/", "X-Original-Method", "GET"}},
				{"POST", "/api/cart", []string{"X-Forwarded-Method", "GET"}},
				{"POST", "/api/cart", []string{"X-Original-Method", "GET"}},
				{"POST", "/api/cart", []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/api/cart"}},
			} {
				hdr := append([]string{"Host", shop, "Accept", "text/html"}, tc.hdr...)
				r := rawRequest(t, addr, tc.method, tc.target, hdr...)
				if r.status == 200 {
					t.Errorf("%s %s with %v passed: %q", tc.method, tc.target, tc.hdr, r.body)
				}
			}
			// The gateway's own headers, underscore spelling.
			r := rawRequest(t, addr, "GET", "/about", "Host", shop, "X_Waitroom_Visitor", "alice", "X_Waitroom_Room", "gw", "X-Waitroom-Visitor", "bob")
			if r.status != 200 {
				t.Fatalf("/about: %d", r.status)
			}
			up.mu.Lock()
			for k, v := range up.seen["/about"] {
				if n := strings.ToLower(strings.ReplaceAll(k, "_", "-")); strings.HasPrefix(n, "x-waitroom-") && strings.Join(v, "") != "" {
					t.Errorf("the app saw %s: %v", k, v)
				}
			}
			up.mu.Unlock()
			// enter's return URL: another host only if a trusted proxy
			// says the request was for it.
			r = rawRequest(t, addr, "GET", "/waitroom/api/v1/rooms/gw/enter?return="+url.QueryEscape("http://evil.example/x"),
				"Host", shop, "X-Forwarded-Host", "evil.example", "Accept", "application/json")
			if r.status != 400 || !strings.Contains(r.body, "invalid_return") {
				t.Errorf("enter with X-Forwarded-Host: %d %q", r.status, r.body)
			}
		})
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if n := up.calls["/checkout/pay"] + up.calls["/api/cart"]; n != 0 {
		t.Errorf("the app's guarded paths were reached %d times without a session", n)
	}
}

// TestCheckTrust: the check itself, asked directly: forwarded headers
// from a peer not in -trusted-proxies are refused, and so is a request
// in both nginx's and the X-Forwarded-* shape; enter ignores
// X-Forwarded-Host from an untrusted peer.
func TestCheckTrust(t *testing.T) {
	srv := redistest.StartReal(t)
	routes := "routes:\n  - {match: 'shop.example.com/checkout/*', room: gw}\n"
	untrusted := startServer(t, srv, "rueidis", func(c *config) { c.RoutesFile = writeRoutes(t, routes) })
	trusted := checkServer(t, srv, writeRoutes(t, routes))
	for _, h := range []string{"X-Forwarded-Uri", "X-Original-URI", "X-Forwarded-Host", "X-Forwarded-Method", "X-Original-Method"} {
		resp, body := checkReq(t, "GET", untrusted.URL+"/api/v1/check", map[string]string{"Host": "shop.example.com", h: "/"})
		if resp.StatusCode != 403 || !strings.Contains(body, `"untrusted_gateway"`) {
			t.Errorf("untrusted peer with %s: %d %s", h, resp.StatusCode, body)
		}
	}
	// Envoy's shape needs no forwarded header: it works from anyone.
	if resp, _ := checkReq(t, "GET", untrusted.URL+"/api/v1/check/checkout/pay", map[string]string{"Host": "shop.example.com", "Accept": "text/html"}); resp.StatusCode != 302 {
		t.Errorf("Envoy shape: %d", resp.StatusCode)
	}
	resp, body := checkReq(t, "GET", trusted.URL+"/api/v1/check", map[string]string{"Host": "shop.example.com",
		"X-Original-URI": "/checkout/pay", "X-Forwarded-Uri": "/"})
	if resp.StatusCode != 403 || !strings.Contains(body, `"ambiguous_forward"`) {
		t.Errorf("both shapes: %d %s", resp.StatusCode, body)
	}
	// nginx's shape wins over nothing: X-Forwarded-* are not read.
	resp, _ = checkReq(t, "GET", trusted.URL+"/api/v1/check", map[string]string{"Host": "shop.example.com", "X-Original-URI": "/checkout/pay"})
	if resp.StatusCode != 401 {
		t.Errorf("nginx shape: %d", resp.StatusCode)
	}
	ret := url.QueryEscape("http://evil.example/x")
	resp, body = checkReq(t, "GET", untrusted.URL+"/api/v1/rooms/gw/enter?return="+ret, map[string]string{"X-Forwarded-Host": "evil.example"})
	if resp.StatusCode != 400 || !strings.Contains(body, "invalid_return") {
		t.Errorf("enter, untrusted X-Forwarded-Host: %d %s", resp.StatusCode, body)
	}
	// From a trusted proxy the original host is believed (the redirect
	// then needs a visitor, which this request has not: not 400).
	resp, body = checkReq(t, "GET", trusted.URL+"/api/v1/rooms/gw/enter?return="+url.QueryEscape("http://other.example/x"), map[string]string{"X-Forwarded-Host": "other.example"})
	if resp.StatusCode == 400 && strings.Contains(body, "invalid_return") {
		t.Errorf("enter, trusted X-Forwarded-Host: %d %s", resp.StatusCode, body)
	}
}

// TestGatewayHosts: hosts are compared normalised, and a request for a
// host no route names is refused with 421 unknown_host, through every
// gateway (item 2).
func TestGatewayHosts(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := writeRoutes(t, "routes:\n  - {match: 'shop.example.com/checkout/*', room: gw}\nhosts: [www.example.com]\n")
	ts := checkServer(t, srv, routes)
	gws := fronts(t, srv, routes, hostOf(ts.URL), hostOf(up.URL))
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			addr := gws[kind]
			for _, host := range []string{"shop.example.com", "shop.example.com.", "SHOP.Example.COM", "shop.example.com:8000", "Shop.Example.Com.:8000"} {
				r := rawRequest(t, addr, "GET", "/checkout/pay", "Host", host, "Accept", "text/html")
				if r.status == 200 {
					t.Errorf("Host %q reached the app: %q", host, r.body)
				} else if r.status != 302 && r.status != 400 {
					// Some gateways refuse a malformed Host themselves
					// (400); a well-formed one goes to the waiting page.
					t.Errorf("Host %q: %d %q", host, r.status, r.body)
				}
			}
			for _, host := range []string{"127.0.0.1", addr, "other.example", "shop.example.com.evil"} {
				for _, p := range []string{"/checkout/pay", "/about"} {
					r := rawRequest(t, addr, "GET", p, "Host", host, "Accept", "application/json")
					if r.status != 421 || !strings.Contains(r.body, `"unknown_host"`) {
						t.Errorf("Host %q %s: %d %q, want 421 unknown_host", host, p, r.status, r.body)
					}
				}
			}
			if r := rawRequest(t, addr, "GET", "/checkout/pay", "Host", "127.0.0.1", "Accept", "text/html"); r.status != 421 ||
				!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, `data-code="unknown_host"`) {
				t.Errorf("a browser for an unknown host: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
			}
			// Allowed by the hosts list: passes (no route for it).
			if r := rawRequest(t, addr, "GET", "/checkout/pay", "Host", "WWW.example.com."); r.status != 200 {
				t.Errorf("a host of the hosts list: %d %q", r.status, r.body)
			}
		})
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if n := up.calls["/checkout/pay"]; n != len(gatewayKinds) {
		t.Errorf("the app's /checkout/pay was reached %d times, want %d (once per gateway, for the hosts list's host)", n, len(gatewayKinds))
	}
}

// pathApp is one of the three test apps (testdata/pathapp), running as a
// process of its own.
type pathApp struct {
	name, addr string
}

// hits is how many requests reached the app's checkout handler without
// the gateway's visitor header.
func (a pathApp) hits(t *testing.T) int {
	t.Helper()
	r := rawRequest(t, a.addr, "GET", "/__hits")
	n, err := strconv.Atoi(r.body)
	if err != nil {
		t.Fatalf("%s /__hits: %d %q", a.name, r.status, r.body)
	}
	return n
}

// startPathApp starts app "go", "python" or "node" on a free port.
func startPathApp(t *testing.T, name string) pathApp {
	t.Helper()
	testlane.Need(t, "the "+name+" app")
	dir, _ := filepath.Abs(filepath.Join("testdata", "pathapp"))
	port := strconv.Itoa(freeTCPPort(t))
	var cmd *exec.Cmd
	switch name {
	case "go":
		bin := filepath.Join(t.TempDir(), "pathapp")
		if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "main.go")).CombinedOutput(); err != nil {
			t.Fatalf("build the Go app: %v\n%s", err, out)
		}
		cmd = exec.Command(bin, port)
	case "python":
		cmd = exec.Command("python3", filepath.Join(dir, "app.py"), port)
	case "node":
		cmd = exec.Command("node", filepath.Join(dir, "app.js"), port)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s app: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	a := pathApp{name: name, addr: "127.0.0.1:" + port}
	waitfor.Until(t, 15*time.Second, name+" app listening", func() bool {
		select {
		case <-exited:
			t.Fatalf("%s app exited", name)
		default:
		}
		c, err := net.DialTimeout("tcp", a.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return a
}

// The spellings of /checkout/pay (guarded) that apps decode to it, or that
// hit a bypass rule written for other paths.
var guardedSpellings = []string{
	"/%63heckout/pay",
	"/checkout/static/%2e%2e/pay",
	"/checkout/static/..%2fpay",
	"/checkout/pay;.css",
	"/checkout/pay#.css",
	"/checkout/pay%23.css",
	"/checkout/pay%3b.css",
	"/checkout/pay%3B.css",
	"//checkout/pay",
	"/checkout/static/..;/pay",
	"/checkout/static/%2e%2e%2fpay",
	"/%2e%2e/checkout/pay",
	"/checkout%2fpay",
	"/checkout/pay%00.css",
	"/checkout/static\\..\\pay",
	"/checkout/static%5c..%5cpay",
	"/CHECKOUT/pay",
	"/Checkout/Static/app.css/../../pay",
}

func TestGatewayPathsGo(t *testing.T)     { testGatewayPaths(t, "go") }
func TestGatewayPathsPython(t *testing.T) { testGatewayPaths(t, "python") }
func TestGatewayPathsNode(t *testing.T)   { testGatewayPaths(t, "node") }

// testGatewayPaths: routes and bypass rules match the path as the app
// will see it; an ambiguous path is refused with 400 (item 3). Each
// spelling is sent straight to the app first, to show which reach its
// checkout handler, then through every gateway, where none may.
func testGatewayPaths(t *testing.T, name string) {
	srv := redistest.StartReal(t)
	app := startPathApp(t, name)
	routes := writeRoutes(t, "routes:\n  - {match: '*/checkout/*', room: gw}\nbypass:\n  paths: ['/checkout/static/*', '*.css']\n")
	ts := checkServer(t, srv, routes)
	direct := 0
	for _, p := range guardedSpellings {
		if r := rawRequest(t, app.addr, "GET", p); r.status == 200 && strings.HasPrefix(r.body, "checkout-handler") {
			direct++
		}
	}
	if got := app.hits(t); got != direct || direct < 5 {
		t.Fatalf("%s app: %d spellings reach its checkout handler directly (counted %d); the test needs several", name, direct, got)
	}
	t.Logf("%s app: %d of %d spellings reach its checkout handler when sent straight to it", name, direct, len(guardedSpellings))
	gws := fronts(t, srv, routes, hostOf(ts.URL), app.addr)
	for _, kind := range gatewayKinds {
		t.Run(kind, func(t *testing.T) {
			addr := gws[kind]
			before := app.hits(t)
			if r := rawRequest(t, addr, "GET", "/about"); r.status != 200 || r.body != "page /about" {
				t.Fatalf("/about: %d %q", r.status, r.body)
			}
			if r := rawRequest(t, addr, "GET", "/checkout/static/app.css"); r.status != 200 || r.body != "static /checkout/static/app.css" {
				t.Fatalf("bypassed: %d %q", r.status, r.body)
			}
			for _, p := range guardedSpellings {
				r := rawRequest(t, addr, "GET", p, "Accept", "application/json")
				if strings.HasPrefix(r.body, "checkout-handler") {
					t.Errorf("%s reached the checkout handler: %d %q", p, r.status, r.body)
				}
				t.Logf("%s %s: %d %.60q", kind, p, r.status, r.body)
			}
			// Ambiguous: refused with 400, by waitroom or the gateway
			// itself, or guarded (429) where the gateway rewrote the path
			// to a clean one before asking (Traefik cleans dot-segments
			// and forwards the clean path to the app too).
			for _, p := range []string{"/checkout%2fpay", "/about%2f..%2fcheckout/pay", "/x/%2e%2e/%2e%2e/checkout/pay"} {
				r := rawRequest(t, addr, "GET", p, "Accept", "application/json")
				if r.status != 400 && (kind != "traefik" || r.status != 429) {
					t.Errorf("%s: %d %q, want 400", p, r.status, r.body)
				}
			}
			// Case: routes ignore it, bypass patterns do not.
			if r := rawRequest(t, addr, "GET", "/CHECKOUT/pay", "Accept", "application/json"); r.status != 429 {
				t.Errorf("/CHECKOUT/pay: %d %q, want 429 (guarded)", r.status, r.body)
			}
			if r := rawRequest(t, addr, "GET", "/checkout/STATIC/app.js", "Accept", "application/json"); r.status != 429 {
				t.Errorf("/checkout/STATIC/app.js: %d %q, want 429 (not bypassed)", r.status, r.body)
			}
			if n := app.hits(t) - before; n != 0 {
				t.Errorf("%d requests reached the %s app's checkout handler through %s without a session", n, name, kind)
			}
		})
	}
}

// TestGatewayCheckEnd: only the gateway's own call ends a session through
// check-end: a browser's GET (what a link on another site makes it send),
// a POST without the header and anything through the waiting page's
// prefix leave it alone (item 10). The nginx recipe's own end call still
// works (TestGatewayNginx).
func TestGatewayCheckEnd(t *testing.T) {
	srv := redistest.StartReal(t)
	up := newUpstreamApp(t)
	routes := writeRoutes(t, "routes:\n  - {match: '*/*', room: gw}\n")
	ts := checkServer(t, srv, routes)
	base := startGatewayProcess(t, "nginx", hostOf(ts.URL), hostOf(up.URL))
	ctx := context.Background()
	victim := newBrowser(t, base)
	id := gatewayAdmit(t, ts, victim, "gw", base+"/x")
	alive := func(what string) {
		t.Helper()
		if _, _, ok, err := ts.q.Session(ctx, "gw", id); err != nil || !ok {
			t.Fatalf("%s ended the session (%v)", what, err)
		}
		if resp, body := victim.get("GET", "/x"); resp.StatusCode != 200 || body != "page /x" {
			t.Fatalf("after %s: %d %q", what, resp.StatusCode, body)
		}
	}
	alive("nothing")
	for _, m := range []string{"GET", "POST", "HEAD"} {
		resp, _ := victim.get(m, "/waitroom/api/v1/check-end")
		if resp.StatusCode == 204 {
			t.Errorf("%s /waitroom/api/v1/check-end: 204", m)
		}
		alive(m + " through the page prefix")
	}
	if resp, _ := victim.get("POST", "/waitroom/api/v1/check-end", "X-Waitroom-End", "1", "X-Original-URI", "/x"); resp.StatusCode == 204 {
		t.Error("POST with the header through the page prefix: 204")
	}
	alive("a POST with the header through the page prefix")
	if resp, _ := victim.get("GET", "/waitroom/api/v1/check", "X-Forwarded-Uri", "/x"); resp.StatusCode != 404 {
		t.Errorf("the check through the page prefix: %d", resp.StatusCode)
	}

	// Straight to waitroom, from the trusted peer, with the cookie.
	ck := "wr_session_gw=" + cookieValue(victim, "wr_session_gw") + "; " + visitorCookie + "=" + cookieValue(victim, visitorCookie)
	resp, body := checkReq(t, "GET", ts.URL+"/api/v1/check-end", map[string]string{"Cookie": ck, "X-Original-URI": "/x", "X-Waitroom-End": "1"})
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET check-end: %d %s", resp.StatusCode, body)
	}
	resp, body = checkReq(t, "POST", ts.URL+"/api/v1/check-end", map[string]string{"Cookie": ck, "X-Original-URI": "/x"})
	if resp.StatusCode != 403 || !strings.Contains(body, `"not_gateway"`) {
		t.Errorf("POST check-end without the header: %d %s", resp.StatusCode, body)
	}
	other := startServer(t, srv, "rueidis", func(c *config) { c.RoutesFile = routes })
	resp, body = checkReq(t, "POST", other.URL+"/api/v1/check-end", map[string]string{"Cookie": ck, "X-Original-URI": "/x", "X-Waitroom-End": "1"})
	if resp.StatusCode != 403 || !strings.Contains(body, `"not_gateway"`) {
		t.Errorf("POST check-end from a peer not in -trusted-proxies: %d %s", resp.StatusCode, body)
	}
	alive("the refused calls")
	// The gateway's call, as the recipe makes it, ends it.
	resp, body = checkReq(t, "POST", ts.URL+"/api/v1/check-end", map[string]string{"Cookie": ck, "X-Original-URI": "/x", "X-Original-Method": "GET", "X-Waitroom-End": "1"})
	if resp.StatusCode != 204 {
		t.Fatalf("the gateway's end call: %d %s", resp.StatusCode, body)
	}
	waitfor.Until(t, 5*time.Second, "the session ended", func() bool {
		_, _, ok, err := ts.q.Session(ctx, "gw", id)
		return err == nil && !ok
	})
}
