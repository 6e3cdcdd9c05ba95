package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/limit"
)

// TestOrderNeedsVisitor: the protected route wants the credential the token
// was issued to; a token alone is refused. verify checks a visitor when it
// is given one and says whether it did.
func TestOrderNeedsVisitor(t *testing.T) {
	eachServer(t, func(c *config) { c.Capacity.Batch = 5 }, func(t *testing.T, ts *testServer) {
		v, other := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		v.join("drop")
		other.join("drop")
		st := ts.admitUntil(t, v, "drop")
		tok := st.str("token")
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })

		bare := newVisitor(t, ts.URL) // no cookie
		order := func(hdr ...string) reply {
			return bare.do("POST", "/api/v1/rooms/drop/orders", "", append([]string{"Authorization", "Bearer " + tok}, hdr...)...)
		}
		if r := order(); r.Code != 401 || r.errCode() != "missing_visitor" {
			t.Fatalf("token alone: %d %s", r.Code, r.Raw)
		}
		if r := order("X-Visitor", other.cred); r.Code != 403 || r.errCode() != "wrong_visitor" {
			t.Fatalf("another visitor: %d %s", r.Code, r.Raw)
		}
		if r := order("X-Visitor", "abc.AAAAAAAAAAAAAAAAAAAAAA"); r.Code != 401 || r.errCode() != "invalid_visitor" {
			t.Fatalf("forged visitor: %d %s", r.Code, r.Raw)
		}
		if r := order("Cookie", "wr_visitor="+other.cred); r.Code != 403 || r.errCode() != "wrong_visitor" {
			t.Fatalf("another visitor's cookie: %d %s", r.Code, r.Raw)
		}
		// The query credential is for push clients only.
		if r := bare.do("POST", "/api/v1/rooms/drop/orders?visitor="+v.cred, "", "Authorization", "Bearer "+tok); r.Code != 401 {
			t.Fatalf("query credential: %d %s", r.Code, r.Raw)
		}
		// touch extends the token for its holder only.
		if r := bare.do("POST", "/api/v1/rooms/drop/touch", "", "Authorization", "Bearer "+tok, "X-Visitor", other.cred); r.Code != 403 {
			t.Fatalf("touch by another: %d %s", r.Code, r.Raw)
		}
		if r := bare.do("POST", "/api/v1/rooms/drop/touch", "", "Authorization", "Bearer "+tok); r.Code != 401 {
			t.Fatalf("touch without visitor: %d %s", r.Code, r.Raw)
		}

		verify := func(body string) reply { return bare.do("POST", "/api/v1/tokens/verify", body) }
		if r := verify(fmt.Sprintf(`{"token":%q}`, tok)); r.Code != 401 || r.errCode() != "missing_visitor" {
			t.Fatalf("verify without visitor: %d %s", r.Code, r.Raw)
		}
		if r := verify(fmt.Sprintf(`{"token":%q,"allowMissingVisitor":true}`, tok)); r.Code != 200 || r.Body["valid"] != true || r.Body["visitorChecked"] != false {
			t.Fatalf("verify without visitor, opted out: %d %s", r.Code, r.Raw)
		}
		if r := verify(fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, v.cred)); r.Code != 200 || r.Body["visitorChecked"] != true {
			t.Fatalf("verify with the visitor: %d %s", r.Code, r.Raw)
		}
		if r := verify(fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, other.cred)); r.Code != 403 || r.errCode() != "wrong_visitor" {
			t.Fatalf("verify with another visitor: %d %s", r.Code, r.Raw)
		}
		if r := verify(fmt.Sprintf(`{"token":%q,"visitor":"x.y"}`, tok)); r.Code != 401 || r.errCode() != "invalid_visitor" {
			t.Fatalf("verify with a forged visitor: %d %s", r.Code, r.Raw)
		}

		// The refusals did not use the token up: its holder orders once.
		if r := order("X-Visitor", v.cred); r.Code != 201 {
			t.Fatalf("holder: %d %s", r.Code, r.Raw)
		}
		if r := order("X-Visitor", v.cred); r.Code != 401 || r.errCode() != "token_used" {
			t.Fatalf("second use: %d %s", r.Code, r.Raw)
		}
	})
}

