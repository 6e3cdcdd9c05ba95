package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// upstreamProxy forwards to the one -upstream, with fasthttp's client.
type upstreamProxy struct {
	hc   *fasthttp.HostClient
	addr string
	tls  bool

	mu      sync.Mutex
	tunnels map[net.Conn]net.Conn // WebSocket tunnels: client side -> upstream side
	closed  bool
}

func newUpstreamProxy(raw string) (*upstreamProxy, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("invalid -upstream %q: want http(s)://host:port", raw)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	p := &upstreamProxy{addr: addr, tls: u.Scheme == "https", tunnels: make(map[net.Conn]net.Conn)}
	p.hc = &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: p.tls,
		// Streaming responses (SSE, downloads) go through as they come;
		// no read timeout, so a long stream is not cut.
		StreamResponseBody:            true,
		MaxConns:                      4096,
		MaxIdleConnDuration:           30 * time.Second,
		WriteTimeout:                  30 * time.Second,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		NoDefaultUserAgentHeader:      true,
		Dial: func(addr string) (net.Conn, error) {
			return net.DialTimeout("tcp", addr, 5*time.Second)
		},
	}
	return p, nil
}

// closeTunnels ends the WebSocket tunnels at shutdown.
func (p *upstreamProxy) closeTunnels() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.hc.CloseIdleConnections()
	for c, up := range p.tunnels {
		// The tunnel's own goroutine closes c once both copies stop.
		up.Close()
		_ = c.SetReadDeadline(time.Now())
	}
}

// Front is the outermost handler in gateway mode: requests under the
// waiting page's prefix (Options.Page, e.g. /waitroom/) reach next, the
// server's own routes, with the prefix taken off, so a gateway routes one
// prefix to waitroom; with Options.Upstream, every other request goes
// through the gateway decision and on to the upstream (else to next).
func (g *Gateway) Front(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	prefix := []byte(g.page)
	strip := len(prefix) > 1
	bare := bytes.TrimSuffix(prefix, []byte("/"))
	return func(ctx *fasthttp.RequestCtx) {
		p := ctx.Path()
		if strip && (bytes.HasPrefix(p, prefix) || bytes.Equal(p, bare)) {
			rest := append([]byte{'/'}, p[min(len(prefix), len(p)):]...)
			ctx.Request.URI().SetPathBytes(rest)
			ctx.SetUserValue(viaPageKey, true)
			next(ctx)
			return
		}
		if g.proxy == nil {
			next(ctx)
			return
		}
		g.serveProxy(ctx)
	}
}

// proxied is the original request as the built-in proxy sees it.
func (g *Gateway) proxied(ctx *fasthttp.RequestCtx) original {
	h := &ctx.Request.Header
	peer, _ := netip.AddrFromSlice(ctx.RemoteIP())
	proto := "http"
	if ctx.IsTLS() || g.proxies.Contains(peer) && strings.EqualFold(string(h.Peek(fiber.HeaderXForwardedProto)), "https") {
		proto = "https"
	}
	o := original{
		method: string(h.Method()), proto: proto, host: string(h.Host()),
		// The target as sent, which is what the upstream gets: fasthttp's
		// own Path() is decoded and cleaned its way, not the app's.
		uri:    string(h.RequestURI()),
		client: g.proxies.Client(peer, string(h.Peek(fiber.HeaderXForwardedFor))),
		header: func(k string) string { return string(h.Peek(k)) },
		cookie: func(k string) string { return string(h.Cookie(k)) },
	}
	o.setPath()
	return o
}

// gatewayHeaders are the request headers only the gateway sets (the app
// trusts them). Compared with '_' read as '-' and ignoring case: servers
// that map headers to variables (CGI, WSGI, PHP, Rack) give
// X_Waitroom_Visitor and X-Waitroom-Visitor the same name.
var gatewayHeaders = []string{"x-waitroom-room", "x-waitroom-visitor", "x-waitroom-fail-open"}

// stripGatewayHeaders deletes every spelling of gatewayHeaders a client
// sent.
func stripGatewayHeaders(h *fasthttp.RequestHeader) {
	var drop []string
	for k := range h.All() {
		name := strings.ToLower(strings.ReplaceAll(string(k), "_", "-"))
		for _, g := range gatewayHeaders {
			if name == g {
				drop = append(drop, string(k))
			}
		}
	}
	for _, k := range drop {
		h.Del(k)
	}
}

