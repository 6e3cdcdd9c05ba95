package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
)

func TestJoinStatusLeave(t *testing.T) {
	eachServer(t, nil, func(t *testing.T, ts *testServer) {
		a, b := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		ra := a.join("drop")
		if ra.str("status") != "waiting" || ra.num("position") != 1 || ra.str("visitor") == "" {
			t.Fatalf("join a: %s", ra.Raw)
		}
		if rb := b.join("drop"); rb.num("position") != 2 {
			t.Fatalf("join b: %s", rb.Raw)
		}
		// A refresh keeps the place (the cookie carries the credential).
		if r := a.join("drop"); r.num("position") != 1 || r.str("visitor") != ra.str("visitor") {
			t.Fatalf("re-join: %s", r.Raw)
		}
		// Clients without cookies send the credential as header or query.
		bare := newVisitor(t, ts.URL)
		if r := bare.do("GET", "/api/v1/rooms/drop/status", "", "X-Visitor", b.cred); r.num("position") != 2 {
			t.Fatalf("status by header: %s", r.Raw)
		}
		if r := bare.do("GET", "/api/v1/rooms/drop/status?visitor="+b.cred, ""); r.num("position") != 2 {
			t.Fatalf("status by query: %s", r.Raw)
		}
		if r := a.do("DELETE", "/api/v1/rooms/drop/queue", ""); r.Code != 204 {
			t.Fatalf("leave: %d %s", r.Code, r.Raw)
		}
		// b's last answer may be served from memory until its nextPollMs
		// has passed; then it is exact.
		waitfor.Until(t, 10*time.Second, "b moves up", func() bool { return b.status("drop").num("position") == 1 })
		if r := a.status("drop"); r.str("status") != "not_in_queue" {
			t.Fatalf("a after leaving: %s", r.Raw)
		}
	})
}

func TestEarlyPollAnsweredFromMemory(t *testing.T) {
	eachServer(t, func(c *config) { c.Capacity.Batch = 1 }, func(t *testing.T, ts *testServer) {
		for i := 0; i < 30; i++ {
			newVisitor(t, ts.URL).join("busy")
		}
		v := newVisitor(t, ts.URL)
		v.join("busy")
		first := v.status("busy")
		if first.Header.Get("X-Waitroom-Cache") != "" || first.num("nextPollMs") < 450 {
			t.Fatalf("first poll: %s %v", first.Raw, first.Header)
		}
		hitsBefore := ts.visit.Polls().Hits()
		second := v.status("busy")
		if second.Header.Get("X-Waitroom-Cache") != "hit" || second.Raw != first.Raw {
			t.Fatalf("early poll was not answered from memory: %s", second.Raw)
		}
		if ts.visit.Polls().Hits() != hitsBefore+1 {
			t.Fatal("hit not counted")
		}
	})
}

func TestProtectedEndpoint(t *testing.T) {
	eachServer(t, func(c *config) {
		c.Capacity.Batch, c.Capacity.Tick = 5, 200*time.Millisecond
		c.TokenTTL = 2 * time.Second
	}, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		v.join("drop")
		other := newVisitor(t, ts.URL)
		other.join("drop")
		// Admit both in one tick; the token arrives before its notBefore.
		st := ts.admitUntil(t, v, "drop")
		tok := st.str("token")
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		if time.Until(nb) > 0 {
			r := v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+tok)
			if r.Code != 425 || r.errCode() != "too_early" || r.Header.Get("Retry-After") == "" {
				// The tick window is ≥ 200 ms ahead; too close to call only on a very slow machine.
				t.Logf("before notBefore: %d %s (notBefore %v ahead)", r.Code, r.Raw, time.Until(nb))
				if r.Code != 201 {
					t.Fatalf("before notBefore: %d %s", r.Code, r.Raw)
				}
				return
			}
		}
		waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
		// Another visitor's credential alongside the token: 403.
		if r := other.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+tok); r.Code != 403 || r.errCode() != "wrong_visitor" {
			t.Fatalf("other visitor: %d %s", r.Code, r.Raw)
		}
		// Another room: 403.
		if r := v.do("POST", "/api/v1/rooms/drop-2/orders", "", "Authorization", "Bearer "+tok); r.Code != 403 || r.errCode() != "wrong_room" {
			t.Fatalf("other room: %d %s", r.Code, r.Raw)
		}
		// verify does not use the token up.
		if r := v.do("POST", "/api/v1/tokens/verify", fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, v.cred)); r.Code != 200 || r.Body["valid"] != true {
			t.Fatalf("verify: %d %s", r.Code, r.Raw)
		}
		if r := v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+tok); r.Code != 201 {
			t.Fatalf("valid order: %d %s", r.Code, r.Raw)
		}
		if r := v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+tok); r.Code != 401 || r.errCode() != "token_used" {
			t.Fatalf("second use: %d %s", r.Code, r.Raw)
		}
		if r := v.status("drop"); r.str("status") != "not_in_queue" {
			t.Fatalf("status after use: %s", r.Raw)
		}
		// Forged, truncated, another key under the same kid, the former
		// format with another secret, missing.
		otherSigner, _ := visitorsig.NewSigner([]byte("some-other-secret-1234"))
		tk, err := ts.parseToken(tok)
		if err != nil {
			t.Fatal(err)
		}
		otherKey, _ := entry.GenerateKey(entry.EdDSA, ts.tokens.Keys().Active().ID)
		otherSet, _ := entry.NewKeySet(otherKey.ID, otherKey)
		otherTok, _ := otherSet.Sign(entry.Claims{Issuer: ts.tokens.Issuer(), Room: tk.Room, Visitor: tk.Visitor, NotBefore: tk.NotBefore, ExpiresAt: tk.ExpiresAt})
		for name, bad := range map[string]string{
			"forged":       forgeClaim(t, tok, `"aud":"drop"`, `"aud":"dros"`),
			"truncated":    tok[:len(tok)-4],
			"other key":    otherTok,
			"other secret": otherSigner.SignToken(tk),
			"garbage":      "abc",
		} {
			if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+bad); r.Code != 401 || r.errCode() != "invalid_token" {
				t.Fatalf("%s token: %d %s", name, r.Code, r.Raw)
			}
		}
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/drop/orders", ""); r.Code != 401 || r.errCode() != "missing_token" {
			t.Fatalf("no token: %d %s", r.Code, r.Raw)
		}
		// The other visitor's token expires unused (TTL 2 s): 401.
		ost := ts.admitUntil(t, other, "drop")
		exp, _ := time.Parse(time.RFC3339Nano, ost.str("expiresAt"))
		waitfor.Until(t, 10*time.Second, "expiry", func() bool { return time.Now().After(exp.Add(10 * time.Millisecond)) })
		if r := other.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+ost.str("token")); r.Code != 401 || r.errCode() != "token_expired" {
			t.Fatalf("expired: %d %s", r.Code, r.Raw)
		}
		if r := other.status("drop"); r.str("status") != "expired" {
			t.Fatalf("status after expiry: %s", r.Raw)
		}
	})
}

