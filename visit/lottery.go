package visit

import (
	"context"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
)

// lotteryFunction says, in the endpoint's answer, how to check a lottery.
const lotteryFunction = "commitment = hex(SHA-256(seed)); pick i (0-based, every pick of the tick) of tick t is the ticket at 0-based rank floor(int(hex(SHA-1(seed + \":\" + t + \":\" + i))[0:13], 16) / 2^52 * n) among the n still waiting, in ticket order; a pick away from the page is set aside and does not count toward the batch"

var errNoLottery = httperr.New(404, "no_lottery", "this room has never admitted by lottery")

// readLottery reads room r's lottery record, answering 404 no_lottery for
// a room that was never random.
func (a *API) readLottery(ctx context.Context, c *fiber.Ctx, r string) (queue.Lottery, error) {
	l, err := a.d.Records.ReadLottery(ctx, r)
	if errors.Is(err, queue.ErrNoDraw) {
		return l, errNoLottery
	}
	if err != nil {
		return l, a.StoreError(c, err)
	}
	return l, nil
}

// lottery is the public commit-reveal record of a room's lottery (method
// random): while the room draws, the commitment only; once it left the
// random method, the seed too.
func (a *API) lottery(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	l, err := a.readLottery(ctx, c, r)
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
	// lotteryLogReaders is how many log pages one instance reads from Redis
	// at once; more readers wait their turn outside (503 with
	// Retry-After), so a crowd of auditors never queues up Redis time that
	// the ticks of every room need.
	lotteryLogReaders = 4
	// lotteryLogImmutable is the Cache-Control of a page whose range is
	// complete: entries are never rewritten, so the page is the same
	// forever (its state and first are as of when it was served).
	lotteryLogImmutable = "public, max-age=31536000, immutable"
	// lotteryLogLast is the Cache-Control of the log's last page, which
	// grows while the room draws.
	lotteryLogLast = "public, max-age=2"
)

var errLotteryLogBusy = httperr.New(503, "lottery_log_busy", "too many readers of lottery logs on this instance right now; retry after the Retry-After seconds")

// lotteryLog is the public log of a room's lottery (method random): every
// change of the tickets waiting and every pick, in pages (after: the last
// entry id read, limit), so that with the revealed seed anyone can replay
// the lottery (go run ./cmd/drawcheck -lottery). It names tickets, never
// visitors. A page is bounded in entries (limit) and in bytes (about 1 MiB
// of entry data, see queue.ReadLotteryLog): next is set whenever entries
// remain after it. At most Options.LogReaders pages are read at once.
func (a *API) lotteryLog(c *fiber.Ctx) error {
	r, err := Room(c)
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
	select {
	case a.logReaders <- struct{}{}:
		defer func() { <-a.logReaders }()
	default:
		c.Set(fiber.HeaderRetryAfter, "1")
		c.Set(fiber.HeaderCacheControl, "no-store")
		return errLotteryLogBusy
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	l, err := a.readLottery(ctx, c, r)
	if err != nil {
		return err
	}
	page, err := a.d.Records.ReadLotteryLog(ctx, r, int64(after), limit)
	if err != nil {
		return a.StoreError(c, err)
	}
	out := fiber.Map{"room": r, "state": "drawing", "first": page.First, "entries": page.Entries}
	if l.Ended {
		out["state"] = "revealed"
	}
	cache := lotteryLogLast
	if page.More && len(page.Entries) > 0 {
		out["next"] = page.Entries[len(page.Entries)-1].ID
		// The entries after `after` up to next, every one of them: the
		// same answer forever. A page that began past `after` (the log's
		// start was trimmed) would begin later on a later read.
		if page.Entries[0].ID == int64(after)+1 {
			cache = lotteryLogImmutable
		}
	}
	c.Set(fiber.HeaderCacheControl, cache)
	return c.JSON(out)
}
