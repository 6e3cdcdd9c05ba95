package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeEdge signs an edge session as "edge|room|visitor|credential|until".
type fakeEdge struct{}

func (fakeEdge) SignEdgeSession(s Session, cred string, until time.Time) (string, error) {
	return "edge|" + s.Room + "|" + s.Visitor + "|" + cred + "|" + until.UTC().Format(time.RFC3339), nil
}

// newEdgeGateway is newTestGateway with an EdgeSigner and SessionCheck.
func newEdgeGateway(t *testing.T) *testGateway {
	t.Helper()
	tg := newTestGateway(t, false, nil)
	tg.edge = fakeEdge{}
	tg.app.Post("/api/v1/rooms/:room/session", tg.SessionCheck)
	return tg
}

// cookieValue is the value of the cookie name set by resp, and whether it
// is set.
func cookieValue(resp *http.Response, name string) (string, bool) {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c.Value, true
		}
	}
	return "", false
}

func TestSessionCheck(t *testing.T) {
	tg := newEdgeGateway(t)
	raw := tg.session("v1", time.Now())
	check := func(accept string, header ...string) *http.Request {
		r := httptest.NewRequest("POST", "/api/v1/rooms/gw/session", nil)
		r.Header.Set("Accept", accept)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Add(header[i], header[i+1])
		}
		return r
	}
	// A valid session with its credential: a pass with a fresh edge
	// session bound to that credential, at most EdgeSessionTTL long.
	resp, body := tg.do(t, check("text/html", "Cookie", "wr_session_gw="+raw+"; wr_visitor=cred-v1"))
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Room") != "gw" || resp.Header.Get("X-Waitroom-Visitor") != "v1" ||
		resp.Header.Get("X-Waitroom-Fail-Mode") != "open" || !strings.Contains(body, `"visitor":"v1"`) {
		t.Fatalf("valid session: status %d %v %s", resp.StatusCode, resp.Header, body)
	}
	edge, ok := cookieValue(resp, EdgeCookie("wr_session_gw"))
	p := strings.Split(edge, "|")
	if !ok || len(p) != 5 || p[1] != "gw" || p[2] != "v1" || p[3] != "cred-v1" {
		t.Fatalf("edge session %q", edge)
	}
	if until, _ := time.Parse(time.RFC3339, p[4]); until.After(time.Now().Add(EdgeSessionTTL)) {
		t.Errorf("edge session valid until %s, more than %s", until, EdgeSessionTTL)
	}
	// An API client without cookies: the session and credential headers.
	resp, _ = tg.do(t, check("application/json", SessionHeader, raw, "X-Visitor", "cred-v1"))
	if edge, _ := cookieValue(resp, EdgeCookie("wr_session_gw")); resp.StatusCode != 200 || !strings.Contains(edge, "|cred-v1|") {
		t.Errorf("API client's session: status %d edge %q", resp.StatusCode, edge)
	}
	// Without the credential, or with another visitor's: a browser is told
	// it has no session (the edge sends it to the waiting page), an API
	// client gets the check's 429 with its place.
	for _, cred := range []string{"", "cred-v2"} {
		resp, body = tg.do(t, check("text/html", "Cookie", "wr_session_gw="+raw+"; wr_visitor="+cred))
		if _, set := cookieValue(resp, EdgeCookie("wr_session_gw")); resp.StatusCode != 401 || errorCode(body) != "missing_session" || set {
			t.Errorf("browser, credential %q: status %d %s", cred, resp.StatusCode, body)
		}
	}
	resp, body = tg.do(t, check("application/json", "X-Visitor", "cred-v2"))
	if resp.StatusCode != 429 || !strings.Contains(body, `"status":"waiting"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("API client in the queue: status %d %s", resp.StatusCode, body)
	}
	// The store out in a room that fails closed: 503, and the edge learns
	// the room's mode.
	tg.rooms = fakeRooms{failClosed: true}
	tg.broker = &fakeFeed{}
	tg.store.degraded = true
	resp, body = tg.do(t, check("text/html"))
	if resp.StatusCode != 503 || errorCode(body) != "unavailable" || resp.Header.Get("X-Waitroom-Fail-Mode") != "closed" {
		t.Errorf("store out, fail closed: status %d %s %v", resp.StatusCode, body, resp.Header)
	}
}

// TestEnterEdgeSession: the session Enter makes comes with its edge
// session, bound to the credential it was entered with.
func TestEnterEdgeSession(t *testing.T) {
	tg := newEdgeGateway(t)
	tg.store.admitted = map[string]time.Time{"v1": time.Now().Add(time.Hour)}
	enter := func(header ...string) *http.Response {
		r := httptest.NewRequest("GET", "/api/v1/rooms/gw/enter?return="+url.QueryEscape("/checkout/cart"), nil)
		r.Host = "shop.example.com"
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Add(header[i], header[i+1])
		}
		resp, _ := tg.do(t, r)
		return resp
	}
	resp := enter("X-Visitor", "cred-v1")
	if edge, ok := cookieValue(resp, "wr_session_gw_edge"); resp.StatusCode != 302 || !ok || !strings.HasPrefix(edge, "edge|gw|v1|cred-v1|") {
		t.Errorf("enter: status %d edge session %q", resp.StatusCode, edge)
	}
	// The session is v1's (the API reads X-Visitor here) but the request
	// also carries another visitor's cookie: the edge session is bound to
	// the credential the edge will read first, X-Visitor, never to another
	// visitor's.
	resp = enter("X-Visitor", "cred-v1", "Cookie", "wr_visitor=cred-v2")
	if edge, _ := cookieValue(resp, "wr_session_gw_edge"); !strings.HasPrefix(edge, "edge|gw|v1|cred-v1|") {
		t.Errorf("enter with two credentials: edge session %q", edge)
	}
	if got := tg.edgeCookie("wr_session_gw", &Session{Room: "gw", Visitor: "v1", ExpiresAt: time.Now().Add(time.Hour)}, "cred-v2", "https", time.Now()); got != nil {
		t.Errorf("an edge session of v1 bound to v2's credential: %s", got.Value())
	}
}
