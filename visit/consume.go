package visit

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

var (
	errInvalidServiceKey = httperr.New(401, "invalid_service_key", "a valid service key is required (Authorization: Bearer <service key>); admin keys are not accepted here")
	errConsumeUsed       = httperr.New(409, "token_used", "the entry token was already used or given back")
	errConsumeExpired    = httperr.New(410, "token_expired", "the entry token has expired; the visitor must join the queue again")
)

// consume spends an entry token exactly once, for a protected service
// (POST /api/v1/tokens/consume with a service key, Deps.ServiceKeys): across every instance
// sharing Redis, one call gets 200 and the claims, every other 409
// token_used. The token must come with the visitor credential it was
// issued to, unless the service sets allowMissingVisitor. It frees the
// max-active slot and holds the seat as sold, as the demo order does.
func (a *API) consume(c *fiber.Ctx) error {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || a.d.ServiceKeys == nil {
		return errInvalidServiceKey
	}
	if _, ok := a.d.ServiceKeys.ServiceKey(strings.TrimSpace(key)); !ok {
		return errInvalidServiceKey
	}
	var req struct {
		Token   string `json:"token"`
		Visitor string `json:"visitor"` // the credential the token came with
		Room    string `json:"room"`    // optional: the room the caller protects
		// AllowMissingVisitor: the service cannot forward the credential
		// and knowingly spends the token alone.
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
		return invalidTokenError(err)
	}
	if req.Room != "" && req.Room != tok.Room {
		return errWrongRoom
	}
	if _, err := a.sentHolder(req.Visitor, req.AllowMissingVisitor, tok); err != nil {
		return err
	}
	if a.uses.used(tok) {
		return errConsumeUsed
	}
	ctx, cancel := a.redisCtx(c)
	exp, err := a.d.Tokens.Consume(ctx, tok, queue.Spend)
	cancel()
	switch {
	case errors.Is(err, queue.ErrTokenUnknown):
		return errConsumeUsed
	case errors.Is(err, queue.ErrTokenExpired):
		return errConsumeExpired
	case err != nil && IsTokenError(err):
		return a.tokenError(c, err) // too early
	case err != nil:
		if exp, err = a.consumeFailOpen(c, tok, err); err != nil {
			return err
		}
	}
	a.uses.add(tok, exp)
	if a.d.Report != nil {
		a.d.Report.Ended(tok.Room, tok.NotBefore, time.Now())
	}
	return consumed(c, tok, exp)
}

// consumeFailOpen decides a consume while Redis is unreachable, as
// failOpen does for the demo order: a room that fails closed answers 503;
// one that fails open spends the token in this instance's memory, inside
// its signed window and at this instance's share of the room's admission
// rate, and says so (X-Waitroom-Fail-Open). A token spent here stays
// refused here; another instance cannot know of it until Redis is back.
func (a *API) consumeFailOpen(c *fiber.Ctx, tok visitorsig.Token, cause error) (time.Time, error) {
	a.metrics.StoreError()
	a.log.Warn("consume: redis unreachable", "room", tok.Room, "err", cause, "request_id", requestID(c))
	if a.d.Rooms.FailClosed(tok.Room) {
		a.metrics.FailOpen("closed")
		c.Set(fiber.HeaderRetryAfter, "2")
		return time.Time{}, httperr.New(503, "unavailable", "the queue store is unreachable and this room fails closed; retry shortly")
	}
	now := time.Now()
	switch {
	case now.Before(tok.NotBefore):
		return time.Time{}, a.tokenError(c, &queue.TooEarlyError{Wait: tok.NotBefore.Sub(now)})
	case !now.Before(tok.ExpiresAt):
		return time.Time{}, errConsumeExpired
	case !a.d.Rooms.AllowFailOpen(tok.Room):
		a.metrics.FailOpen("limited")
		c.Set(fiber.HeaderRetryAfter, "1")
		return time.Time{}, httperr.New(503, "fail_open_limited", "the queue store is unreachable; admitting at the room's rate, retry shortly")
	}
	a.metrics.FailOpen("admitted")
	c.Set("X-Waitroom-Fail-Open", "1")
	return tok.ExpiresAt, nil
}

// consumed answers a first use: the token's room, visitor, admission id,
// window and the expiry it had when spent.
func consumed(c *fiber.Ctx, tok visitorsig.Token, exp time.Time) error {
	b := make([]byte, 0, 256)
	b = append(b, `{"consumed":true,"room":`...)
	b = wire.AppendString(b, tok.Room)
	b = append(b, `,"visitor":`...)
	b = wire.AppendString(b, tok.Visitor)
	b = append(b, `,"jti":`...)
	b = wire.AppendString(b, entry.AdmissionID(tok.Room, tok.Visitor, tok.NotBefore))
	b = append(b, `,"notBefore":"`...)
	b = tok.NotBefore.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","expiresAt":"`...)
	b = exp.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"}`...)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(b)
}

// invalidTokenError is 401 invalid_token saying what is wrong with the
// token: its size, its form, its algorithm, its key or its signature.
func invalidTokenError(err error) error {
	msg := "the entry token is malformed, forged or signed elsewhere"
	switch {
	case errors.Is(err, entry.ErrTooLarge):
		msg = "the entry token is larger than " + strconv.Itoa(entry.MaxTokenSize) + " bytes"
	case errors.Is(err, entry.ErrAlgorithm):
		msg = "the entry token's algorithm is not accepted (EdDSA or ES256 with a published key)"
	case errors.Is(err, entry.ErrUnknownKey):
		msg = "the entry token is signed with a key this server does not publish (kid)"
	case errors.Is(err, entry.ErrSignature):
		msg = "the entry token's signature does not verify"
	case errors.Is(err, entry.ErrMalformed):
		msg = "the entry token is not a compact JWS (header.payload.signature)"
	}
	return httperr.New(401, "invalid_token", msg)
}
