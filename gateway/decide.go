package gateway

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/wire"
)

// original is the request a gateway asks about (or the proxy got).
type original struct {
	method, proto, host, uri string
	// path is the path as the app will see it (NormalizePath), what
	// routes and bypass rules match; badPath is set when it cannot be
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

// setPath normalises o.uri into o.path.
func (o *original) setPath() {
	p, err := NormalizePath(o.uri)
	o.path, o.badPath = p, err != nil
}

// verdict is the gateway's answer.
type verdict struct {
	pass    bool
	status  int
	room    string
	visitor string
	session *Session         // the valid session, for Waitroom-Session: end
	cookie  *fasthttp.Cookie // to set (slid, or cleared)
	// newVisitor is the credential cookie of a visitor let in on the spot
	// without one (see passOnSpot).
	newVisitor *fasthttp.Cookie
	// For an API client let in on the spot: the session and the visitor's
	// credential as response headers, for clients that keep no cookies.
	sessionValue, credential string
	location                 string
	retry                    int // Retry-After seconds, 0 = none
	body                     []byte
	ctype                    string
	failOpen                 bool
	errorCode                string
	page                     bool // errorCode as a short HTML page (a browser asked)
}

var verdictUnavailable = verdict{status: 503, errorCode: "unavailable", retry: 2}

// decide is the gateway's one decision, for the check endpoint and the
// proxy alike. The common case (a valid session that needs no slide)
// touches no store: an HMAC check and the local revocation cache.
func (g *Gateway) decide(ctx context.Context, o *original) verdict {
	if len(g.routes.Routes) == 0 {
		return verdict{pass: true}
	}
	// Before any bypass: a request the app could read as another path, or
	// for a host no route names, is not passed on whatever else it says.
	if o.badPath {
		g.pathLog.Log("gateway: refused a path the app could read otherwise (400 invalid_path)", "path", lograte.Clip(o.uri), "client", o.client.String())
		return verdict{status: 400, errorCode: "invalid_path", page: wantsPage(o.header("Accept"))}
	}
	if !g.routes.Serves(o.host) {
		g.hostLog.Log("gateway: refused a host no route serves (421 unknown_host)", "host", lograte.Clip(o.host), "client", o.client.String())
		return verdict{status: 421, errorCode: "unknown_host", page: wantsPage(o.header("Accept"))}
	}
	if g.routes.Bypassed(o.path, o.client, o.header) {
		return verdict{pass: true}
	}
	rt := g.routes.Route(o.method, o.host, o.path)
	if rt == nil {
		return verdict{pass: true}
	}
	return g.guard(ctx, rt, o)
}

// guard is the decision on a request that route rt guards: its session,
// else the denial (or a pass on the spot).
func (g *Gateway) guard(ctx context.Context, rt *Route, o *original) verdict {
	if ok, err := g.rooms.Exists(ctx, rt.Room); err == nil && !ok {
		// A route to a room deleted since start-up: not a queue the
		// visitor could wait in, so no waiting page that says "no such
		// room", but the operator's error.
		if g.missing.due(rt.Room, time.Now()) {
			g.log.Warn("gateway: a route's room does not exist; create it or change the route", "room", rt.Room, "route", rt.Match)
		}
		return verdict{status: 503, errorCode: "room_not_found", room: rt.Room, retry: 30, page: wantsPage(o.header("Accept"))}
	}
	var clear *fasthttp.Cookie
	raw, fromCookie := o.cookie(rt.Cookie), true
	if raw == "" {
		// An API client that keeps no cookies sends the session back in
		// the header it was given.
		raw, fromCookie = o.header(SessionHeader), false
	}
	if raw != "" {
		v, pass, clears := g.judgeSession(ctx, rt, o, raw)
		if pass {
			return v
		}
		if clears && fromCookie {
			clear = sessionCookie(rt.Cookie, "", -1, o.proto)
		}
	}
	v := g.deny(ctx, rt, o)
	if v.cookie == nil {
		v.cookie = clear
	}
	return v
}

// missingRooms rate-limits the warning about a route to a missing room:
// once per room per minute. Its rooms are the routes' own, so it is
// bounded by the routes.
type missingRooms struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether room's warning is due at now, and if so notes it.
func (m *missingRooms) due(room string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.last[room]; ok && now.Sub(t) < time.Minute {
		return false
	}
	if m.last == nil {
		m.last = map[string]time.Time{}
	}
	m.last[room] = now
	return true
}

// judgeSession weighs the session cookie raw of route rt: pass with its
// verdict, or else whether the browser's cookie is to be cleared.
func (g *Gateway) judgeSession(ctx context.Context, rt *Route, o *original, raw string) (v verdict, pass, clear bool) {
	now := time.Now()
	sess, err := g.sessions.Parse(raw)
	switch {
	case err != nil:
		return verdict{}, false, true
	case sess.Room != rt.Room:
		// Another room's session (a name the routes no longer give this
		// room alone): not for here, and not ours to clear.
		return verdict{}, false, false
	case g.cache.Revoked(sess.Key()) || !now.Before(sess.ExpiresAt):
		return verdict{}, false, true
	case now.Before(sess.NotBefore):
		// Not valid yet: the waiting page counts down and comes back.
		return verdict{}, false, false
	case !g.holdsSession(o, sess):
		// A copied cookie without its visitor's credential: denied like
		// no session, and left alone (clearing it would let whoever can
		// make a browser send another credential end that visitor's
		// session).
		return verdict{}, false, false
	}
	if v, ok := g.validSession(ctx, rt, sess, now, o.proto); ok {
		return v, true, false
	}
	return verdict{}, false, true
}

// holdsSession reports whether the request carries the credential of the
// session's visitor (header X-Visitor for API clients, else the visitor
// cookie), as an entry token must: a session cookie alone is a value
// anyone who saw it could send. One HMAC, no store.
func (g *Gateway) holdsSession(o *original, sess Session) bool {
	cred := o.header("X-Visitor")
	if cred == "" {
		cred = o.cookie(g.visitorCookie)
	}
	if cred == "" {
		return false
	}
	id, err := g.visitors.ParseVisitor(cred)
	return err == nil && id == sess.Visitor
}

// slideEvery is how often at most a session of room slides: a tenth of the
// room's idle TTL (its own, else Options.TokenTTL), at most maxSlideEvery.
// A page with fifty assets then makes no store write most of the time, and
// a session in use slides long before its idle TTL ends, however short the
// room's. From the room settings in memory: no store.
func (g *Gateway) slideEvery(room string) time.Duration {
	ttl := g.rooms.IdleTTL(room)
	if ttl <= 0 {
		ttl = g.tokenTTL
	}
	return min(ttl/10, maxSlideEvery)
}

// validSession passes a valid session, sliding its idle expiry when its
// last slide is older than the room's slide interval (once per instance
// per interval). ok is false when the store says the session is over
// (ended elsewhere and the message lost, or past its cap).
func (g *Gateway) validSession(ctx context.Context, rt *Route, sess Session, now time.Time, proto string) (verdict, bool) {
	v := verdict{pass: true, room: sess.Room, visitor: sess.Visitor, session: &sess}
	every := g.slideEvery(sess.Room)
	if now.Sub(sess.SlidAt) < every || !g.cache.ClaimSlide(sess.Key(), now, every) {
		return v, true
	}
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	exp, err := g.store.Touch(rctx, sess)
	cancel()
	switch {
	case err == nil:
		slid := sess
		slid.ExpiresAt, slid.SlidAt = exp, now
		v.session = &slid
		v.cookie = sessionCookie(rt.Cookie, g.sessions.Sign(slid), int(g.tokenMax/time.Second), proto)
		return v, true
	case errors.Is(err, ErrSessionOver):
		g.cache.Revoke(sess.Key(), sess.ExpiresAt)
		return verdict{}, false
	}
	g.metrics.StoreError()
	if g.rooms.FailClosed(sess.Room) {
		return verdictUnavailable, true
	}
	return v, true // the signature and window hold; it slides once the store is back
}

// deny answers a request without a valid session: a browser goes to the
// waiting page (nginx gets 401 and redirects itself), an API client gets
// 429 with the state. While the store is unreachable the room's fail mode
// decides instead.
func (g *Gateway) deny(ctx context.Context, rt *Route, o *original) verdict {
	// The store is out: the revocation feed lost it, or the server's own
	// watch (pings) marked it unreachable.
	if g.broker != nil && (g.down.Load() || g.store.Degraded()) {
		if g.rooms.FailClosed(rt.Room) || !g.rooms.AllowFailOpen(rt.Room) {
			return verdictUnavailable
		}
		g.metrics.FailOpenAdmitted()
		return verdict{pass: true, room: rt.Room, failOpen: true}
	}
	if v, ok := g.passOnSpot(ctx, rt, o); ok {
		return v
	}
	if o.nginx {
		// auth_request passes on only 2xx, 401 and 403: the @waitroom
		// location asks again for the full answer.
		return verdict{status: 401, room: rt.Room}
	}
	if wantsJSON(o.header("Accept")) {
		return g.denyJSON(ctx, rt, o)
	}
	loc := g.page + "?room=" + url.QueryEscape(rt.Room) + "&return=" + url.QueryEscape(o.proto+"://"+o.host+o.uri)
	if o.absolute {
		loc = o.proto + "://" + o.host + loc
	}
	return verdict{status: 302, location: loc, room: rt.Room}
}

// SessionHeader carries a gateway session for API clients that keep no
// cookies: a pass that makes a session sends it in this response header
// too, and a request may send it back in the same header instead of the
// cookie (with the visitor's credential in X-Visitor, as always).
const SessionHeader = "X-Waitroom-Session"

// passOnSpot lets a visitor without a valid session through in the same
// round trip when the store allows it: in a room with activation busy
// that is under its threshold with nobody waiting (a visitor without a
// credential gets one here), or, in any room, a visitor whose credential
// holds an entry token already valid (admitted through the queue: no
// /enter step). In a room with activation always only an API client's
// credential is looked at, so a browser goes through the waiting page as
// before. The pass carries the new session cookie (and the new visitor
// cookie); ok is false when the visitor is to queue, or the store could
// not be asked (the usual denial follows, which decides about the store).
func (g *Gateway) passOnSpot(ctx context.Context, rt *Route, o *original) (verdict, bool) {
	busy := g.rooms.Busy(rt.Room)
	api := wantsJSON(o.header("Accept"))
	id, cred := "", cmpOr(o.header("X-Visitor"), o.cookie(g.visitorCookie))
	if cred != "" {
		var err error
		if id, err = g.visitors.ParseVisitor(cred); err != nil {
			id, cred = "", ""
		}
	}
	minted := false
	switch {
	case id == "" && busy:
		id, cred = g.visitors.NewVisitor()
		minted = true
	case id == "" || !(busy || api):
		return verdict{}, false
	}
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	nb, exp, ok, err := g.store.Pass(rctx, rt.Room, id)
	cancel()
	now := time.Now()
	if err != nil {
		g.metrics.StoreError()
		return verdict{}, false
	}
	if !ok || now.Before(nb) || !now.Before(exp) {
		return verdict{}, false
	}
	sess := Session{Room: rt.Room, Visitor: id, NotBefore: nb, ExpiresAt: exp, SlidAt: now}
	signed := g.sessions.Sign(sess)
	v := verdict{pass: true, room: rt.Room, visitor: id, session: &sess,
		cookie: sessionCookie(rt.Cookie, signed, int(g.tokenMax/time.Second), o.proto)}
	if minted {
		v.newVisitor = sessionCookie(g.visitorCookie, cred, visitorCookieAge, o.proto)
	}
	if !wantsPage(o.header("Accept")) {
		v.sessionValue, v.credential = signed, cred
	}
	return v, true
}

// visitorCookieAge is the visitor cookie's lifetime, as the join sets it.
const visitorCookieAge = 7 * 24 * 3600

// denyJSON is 429 with the visitor's state in the room and Retry-After
// its next poll. A visitor not in the queue joins it here (the API's join,
// with its gates), so a retry keeps the place: the body carries the
// credential to send back (also in X-Visitor, and the visitor cookie) and
// the addresses to poll and to stream. Where the room asks for more than
// this request carries (a proof of work, an invite code) the state is read
// only, and the links say where to join.
func (g *Gateway) denyJSON(ctx context.Context, rt *Route, o *original) verdict {
	cred := cmpOr(o.header("X-Visitor"), o.cookie(g.visitorCookie))
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	st, got, err := g.store.Join(rctx, rt.Room, cred, o.client)
	var newCookie *fasthttp.Cookie
	switch {
	case errors.Is(err, ErrJoinElsewhere):
		st, got, err = wire.State{Room: rt.Room, Status: wire.StatusNotInQueue}, "", nil
		if id, perr := g.visitors.ParseVisitor(cred); cred != "" && perr == nil {
			if st, err = g.store.Status(rctx, rt.Room, id); err == nil {
				got = cred
			}
		}
	case err == nil && got != cred:
		newCookie = sessionCookie(g.visitorCookie, got, visitorCookieAge, o.proto)
	}
	if err != nil {
		g.metrics.StoreError()
		return verdictUnavailable
	}
	retry := 1
	if st.NextPoll > time.Second {
		retry = int((st.NextPoll + time.Second - 1) / time.Second)
	}
	body := st.AppendJSON(make([]byte, 0, 512))
	body = body[:len(body)-1]
	if got != "" {
		body = append(body, `,"visitor":`...)
		body = wire.AppendString(body, got)
	}
	api := g.page + "api/v1/rooms/" + rt.Room + "/"
	body = append(body, `,"links":{"join":"`...)
	body = append(body, api+`join","status":"`+api+`status","sse":"`+api+`sse","ws":"`+api+`ws"}}`...)
	return verdict{status: 429, retry: retry, room: rt.Room, body: body, ctype: fiber.MIMEApplicationJSONCharsetUTF8,
		newVisitor: newCookie, credential: got}
}

// wantsPage: a browser asks for a page.
func wantsPage(accept string) bool { return strings.Contains(accept, "text/html") }

// wantsJSON: an API client asks for JSON and not for a page.
func wantsJSON(accept string) bool {
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}
