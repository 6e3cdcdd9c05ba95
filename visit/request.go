package visit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// The cookies of the visitor API.
const (
	// VisitorCookie holds the visitor credential.
	VisitorCookie = "wr_visitor"
	// TokenCookie may hold the entry token (Authorization: Bearer wins).
	TokenCookie = "wr_token"
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
	return c.Cookies(VisitorCookie)
}

var (
	errMissingVisitor = httperr.New(401, "missing_visitor", "no visitor credential: join first")
	errInvalidVisitor = httperr.New(401, "invalid_visitor", "the visitor credential is malformed or was not issued here")
	errInvalidRoom    = httperr.New(400, "invalid_room", "room names match ^[a-z0-9][a-z0-9-]{0,63}$")
)

// Visitor returns the request's verified visitor id (credential in the
// X-Visitor header, the visitor= query or the cookie), or its JSON error.
func (a *API) Visitor(c *fiber.Ctx) (string, error) {
	cred := credential(c)
	if cred == "" {
		return "", errMissingVisitor
	}
	id, err := a.d.Visitors.ParseVisitor(cred)
	if err != nil {
		return "", errInvalidVisitor
	}
	return id, nil
}

// visitorTicket returns the request's verified visitor id and the ticket
// its credential carries (zero when none).
func (a *API) visitorTicket(c *fiber.Ctx) (string, wire.Ticket, error) {
	cred := credential(c)
	if cred == "" {
		return "", wire.Ticket{}, errMissingVisitor
	}
	id, t, err := a.d.Visitors.ParseCredential(cred)
	if err != nil {
		return "", wire.Ticket{}, errInvalidVisitor
	}
	return id, t, nil
}

// Room returns the validated :room parameter, or its JSON error.
func Room(c *fiber.Ctx) (string, error) {
	r := c.Params("room")
	if !wire.ValidRoom(r) {
		return "", errInvalidRoom
	}
	return r, nil
}

// roomVisitor returns the validated :room and the request's verified
// visitor.
func (a *API) roomVisitor(c *fiber.Ctx) (string, string, error) {
	r, err := Room(c)
	if err != nil {
		return "", "", err
	}
	id, err := a.Visitor(c)
	if err != nil {
		return "", "", err
	}
	return r, id, nil
}

// clientAddr is the address of the client behind the request: the peer,
// or the nearest untrusted X-Forwarded-For hop when the peer is one of
// the trusted Proxies.
func (a *API) clientAddr(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.d.Proxies.Client(peer, c.Get(fiber.HeaderXForwardedFor))
}

// secure reports whether the visitor reached us over TLS: directly, or
// through a trusted proxy that says so with X-Forwarded-Proto. Only then
// may cookies carry Secure (a browser drops Secure cookies on plain HTTP).
func (a *API) secure(c *fiber.Ctx) bool {
	if c.Context().IsTLS() {
		return true
	}
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return a.d.Proxies.Contains(peer) && strings.EqualFold(strings.TrimSpace(c.Get(fiber.HeaderXForwardedProto)), "https")
}

// setCookie sets one of our cookies: HttpOnly, SameSite=Lax, Secure over
// TLS.
func (a *API) setCookie(c *fiber.Ctx, name, value string, maxAge int) {
	c.Cookie(&fiber.Cookie{Name: name, Value: value, Path: "/", HTTPOnly: true, SameSite: "Lax", Secure: a.secure(c), MaxAge: maxAge})
}

var (
	errInvalidJSON  = httperr.ErrInvalidJSON
	errUnavailable  = httperr.ErrUnavailable
	errRoomNotFound = httperr.New(404, "room_not_found", "this waiting room does not exist")
)

// requestID is the id the requestid middleware gave the request, for logs
// ("" without it).
func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals("requestid").(string)
	return id
}

// fieldError is the error of one invalid field of a request.
func fieldError(field, msg string) *httperr.Error {
	e := httperr.New(400, "invalid_field", field+": "+msg)
	e.Field = field
	return e
}

// redisCtx bounds every store call a request makes: storeTimeout from
// now, shared with the requests of the same deadlineStep when the
// request's own context is the background (it is, unless a middleware
// gave it one of its own).
func (a *API) redisCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	if parent := c.UserContext(); parent != context.Background() {
		return context.WithTimeout(parent, storeTimeout)
	}
	return a.deadlines.get(time.Now()), noCancel
}

// StoreError turns a failed store call of the request into the API's
// JSON error: invalid_room and invalid_visitor for the queue's refusals of
// a name, else 503 unavailable with Retry-After, counted and logged.
func (a *API) StoreError(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, wire.ErrInvalidRoom):
		return errInvalidRoom
	case errors.Is(err, visitorsig.ErrInvalidToken):
		return errInvalidVisitor
	}
	a.metrics.StoreError()
	a.log.Warn("redis call failed", "path", c.Path(), "err", err, "request_id", requestID(c))
	c.Set(fiber.HeaderRetryAfter, "2")
	return errUnavailable
}

// objectBody checks that an optional body is a JSON object.
func objectBody(body []byte) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || noFields(b) {
		return nil
	}
	if b[0] != '{' || !json.Valid(b) {
		return errInvalidJSON
	}
	return nil
}

// noFields reports whether body is empty or an object without fields
// ("{}", JSON's white space allowed): what most joins send, answered
// without a JSON decoder. White space alone is not: a decoder reads it as
// a syntax error.
func noFields(body []byte) bool {
	if len(body) == 0 {
		return true
	}
	b := bytes.Trim(body, jsonSpace)
	return len(b) >= 2 && b[0] == '{' && b[len(b)-1] == '}' && len(bytes.Trim(b[1:len(b)-1], jsonSpace)) == 0
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// sendState answers st, uncached.
func (a *API) sendState(c *fiber.Ctx, st wire.State) ([]byte, error) {
	body := st.AppendJSON(make([]byte, 0, 256))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return body, c.Send(body)
}

// bearer returns the entry token from Authorization: Bearer or the
// wr_token cookie.
func bearer(c *fiber.Ctx) string {
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	return c.Cookies(TokenCookie)
}
