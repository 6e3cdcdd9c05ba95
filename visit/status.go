package visit

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/wire"
)

// status is the poll. A poll sooner than the nextPollMs this visitor was
// given is answered from memory (X-Waitroom-Cache: hit). A visitor the
// store no longer knows gets back what its token or its credential's
// ticket says it had (Recovery).
func (a *API) status(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	id, t, err := a.visitorTicket(c)
	if err != nil {
		return err
	}
	key := pollKey(r, id)
	now := time.Now()
	if body, ok := a.polls.get(key, now); ok {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Set("X-Waitroom-Cache", "hit")
		a.metrics.Poll(true)
		return c.Send(body)
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	st, err := a.d.Queue.Status(ctx, r, id)
	if err != nil {
		return a.StoreError(c, err)
	}
	if st.Status == wire.StatusNotInQueue {
		// Redis may have lost this visitor: a page that holds its token
		// (cookie or bearer) keeps hearing admitted, and its signed ticket
		// takes its place back.
		claim := wire.Claim{Ticket: t}
		if tok, err := a.parseToken(bearer(c)); err == nil && tok.Room == r && tok.Visitor == id {
			claim.NotBefore, claim.ExpiresAt = tok.NotBefore, tok.ExpiresAt
		}
		if !claim.IsZero() {
			states := []wire.State{st}
			if err := a.d.Recovery.Reclaim(ctx, r, []string{id}, []wire.Claim{claim}, states); err != nil {
				return a.StoreError(c, err)
			}
			st = states[0]
		}
	}
	a.metrics.Poll(false)
	body, err := a.sendState(c, st)
	if st.Status == wire.StatusWaiting && st.NextPoll > 0 {
		a.polls.put(key, body, now.Add(st.NextPoll))
	}
	return err
}

// leave takes the visitor out of the queue or gives its token back.
func (a *API) leave(c *fiber.Ctx) error {
	r, id, err := a.roomVisitor(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	left, err := a.d.Queue.Leave(ctx, r, id)
	if err != nil {
		return a.StoreError(c, err)
	}
	if left && a.d.Report != nil {
		a.d.Report.Left(r)
	}
	a.polls.Forget(r, id)
	return c.SendStatus(fiber.StatusNoContent)
}