// serveProxy decides and forwards one request.
func (g *Gateway) serveProxy(ctx *fasthttp.RequestCtx) {
	o := g.proxied(ctx)
	// Not ctx itself: fasthttp's RequestCtx as a context.Context races
	// with server shutdown. Each Redis call has its own timeout.
	v := g.decide(context.Background(), &o)
	if !v.pass {
		writeVerdict(&ctx.Response, &v)
		return
	}
	req := &ctx.Request
	// The upstream trusts these headers: only the gateway sets them.
	stripGatewayHeaders(&req.Header)
	if v.room != "" {
		req.Header.Set("X-Waitroom-Room", v.room)
		req.Header.Set("X-Waitroom-Visitor", v.visitor)
	}
	req.Header.Set("X-Forwarded-Proto", o.proto)
	req.Header.Set("X-Forwarded-Host", o.host)
	if o.client.IsValid() {
		req.Header.Set(fiber.HeaderXForwardedFor, o.client.String())
	}
	if isUpgrade(req) {
		g.tunnel(ctx, &v)
		return
	}
	resp := fasthttp.AcquireResponse()
	began := time.Now()
	err := g.proxy.hc.Do(req, resp)
	if g.health != nil && v.room != "" {
		g.health(v.room, time.Since(began), err == nil && resp.StatusCode() < 500)
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		g.log.Warn("proxy: upstream unavailable", "upstream", g.proxy.addr, "err", err)
		writeVerdict(&ctx.Response, &v) // a slid cookie still goes out
		upstreamDown(ctx, wantsJSON(o.header("Accept")))
		return
	}
	g.relay(ctx, resp, &v, nil)
}

// relay hands the upstream's resp to the client, with the verdict's
// cookie, acting on Waitroom-Session. It takes resp over; up, when not
// nil, is closed once the body has gone.
func (g *Gateway) relay(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, v *verdict, up io.Closer) {
	g.sessionEnd(ctx, resp, v)
	resp.Header.CopyTo(&ctx.Response.Header)
	writeVerdict(&ctx.Response, v)
	if body := resp.BodyStream(); body != nil {
		n := resp.Header.ContentLength()
		if n < 0 {
			n = -1
		}
		ctx.Response.SetBodyStream(&streamBody{r: body, resp: resp, conn: ctx.Conn(), up: up}, n)
		return
	}
	ctx.Response.SetBody(resp.Body())
	fasthttp.ReleaseResponse(resp)
	if up != nil {
		up.Close()
	}
}

// sessionEnd acts on the upstream's Waitroom-Session: end: the header goes,
// the session ends (its slot and seat are freed at once) and the browser's
// cookie is cleared.
func (g *Gateway) sessionEnd(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, v *verdict) {
	h := resp.Header.Peek("Waitroom-Session")
	if h == nil {
		return
	}
	resp.Header.Del("Waitroom-Session")
	if !strings.EqualFold(strings.TrimSpace(string(h)), "end") || v.session == nil {
		return
	}
	if err := g.EndSession(context.Background(), *v.session); err != nil {
		g.log.Warn("proxy: session not ended", "room", v.session.Room, "err", err)
	}
	rt := g.routes.Room(v.session.Room)
	if rt != nil {
		if v.cookie != nil {
			fasthttp.ReleaseCookie(v.cookie)
		}
		proto := "http"
		if ctx.IsTLS() {
			proto = "https"
		}
		v.cookie = sessionCookie(rt.Cookie, "", -1, proto)
	}
}

