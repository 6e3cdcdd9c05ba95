package gateway

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// startProxy serves tg's Front in front of upstream on a local port; next
// answers "waitroom <path>" for what goes to waitroom's own routes.
func startProxy(t *testing.T, tg *testGateway, upstream *httptest.Server) string {
	t.Helper()
	p, err := newUpstreamProxy(upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	tg.proxy = p
	next := func(ctx *fasthttp.RequestCtx) { fmt.Fprintf(ctx, "waitroom %s", ctx.Path()) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: tg.Front(next)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		tg.Close()
		_ = srv.Shutdown()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// send is one request through the proxy, as a browser on shop.example.com.
func send(t *testing.T, base, method, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, nil)
	req.Host = "shop.example.com"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp, b.String()
}

func TestProxy(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/checkout/done" {
			w.Header().Set("Waitroom-Session", "end")
		}
		if r.Header.Get("Upgrade") != "" {
			http.Error(w, "no upgrades here", http.StatusForbidden)
			return
		}
		fmt.Fprintf(w, "app %s room=%q visitor=%q spoof=%q host=%q", r.URL.Path, r.Header.Get("X-Waitroom-Room"),
			r.Header.Get("X-Waitroom-Visitor"), r.Header.Values("X_Waitroom_Room"), r.Header.Get("X-Forwarded-Host"))
	}))
	defer upstream.Close()
	tg := newTestGateway(t, false, nil)
	base := startProxy(t, tg, upstream)

	if _, body := send(t, base, "GET", "/waitroom/api/v1/rooms"); body != "waitroom /api/v1/rooms" {
		t.Errorf("waiting page prefix: %q", body)
	}
	_, body := send(t, base, "GET", "/about", "X-Waitroom-Room", "gw", "X_Waitroom_Room", "gw")
	if body != `app /about room="" visitor="" spoof=[] host="shop.example.com"` {
		t.Errorf("unprotected path: %q", body)
	}
	resp, _ := send(t, base, "GET", "/checkout/cart", "Accept", "text/html")
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), "/waitroom/?room=gw&") {
		t.Errorf("no session: status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := send(t, base, "GET", "/checkout%2fcart"); resp.StatusCode != 400 || errorCode(body) != "invalid_path" {
		t.Errorf("encoded slash: status %d %s", resp.StatusCode, body)
	}

	cookie := "wr_session_gw=" + tg.session("v1", time.Now()) + "; wr_visitor=cred-v1"
	_, body = send(t, base, "GET", "/checkout/cart", "Cookie", cookie, "X-Waitroom-Visitor", "someone")
	if body != `app /checkout/cart room="gw" visitor="v1" spoof=[] host="shop.example.com"` {
		t.Errorf("valid session: %q", body)
	}
	// A refused upgrade is an ordinary answer, not a tunnel.
	resp, body = send(t, base, "GET", "/checkout/ws", "Cookie", cookie, "Connection", "Upgrade", "Upgrade", "websocket")
	if resp.StatusCode != 403 || !strings.Contains(body, "no upgrades here") {
		t.Errorf("refused upgrade: status %d %q", resp.StatusCode, body)
	}

	resp, _ = send(t, base, "GET", "/checkout/done", "Cookie", cookie)
	if resp.Header.Get("Waitroom-Session") != "" {
		t.Error("Waitroom-Session reached the browser")
	}
	if !strings.HasPrefix(resp.Header.Get("Set-Cookie"), "wr_session_gw=;") {
		t.Errorf("session end: Set-Cookie %q", resp.Header.Get("Set-Cookie"))
	}
	if len(tg.store.ended) != 1 || tg.store.ended[0].Visitor != "v1" {
		t.Errorf("ended %+v", tg.store.ended)
	}
}
