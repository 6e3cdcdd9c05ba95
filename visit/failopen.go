package visit

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/queue"
)

// failOpen decides a protected request while Redis is unreachable: with
// the room's fail mode "open" (the default) a signed token inside its
// window, sent with its visitor's credential (checked before this), passes
// through a local limiter at this instance's share of the room's admission
// rate; with "closed" nobody passes. A token this instance saw used, before
// or during the outage, is refused: Redis cannot mark it used meanwhile.
func (a *API) failOpen(c *fiber.Ctx, tok visitorsig.Token, cause error) error {
	a.metrics.StoreError()
	a.log.Warn("protected endpoint: redis unreachable", "room", tok.Room, "err", cause, "request_id", requestID(c))
	if a.d.Rooms.FailClosed(tok.Room) {
		a.metrics.FailOpen("closed")
		c.Set(fiber.HeaderRetryAfter, "2")
		return httperr.New(503, "unavailable", "the queue store is unreachable and this room fails closed; retry shortly")
	}
	now := time.Now()
	if now.Before(tok.NotBefore) {
		return a.tokenError(c, &queue.TooEarlyError{Wait: tok.NotBefore.Sub(now)})
	}
	if !now.Before(tok.ExpiresAt) {
		return errTokenExpired
	}
	if a.uses.used(tok) {
		a.metrics.FailOpen("used")
		return errTokenUsed
	}
	if !a.d.Rooms.AllowFailOpen(tok.Room) {
		a.metrics.FailOpen("limited")
		c.Set(fiber.HeaderRetryAfter, "1")
		return httperr.New(503, "fail_open_limited", "the queue store is unreachable; admitting at the room's rate, retry shortly")
	}
	a.uses.add(tok, tok.ExpiresAt)
	a.metrics.FailOpen("admitted")
	c.Set("X-Waitroom-Fail-Open", "1")
	c.Locals(tokenKey, tok)
	return c.Next()
}