// closedWithin waits for the server to close c, reading with a deadline.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v", d)
		}
		return time.Since(start)
	}
}

// TestSilentConnectionsClosed: a connection that never sends a byte is
// closed at the read timeout, an idle keep-alive one at the idle timeout,
// and a push connection outlives both.
func TestSilentConnectionsClosed(t *testing.T) {
	ts := startServerOpts(t, nil, "rueidis", &serverOptions{NoTick: true, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 600 * time.Millisecond}, nil)
	addr := strings.TrimPrefix(ts.URL, "http://")

	t.Run("silent", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if d := closedWithin(t, c, 5*time.Second); d < 250*time.Millisecond {
			t.Fatalf("closed after %v, before the read timeout", d)
		}
	})

	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		resp.Body.Close()
		closedWithin(t, c, 5*time.Second)
	})

	t.Run("push outlives the timeouts", func(t *testing.T) {
		v := newVisitor(t, ts.URL)
		v.join("slow")
		ws := dialWS(t, ts.URL, "slow", v.cred)
		sse := dialSSE(t, ts.URL, "slow", v.cred)
		since := time.Now()
		waitfor.Until(t, 5*time.Second, "three idle timeouts", func() bool { return time.Since(since) > 1800*time.Millisecond })
		if ws.isClosed() || sse.isClosed() {
			t.Fatalf("push connection closed: ws %v sse %v", ws.isClosed(), sse.isClosed())
		}
		if _, err := ts.q.Admit(context.Background(), "slow"); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "admitted over both", func() bool { return ws.count("admitted") > 0 && sse.count("admitted") > 0 })
	})
}

// TestJoinLimit: one address creates at most the burst of new visitors,
// then the rate; a visitor with a credential re-joins freely; behind a
// trusted proxy each client has its own allowance.
func TestJoinLimit(t *testing.T) {
	eachServer(t, func(c *config) { c.JoinRate, c.JoinBurst = 0.01, 3 }, func(t *testing.T, ts *testServer) {
		var first *visitor
		for i := range 3 {
			v := newVisitor(t, ts.URL)
			v.join("lim")
			if i == 0 {
				first = v
			}
		}
		r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/lim/join", "")
		if r.Code != 429 || r.errCode() != "rate_limited" || r.Header.Get("Retry-After") == "" || r.Header.Get("Retry-After") == "0" {
			t.Fatalf("over the burst: %d %s %v", r.Code, r.Raw, r.Header)
		}
		// A stale or forged credential creates a visitor: limited too.
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/lim/join", "", "Cookie", "wr_visitor=abc.AAAAAAAAAAAAAAAAAAAAAA"); r.Code != 429 {
			t.Fatalf("stale cookie: %d %s", r.Code, r.Raw)
		}
		// A re-join with a valid credential is never limited, in this room
		// or another.
		for range 5 {
			if r := first.join("lim"); r.num("position") != 1 {
				t.Fatalf("re-join: %s", r.Raw)
			}
		}
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/other/join", "", "X-Visitor", first.cred); r.Code != 200 {
			t.Fatalf("credential in another room: %d %s", r.Code, r.Raw)
		}
		// X-Forwarded-For from a peer that is not a trusted proxy changes
		// nothing.
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/lim/join", "", "X-Forwarded-For", "198.51.100.7"); r.Code != 429 {
			t.Fatalf("untrusted X-Forwarded-For: %d %s", r.Code, r.Raw)
		}
	})

	t.Run("trusted proxy", func(t *testing.T) {
		ps, _ := limit.ParseProxies("127.0.0.0/8")
		ts := startServer(t, nil, "rueidis", func(c *config) { c.JoinRate, c.JoinBurst, c.TrustedProxies = 0.01, 2, ps })
		join := func(xff string) int {
			return newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/lim/join", "", "X-Forwarded-For", xff).Code
		}
		for _, client := range []string{"198.51.100.7", "198.51.100.8"} {
			for i := range 2 {
				if code := join(client); code != 200 {
					t.Fatalf("%s join %d: %d", client, i, code)
				}
			}
			if code := join(client); code != 429 {
				t.Fatalf("%s over the burst: %d", client, code)
			}
			// A client prepending its own hop is still itself.
			if code := join("203.0.113.1, " + client); code != 429 {
				t.Fatalf("%s with a spoofed first hop: %d", client, code)
			}
		}
	})
}

