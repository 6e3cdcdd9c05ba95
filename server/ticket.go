package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/push"
)

// ticket mints a connect ticket (see push.Tickets) for the request's
// visitor.
func (s *server) ticket(c *fiber.Ctx) error {
	r, id, err := s.roomVisitor(c)
	if err != nil {
		return err
	}
	exp := time.Now().Add(push.TicketTTL)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"ticket": s.tickets.Mint(r, id, exp), "expiresInMs": push.TicketTTL.Milliseconds()})
}

// redeemTicket checks a connect ticket for room and uses it up; it returns
// the visitor it was minted for.
func (s *server) redeemTicket(c *fiber.Ctx, room, raw string) (string, error) {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	id, err := s.tickets.Redeem(ctx, room, raw)
	var refused *httperr.Error
	if err != nil && !errors.As(err, &refused) {
		return "", s.storeError(c, err)
	}
	return id, err
}

// ticketNonces remembers used connect tickets in Redis, under the room's
// hash tag, so every instance refuses a ticket used at another.
type ticketNonces struct{ s *server }

func (n ticketNonces) Claim(ctx context.Context, room, nonce string, ttl time.Duration) (bool, error) {
	key := "wr:{" + room + "}:ct:" + nonce
	v, err := n.s.redis.q.Do(ctx, "SET", key, "1", "NX", "PX", strconv.FormatInt(max(ttl.Milliseconds(), 1), 10))
	if err != nil {
		return false, err
	}
	return v != nil, nil
}
