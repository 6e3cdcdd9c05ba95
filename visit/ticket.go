package visit

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/push"
)

// ticket mints a connect ticket (see push.Tickets) for the request's
// visitor.
func (a *API) ticket(c *fiber.Ctx) error {
	r, id, err := a.roomVisitor(c)
	if err != nil {
		return err
	}
	exp := time.Now().Add(push.TicketTTL)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"ticket": a.d.Tickets.Mint(r, id, exp), "expiresInMs": push.TicketTTL.Milliseconds()})
}

// redeemTicket checks a connect ticket for room and uses it up; it returns
// the visitor it was minted for.
func (a *API) redeemTicket(c *fiber.Ctx, room, raw string) (string, error) {
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	id, err := a.d.Tickets.Redeem(ctx, room, raw)
	var refused *httperr.Error
	if err != nil && !errors.As(err, &refused) {
		return "", a.StoreError(c, err)
	}
	return id, err
}
