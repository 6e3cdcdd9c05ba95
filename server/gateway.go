package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/gateway"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// gatewayMode puts rooms in front of an unchanged app: the forward-auth
// check, the session cookie and, with -upstream, the built-in proxy.
type gatewayMode struct {
	routes   *gateway.Config
	sessions *gateway.Signer
	cache    *gateway.Cache
	page     string     // the waiting page's path prefix, e.g. /waitroom/
	broker   hub.Broker // revocations from other instances; nil without routes
	// down is set while the revocation feed has lost Redis (not before
	// its first connection: a starting instance is not in an outage).
	down  atomic.Bool
	proxy *upstreamProxy // nil without -upstream
}

// sessionCacheSize bounds the revocations and slide marks held (each kind).
const sessionCacheSize = 1 << 18

// maxSlideEvery caps the interval between two slides of a session, so a
// room with a long idle TTL still sees its sessions in use.
const maxSlideEvery = 30 * time.Second

// newGateway loads the routes and builds the gateway mode. secret signs
// session cookies.
func (s *server) newGateway(secret []byte) error {
	cfg := &gateway.Config{}
	if s.cfg.RoutesFile != "" {
		data, err := os.ReadFile(s.cfg.RoutesFile)
		if err != nil {
			return err
		}
		if cfg, err = gateway.Parse(s.cfg.RoutesFile, data); err != nil {
			return err
		}
	}
	for _, r := range s.cfg.Routes {
		rt, err := gateway.ParseRoute(r)
		if err != nil {
			return err
		}
		cfg.Routes = append(cfg.Routes, rt)
	}
	if err := cfg.NameCookies(); err != nil {
		return fmt.Errorf("routes: %w", err)
	}
	g := &gatewayMode{
		routes: cfg, sessions: gateway.NewSigner(secret), cache: gateway.NewCache(sessionCacheSize),
		page: s.cfg.GatewayPage,
	}
	if len(cfg.Routes) > 0 {
		if s.redis.rue != nil {
			g.broker = hub.NewRueidisBroker(s.redis.rue, s.log)
		} else {
			g.broker = hub.NewGoRedisBroker(s.redis.gor, s.log)
		}
	}
	if s.cfg.Upstream != "" {
		p, err := newUpstreamProxy(s.cfg.Upstream)
		if err != nil {
			return err
		}
		g.proxy = p
	}
	s.gw = g
	return nil
}

// runGateway keeps the revocation subscription and prunes the cache.
func (s *server) runGateway(ctx context.Context) error {
	g := s.gw
	if g.broker == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- g.broker.Run(ctx, revocations{g}) }()
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := g.broker.Subscribe(sctx, queue.RevokedChannel); err != nil && ctx.Err() == nil {
			s.log.Warn("gateway: revocation subscribe", "err", err)
		}
	}()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return <-done
		case now := <-t.C:
			g.cache.Prune(now, maxSlideEvery)
		}
	}
}

// revocations feeds the cache from pub/sub.
type revocations struct{ g *gatewayMode }

func (r revocations) Message(_ string, payload []byte) {
	key, until, ok := strings.Cut(string(payload), " ")
	ms, err := strconv.ParseInt(until, 10, 64)
	if !ok || err != nil {
		return
	}
	r.g.cache.Revoke(key, time.UnixMilli(ms))
}
func (r revocations) Up()        { r.g.down.Store(false) }
func (r revocations) Down(error) { r.g.down.Store(true) }

// original is the request a gateway asks about (or the proxy got).
type original struct {
	method, proto, host, uri string
	// path is the path as the app will see it (gateway.NormalizePath),
	// what routes and bypass rules match; badPath is set when it cannot be
	// told without ambiguity.
	path    string
	badPath bool
	client  netip.Addr
	header  func(string) string
	cookie  func(string) string
	nginx   bool // asked by nginx auth_request: deny with 401
	// absolute: the waiting page's Location names the original host.
	// Traefik resolves a relative Location against the check's own
	// address, which would send the visitor to waitroom's port.
	absolute bool
}

// verdict is the gateway's answer.
type verdict struct {
	pass      bool
	status    int
	room      string
	visitor   string
	session   *gateway.Session // the valid session, for Waitroom-Session: end
	cookie    *fasthttp.Cookie // to set (slid, or cleared)
	location  string
	retry     int // Retry-After seconds, 0 = none
	body      []byte
	ctype     string
	failOpen  bool
	errorCode string
	page      bool // errorCode as a short HTML page (a browser asked)
}

