package visit

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
)

// drawFunction says, in the endpoint's answer, how to check a draw.
const drawFunction = "commitment = hex(SHA-256(seed)); order = ids sorted by hex(SHA-1(seed + \":\" + id)) ascending, then by id; the i-th in that order got the i-th place of the pre-queue"

// Pages of the revealed ids.
const (
	drawPageDefault = 10000
	drawPageMax     = 100000
)

var errNoDraw = httperr.New(404, "no_draw", "this room has no scheduled opening to draw")

// draw is the public commit-reveal record of a room's pre-queue draw:
// before opening the commitment only; after opening the seed and the
// sorted list of ids, in pages (offset, limit), so anyone can recompute
// the order (go run ./cmd/drawcheck).
func (a *API) draw(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	offset, err := queryInt(c, "offset", 0, 0, 1<<40)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", drawPageDefault, 0, drawPageMax)
	if err != nil {
		return err
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	d, err := a.d.Records.Draw(ctx, r, offset, limit)
	if errors.Is(err, queue.ErrNoDraw) {
		return errNoDraw
	}
	if err != nil {
		return a.StoreError(c, err)
	}
	out := fiber.Map{"room": r, "commitment": d.Commitment, "function": drawFunction}
	if !d.CommittedAt.IsZero() {
		out["committedAt"] = d.CommittedAt.UTC().Format(time.RFC3339Nano)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	if !d.Opened {
		out["state"] = "committed"
		return c.JSON(out)
	}
	out["state"] = "revealed"
	if d.Placing {
		out["state"] = "placing"
	}
	out["seed"] = d.Seed
	out["openedAt"] = d.OpenedAt.UTC().Format(time.RFC3339Nano)
	out["count"] = d.Count
	out["offset"] = offset
	out["ids"] = d.IDs
	if next := int64(offset + len(d.IDs)); len(d.IDs) > 0 && next < d.Count {
		out["nextOffset"] = next
	}
	return c.JSON(out)
}

// queryInt reads an integer query parameter within [lo, hi].
func queryInt(c *fiber.Ctx, name string, def, lo, hi int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, httperr.New(400, "invalid_query", name+" must be a whole number from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
	}
	return n, nil
}