// upstreamDown is 502 upstream_unavailable, as JSON or as a page.
func upstreamDown(ctx *fasthttp.RequestCtx, asJSON bool) {
	ctx.Response.Header.Set(fiber.HeaderCacheControl, "no-store")
	ctx.Response.Header.Set(fiber.HeaderRetryAfter, "5")
	ctx.SetStatusCode(fiber.StatusBadGateway)
	if asJSON {
		ctx.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		ctx.SetBodyString(`{"error":{"code":"upstream_unavailable","message":"the site behind the waiting room does not answer; retry shortly"}}`)
		return
	}
	ctx.SetContentType(fiber.MIMETextHTMLCharsetUTF8)
	ctx.SetBodyString(`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
		`<title>Temporarily unavailable</title><body style="font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:15vh auto;padding:0 1rem">` +
		`<h1>The site is not answering</h1><p>Your place is kept. Please try again in a few seconds.</p>` +
		`<p data-code="upstream_unavailable"><a href="">Try again</a></p></body></html>`)
}

// streamBody hands a streamed upstream body to the client, pushing the
// write deadline on as data comes (a long stream outlives WriteTimeout),
// and gives the upstream connection back when done.
type streamBody struct {
	r    io.Reader
	resp *fasthttp.Response
	conn net.Conn
	up   io.Closer // the upstream connection of this response alone; nil for a pooled one
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		_ = b.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	}
	return n, err
}

func (b *streamBody) Close() error {
	err := b.resp.CloseBodyStream()
	fasthttp.ReleaseResponse(b.resp)
	if b.up != nil {
		b.up.Close()
	}
	return err
}

func isUpgrade(req *fasthttp.Request) bool {
	return bytes.EqualFold(req.Header.Peek("Upgrade"), []byte("websocket"))
}

// upgradeWait bounds how long the upstream may take to answer an upgrade.
const upgradeWait = 10 * time.Second

// tunnel passes a WebSocket upgrade through. The request goes to the
// upstream as is over a connection of its own (fasthttp's client cannot
// upgrade), and the connection becomes a tunnel only once the upstream
// answers 101: its answer and every frame after it then flow both ways
// untouched. Any other answer is relayed as an ordinary response and the
// client's connection goes back to request handling, so the next request
// on it is checked like any other (tunnelling on a refused upgrade would
// let it reach the upstream unchecked).
func (g *Gateway) tunnel(ctx *fasthttp.RequestCtx, v *verdict) {
	p := g.proxy
	up, err := p.sendUpgrade(&ctx.Request)
	var resp *fasthttp.Response
	var head []byte
	var br *bufio.Reader
	if err == nil {
		resp, head, br, err = readUpgradeAnswer(up, ctx.IsHead())
	}
	if err != nil {
		if up != nil {
			up.Close()
		}
		g.log.Warn("proxy: upstream unavailable", "upstream", p.addr, "err", err)
		upstreamDown(ctx, false)
		return
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		// A refused upgrade: relayed like any response; the connection to
		// the upstream was for this request only.
		resp.Header.ResetConnectionClose()
		g.relay(ctx, resp, v, up)
		return
	}
	fasthttp.ReleaseResponse(resp)
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			up.Close()
			return
		}
		p.tunnels[c] = up
		p.mu.Unlock()
		_ = c.SetDeadline(time.Time{})
		done := make(chan struct{})
		go func() {
			// The upstream's 101 as it sent it, then what it buffered and
			// everything after.
			if _, err := c.Write(head); err == nil {
				_, _ = io.Copy(c, br)
			}
			// Wakes the copy below. Closing c here would hand it back to
			// fasthttp's pool while that copy still reads it.
			_ = c.SetReadDeadline(time.Now())
			close(done)
		}()
		_, _ = io.Copy(up, c)
		up.Close()
		<-done
		p.mu.Lock()
		delete(p.tunnels, c)
		p.mu.Unlock()
		c.Close()
	})
}

// sendUpgrade dials a connection of its own to the upstream and writes
// req on it. up is not nil when the dial succeeded, even with an error.
func (p *upstreamProxy) sendUpgrade(req *fasthttp.Request) (up net.Conn, err error) {
	if p.tls {
		up, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", p.addr, &tls.Config{ServerName: strings.Split(p.addr, ":")[0]})
	} else {
		up, err = net.DialTimeout("tcp", p.addr, 5*time.Second)
	}
	if err != nil {
		return nil, err
	}
	_ = up.SetWriteDeadline(time.Now().Add(10 * time.Second))
	var buf bytes.Buffer
	_, err = req.WriteTo(&buf)
	if err == nil {
		_, err = up.Write(buf.Bytes())
	}
	_ = up.SetWriteDeadline(time.Time{})
	return up, err
}

// maxUpgradeHead bounds the upstream's response head to an upgrade.
const maxUpgradeHead = 16 << 10

// readUpgradeAnswer reads the upstream's answer to an upgrade request from
// up: informational answers other than 101 are skipped. On 101, head is
// the answer's head exactly as sent and br holds what followed it. Any
// other answer comes with its body to stream from br (none for HEAD).
func readUpgradeAnswer(up net.Conn, isHead bool) (resp *fasthttp.Response, head []byte, br *bufio.Reader, err error) {
	_ = up.SetReadDeadline(time.Now().Add(upgradeWait))
	rec := &headRecorder{r: up}
	br = bufio.NewReaderSize(rec, maxUpgradeHead)
	resp = fasthttp.AcquireResponse()
	resp.Header.DisableNormalizing()
	for range 8 {
		start := len(rec.buf) - br.Buffered()
		if err = resp.Header.Read(br); err != nil {
			break
		}
		code := resp.StatusCode()
		if code == fasthttp.StatusSwitchingProtocols {
			head = rec.buf[start : len(rec.buf)-br.Buffered()]
			rec.stop = true
			_ = up.SetReadDeadline(time.Time{})
			return resp, head, br, nil
		}
		if code >= 200 {
			_ = up.SetReadDeadline(time.Time{})
			rec.stop, rec.buf = true, nil
			resp.StreamBody = true
			if !isHead && code != fasthttp.StatusNoContent && code != fasthttp.StatusNotModified {
				// Bodies past this stream (chunked always does); one
				// delimited by the close must fit.
				limit := 64 << 10
				if resp.Header.ContentLength() == -2 {
					limit = 8 << 20
				}
				err = resp.ReadBody(br, limit)
			}
			if err == nil {
				return resp, nil, br, nil
			}
			break
		}
	}
	if err == nil {
		err = errors.New("too many informational answers")
	}
	fasthttp.ReleaseResponse(resp)
	return nil, nil, nil, fmt.Errorf("upgrade answer: %w", err)
}

// headRecorder keeps the bytes read through it until stop, so the 101's
// head can be passed on byte for byte.
type headRecorder struct {
	r    io.Reader
	buf  []byte
	stop bool
}

func (h *headRecorder) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if !h.stop {
		h.buf = append(h.buf, p[:n]...)
	}
	return n, err
}