func TestTooEarly(t *testing.T) {
	// A long tick puts notBefore far enough ahead to hit 425 reliably.
	eachServer(t, func(c *config) { c.Capacity.Batch, c.Capacity.Tick = 1, 2*time.Second }, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		v.join("slow")
		st := ts.admitUntil(t, v, "slow")
		r := v.do("POST", "/api/v1/rooms/slow/orders", "", "Authorization", "Bearer "+st.str("token"))
		e, _ := r.Body["error"].(map[string]any)
		if r.Code != 425 || r.errCode() != "too_early" || r.Header.Get("Retry-After") == "" || e["waitMs"] == nil {
			t.Fatalf("before notBefore: %d %s", r.Code, r.Raw)
		}
		// The too-early attempt did not use the token up.
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		waitfor.Until(t, 10*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
		if r := v.do("POST", "/api/v1/rooms/slow/orders", "", "Authorization", "Bearer "+st.str("token")); r.Code != 201 {
			t.Fatalf("after notBefore: %d %s", r.Code, r.Raw)
		}
	})
}

func TestBadInput(t *testing.T) {
	eachServer(t, nil, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		v.join("ok")
		big := `{"x":"` + strings.Repeat("a", 70<<10) + `"}`
		cases := []struct {
			name, method, path, body string
			hdr                      []string
			code                     int
			errCode                  string
		}{
			{"bad room", "POST", "/api/v1/rooms/Bad_Room/join", "", nil, 400, "invalid_room"},
			{"long room", "POST", "/api/v1/rooms/" + strings.Repeat("a", 65) + "/join", "", nil, 400, "invalid_room"},
			{"malformed json", "POST", "/api/v1/rooms/ok/join", "{nope", nil, 400, "invalid_json"},
			{"json array", "POST", "/api/v1/rooms/ok/join", "[1,2]", nil, 400, "invalid_json"},
			{"forged visitor", "GET", "/api/v1/rooms/ok/status", "", []string{"X-Visitor", "abc.AAAAAAAAAAAAAAAAAAAAAA"}, 401, "invalid_visitor"},
			{"forged visitor join", "POST", "/api/v1/rooms/ok/join", "", []string{"X-Visitor", "zzz"}, 401, "invalid_visitor"},
			{"no visitor", "GET", "/api/v1/rooms/ok/status", "", nil, 401, "missing_visitor"},
			{"unknown route", "GET", "/api/v1/nope", "", nil, 404, "not_found"},
			{"verify not json", "POST", "/api/v1/tokens/verify", "token=x", nil, 400, "invalid_json"},
			{"verify empty", "POST", "/api/v1/tokens/verify", "{}", nil, 400, "missing_field"},
			{"ws without upgrade", "GET", "/api/v1/rooms/ok/ws?visitor=" + v.cred, "", nil, 426, "upgrade_required"},
			{"ws forged visitor", "GET", "/api/v1/rooms/ok/ws?visitor=x.y", "", []string{"Upgrade", "websocket", "Connection", "Upgrade"}, 401, "invalid_visitor"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := newVisitor(t, ts.URL).do(tc.method, tc.path, tc.body, tc.hdr...)
				if r.Code != tc.code || r.errCode() != tc.errCode {
					t.Fatalf("%d %s, want %d %s", r.Code, r.Raw, tc.code, tc.errCode)
				}
				if !strings.Contains(r.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("content type %q", r.Header.Get("Content-Type"))
				}
			})
		}
		// An oversized body: the server may answer and close before the
		// client has written it all, so read the answer over a raw socket.
		t.Run("too large", func(t *testing.T) {
			code, body := rawPost(t, ts.URL, "/api/v1/rooms/ok/join", big)
			if code != 413 || !strings.Contains(body, `"code":"body_too_large"`) {
				t.Fatalf("%d %s", code, body)
			}
		})
		// Still healthy, and the earlier visitor kept its place.
		if r := newVisitor(t, ts.URL).do("GET", "/healthz", ""); r.Code != 200 {
			t.Fatalf("healthz: %d", r.Code)
		}
		if r := v.status("ok"); r.num("position") != 1 {
			t.Fatalf("state lost: %s", r.Raw)
		}
	})
}