// The headers a gateway states the original request in. Only a peer in
// -trusted-proxies may send them: anyone else is a visitor speaking for
// itself (see fromCheck).
var forwardedHeaders = []string{"X-Original-URI", "X-Original-Method", "X-Forwarded-Uri", "X-Forwarded-Host", "X-Forwarded-Method"}

var errMixedForward = httperr.New(403, "ambiguous_forward", "this request states its original in both X-Original-URI and X-Forwarded-*; the gateway must clear the form it does not use")

var errUntrustedGateway = httperr.New(403, "untrusted_gateway", "this request states another request in forwarded headers, but its peer is not in -trusted-proxies")

// fromCheck reads the original request of a forward-auth call. It has one
// of three shapes, told apart by what is present, never mixed:
//
//   - nginx (auth_request): X-Original-URI and X-Original-Method, and the
//     original Host. With X-Original-URI present no X-Forwarded-* header is
//     read: nginx's subrequest carries every header the client sent.
//   - Traefik, Caddy and nginx's second call (@waitroom): X-Forwarded-Uri,
//     -Method and -Host (the Host header when absent).
//   - Envoy: the path after /api/v1/check, its own method and Host.
//
// Both nginx's and the X-Forwarded-* shape at once is refused
// (errMixedForward): one of them came from the client, through a recipe
// that forgot to clear it. A request that carries any of those headers
// from a peer not in -trusted-proxies is refused (errUntrustedGateway):
// the gateway in front is not trusted, so what it states cannot be.
// X-Forwarded-Proto and -For count only from a trusted peer too.
func (s *server) fromCheck(c *fiber.Ctx) (original, error) {
	h := func(k string) string { return c.Get(k) }
	o := original{header: h, cookie: func(k string) string { return c.Cookies(k) }}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if !s.cfg.TrustedProxies.Contains(peer) {
		for _, k := range forwardedHeaders {
			if c.Get(k) != "" {
				return o, errUntrustedGateway
			}
		}
	}
	if c.Get("X-Original-URI") != "" && (c.Get("X-Forwarded-Uri") != "" || c.Get("X-Forwarded-Host") != "" || c.Get("X-Forwarded-Method") != "") {
		// Both shapes: the gateway set one, the client sent the other, and
		// which is which cannot be told here (the recipe clears the other).
		return o, errMixedForward
	}
	o.host = string(c.Request().Header.Host())
	o.proto = "http"
	if s.secure(c) {
		o.proto = "https"
	}
	switch {
	case c.Get("X-Original-URI") != "":
		o.uri = c.Get("X-Original-URI")
		o.method = c.Get("X-Original-Method")
		o.nginx = true
	case c.Get("X-Forwarded-Uri") != "":
		o.uri = c.Get("X-Forwarded-Uri")
		o.method = c.Get("X-Forwarded-Method")
		o.host = cmpStr(c.Get("X-Forwarded-Host"), o.host)
		o.absolute = true
	default:
		// Envoy: the check path is /api/v1/check followed by the original
		// path, and the method is the original one.
		o.uri = strings.TrimPrefix(string(c.Request().RequestURI()), "/api/v1/check")
		if o.uri == "" || o.uri[0] != '/' {
			o.uri = "/" + o.uri
		}
		o.method = c.Method()
	}
	if o.method == "" {
		o.method = fiber.MethodGet
	}
	o.setPath()
	o.client = s.clientAddr(c)
	return o, nil
}

