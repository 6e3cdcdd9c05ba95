package visit

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/queue"
)

var (
	errMissingToken = httperr.New(401, "missing_token", "an entry token is required (Authorization: Bearer)")
	errInvalidToken = httperr.New(401, "invalid_token", "the entry token is malformed, forged or signed elsewhere")
	errTokenUsed    = httperr.New(401, "token_used", "the entry token was already used or given back")
	errTokenExpired = httperr.New(401, "token_expired", "the entry token has expired; join the queue again")
	errWrongRoom    = httperr.New(403, "wrong_room", "the entry token is for another room")
	errWrongVisitor = httperr.New(403, "wrong_visitor", "the entry token belongs to another visitor")
	// The visitor code stays missing_visitor, as on every other route.
	errTokenNoVisitor = httperr.New(401, "missing_visitor", "the entry token must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)")
	errBodyNoVisitor  = httperr.New(401, "missing_visitor", "visitor, the credential the entry token was issued to, is required; a service that cannot forward it sends allowMissingVisitor: true")
)

// tokenError maps a queue token check to the HTTP shape.
func (a *API) tokenError(c *fiber.Ctx, err error) error {
	var early *queue.TooEarlyError
	switch {
	case errors.As(err, &early):
		ms := max(early.Wait.Milliseconds(), 1)
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt((ms+999)/1000, 10))
		e := httperr.New(425, "too_early", "the entry token is valid in "+strconv.FormatInt(ms, 10)+" ms")
		e.WaitMs = ms
		return e
	case errors.Is(err, queue.ErrTokenExpired):
		return errTokenExpired
	case errors.Is(err, queue.ErrTokenUnknown):
		return errTokenUsed
	}
	return a.StoreError(c, err)
}

// tokenKey holds, in a request RequireToken let through, its entry token.
const tokenKey = "token"

// Token is the entry token RequireToken let c through with; ok is false
// for a request it did not check.
func Token(c *fiber.Ctx) (tok visitorsig.Token, ok bool) {
	tok, ok = c.Locals(tokenKey).(visitorsig.Token)
	return tok, ok
}

// parseToken reads a raw entry token: the one place one is parsed.
func (a *API) parseToken(raw string) (visitorsig.Token, error) {
	return a.d.EntryTokens.ParseToken(raw)
}

// RequireToken guards every route under the protected prefix (mount it on
// a group under /api/v1/rooms/:room): the entry token must be signed
// here, for this room, for the visitor who sends it, inside its validity
// window, and not used before. It uses the token up, and gives it back
// when the rest of the chain answers a server error. While the store is
// unreachable the room's fail mode decides (see failOpen).
func (a *API) RequireToken(c *fiber.Ctx) error {
	tok, err := a.roomToken(c)
	if err != nil {
		return err
	}
	if err := a.tokenHolder(c, tok); err != nil {
		return err
	}
	if a.uses.used(tok) {
		// Used here before: refused without asking a Redis that may have
		// lost the record of that use.
		return errTokenUsed
	}
	ctx, cancel := a.redisCtx(c)
	exp, err := a.d.Tokens.Consume(ctx, tok, queue.Spend)
	cancel()
	if err != nil {
		if IsTokenError(err) {
			return a.tokenError(c, err)
		}
		return a.failOpen(c, tok, err)
	}
	a.uses.add(tok, exp)
	c.Locals(tokenKey, tok)
	err = c.Next()
	// A request that failed on the protected side (a 5xx such as
	// db_timeout) did not use the token: give it back for the retry.
	if failed(c, err) {
		a.uses.forget(tok)
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		if rerr := a.d.Tokens.Restore(rctx, tok, exp); rerr != nil {
			a.log.Warn("token not given back after a failed request", "room", tok.Room, "err", rerr, "request_id", requestID(c))
		}
	}
	return err
}

// tokenHolder checks that the request comes from the visitor tok was
// issued to: the credential (cookie wr_visitor or X-Visitor) is required,
// so a token alone cannot be handed over or resold. The visitor= query is
// not accepted here: it is for push clients that cannot send headers, and
// it would put the credential into logs next to the token.
func (a *API) tokenHolder(c *fiber.Ctx, tok visitorsig.Token) error {
	cred := c.Get("X-Visitor")
	if cred == "" {
		cred = c.Cookies(VisitorCookie)
	}
	if cred == "" {
		return errTokenNoVisitor
	}
	return a.holds(cred, tok)
}