// rawPost writes a request over TCP, ignoring write errors, and reads the
// response.
func rawPost(t *testing.T, base, path, body string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDBTimeoutKeepsToken: an order that fails with 503 db_timeout does not
// use the token up; the retry succeeds.
func TestDBTimeoutKeepsToken(t *testing.T) {
	eachServer(t, func(c *config) {
		c.Capacity.Batch, c.Capacity.DBPool, c.Capacity.ServiceTime, c.DBWait = 5, 1, 1500*time.Millisecond, 50*time.Millisecond
	}, func(t *testing.T, ts *testServer) {
		a, b := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		a.join("db")
		b.join("db")
		sa, sb := ts.admitUntil(t, a, "db"), ts.admitUntil(t, b, "db")
		for _, st := range []reply{sa, sb} {
			nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
			waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
		}
		first := make(chan reply, 1)
		go func() {
			first <- a.do("POST", "/api/v1/rooms/db/orders", "", "Authorization", "Bearer "+sa.str("token"))
		}()
		// b's order finds the only DB slot taken.
		waitfor.Until(t, 5*time.Second, "a holds the slot", func() bool { return ts.demo.InUse() == 1 })
		r := b.do("POST", "/api/v1/rooms/db/orders", "", "Authorization", "Bearer "+sb.str("token"))
		if r.Code != 503 || r.errCode() != "db_timeout" {
			t.Fatalf("busy DB: %d %s", r.Code, r.Raw)
		}
		if got := <-first; got.Code != 201 {
			t.Fatalf("first order: %d %s", got.Code, got.Raw)
		}
		if r := b.do("POST", "/api/v1/rooms/db/orders", "", "Authorization", "Bearer "+sb.str("token")); r.Code != 201 {
			t.Fatalf("retry after db_timeout: %d %s", r.Code, r.Raw)
		}
	})
}

// TestStaleCookieJoinsAnew: a cookie this deployment cannot verify (say,
// from before a secret change) gets a new identity on join instead of a
// lock-out; an explicit forged header is still refused.
func TestStaleCookieJoinsAnew(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	v := newVisitor(t, ts.URL)
	r := v.do("POST", "/api/v1/rooms/c/join", "", "Cookie", "wr_visitor=abc.AAAAAAAAAAAAAAAAAAAAAA")
	if r.Code != 200 || r.str("visitor") == "" || strings.HasPrefix(r.str("visitor"), "abc.") {
		t.Fatalf("stale cookie: %d %s", r.Code, r.Raw)
	}
	if r := v.do("POST", "/api/v1/rooms/c/join", "", "X-Visitor", "abc.AAAAAAAAAAAAAAAAAAAAAA"); r.Code != 401 {
		t.Fatalf("forged header: %d %s", r.Code, r.Raw)
	}
}

// TestCORS: a page of an allowed origin may call the API with credentials;
// others get no CORS grant.
func TestCORS(t *testing.T) {
	ts := startServer(t, nil, "rueidis", func(c *config) { c.Origins = []string{"https://shop.example.com"} })
	v := newVisitor(t, ts.URL)
	r := v.do("OPTIONS", "/api/v1/rooms/x/join", "", "Origin", "https://shop.example.com", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "X-Visitor")
	if r.Header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" || r.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("preflight: %d %v", r.Code, r.Header)
	}
	r = v.do("POST", "/api/v1/rooms/x/join", "", "Origin", "https://evil.example.net")
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("other origin granted: %v", r.Header)
	}
	if _, err := parseConfig([]string{"-origins", "shop.example.com"}, func(string) string { return "" }); err == nil {
		t.Fatal("origin without scheme accepted")
	}
}

// forgeClaim returns tok with old replaced by new in its payload and the
// signature kept.
func forgeClaim(t *testing.T, tok, old, new string) string {
	t.Helper()
	p := strings.Split(tok, ".")
	body, err := base64.RawURLEncoding.DecodeString(p[1])
	if err != nil || !strings.Contains(string(body), old) {
		t.Fatalf("payload %s lacks %s", body, old)
	}
	p[1] = base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), old, new, 1)))
	return strings.Join(p, ".")
}
