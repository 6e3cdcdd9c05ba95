package gateway

import (
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// EdgeSessionTTL bounds an edge session's life: how long a session ended
// or revoked elsewhere may still pass at an edge that has not heard of it,
// and how often at most an edge in use asks waitroom again (SessionCheck,
// which also slides the session).
const EdgeSessionTTL = 60 * time.Second

// EdgeCookie is the cookie of a room's edge session, named after the
// room's session cookie.
func EdgeCookie(sessionCookie string) string { return sessionCookie + "_edge" }

// edgeCookie is the edge session of sess for the visitor holding
// credential, in the cookie beside the session cookie name; nil without an
// EdgeSigner, or when credential is not the session's visitor's (the edge
// session would bind one visitor's session to another's credential).
func (g *Gateway) edgeCookie(name string, sess *Session, credential, proto string, now time.Time) *fasthttp.Cookie {
	if g.edge == nil || sess == nil || credential == "" {
		return nil
	}
	if id, err := g.visitors.ParseVisitor(credential); err != nil || id != sess.Visitor {
		return nil
	}
	until := now.Add(EdgeSessionTTL)
	if sess.ExpiresAt.Before(until) {
		until = sess.ExpiresAt
	}
	raw, err := g.edge.SignEdgeSession(*sess, credential, until)
	if err != nil {
		g.log.Warn("gateway: edge session not signed", "room", sess.Room, "err", err)
		return nil
	}
	return sessionCookie(EdgeCookie(name), raw, int(g.tokenMax/time.Second), proto)
}

// SessionCheck is POST /api/v1/rooms/{room}/session: the gateway's
// decision on a request to a path the room guards, for an edge that could
// not decide alone (no edge session, or one expired). It reads the
// request as the check does (the session cookie or X-Waitroom-Session,
// the credential in X-Visitor or its cookie, Accept) and answers:
//
//   - a pass: 200 with X-Waitroom-Room and X-Waitroom-Visitor, the
//     session's cookies (slid, or made on the spot) and a fresh edge
//     session (EdgeCookie), and {"room","visitor"};
//   - an API client to queue: the check's 429 with its state;
//   - a browser without a valid session: 401 missing_session (the edge
//     sends it to the waiting page);
//   - the store unreachable in a room that fails closed: 503.
//
// Every answer carries X-Waitroom-Fail-Mode (open or closed), which the
// edge keeps for when waitroom cannot be reached. It hands out nothing a
// visitor could not get through the waiting page: no key is needed.
func (g *Gateway) SessionCheck(c *fiber.Ctx) error {
	r, err := g.api.Room(c)
	if err != nil {
		return err
	}
	rt := g.routes.Room(r)
	if rt == nil {
		rt = &Route{Room: r, Cookie: SessionCookie(r)}
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	o := original{method: c.Method(), proto: g.proto(c), host: g.requestHost(c), uri: "/", path: "/",
		client: g.proxies.Client(peer, c.Get(fiber.HeaderXForwardedFor)),
		header: func(k string) string { return c.Get(k) }, cookie: func(k string) string { return c.Cookies(k) }}
	v := g.guard(c.UserContext(), rt, &o)
	c.Set(fiber.HeaderCacheControl, "no-store")
	mode := "open"
	if g.rooms.FailClosed(r) {
		mode = "closed"
	}
	c.Set("X-Waitroom-Fail-Mode", mode)
	if v.pass {
		c.Set("X-Waitroom-Room", v.room)
		c.Set("X-Waitroom-Visitor", v.visitor)
		if v.failOpen {
			c.Set("X-Waitroom-Fail-Open", "1")
		}
		cred := cmpOr(c.Get("X-Visitor"), c.Cookies(g.visitorCookie))
		if v.newVisitor != nil {
			cred = string(v.newVisitor.Value())
		}
		if ck := g.edgeCookie(rt.Cookie, v.session, cred, o.proto, time.Now()); ck != nil {
			c.Response().Header.SetCookie(ck)
			fasthttp.ReleaseCookie(ck)
		}
		writeVerdict(c.Response(), &v)
		return c.JSON(fiber.Map{"room": v.room, "visitor": v.visitor})
	}
	if v.status == fiber.StatusFound {
		// A browser: the edge has the address to come back to.
		if v.cookie != nil {
			c.Response().Header.SetCookie(v.cookie)
			fasthttp.ReleaseCookie(v.cookie)
		}
		return errMissingSession
	}
	writeVerdict(c.Response(), &v)
	return nil
}