// holds checks that the visitor credential cred is the one tok was issued
// to.
func (a *API) holds(cred string, tok visitorsig.Token) error {
	id, err := a.d.Visitors.ParseVisitor(cred)
	if err != nil {
		return errInvalidVisitor
	}
	if id != tok.Visitor {
		return errWrongVisitor
	}
	return nil
}

// sentHolder checks the visitor credential a service sent in a body with
// tok (verify, consume): the one tok was issued to, required unless the
// service says it cannot forward it (allowMissing), so that a token alone
// is not a ticket to resell. checked says whether a credential was checked.
func (a *API) sentHolder(cred string, allowMissing bool, tok visitorsig.Token) (checked bool, err error) {
	if cred == "" {
		if allowMissing {
			return false, nil
		}
		return false, errBodyNoVisitor
	}
	return true, a.holds(cred, tok)
}

// failed reports whether the rest of the chain answered a server error.
func failed(c *fiber.Ctx, err error) bool {
	var ae *httperr.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return err != nil || c.Response().StatusCode() >= 500
}

// IsTokenError tells a verdict on the token (too early, expired, unknown)
// from a failure to reach the store, among the errors of Tokens.Consume.
func IsTokenError(err error) bool {
	var early *queue.TooEarlyError
	return errors.As(err, &early) || errors.Is(err, queue.ErrTokenExpired) || errors.Is(err, queue.ErrTokenUnknown)
}

// verify tells other services whether a token is valid now, without using
// it up.
func (a *API) verify(c *fiber.Ctx) error {
	var req struct {
		Token   string `json:"token"`
		Visitor string `json:"visitor"` // the credential the caller was given with the token
		// AllowMissingVisitor: the caller cannot forward the credential
		// and knowingly checks the token alone.
		AllowMissingVisitor bool `json:"allowMissingVisitor"`
	}
	if err := httperr.DecodeObject(c.Body(), &req); err != nil {
		return err
	}
	if req.Token == "" {
		return httperr.New(400, "missing_field", "token is required")
	}
	tok, err := a.parseToken(req.Token)
	if err != nil {
		return errInvalidToken
	}
	checked, err := a.sentHolder(req.Visitor, req.AllowMissingVisitor, tok)
	if err != nil {
		return err
	}
	return a.touchToken(c, tok, checked)
}

// touchToken checks tok and slides its idle expiry (capped by the room's
// absolute maximum): a buyer who keeps using the site keeps the token.
// visitorChecked says in the answer whether the visitor was checked
// against a credential (verify with a visitor, touch), so a caller that
// forgot to send one cannot mistake the answer for a full check.
func (a *API) touchToken(c *fiber.Ctx, tok visitorsig.Token, visitorChecked bool) error {
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	exp, err := a.d.Tokens.Consume(ctx, tok, queue.Touch)
	if err != nil {
		if IsTokenError(err) {
			return a.tokenError(c, err)
		}
		return a.StoreError(c, err)
	}
	return c.JSON(fiber.Map{
		"valid": true, "room": tok.Room, "visitor": tok.Visitor, "visitorChecked": visitorChecked,
		"notBefore": tok.NotBefore.UTC().Format(time.RFC3339Nano),
		"expiresAt": exp.UTC().Format(time.RFC3339Nano),
	})
}

// touch extends the entry token of the request (Authorization: Bearer or
// cookie) without using it up.
func (a *API) touch(c *fiber.Ctx) error {
	tok, err := a.roomToken(c)
	if err != nil {
		return err
	}
	if err := a.tokenHolder(c, tok); err != nil {
		return err
	}
	return a.touchToken(c, tok, true)
}

// roomToken returns the request's entry token, signed here and for the
// :room of the route.
func (a *API) roomToken(c *fiber.Ctx) (visitorsig.Token, error) {
	r, err := Room(c)
	if err != nil {
		return visitorsig.Token{}, err
	}
	raw := bearer(c)
	if raw == "" {
		return visitorsig.Token{}, errMissingToken
	}
	tok, err := a.parseToken(raw)
	if err != nil {
		return visitorsig.Token{}, errInvalidToken
	}
	if tok.Room != r {
		return visitorsig.Token{}, errWrongRoom
	}
	return tok, nil
}
