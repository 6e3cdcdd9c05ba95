package gateway

import (
	"context"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/internal/httperr"
)

// The headers a gateway states the original request in. Only a trusted
// peer may send them: anyone else is a visitor speaking for itself (see
// fromCheck).
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
// from a peer not in the trusted proxies is refused (errUntrustedGateway):
// the gateway in front is not trusted, so what it states cannot be.
// X-Forwarded-Proto and -For count only from a trusted peer too.
func (g *Gateway) fromCheck(c *fiber.Ctx) (original, error) {
	h := func(k string) string { return c.Get(k) }
	o := original{header: h, cookie: func(k string) string { return c.Cookies(k) }}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if !g.proxies.Contains(peer) {
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
	o.proto = g.proto(c)
	switch {
	case c.Get("X-Original-URI") != "":
		o.uri = c.Get("X-Original-URI")
		o.method = c.Get("X-Original-Method")
		o.nginx = true
	case c.Get("X-Forwarded-Uri") != "":
		o.uri = c.Get("X-Forwarded-Uri")
		o.method = c.Get("X-Forwarded-Method")
		o.host = cmpOr(c.Get("X-Forwarded-Host"), o.host)
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
	o.client = g.proxies.Client(peer, c.Get(fiber.HeaderXForwardedFor))
	return o, nil
}

// proto is how the visitor reached us: https directly over TLS, or through
// a trusted proxy that says so with X-Forwarded-Proto; else http. Only
// over https may cookies carry Secure.
func (g *Gateway) proto(c *fiber.Ctx) string {
	if c.Context().IsTLS() {
		return "https"
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if g.proxies.Contains(peer) && strings.EqualFold(strings.TrimSpace(c.Get(fiber.HeaderXForwardedProto)), "https") {
		return "https"
	}
	return "http"
}

// Check is /api/v1/check (any method, and any path below it for Envoy):
// 200 with X-Waitroom-Room and X-Waitroom-Visitor to pass, else the
// denial the gateway hands the visitor. Never through the waiting page's
// prefix (404).
func (g *Gateway) Check(c *fiber.Ctx) error {
	if viaPage(c) {
		return fiber.ErrNotFound
	}
	o, err := g.fromCheck(c)
	if err != nil {
		g.checkLog.Log("gateway: check refused", "peer", c.Context().RemoteIP().String(), "err", err)
		return err
	}
	v := g.decide(c.UserContext(), &o)
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
		if o.nginx && v.newVisitor != nil {
			// nginx hands on one Set-Cookie of the check (it joins
			// several into one line, which browsers read as one cookie):
			// the session's goes there, the new visitor's in a header of
			// its own that the recipe adds as a second Set-Cookie.
			c.Set(VisitorCookieHeader, string(v.newVisitor.Cookie()))
			fasthttp.ReleaseCookie(v.newVisitor)
			v.newVisitor = nil
		}
		writeVerdict(c.Response(), &v)
		return c.SendStatus(fiber.StatusOK)
	}
	if o.nginx {
		v = verdict{status: 401, room: v.room, cookie: v.cookie}
	}
	writeVerdict(c.Response(), &v)
	return nil
}

// VisitorCookieHeader carries, on a pass of nginx's check, the Set-Cookie
// value of a visitor credential made on the spot (see Check).
const VisitorCookieHeader = "X-Waitroom-Visitor-Cookie"

// viaPageKey marks a request that came in under the waiting page's prefix
// (see Front): from a visitor, through the gateway's route to waitroom,
// never the gateway's own call.
const viaPageKey = "waitroom.viaPage"

func viaPage(c *fiber.Ctx) bool { return c.Locals(viaPageKey) != nil }

// endHeader must be on the gateway's end-of-session call (with POST):
// neither can a browser's navigation or form send, and a cross-site fetch
// with it needs a preflight nothing answers.
const endHeader = "X-Waitroom-End"

var errNotGatewayEnd = httperr.New(403, "not_gateway", "only the gateway's own end-of-session call (POST from -trusted-proxies with X-Waitroom-End: 1) ends a session here")

// CheckEnd is /api/v1/check-end: it ends the session of a forward-auth
// request whose upstream answered Waitroom-Session: end (nginx calls it
// after the response, see examples/nginx.conf). Same request shape as
// Check, but only as POST from a trusted peer with X-Waitroom-End: 1, and
// never through the waiting page's prefix: a visitor's browser carries the
// session cookie, so anything it can be made to send (a link, a form, a
// redirect) must not end the session. 204.
func (g *Gateway) CheckEnd(c *fiber.Ctx) error {
	if viaPage(c) {
		return fiber.ErrNotFound
	}
	if c.Method() != fiber.MethodPost {
		c.Set(fiber.HeaderAllow, fiber.MethodPost)
		return httperr.New(405, "method_not_allowed", "the end-of-session call is POST")
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if !g.proxies.Contains(peer) || c.Get(endHeader) != "1" {
		return errNotGatewayEnd
	}
	o, err := g.fromCheck(c)
	if err != nil {
		return err
	}
	if o.badPath || !g.routes.Serves(o.host) {
		return c.SendStatus(fiber.StatusNoContent)
	}
	rt := g.routes.Route(o.method, o.host, o.path)
	if rt == nil {
		return c.SendStatus(fiber.StatusNoContent)
	}
	sess, err := g.sessions.Parse(o.cookie(rt.Cookie))
	if err != nil || sess.Room != rt.Room || !g.holdsSession(&o, sess) {
		return c.SendStatus(fiber.StatusNoContent)
	}
	if err := g.EndSession(c.UserContext(), sess); err != nil {
		return g.api.StoreError(c, err)
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// EndSession revokes sess here at once and everywhere through the store,
// and frees its slot and seat. The store call has its own timeout.
func (g *Gateway) EndSession(ctx context.Context, sess Session) error {
	g.cache.Revoke(sess.Key(), sess.ExpiresAt.Add(g.tokenMax))
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return g.store.EndSession(rctx, sess, sess.NotBefore.Add(g.tokenMax))
}

var errBadReturn = httperr.New(400, "invalid_return", "the return URL must be on this host or a host in the routes")

// Enter is GET /api/v1/rooms/{room}/enter?return=URL: it turns an admitted
// visitor's entry into a gateway session cookie and sends the browser back
// to where it was going. The waiting page goes here once admitted. A
// visitor not admitted (yet, or any more) goes back to the waiting page.
func (g *Gateway) Enter(c *fiber.Ctx) error {
	r, err := g.api.Room(c)
	if err != nil {
		return err
	}
	ret, err := g.routes.ReturnURL(c.Query("return"), g.requestHost(c))
	if err != nil {
		return errBadReturn
	}
	id, err := g.api.Visitor(c)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), storeTimeout)
	defer cancel()
	nb, exp, ok, err := g.store.Session(ctx, r, id)
	if err != nil {
		return g.api.StoreError(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !ok || !time.Now().Before(exp) {
		return c.Redirect(g.page+"?room="+url.QueryEscape(r)+"&return="+url.QueryEscape(c.Query("return")), fiber.StatusFound)
	}
	sess := Session{Room: r, Visitor: id, NotBefore: nb, ExpiresAt: exp, SlidAt: time.Now()}
	ck := sessionCookie(g.CookieName(r), g.sessions.Sign(sess), int(g.tokenMax/time.Second), g.proto(c))
	c.Response().Header.SetCookie(ck)
	fasthttp.ReleaseCookie(ck)
	cred := cmpOr(c.Get("X-Visitor"), cmpOr(c.Cookies(g.visitorCookie), c.Query("visitor")))
	if ek := g.edgeCookie(g.CookieName(r), &sess, cred, g.proto(c), sess.SlidAt); ek != nil {
		c.Response().Header.SetCookie(ek)
		fasthttp.ReleaseCookie(ek)
	}
	return c.Redirect(ret, fiber.StatusFound)
}

var (
	errSessionNoVisitor    = httperr.New(401, "missing_visitor", "the session must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)")
	errSessionWrongVisitor = httperr.New(403, "wrong_visitor", "the session belongs to another visitor")
	errInvalidVisitor      = httperr.New(401, "invalid_visitor", "the visitor credential is malformed or was not issued here")
	errMissingSession      = httperr.New(401, "missing_session", "no gateway session for this room in this request")
)

// CookieName is the session cookie of room: its routes' (see
// Config.NameCookies), else the default name of the room.
func (g *Gateway) CookieName(room string) string {
	if rt := g.routes.Room(room); rt != nil {
		return rt.Cookie
	}
	return SessionCookie(room)
}

// requestHost is the host the visitor asked for: X-Forwarded-Host from a
// trusted peer, else the Host header (not fiber's Hostname, which
// believes X-Forwarded-Host from anyone).
func (g *Gateway) requestHost(c *fiber.Ctx) string {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	if g.proxies.Contains(peer) {
		if h := c.Get("X-Forwarded-Host"); h != "" {
			return h
		}
	}
	return string(c.Request().Header.Host())
}

// EndOwnSession is DELETE /api/v1/rooms/{room}/session: a visitor ends
// their own session (the browser sends the session cookie and the visitor
// credential it belongs to), which frees the place for the next one. 204.
func (g *Gateway) EndOwnSession(c *fiber.Ctx) error {
	r, err := g.api.Room(c)
	if err != nil {
		return err
	}
	name := g.CookieName(r)
	sess, err := g.sessions.Parse(c.Cookies(name))
	if err != nil || sess.Room != r {
		return errMissingSession
	}
	// Only its visitor ends a session: a copy of the cookie alone must not
	// end someone else's.
	cred := c.Get("X-Visitor")
	if cred == "" {
		cred = c.Cookies(g.visitorCookie)
	}
	if cred == "" {
		return errSessionNoVisitor
	}
	id, err := g.visitors.ParseVisitor(cred)
	if err != nil {
		return errInvalidVisitor
	}
	if id != sess.Visitor {
		return errSessionWrongVisitor
	}
	if err := g.EndSession(c.UserContext(), sess); err != nil {
		return g.api.StoreError(c, err)
	}
	ck := sessionCookie(name, "", -1, g.proto(c))
	c.Response().Header.SetCookie(ck)
	fasthttp.ReleaseCookie(ck)
	return c.SendStatus(fiber.StatusNoContent)
}
