package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// cookiesOf is the name=value of each Set-Cookie of resp, by name.
func cookiesOf(resp *http.Response) map[string]string {
	out := map[string]string{}
	for _, c := range resp.Cookies() {
		out[c.Name] = c.Value
	}
	return out
}

// TestBusyPassesFreshBrowser: in a busy room under its threshold a fresh
// browser passes in the same round trip with a new visitor credential and
// a session, which its next request passes with, without the store.
func TestBusyPassesFreshBrowser(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.rooms = fakeRooms{busy: true}
	tg.store.free = 1
	resp, body := tg.do(t, forwarded("/checkout/cart", "Accept", "text/html"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	ck := cookiesOf(resp)
	id := resp.Header.Get("X-Waitroom-Visitor")
	if ck["wr_visitor"] != "cred-"+id || ck["wr_session_gw"] == "" || resp.Header.Get("X-Waitroom-Room") != "gw" {
		t.Fatalf("cookies %v, visitor %q", ck, id)
	}
	if resp.Header.Get(SessionHeader) != "" || resp.Header.Get("X-Visitor") != "" {
		t.Errorf("a browser was given the session in headers: %v", resp.Header)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	passes := tg.store.passes
	cookie := "wr_session_gw=" + ck["wr_session_gw"] + "; wr_visitor=" + ck["wr_visitor"]
	resp, _ = tg.do(t, forwarded("/checkout/pay", "Accept", "text/html", "Cookie", cookie))
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Visitor") != id || tg.store.passes != passes {
		t.Fatalf("next request: status %d visitor %q, %d store calls", resp.StatusCode, resp.Header.Get("X-Waitroom-Visitor"), tg.store.passes-passes)
	}
	// The threshold reached: the next fresh browser queues as before.
	resp, _ = tg.do(t, forwarded("/checkout/cart", "Accept", "text/html"))
	if resp.StatusCode != 302 || len(resp.Cookies()) != 0 {
		t.Fatalf("at the threshold: status %d cookies %v, want 302 and none", resp.StatusCode, resp.Cookies())
	}
}

// TestBusyNginx: nginx's check passes a fresh visitor at once; the session
// is its Set-Cookie and the visitor's cookie comes in a header of its own.
func TestBusyNginx(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.rooms = fakeRooms{busy: true}
	tg.store.free = 1
	req := httptest.NewRequest("GET", "/api/v1/check", nil)
	req.Host = "shop.example.com"
	req.Header.Set("X-Original-URI", "/checkout/cart")
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("Accept", "text/html")
	resp, _ := tg.do(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Values("Set-Cookie"); len(got) != 1 || !strings.HasPrefix(got[0], "wr_session_gw=") {
		t.Errorf("Set-Cookie %q, want the session's alone", got)
	}
	if vc := resp.Header.Get(VisitorCookieHeader); !strings.HasPrefix(vc, "wr_visitor=cred-") || !strings.Contains(strings.ToLower(vc), "httponly") {
		t.Errorf("%s %q", VisitorCookieHeader, vc)
	}
}

// TestAlwaysUnchanged: in a room with activation always a browser, fresh
// or holding a credential, goes to the waiting page without a store call.
func TestAlwaysUnchanged(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.store.free = 10
	tg.store.admitted = map[string]time.Time{"v1": time.Now().Add(30 * time.Minute)}
	for _, h := range [][]string{{"Accept", "text/html"}, {"Accept", "text/html", "Cookie", "wr_visitor=cred-v1"}} {
		resp, _ := tg.do(t, forwarded("/checkout/cart", h...))
		if resp.StatusCode != 302 || len(resp.Cookies()) != 0 {
			t.Errorf("%v: status %d cookies %v, want 302 and none", h, resp.StatusCode, resp.Cookies())
		}
	}
	if tg.store.passes != 0 {
		t.Errorf("%d store calls, want none", tg.store.passes)
	}
}

// TestAdmittedAPIClientPasses: an API client admitted through the queue
// passes with its credential alone (no /enter step), is given the session
// in a header, and passes again with the headers alone (no cookies).
func TestAdmittedAPIClientPasses(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.store.admitted = map[string]time.Time{"v1": time.Now().Add(30 * time.Minute)}
	resp, body := tg.do(t, forwarded("/checkout/cart", "Accept", "application/json", "X-Visitor", "cred-v1"))
	if resp.StatusCode != 200 || resp.Header.Get("X-Waitroom-Visitor") != "v1" {
		t.Fatalf("status %d visitor %q: %s", resp.StatusCode, resp.Header.Get("X-Waitroom-Visitor"), body)
	}
	sess := resp.Header.Get(SessionHeader)
	if sess == "" || resp.Header.Get("X-Visitor") != "cred-v1" || cookiesOf(resp)["wr_session_gw"] != sess {
		t.Fatalf("session header %q, X-Visitor %q, cookies %v", sess, resp.Header.Get("X-Visitor"), resp.Cookies())
	}
	if _, minted := cookiesOf(resp)["wr_visitor"]; minted {
		t.Error("a visitor with a credential was given another")
	}
	passes := tg.store.passes
	resp, _ = tg.do(t, forwarded("/checkout/pay", "Accept", "application/json", "X-Visitor", "cred-v1", SessionHeader, sess))
	if resp.StatusCode != 200 || tg.store.passes != passes {
		t.Fatalf("with the session header: status %d, %d store calls", resp.StatusCode, tg.store.passes-passes)
	}
	// The header session is another visitor's without its credential.
	resp, _ = tg.do(t, forwarded("/checkout/pay", "Accept", "application/json", "X-Visitor", "cred-v2", SessionHeader, sess))
	if resp.StatusCode != 429 {
		t.Fatalf("a session header with another credential: status %d, want 429", resp.StatusCode)
	}
}

// TestBusyNotValidYetOrStoreDown: a token not valid yet does not pass,
// and a store that fails leaves the usual denial.
func TestBusyNotValidYetOrStoreDown(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	tg.rooms = fakeRooms{busy: true}
	tg.store.admitted = map[string]time.Time{"v1": time.Now().Add(2 * time.Hour)} // notBefore an hour ahead
	resp, _ := tg.do(t, forwarded("/checkout/cart", "Accept", "text/html", "Cookie", "wr_visitor=cred-v1"))
	if resp.StatusCode != 302 {
		t.Fatalf("not valid yet: status %d, want 302", resp.StatusCode)
	}
	tg.store.passErr = errors.New("connection refused")
	tg.store.free = 1
	resp, _ = tg.do(t, forwarded("/checkout/cart", "Accept", "text/html"))
	if resp.StatusCode != 302 || len(resp.Cookies()) != 0 {
		t.Fatalf("store down: status %d cookies %v, want 302", resp.StatusCode, resp.Cookies())
	}
}

// TestAPIClientJoinsOnSpot: an API client refused a protected address is
// in the queue already when it reads the 429: the body holds its state,
// its credential and where to poll and stream; a retry with the credential
// keeps the place; a room that asks more of a join says where to join.
func TestAPIClientJoinsOnSpot(t *testing.T) {
	tg := newTestGateway(t, true, nil)
	resp, body := tg.do(t, forwarded("/checkout/cart", "Accept", "application/json"))
	var got struct {
		Status   string `json:"status"`
		Position int    `json:"position"`
		Visitor  string `json:"visitor"`
		Links    struct {
			Join, Status, SSE, WS string
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || got.Status != "waiting" || got.Position != 1 {
		t.Fatalf("status %d Retry-After %q body %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if got.Visitor == "" || resp.Header.Get("X-Visitor") != got.Visitor || cookiesOf(resp)["wr_visitor"] != got.Visitor {
		t.Fatalf("credential: body %q header %q cookie %q", got.Visitor, resp.Header.Get("X-Visitor"), cookiesOf(resp)["wr_visitor"])
	}
	if got.Links.Status != "/waitroom/api/v1/rooms/gw/status" || got.Links.SSE != "/waitroom/api/v1/rooms/gw/sse" ||
		got.Links.WS != "/waitroom/api/v1/rooms/gw/ws" || got.Links.Join != "/waitroom/api/v1/rooms/gw/join" {
		t.Fatalf("links %+v", got.Links)
	}
	// Another client joins behind; the first one's retry keeps its place.
	tg.do(t, forwarded("/checkout/cart", "Accept", "application/json"))
	resp, body = tg.do(t, forwarded("/checkout/cart", "Accept", "application/json", "X-Visitor", got.Visitor))
	if resp.StatusCode != 429 || !strings.Contains(body, `"position":1,`) || len(resp.Cookies()) != 0 {
		t.Fatalf("retry: status %d cookies %v body %s", resp.StatusCode, resp.Cookies(), body)
	}

	tg.store.elsewhere = true
	resp, body = tg.do(t, forwarded("/checkout/cart", "Accept", "application/json"))
	if resp.StatusCode != 429 || !strings.Contains(body, `"status":"not_in_queue"`) || strings.Contains(body, `"visitor"`) ||
		!strings.Contains(body, `"join":"/waitroom/api/v1/rooms/gw/join"`) || resp.Header.Get("X-Visitor") != "" {
		t.Fatalf("join elsewhere: status %d body %s", resp.StatusCode, body)
	}
}
