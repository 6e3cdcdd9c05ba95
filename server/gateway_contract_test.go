package main

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/settings"
)

// Traefik and Envoy are not packaged here: these tests send
// /api/v1/check the requests their documentation says they send, and
// check the answers they act on.

func checkReq(t *testing.T, method, u string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var noRedirect = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// gatewayServer runs waitroom with one protected route and returns a valid
// session cookie value for room gw and the credential of its visitor.
func gatewayServer(t *testing.T, srv *redistest.Server, mutate func(*config)) (*testServer, string, string) {
	t.Helper()
	ts := startServer(t, srv, "rueidis", func(c *config) {
		c.Routes = []string{"{match: 'shop.example.com/checkout/*', room: gw}", "{match: 'shop.example.com/api/cart', room: gw, methods: [POST]}"}
		// The test is the gateway: its forwarded headers count.
		c.TrustedProxies, _ = limit.ParseProxies("127.0.0.1/32")
		if mutate != nil {
			mutate(c)
		}
	})
	b := newBrowser(t, ts.URL)
	gatewayAdmit(t, ts, b, "gw", ts.URL+"/checkout/x")
	return ts, cookieValue(b, "wr_session_gw"), cookieValue(b, visitorCookie)
}

// TestCheckTraefik: Traefik's ForwardAuth sends GET to the address with the
// original request's headers (Cookie, Accept) and X-Forwarded-Method,
// -Proto, -Host, -Uri and -For. A 2xx passes (authResponseHeaders copy the
// room and visitor onto the request; addAuthCookiesToResponse the slid
// cookie); any other answer goes to the visitor as is.
func TestCheckTraefik(t *testing.T) {
	ts, session, cred := gatewayServer(t, nil, nil)
	traefik := func(method, uri, accept, cookie string) (*http.Response, string) {
		h := map[string]string{
			"X-Forwarded-Method": method, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "shop.example.com",
			"X-Forwarded-Uri": uri, "X-Forwarded-For": "203.0.113.9", "Accept": accept, "User-Agent": "Mozilla/5.0",
		}
		if cookie != "" {
			h["Cookie"] = "wr_session_gw=" + cookie + "; wr_visitor=" + cred
		}
		return checkReq(t, "GET", ts.URL+"/api/v1/check", h)
	}
	const page = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	resp, _ := traefik("GET", "/checkout/pay?x=1", page, "")
	// Absolute: Traefik resolves a relative Location against the check's
	// address.
	want := "https://shop.example.com/waitroom/?room=gw&return=" + url.QueryEscape("https://shop.example.com/checkout/pay?x=1")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Fatalf("browser: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	resp, body := traefik("GET", "/checkout/pay", "application/json", "")
	// The API client is put in the queue on the spot: its retry keeps
	// the place.
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"status":"waiting"`) || resp.Header.Get("X-Visitor") == "" {
		t.Fatalf("API client: %d %s", resp.StatusCode, body)
	}
	resp, _ = traefik("GET", "/about", page, "")
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "" {
		t.Fatalf("unprotected: %d %q", resp.StatusCode, resp.Header.Get("X-Waitroom-Room"))
	}
	resp, _ = traefik("GET", "/api/cart", page, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET on a POST-only route: %d", resp.StatusCode)
	}
	if resp, _ = traefik("POST", "/api/cart", page, ""); resp.StatusCode != 302 {
		t.Fatalf("POST on a POST-only route: %d", resp.StatusCode)
	}
	resp, _ = traefik("GET", "/checkout/pay", page, session)
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "gw" || resp.Header.Get("X-Waitroom-Visitor") == "" {
		t.Fatalf("with a session: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ = traefik("GET", "/checkout/pay", page, session+"x"); resp.StatusCode != 302 || !strings.Contains(resp.Header.Get("Set-Cookie"), "wr_session_gw=;") {
		t.Fatalf("forged session: %d %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
}

// TestCheckEnvoy: Envoy's ext_authz HTTP service sends the original method
// and path behind path_prefix (/api/v1/check), the original Host, and the
// headers allowed by authorization_request (cookie, accept,
// x-forwarded-proto, x-forwarded-for), with no body. 200 passes
// (allowed_upstream_headers copy the room and visitor); any other status
// is the denied response, with allowed_client_headers (Location,
// Retry-After, Set-Cookie) and the body.
func TestCheckEnvoy(t *testing.T) {
	ts, session, cred := gatewayServer(t, nil, nil)
	envoy := func(method, path, accept, cookie string) (*http.Response, string) {
		h := map[string]string{"Host": "shop.example.com", "Accept": accept, "X-Forwarded-Proto": "https",
			"X-Forwarded-For": "203.0.113.9", "Content-Length": "0", "X-Envoy-Expected-Rq-Timeout-Ms": "2000"}
		if cookie != "" {
			h["Cookie"] = "wr_session_gw=" + cookie + "; wr_visitor=" + cred
		}
		return checkReq(t, method, ts.URL+"/api/v1/check"+path, h)
	}
	resp, _ := envoy("GET", "/checkout/pay?x=1", "text/html", "")
	want := "/waitroom/?room=gw&return=" + url.QueryEscape("https://shop.example.com/checkout/pay?x=1")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != want {
		t.Fatalf("browser: %d %q, want %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	if resp, body := envoy("GET", "/checkout/pay", "application/json", ""); resp.StatusCode != 429 || !strings.Contains(body, `"type":"state"`) {
		t.Fatalf("API client: %d %s", resp.StatusCode, body)
	}
	if resp, _ := envoy("POST", "/api/cart", "text/html", ""); resp.StatusCode != 302 {
		t.Fatalf("POST on a POST-only route: %d", resp.StatusCode)
	}
	if resp, _ := envoy("DELETE", "/api/cart", "text/html", ""); resp.StatusCode != 200 {
		t.Fatalf("DELETE on a POST-only route: %d", resp.StatusCode)
	}
	if resp, _ := envoy("GET", "/", "text/html", ""); resp.StatusCode != 200 {
		t.Fatalf("the root: %d", resp.StatusCode)
	}
	resp, _ = envoy("POST", "/checkout/pay", "text/html", session)
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "gw" {
		t.Fatalf("with a session: %d %v", resp.StatusCode, resp.Header)
	}
}

// TestCheckEnvoyBusy is TestCheckEnvoy in a room with activation busy, with
// only what examples/envoy.yaml hands on: the check sees the headers of
// allowed_headers, and on a pass the client gets only those of
// allowed_client_headers_on_success (set-cookie, x-waitroom-session,
// x-visitor). Under the threshold a fresh browser and a fresh API client
// pass in that one call and their next requests pass with what they were
// given; at the threshold the next ones queue.
func TestCheckEnvoyBusy(t *testing.T) {
	ts, _, _ := gatewayServer(t, nil, nil) // its visitor holds one slot
	setRoom(t, ts, "gw", settings.Room{Strategy: "max-active", MaxActive: 3, Activation: settings.ActivationBusy})
	allowed := []string{"Cookie", "Accept", "X-Visitor", "X-Waitroom-Session"}
	onSuccess := []string{"Set-Cookie", "X-Waitroom-Session", "X-Visitor"}
	envoy := func(accept string, hdr ...string) *http.Response {
		t.Helper()
		h := map[string]string{"Host": "shop.example.com", "Accept": accept, "X-Forwarded-Proto": "https",
			"X-Forwarded-For": "203.0.113.9", "Content-Length": "0", "X-Envoy-Expected-Rq-Timeout-Ms": "2000"}
		for i := 0; i+1 < len(hdr); i += 2 {
			if !slices.Contains(allowed, hdr[i]) {
				t.Fatalf("Envoy would not send %s", hdr[i])
			}
			h[hdr[i]] = hdr[i+1]
		}
		resp, _ := checkReq(t, "GET", ts.URL+"/api/v1/check/checkout/pay", h)
		return resp
	}
	// passed is what Envoy hands the client of a pass: the cookies to
	// keep and the headers an API client sends back.
	passed := func(resp *http.Response) (cookies string, back map[string]string) {
		t.Helper()
		if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "gw" {
			t.Fatalf("pass: %d %v", resp.StatusCode, resp.Header)
		}
		back = map[string]string{}
		for _, k := range onSuccess[1:] {
			back[k] = resp.Header.Get(k)
		}
		var jar []string
		for _, c := range resp.Cookies() {
			jar = append(jar, c.Name+"="+c.Value)
		}
		return strings.Join(jar, "; "), back
	}

	cookies, _ := passed(envoy("text/html"))
	if !strings.Contains(cookies, "wr_session_gw=") || !strings.Contains(cookies, visitorCookie+"=") {
		t.Fatalf("a fresh browser's pass set %q", cookies)
	}
	passed(envoy("text/html", "Cookie", cookies))
	_, back := passed(envoy("application/json"))
	if back["X-Waitroom-Session"] == "" || back["X-Visitor"] == "" {
		t.Fatalf("a fresh API client's pass gave %v", back)
	}
	passed(envoy("application/json", "X-Waitroom-Session", back["X-Waitroom-Session"], "X-Visitor", back["X-Visitor"]))

	// Three slots held: the next ones queue.
	if resp := envoy("text/html"); resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), "/waitroom/?room=gw") {
		t.Fatalf("a browser at the threshold: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	h := map[string]string{"Host": "shop.example.com", "Accept": "application/json", "X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
	if resp, body := checkReq(t, "GET", ts.URL+"/api/v1/check/checkout/pay", h); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, `"status":"waiting"`) || !strings.Contains(body, `"links"`) {
		t.Fatalf("an API client at the threshold: %d %s", resp.StatusCode, body)
	}
}

// TestCheckSlides: a session slides at most once per interval, with a new
// cookie carrying the later expiry; its end (here by the admin) is seen by
// the check at once.
func TestCheckSlides(t *testing.T) {
	// A slide interval of 1 s (TTL/10) leaves a busy machine room to ask
	// twice within one.
	ts, session, cred := gatewayServer(t, nil, func(c *config) { c.TokenTTL = 10 * time.Second; withAdmin(c) })
	check := func(cookie string) *http.Response {
		resp, _ := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{"X-Forwarded-Host": "shop.example.com",
			"X-Forwarded-Uri": "/checkout/a", "Cookie": "wr_session_gw=" + cookie + "; wr_visitor=" + cred, "Accept": "text/html"})
		return resp
	}
	old, _ := ts.gw.Sessions().Parse(session)
	var slid string
	waitfor.Until(t, 10*time.Second, "a slide", func() bool {
		resp := check(session)
		if resp.StatusCode != 200 {
			t.Fatalf("session refused: %d", resp.StatusCode)
		}
		for _, c := range resp.Cookies() {
			if c.Name == "wr_session_gw" && c.Value != "" {
				slid = c.Value
			}
		}
		return slid != ""
	})
	s, err := ts.gw.Sessions().Parse(slid)
	if err != nil || !s.ExpiresAt.After(old.ExpiresAt) || !s.NotBefore.Equal(old.NotBefore) {
		t.Fatalf("slid %+v from %+v (%v)", s, old, err)
	}
	if resp := check(session); len(resp.Cookies()) != 0 {
		t.Fatal("slid twice in one interval")
	}
	ar := newVisitor(t, ts.URL).do("DELETE", "/api/v1/admin/rooms/gw/sessions/"+s.Visitor, "", "Authorization", "Bearer "+testAdminKey)
	if ar.Code != 204 {
		t.Fatalf("admin end: %d %s", ar.Code, ar.Raw)
	}
	if resp := check(slid); resp.StatusCode != 302 {
		t.Fatalf("after its end: %d", resp.StatusCode)
	}
}

// TestCheckFailMode: while Redis is down, a valid session still passes (it
// is checked in memory); a request without one follows the room's fail
// mode: open lets it through the room's limiter, closed refuses it.
func TestCheckFailMode(t *testing.T) {
	for _, mode := range []string{settings.FailOpen, settings.FailClosed} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.StartReal(t)
			ts, session, cred := gatewayServer(t, srv, func(c *config) { c.FailMode = mode })
			check := func(cookie string) *http.Response {
				resp, _ := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{"X-Forwarded-Host": "shop.example.com",
					"X-Forwarded-Uri": "/checkout/a", "Cookie": "wr_session_gw=" + cookie + "; wr_visitor=" + cred, "Accept": "text/html"})
				return resp
			}
			srv.Stop()
			waitfor.Until(t, 15*time.Second, "the revocation feed down", func() bool { return ts.gw.Down() })
			if resp := check(session); resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "gw" {
				t.Fatalf("valid session while Redis is down: %d", resp.StatusCode)
			}
			resp := check("")
			switch mode {
			case settings.FailOpen:
				if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Fail-Open") != "1" {
					t.Fatalf("open: %d", resp.StatusCode)
				}
			default:
				if resp.StatusCode != 503 {
					t.Fatalf("closed: %d", resp.StatusCode)
				}
			}
		})
	}
}
