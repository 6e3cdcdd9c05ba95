package main

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/queue"
)

// lotteryFunction says, in the endpoint's answer, how to check a lottery.
const lotteryFunction = "commitment = hex(SHA-256(seed)); pick i (0-based, every pick of the tick) of tick t is the ticket at 0-based rank floor(int(hex(SHA-1(seed + \":\" + t + \":\" + i))[0:13], 16) / 2^52 * n) among the n still waiting, in ticket order; a pick away from the page is set aside and does not count toward the batch"

var errNoLottery = errorf(404, "no_lottery", "this room has never admitted by lottery")

// readLottery reads room r's lottery record, answering 404 no_lottery for
// a room that was never random.
func (s *server) readLottery(ctx context.Context, c *fiber.Ctx, r string) (queue.Lottery, error) {
	l, err := s.q.ReadLottery(ctx, r)
	if errors.Is(err, queue.ErrNoDraw) {
		return l, errNoLottery
	}
	if err != nil {
		return l, s.storeError(c, err)
	}
	return l, nil
}

// lottery is the public commit-reveal record of a room's lottery (method
// random): while the room draws, the commitment only; once it left the
// random method, the seed too.
func (s *server) lottery(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	l, err := s.readLottery(ctx, c, r)
	if err != nil {
		return err
	}
	out := fiber.Map{"room": r, "commitment": l.Commitment, "function": lotteryFunction, "state": "drawing"}
	if !l.CommittedAt.IsZero() {
		out["committedAt"] = l.CommittedAt.UTC().Format(time.RFC3339Nano)
	}
	if l.Ended {
		out["state"] = "revealed"
		out["seed"] = l.Seed
		out["endedAt"] = l.EndedAt.UTC().Format(time.RFC3339Nano)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}

const (
	lotteryLogDefault = 1000
	lotteryLogMax     = 10000
)

// lotteryLog is the public log of a room's lottery (method random): every
// change of the tickets waiting and every pick, in pages (after: the last
// entry id read, limit), so that with the revealed seed anyone can replay
// the lottery (go run ./cmd/drawcheck -lottery). It names tickets, never
// visitors.
func (s *server) lotteryLog(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	after, err := queryInt(c, "after", 0, 0, 1<<40)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", lotteryLogDefault, 1, lotteryLogMax)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	l, err := s.readLottery(ctx, c, r)
	if err != nil {
		return err
	}
	page, err := s.q.ReadLotteryLog(ctx, r, int64(after), limit)
	if err != nil {
		return s.storeError(c, err)
	}
	out := fiber.Map{"room": r, "state": "drawing", "first": page.First, "entries": page.Entries}
	if l.Ended {
		out["state"] = "revealed"
	}
	if len(page.Entries) == limit {
		out["next"] = page.Entries[len(page.Entries)-1].ID
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out)
}
