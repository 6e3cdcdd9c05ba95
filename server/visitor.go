package main

import (
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

const (
	visitorCookie = "wr_visitor"
	tokenCookie   = "wr_token"
)

// credential returns the visitor credential sent with the request: cookie,
// X-Visitor header or visitor= query (for EventSource and WebSocket).
func credential(c *fiber.Ctx) string {
	if v := c.Get("X-Visitor"); v != "" {
		return v
	}
	if v := c.Query("visitor"); v != "" {
		return v
	}
	return c.Cookies(visitorCookie)
}

var (
	errMissingVisitor = httperr.New(401, "missing_visitor", "no visitor credential: join first")
	errInvalidVisitor = httperr.New(401, "invalid_visitor", "the visitor credential is malformed or was not issued here")
	errInvalidRoom    = httperr.New(400, "invalid_room", "room names match ^[a-z0-9][a-z0-9-]{0,63}$")
)

// visitor returns the request's verified visitor id.
func (s *server) visitor(c *fiber.Ctx) (string, error) {
	cred := credential(c)
	if cred == "" {
		return "", errMissingVisitor
	}
	id, err := s.signer.ParseVisitor(cred)
	if err != nil {
		return "", errInvalidVisitor
	}
	return id, nil
}

// visitorTicket returns the request's verified visitor id and the ticket
// its credential carries (zero when none).
func (s *server) visitorTicket(c *fiber.Ctx) (string, wire.Ticket, error) {
	cred := credential(c)
	if cred == "" {
		return "", wire.Ticket{}, errMissingVisitor
	}
	id, t, err := s.signer.ParseCredential(cred)
	if err != nil {
		return "", wire.Ticket{}, errInvalidVisitor
	}
	return id, t, nil
}

// room returns the validated :room parameter.
func room(c *fiber.Ctx) (string, error) {
	r := c.Params("room")
	if !queue.ValidRoom(r) {
		return "", errInvalidRoom
	}
	return r, nil
}

// roomVisitor returns the validated :room and the request's verified
// visitor.
func (s *server) roomVisitor(c *fiber.Ctx) (string, string, error) {
	r, err := room(c)
	if err != nil {
		return "", "", err
	}
	id, err := s.visitor(c)
	if err != nil {
		return "", "", err
	}
	return r, id, nil
}

// clientAddr is the address of the client behind the request: the peer,
// or the nearest untrusted X-Forwarded-For hop when the peer is one of
// -trusted-proxies.
func (s *server) clientAddr(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return s.cfg.TrustedProxies.Client(peer, c.Get(fiber.HeaderXForwardedFor))
}

// secure reports whether the visitor reached us over TLS: directly, or
// through a trusted proxy that says so with X-Forwarded-Proto. Only then
// may cookies carry Secure (a browser drops Secure cookies on plain HTTP).
func (s *server) secure(c *fiber.Ctx) bool {
	if c.Context().IsTLS() {
		return true
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return s.cfg.TrustedProxies.Contains(peer) && strings.EqualFold(strings.TrimSpace(c.Get(fiber.HeaderXForwardedProto)), "https")
}

// setCookie sets one of our cookies: HttpOnly, SameSite=Lax, Secure over
// TLS.
func (s *server) setCookie(c *fiber.Ctx, name, value string, maxAge int) {
	c.Cookie(&fiber.Cookie{Name: name, Value: value, Path: "/", HTTPOnly: true, SameSite: "Lax", Secure: s.secure(c), MaxAge: maxAge})
}

// joinTableSize is how many client addresses the join limiter tracks at
// once, in about 1.2 MB. Past that, the clients closest to a full bucket
// are forgotten first (see limit.Table).
const joinTableSize = 1 << 16

// joinLimitKey holds, in a join's request that limitJoins checked, its
// check (a func() error) for the join to run again.
const joinLimitKey = "joinLimit"

var errRateLimited = httperr.New(429, "rate_limited", "too many new visitors from this address; retry after the time in Retry-After")

// limitJoins refuses a join that would create a new visitor when the
// client's address is over its rate: the room's own (joinRate, joinBurst
// settings) or else the deployment's (-join-rate, -join-burst; t is nil
// when that is off). A join with a valid credential creates nobody and is
// never limited.
func (s *server) limitJoins(t *limit.Table) fiber.Handler {
	// Rooms with a rate of their own use a table of their own, so keys
	// there keep one rate.
	roomTable := limit.NewTable(1, 1, joinTableSize)
	return func(c *fiber.Ctx) error {
		if cred := credential(c); cred != "" {
			if _, err := s.signer.ParseVisitor(cred); err == nil {
				return c.Next()
			}
		}
		check := func() error {
			var ok bool
			var wait time.Duration
			key := limit.Key(s.clientAddr(c))
			if rate, burst := s.rooms.joinLimit(c.Params("room")); rate > 0 {
				ok, wait = roomTable.AllowRate(c.Params("room")+"|"+key, time.Now(), rate, burst)
			} else {
				ok, wait = t.Allow(key, time.Now())
			}
			if !ok {
				c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
				return errRateLimited
			}
			return nil
		}
		if err := check(); err != nil {
			return err
		}
		// The join checks again if the room's limit changed since it was
		// read (regate).
		c.Locals(joinLimitKey, check)
		return c.Next()
	}
}
