package visit

import (
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/wire"
)

// join enters the queue, or returns the current state (a refresh keeps the
// place). A visitor without a credential gets a new one. The room must
// exist (Rooms.Exists).
func (a *API) join(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	if err := objectBody(c.Body()); err != nil {
		return err
	}
	ctx, cancel := a.redisCtx(c)
	ok, err := a.d.Rooms.Exists(ctx, r)
	cancel()
	if err != nil {
		return a.StoreError(c, err)
	}
	if !ok {
		return errRoomNotFound
	}
	cred := credential(c)
	var id string
	if cred != "" {
		if id, err = a.d.Visitors.ParseVisitor(cred); err != nil {
			// A stale cookie (say, from before a secret change) must not
			// lock a browser out: join anew. A credential the client sent
			// explicitly is its own claim, and a forged one is refused.
			if c.Get("X-Visitor") != "" || c.Query("visitor") != "" {
				return errInvalidVisitor
			}
			cred = ""
		}
	}
	known := id // "" for a new visitor
	if handled, err := a.requireProof(c, r, known); handled || err != nil {
		return err
	}
	if cred == "" {
		id, cred = a.d.Visitors.NewVisitor()
	}
	inv, err := a.inviteOf(c, r, id)
	if err != nil {
		return err
	}
	ctx, cancel = a.redisCtx(c)
	defer cancel()
	st, t, err := a.joinGated(c, ctx, r, id, known, inv)
	if err != nil {
		var ae *httperr.Error
		switch e := inviteError(err); {
		case errors.Is(err, errHandled):
			return nil
		case errors.As(err, &ae):
			return err // a gate's refusal, checked again
		case e != nil:
			return e
		}
		return a.StoreError(c, err)
	}
	fresh := false
	if !t.IsZero() {
		// The credential carries the ticket, signed: a Redis that loses
		// the queue gets this place back from it (Recovery.Retake). A refresh
		// that keeps the place keeps the credential.
		if _, held, err := a.d.Visitors.ParseCredential(cred); err != nil || held.Room != t.Room || held.Seq != t.Seq || held.Priority != t.Priority {
			cred, fresh = a.d.Visitors.TicketCredential(id, t), true
		}
	}
	a.noteJoin(r, id, st, t, fresh)
	a.polls.Forget(r, id)
	a.setCookie(c, VisitorCookie, cred, 7*24*3600)
	return sendJoined(c, st, cred)
}

// sendJoined answers a join: the state, with the visitor's credential.
func sendJoined(c *fiber.Ctx, st wire.State, cred string) error {
	body := st.AppendJSON(make([]byte, 0, 320))
	body = append(body[:len(body)-1], `,"visitor":`...)
	body = strconv.AppendQuote(body, cred)
	body = append(body, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}

// joinTableSize is how many client addresses the join limiter tracks at
// once, in about 1.2 MB. Past that, the clients closest to a full bucket
// are forgotten first (see limit.Table).
const joinTableSize = 1 << 16

// joinLimitKey holds, in a join's request that limitJoins checked, its
// check (a func() error) for the join to run again.
const joinLimitKey = "joinLimit"

var errRateLimited = httperr.New(429, "rate_limited", "too many new visitors from this address; retry after the time in Retry-After")

// limitJoins refuses a join that would create a new visitor when the
// client's address is over its rate: the room's own (joinRate, joinBurst
// settings) or else the deployment's (Options.JoinRate and JoinBurst). A
// join with a valid credential creates nobody and is never limited.
func (a *API) limitJoins() fiber.Handler {
	t := a.openJoins // nil: no limit
	// Rooms with a rate of their own use a table of their own, so keys
	// there keep one rate.
	roomTable := limit.NewTable(1, 1, joinTableSize)
	return func(c *fiber.Ctx) error {
		if cred := credential(c); cred != "" {
			if _, err := a.d.Visitors.ParseVisitor(cred); err == nil {
				return c.Next()
			}
		}
		check := func() error {
			var ok bool
			var wait time.Duration
			key := limit.Key(a.clientAddr(c))
			if rate, burst := a.d.Rooms.JoinLimit(c.Params("room")); rate > 0 {
				ok, wait = roomTable.AllowRate(c.Params("room")+"|"+key, time.Now(), rate, burst)
			} else {
				ok, wait = t.Allow(key, time.Now())
			}
			if !ok {
				c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
				return errRateLimited
			}
			return nil
		}
		if err := check(); err != nil {
			return err
		}
		// The join checks again if the room's limit changed since it was
		// read (regate).
		c.Locals(joinLimitKey, check)
		return c.Next()
	}
}