// TestMetricsAccess: /metrics lists room names, so it is behind the admin
// key unless -public-metrics, or only on -metrics-addr.
func TestMetricsAccess(t *testing.T) {
	get := func(base string, hdr ...string) reply {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return reply{Code: resp.StatusCode, Raw: string(b)}
	}
	ts := startServer(t, nil, "rueidis", withAdmin)
	if r := get(ts.URL); r.Code != 401 {
		t.Fatalf("no key: %d", r.Code)
	}
	if r := get(ts.URL, "Authorization", "Bearer "+testAdminKey); r.Code != 200 || !strings.Contains(r.Raw, "waitroom_") {
		t.Fatalf("with key: %d", r.Code)
	}
	pub := startServer(t, nil, "rueidis", func(c *config) { c.PublicMetrics = true })
	if r := get(pub.URL); r.Code != 200 {
		t.Fatalf("public: %d", r.Code)
	}

	sep := startServer(t, nil, "rueidis", func(c *config) { withAdmin(c); c.MetricsAddr = "127.0.0.1:0" })
	if r := get(sep.URL, "Authorization", "Bearer "+testAdminKey); r.Code != 404 {
		t.Fatalf("main listener with -metrics-addr: %d", r.Code)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveMetrics(ctx, ln, sep.metrics) }()
	base := "http://" + ln.Addr().String()
	if r := get(base); r.Code != 200 || !strings.Contains(r.Raw, "waitroom_") {
		t.Fatalf("metrics listener: %d", r.Code)
	}
	if r := get(base + "/api/v1"); r.Code != 404 {
		t.Fatalf("metrics listener serves more: %d", r.Code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig([]string{"-metrics-addr", "nope"}, func(string) string { return "" }); err == nil {
		t.Fatal("bad -metrics-addr accepted")
	}
}

// TestSecureCookies: the visitor cookie is Secure when the visitor came
// over HTTPS, as a trusted proxy tells it, and not otherwise.
func TestSecureCookies(t *testing.T) {
	secure := func(ts *testServer, hdr ...string) bool {
		t.Helper()
		r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/c/join", "", hdr...)
		ck := r.Header.Get("Set-Cookie")
		if r.Code != 200 || !strings.HasPrefix(ck, "wr_visitor=") || !strings.Contains(strings.ToLower(ck), "samesite=lax") {
			t.Fatalf("join: %d %q", r.Code, ck)
		}
		return strings.Contains(strings.ToLower(ck), "; secure")
	}
	plain := startServer(t, nil, "rueidis", nil)
	if secure(plain) || secure(plain, "X-Forwarded-Proto", "https") {
		t.Fatal("Secure on plain HTTP, or on the word of an untrusted peer")
	}
	ps, _ := limit.ParseProxies("127.0.0.1")
	proxied := startServer(t, nil, "rueidis", func(c *config) { c.TrustedProxies = ps })
	if !secure(proxied, "X-Forwarded-Proto", "https") {
		t.Fatal("no Secure behind a trusted TLS proxy")
	}
	if secure(proxied, "X-Forwarded-Proto", "http") {
		t.Fatal("Secure behind a proxy that says http")
	}
}
