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
	// One deadline for every store call of the join: a context and its
	// timer are a good part of what a join allocates.
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	ok, err := a.d.Rooms.Exists(ctx, r)
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
	// A new visitor's credential is signed once its join is answered: a
	// visitor who gets a place gets a credential carrying the ticket, and
	// signing one without it first would be wasted.
	fresh := cred == ""
	if fresh {
		id = a.d.Visitors.NewVisitorID()
	}
	inv, err := a.inviteOf(c, r, id)
	if err != nil {
		return err
	}
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
	placed := false
	switch {
	case t.IsZero():
		if fresh {
			cred = a.d.Visitors.TicketCredential(id, t) // the id alone
		}
	case fresh || !holdsTicket(a.d.Visitors, cred, t):
		// The credential carries the ticket, signed: a Redis that loses
		// the queue gets this place back from it (Recovery.Retake). A
		// refresh that keeps the place keeps the credential; a new one
		// is a new place.
		cred, placed = a.d.Visitors.TicketCredential(id, t), true
	}
	a.noteJoin(r, id, st, t, placed)
	if !fresh {
		a.polls.Forget(r, id) // a new id has no poll answer held
	}
	a.setCookie(c, VisitorCookie, cred, 7*24*3600)
	return sendJoined(c, st, cred)
}

// holdsTicket reports whether cred is a valid credential that carries t.
func holdsTicket(v Visitors, cred string, t wire.Ticket) bool {
	_, held, err := v.ParseCredential(cred)
	return err == nil && held.Room == t.Room && held.Seq == t.Seq && held.Priority == t.Priority
}

// sendJoined answers a join: the state, with the visitor's credential.
func sendJoined(c *fiber.Ctx, st wire.State, cred string) error {
	body := st.AppendJSON(make([]byte, 0, 320))
	body = append(body[:len(body)-1], `,"visitor":`...)
	body = wire.AppendString(body, cred)
	body = append(body, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}

// joinTableSize is how many client addresses the join limiter tracks at
// once, in about 1.2 MB. Past that, the clients closest to a full bucket
// are forgotten first (see limit.Table).
const joinTableSize = 1 << 16

// joinLimitKey marks, in a join's request, that limitJoins checked it:
// the join checks it again (checkJoinLimit) if the room's limit changes
// under it (regate).
const joinLimitKey = "joinLimit"

var errRateLimited = httperr.New(429, "rate_limited", "too many new visitors from this address; retry after the time in Retry-After")

// limitJoins refuses a join that would create a new visitor when the
// client's address is over its rate: the room's own (joinRate, joinBurst
// settings) or else the deployment's (Options.JoinRate and JoinBurst). A
// join with a valid credential creates nobody and is never limited.
func (a *API) limitJoins() fiber.Handler {
	return func(c *fiber.Ctx) error {
		if cred := credential(c); cred != "" {
			if _, err := a.d.Visitors.ParseVisitor(cred); err == nil {
				return c.Next()
			}
		}
		if err := a.checkJoinLimit(c); err != nil {
			return err
		}
		c.Locals(joinLimitKey, true)
		return c.Next()
	}
}

// checkJoinLimit takes one join from the limit of the request's room and
// client address, or answers 429 rate_limited with Retry-After.
func (a *API) checkJoinLimit(c *fiber.Ctx) error {
	room := c.Params("room")
	rate, burst := a.d.Rooms.JoinLimit(room)
	if rate <= 0 && a.openJoins == nil {
		return nil // no limit: spares building the key
	}
	var ok bool
	var wait time.Duration
	key := limit.Key(a.clientAddr(c))
	if rate > 0 {
		// Rooms with a rate of their own use a table of their own, so
		// keys there keep one rate.
		ok, wait = a.roomJoins.AllowRate(room+"|"+key, time.Now(), rate, burst)
	} else {
		ok, wait = a.openJoins.Allow(key, time.Now())
	}
	if !ok {
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
		return errRateLimited
	}
	return nil
}