// setPath normalises o.uri into o.path.
func (o *original) setPath() {
	p, err := gateway.NormalizePath(o.uri)
	o.path, o.badPath = p, err != nil
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// decide is the gateway's one decision, for the check endpoint and the
// proxy alike. The common case (a valid session that needs no slide)
// touches no Redis: an HMAC check and the local revocation cache.
func (s *server) decide(ctx context.Context, o *original) verdict {
	g := s.gw
	if len(g.routes.Routes) == 0 {
		return verdict{pass: true}
	}
	// Before any bypass: a request the app could read as another path, or
	// for a host no route names, is not passed on whatever else it says.
	if o.badPath {
		return verdict{status: 400, errorCode: "invalid_path", page: wantsPage(o.header("Accept"))}
	}
	if !g.routes.Serves(o.host) {
		return verdict{status: 421, errorCode: "unknown_host", page: wantsPage(o.header("Accept"))}
	}
	if g.routes.Bypassed(o.path, o.client, o.header) {
		return verdict{pass: true}
	}
	rt := g.routes.Route(o.method, o.host, o.path)
	if rt == nil {
		return verdict{pass: true}
	}
	now := time.Now()
	var clear *fasthttp.Cookie
	if raw := o.cookie(rt.Cookie); raw != "" {
		sess, err := g.sessions.Parse(raw)
		switch {
		case err != nil:
			clear = s.sessionCookie(rt.Cookie, "", -1, o.proto)
		case sess.Room != rt.Room:
			// Another room's session (a name the routes no longer give
			// this room alone): not for here, and not ours to clear.
		case g.cache.Revoked(sess.Key()) || !now.Before(sess.ExpiresAt):
			clear = s.sessionCookie(rt.Cookie, "", -1, o.proto)
		case now.Before(sess.NotBefore):
			// Not valid yet: the waiting page counts down and comes back.
		case !s.holdsSession(o, sess):
			// A copied cookie without its visitor's credential: denied
			// like no session, and left alone (clearing it would let
			// whoever can make a browser send another credential end
			// that visitor's session).
		default:
			if v, ok := s.validSession(ctx, rt, sess, now, o.proto); ok {
				return v
			}
			clear = s.sessionCookie(rt.Cookie, "", -1, o.proto)
		}
	}
	v := s.deny(ctx, rt, o)
	if v.cookie == nil {
		v.cookie = clear
	}
	return v
}

// holdsSession reports whether the request carries the credential of the
// session's visitor (header X-Visitor for API clients, else cookie
// wr_visitor), as an entry token must: a session cookie alone is a value
// anyone who saw it could send. One HMAC, no Redis.
func (s *server) holdsSession(o *original, sess gateway.Session) bool {
	cred := o.header("X-Visitor")
	if cred == "" {
		cred = o.cookie(visitorCookie)
	}
	if cred == "" {
		return false
	}
	id, err := s.signer.ParseVisitor(cred)
	return err == nil && id == sess.Visitor
}

// slideEvery is how often at most a session of room slides: a tenth of the
// room's idle TTL (its tokenTtlSeconds, else -token-ttl), at most
// maxSlideEvery. A page with fifty assets then makes no Redis write most
// of the time, and a session in use slides long before its idle TTL ends,
// however short the room's. From the room settings in memory: no Redis.
func (s *server) slideEvery(room string) time.Duration {
	ttl := s.rooms.tokenTTL(room)
	if ttl <= 0 {
		ttl = s.cfg.TokenTTL
	}
	return min(ttl/10, maxSlideEvery)
}

// validSession passes a valid session, sliding its idle expiry when its
// last slide is older than the room's slide interval (once per instance
// per interval). ok is false when Redis says the session is over (ended
// elsewhere and the message lost, or past its cap).
func (s *server) validSession(ctx context.Context, rt *gateway.Route, sess gateway.Session, now time.Time, proto string) (verdict, bool) {
	g := s.gw
	v := verdict{pass: true, room: sess.Room, visitor: sess.Visitor, session: &sess}
	every := s.slideEvery(sess.Room)
	if now.Sub(sess.SlidAt) < every || !g.cache.ClaimSlide(sess.Key(), now, every) {
		return v, true
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	exp, err := s.q.Consume(rctx, queue.Token{Room: sess.Room, Visitor: sess.Visitor, NotBefore: sess.NotBefore}, queue.Touch)
	cancel()
	switch {
	case err == nil:
		slid := sess
		slid.ExpiresAt, slid.SlidAt = exp, now
		v.cookie = s.sessionCookie(rt.Cookie, g.sessions.Sign(slid), int(s.cfg.TokenMax/time.Second), proto)
		return v, true
	case isTokenError(err):
		g.cache.Revoke(sess.Key(), sess.ExpiresAt)
		return verdict{}, false
	}
	s.metrics.redisErr.Inc()
	if s.rooms.failMode(sess.Room) == queue.FailClosed {
		return verdict{status: 503, errorCode: "unavailable", retry: 2}, true
	}
	return v, true // the signature and window hold; it slides once Redis is back
}

// deny answers a request without a valid session: a browser goes to the
// waiting page (nginx gets 401 and redirects itself), an API client gets
// 429 with the state. While Redis is unreachable the room's fail mode
// decides instead.
func (s *server) deny(ctx context.Context, rt *gateway.Route, o *original) verdict {
	g := s.gw
	// Redis is out: the revocation feed lost it, or the server's own
	// watch (pings) marked it unreachable.
	if g.broker != nil && (g.down.Load() || s.hub.Degraded()) {
		if s.rooms.failMode(rt.Room) == queue.FailClosed || !s.rooms.limiter(rt.Room).Allow() {
			return verdict{status: 503, errorCode: "unavailable", retry: 2}
		}
		s.metrics.failOpen.WithLabelValues("admitted").Inc()
		return verdict{pass: true, room: rt.Room, failOpen: true}
	}
	if o.nginx {
		// auth_request passes on only 2xx, 401 and 403: the @waitroom
		// location asks again for the full answer.
		return verdict{status: 401, room: rt.Room}
	}
	if wantsJSON(o.header("Accept")) {
		st := wire.State{Room: rt.Room, Status: wire.StatusNotInQueue}
		if cred := cmpStr(o.header("X-Visitor"), o.cookie(visitorCookie)); cred != "" {
			if id, err := s.signer.ParseVisitor(cred); err == nil {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				got, err := s.q.Status(rctx, rt.Room, id)
				cancel()
				if err != nil {
					s.metrics.redisErr.Inc()
					return verdict{status: 503, errorCode: "unavailable", retry: 2}
				}
				st = got
			}
		}
		retry := 1
		if st.NextPoll > time.Second {
			retry = int((st.NextPoll + time.Second - 1) / time.Second)
		}
		return verdict{status: 429, retry: retry, room: rt.Room, body: st.AppendJSON(nil), ctype: fiber.MIMEApplicationJSONCharsetUTF8}
	}
	loc := g.page + "?room=" + url.QueryEscape(rt.Room) + "&return=" + url.QueryEscape(o.proto+"://"+o.host+o.uri)
	if o.absolute {
		loc = o.proto + "://" + o.host + loc
	}
	return verdict{status: 302, location: loc, room: rt.Room}
}

// wantsPage: a browser asks for a page.
func wantsPage(accept string) bool { return strings.Contains(accept, "text/html") }

// wantsJSON: an API client asks for JSON and not for a page.
func wantsJSON(accept string) bool {
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// sessionCookie builds a session cookie (maxAge < 0 clears it).
func (s *server) sessionCookie(name, value string, maxAge int, proto string) *fasthttp.Cookie {
	ck := fasthttp.AcquireCookie()
	ck.SetKey(name)
	ck.SetValue(value)
	ck.SetPath("/")
	ck.SetHTTPOnly(true)
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ck.SetSecure(proto == "https")
	if maxAge < 0 {
		ck.SetExpire(fasthttp.CookieExpireDelete)
	} else {
		ck.SetMaxAge(maxAge)
	}
	return ck
}

// writeVerdict writes v's headers (and, for a denial, its status and body)
// on a response.
func writeVerdict(resp *fasthttp.Response, v *verdict) {
	if v.cookie != nil {
		resp.Header.SetCookie(v.cookie)
		fasthttp.ReleaseCookie(v.cookie)
		v.cookie = nil
	}
	if v.pass {
		return
	}
	resp.Header.Set(fiber.HeaderCacheControl, "no-store")
	if v.retry > 0 {
		resp.Header.Set(fiber.HeaderRetryAfter, strconv.Itoa(v.retry))
	}
	if v.room != "" {
		resp.Header.Set("X-Waitroom-Room", v.room)
	}
	if v.location != "" {
		resp.Header.Set(fiber.HeaderLocation, v.location)
	}
	resp.SetStatusCode(v.status)
	switch {
	case v.body != nil:
		resp.Header.SetContentType(v.ctype)
		resp.SetBody(v.body)
	case v.errorCode != "" && v.page:
		resp.Header.SetContentType(fiber.MIMETextHTMLCharsetUTF8)
		resp.SetBodyString(`<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
			`<title>` + verdictTitles[v.errorCode] + `</title><body style="font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:15vh auto;padding:0 1rem">` +
			`<h1>` + verdictTitles[v.errorCode] + `</h1><p>` + verdictMessages[v.errorCode] + `.</p>` +
			`<p data-code="` + v.errorCode + `"><a href="/">Home</a></p></body></html>`)
	case v.errorCode != "":
		resp.Header.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
		resp.SetBodyString(`{"error":{"code":"` + v.errorCode + `","message":"` + verdictMessages[v.errorCode] + `"}}`)
	}
}

var verdictMessages = map[string]string{
	"unavailable":  "the queue store is unreachable; retry shortly",
	"invalid_path": "the request path has an encoded slash, a backslash, a control character, an invalid escape or a .. above the root",
	"unknown_host": "this gateway serves no site under the requested host name",
}

// verdictTitles head the page a browser gets instead of the JSON.
var verdictTitles = map[string]string{
	"invalid_path": "Bad address",
	"unknown_host": "Unknown site",
}

// check is GET /api/v1/check (any method, and any path below it for
// Envoy): 200 with X-Waitroom-Room and X-Waitroom-Visitor to pass, else
// the denial the gateway hands the visitor.
func (s *server) check(c *fiber.Ctx) error {
	if viaPage(c) {
		return fiber.ErrNotFound
	}
	o, err := s.fromCheck(c)
	if err != nil {
		s.log.Warn("gateway: check refused", "peer", c.Context().RemoteIP().String(), "err", err)
		return err
	}
	v := s.decide(c.UserContext(), &o)
	if v.pass {
		// Present even when empty: a gateway that copies them then
		// overwrites whatever the visitor sent (Caddy 2.6 would otherwise
		// copy its unresolved placeholder).
		c.Set("X-Waitroom-Room", v.room)
		c.Set("X-Waitroom-Visitor", v.visitor)
		if v.failOpen {
			c.Set("X-Waitroom-Fail-Open", "1")
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		writeVerdict(c.Response(), &v)
		return c.SendStatus(fiber.StatusOK)
	}
	if o.nginx {
		v = verdict{status: 401, room: v.room, cookie: v.cookie}
	}
	writeVerdict(c.Response(), &v)
	return nil
}

// viaPageKey marks a request that came in under the waiting page's prefix
// (see front): from a visitor, through the gateway's route to waitroom,
// never the gateway's own call.
const viaPageKey = "waitroom.viaPage"

func viaPage(c *fiber.Ctx) bool { return c.Locals(viaPageKey) != nil }

// endHeader must be on the gateway's end-of-session call (with POST):
// neither can a browser's navigation or form send, and a cross-site fetch
// with it needs a preflight nothing answers.
const endHeader = "X-Waitroom-End"

var errNotGatewayEnd = httperr.New(403, "not_gateway", "only the gateway's own end-of-session call (POST from -trusted-proxies with X-Waitroom-End: 1) ends a session here")

// checkEnd ends the session of a forward-auth request whose upstream
// answered Waitroom-Session: end (nginx calls it after the response, see
// examples/nginx.conf). Same request shape as check, but only as POST from
// a peer in -trusted-proxies with X-Waitroom-End: 1, and never through the
// waiting page's prefix: a visitor's browser carries the session cookie,
// so anything it can be made to send (a link, a form, a redirect) must
// not end the session. 204.
func (s *server) checkEnd(c *fiber.Ctx) error {
	if viaPage(c) {
		return fiber.ErrNotFound
	}
	if c.Method() != fiber.MethodPost {
		c.Set(fiber.HeaderAllow, fiber.MethodPost)
		return httperr.New(405, "method_not_allowed", "the end-of-session call is POST")
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if !s.cfg.TrustedProxies.Contains(peer) || c.Get(endHeader) != "1" {
		return errNotGatewayEnd
	}
	o, err := s.fromCheck(c)
	if err != nil {
		return err
	}
	if o.badPath || !s.gw.routes.Serves(o.host) {
		return c.SendStatus(fiber.StatusNoContent)
	}
	rt := s.gw.routes.Route(o.method, o.host, o.path)
	if rt == nil {
		return c.SendStatus(fiber.StatusNoContent)
	}
	sess, err := s.gw.sessions.Parse(o.cookie(rt.Cookie))
	if err != nil || sess.Room != rt.Room || !s.holdsSession(&o, sess) {
		return c.SendStatus(fiber.StatusNoContent)
	}
	if err := s.endSession(c.UserContext(), sess); err != nil {
		return s.storeError(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// endSession revokes sess here at once and everywhere through Redis, and
// frees its slot and seat.
func (s *server) endSession(ctx context.Context, sess gateway.Session) error {
	s.gw.cache.Revoke(sess.Key(), sess.ExpiresAt.Add(s.cfg.TokenMax))
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := s.q.EndSession(rctx, sess.Room, sess.Visitor, sess.NotBefore, sess.Key(), sess.NotBefore.Add(s.cfg.TokenMax))
	return err
}

var errBadReturn = httperr.New(400, "invalid_return", "the return URL must be on this host or a host in the routes")

// enter turns an admitted visitor's entry into a gateway session cookie and
// sends the browser back to where it was going: GET
// /api/v1/rooms/{room}/enter?return=URL. The waiting page goes here once
// admitted. A visitor not admitted (yet, or any more) goes back to the
// waiting page.
func (s *server) enter(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	ret, err := s.gw.routes.ReturnURL(c.Query("return"), s.requestHost(c))
	if err != nil {
		return errBadReturn
	}
	id, err := s.visitor(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	nb, exp, ok, err := s.q.Session(ctx, r, id)
	if err != nil {
		return s.storeError(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !ok || !time.Now().Before(exp) {
		return c.Redirect(s.gw.page+"?room="+url.QueryEscape(r)+"&return="+url.QueryEscape(c.Query("return")), fiber.StatusFound)
	}
	name := s.gw.cookieName(r)
	sess := gateway.Session{Room: r, Visitor: id, NotBefore: nb, ExpiresAt: exp, SlidAt: time.Now()}
	proto := "http"
	if s.secure(c) {
		proto = "https"
	}
	ck := s.sessionCookie(name, s.gw.sessions.Sign(sess), int(s.cfg.TokenMax/time.Second), proto)
	c.Response().Header.SetCookie(ck)
	fasthttp.ReleaseCookie(ck)
	return c.Redirect(ret, fiber.StatusFound)
}

var (
	errSessionNoVisitor    = httperr.New(401, "missing_visitor", "the session must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)")
	errSessionWrongVisitor = httperr.New(403, "wrong_visitor", "the session belongs to another visitor")
)

// cookieName is the session cookie of room: its routes' (see
// gateway.Config.NameCookies), else the default name of the room.
func (g *gatewayMode) cookieName(room string) string {
	if rt := g.routes.Room(room); rt != nil {
		return rt.Cookie
	}
	return gateway.SessionCookie(room)
}

// requestHost is the host the visitor asked for: X-Forwarded-Host from a
// peer in -trusted-proxies, else the Host header (not fiber's Hostname,
// which believes X-Forwarded-Host from anyone).
func (s *server) requestHost(c *fiber.Ctx) string {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if s.cfg.TrustedProxies.Contains(peer) {
		if h := c.Get("X-Forwarded-Host"); h != "" {
			return h
		}
	}
	return string(c.Request().Header.Host())
}

// endOwnSession is DELETE /api/v1/rooms/{room}/session: a visitor ends
// their own session (the browser sends the session cookie and the visitor
// credential it belongs to), which frees the place for the next one. 204.
func (s *server) endOwnSession(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	name := s.gw.cookieName(r)
	sess, err := s.gw.sessions.Parse(c.Cookies(name))
	if err != nil || sess.Room != r {
		return httperr.New(401, "missing_session", "no gateway session for this room in this request")
	}
	// Only its visitor ends a session: a copy of the cookie alone must not
	// end someone else's.
	cred := c.Get("X-Visitor")
	if cred == "" {
		cred = c.Cookies(visitorCookie)
	}
	if cred == "" {
		return errSessionNoVisitor
	}
	if err := s.holds(cred, queue.Token{Room: r, Visitor: sess.Visitor}); err != nil {
		if errors.Is(err, errWrongVisitor) {
			return errSessionWrongVisitor
		}
		return err
	}
	if err := s.endSession(c.UserContext(), sess); err != nil {
		return s.storeError(c, err)
	}
	proto := "http"
	if s.secure(c) {
		proto = "https"
	}
	ck := s.sessionCookie(name, "", -1, proto)
	c.Response().Header.SetCookie(ck)
	fasthttp.ReleaseCookie(ck)
	return c.SendStatus(fiber.StatusNoContent)
}

var errNoSession = httperr.New(404, "session_not_found", "this visitor holds no session in this room")

// adminEndSession is DELETE /api/v1/admin/rooms/{room}/sessions/{visitor}.
func (s *server) adminEndSession(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	id := c.Params("visitor")
	if !queue.ValidVisitor(id) {
		return httperr.New(400, "invalid_visitor", "visitor ids match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	nb, exp, ok, err := s.q.Session(ctx, r, id)
	if err != nil {
		return s.storeError(c, err)
	}
	if !ok {
		return errNoSession
	}
	if err := s.endSession(ctx, gateway.Session{Room: r, Visitor: id, NotBefore: nb, ExpiresAt: exp}); err != nil {
		return s.storeError(c, err)
	}
	s.auditEvent(ctx, r, adminLabel(c), auditEntry{Action: "end-session", Visitor: id})
	return c.SendStatus(fiber.StatusNoContent)
}
