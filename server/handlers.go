package main

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

var (
	errInvalidJSON  = httperr.ErrInvalidJSON
	errUnavailable  = httperr.ErrUnavailable
	errRoomNotFound = httperr.New(404, "room_not_found", "this waiting room does not exist")
)

// redisCtx bounds every Redis call a request makes.
func (s *server) redisCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), 2*time.Second)
}

// storeError maps a queue error to the HTTP shape.
func (s *server) storeError(c *fiber.Ctx, err error) error {
	switch {
	case errors.Is(err, queue.ErrInvalidRoom):
		return errInvalidRoom
	case errors.Is(err, queue.ErrInvalidToken):
		return errInvalidVisitor
	}
	s.metrics.redisErr.Inc()
	s.log.Warn("redis call failed", "path", c.Path(), "err", err, "request_id", requestID(c))
	c.Set(fiber.HeaderRetryAfter, "2")
	return errUnavailable
}

// objectBody checks that an optional body is a JSON object.
func objectBody(body []byte) error {
	b := strings.TrimSpace(string(body))
	if b == "" {
		return nil
	}
	if b[0] != '{' || !json.Valid([]byte(b)) {
		return errInvalidJSON
	}
	return nil
}

func (s *server) sendState(c *fiber.Ctx, st wire.State) ([]byte, error) {
	body := st.AppendJSON(make([]byte, 0, 256))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return body, c.Send(body)
}

// join enters the queue, or returns the current state (a refresh keeps the
// place). A visitor without a credential gets a new one.
func (s *server) join(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	if err := objectBody(c.Body()); err != nil {
		return err
	}
	if !s.cfg.OpenRooms {
		ctx, cancel := s.redisCtx(c)
		ok, err := s.rooms.exists(ctx, r)
		cancel()
		if err != nil {
			return s.storeError(c, err)
		}
		if !ok {
			return errRoomNotFound
		}
	}
	cred := credential(c)
	var id string
	if cred != "" {
		if id, err = s.signer.ParseVisitor(cred); err != nil {
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
	if handled, err := s.requireProof(c, r, known); handled || err != nil {
		return err
	}
	if cred == "" {
		id, cred = s.signer.NewVisitor()
	}
	inv, err := s.inviteOf(c, r, id)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	st, t, err := s.joinGated(c, ctx, r, id, known, inv)
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
		return s.storeError(c, err)
	}
	if !t.IsZero() {
		// The credential carries the ticket, signed: a Redis that loses
		// the queue gets this place back from it (see queue.Reclaim). A refresh
		// that keeps the place keeps the credential.
		if _, held, err := s.signer.ParseCredential(cred); err != nil || held.Room != t.Room || held.Seq != t.Seq || held.Priority != t.Priority {
			cred = s.signer.TicketCredential(id, t)
		}
	}
	s.polls.forget(r + "|" + id)
	s.setCookie(c, visitorCookie, cred, 7*24*3600)
	body := st.AppendJSON(make([]byte, 0, 320))
	body = append(body[:len(body)-1], `,"visitor":`...)
	body = strconv.AppendQuote(body, cred)
	body = append(body, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(body)
}

// status is the poll. A poll sooner than the nextPollMs this visitor was
// given is answered from memory.
func (s *server) status(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	id, t, err := s.visitorTicket(c)
	if err != nil {
		return err
	}
	key := r + "|" + id
	now := time.Now()
	if body, ok := s.polls.get(key, now); ok {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Set("X-Waitroom-Cache", "hit")
		s.metrics.polls.WithLabelValues("memory").Inc()
		return c.Send(body)
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	st, err := s.q.Status(ctx, r, id)
	if err != nil {
		return s.storeError(c, err)
	}
	if st.Status == wire.StatusNotInQueue {
		// Redis may have lost this visitor: a page that holds its token
		// (cookie or bearer) keeps hearing admitted, and its signed ticket
		// takes its place back.
		claim := wire.Claim{Ticket: t}
		if tok, err := s.signer.ParseToken(bearer(c)); err == nil && tok.Room == r && tok.Visitor == id {
			claim.NotBefore, claim.ExpiresAt = tok.NotBefore, tok.ExpiresAt
		}
		states := []wire.State{st}
		if err := s.q.Reclaim(ctx, r, []string{id}, []wire.Claim{claim}, states); err != nil {
			return s.storeError(c, err)
		}
		st = states[0]
	}
	s.metrics.polls.WithLabelValues("redis").Inc()
	body, err := s.sendState(c, st)
	if st.Status == wire.StatusWaiting && st.NextPoll > 0 {
		s.polls.put(key, body, now.Add(st.NextPoll))
	}
	return err
}

// leave takes the visitor out of the queue or gives its token back.
func (s *server) leave(c *fiber.Ctx) error {
	r, id, err := s.roomVisitor(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	if _, err := s.q.Leave(ctx, r, id); err != nil {
		return s.storeError(c, err)
	}
	s.polls.forget(r + "|" + id)
	return c.SendStatus(fiber.StatusNoContent)
}

// bearer returns the entry token from Authorization: Bearer or the
// wr_token cookie.
func bearer(c *fiber.Ctx) string {
	if h := c.Get(fiber.HeaderAuthorization); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return ""
	}
	return c.Cookies(tokenCookie)
}

var (
	errMissingToken = httperr.New(401, "missing_token", "an entry token is required (Authorization: Bearer)")
	errInvalidToken = httperr.New(401, "invalid_token", "the entry token is malformed, forged or signed elsewhere")
	errTokenUsed    = httperr.New(401, "token_used", "the entry token was already used or given back")
	errTokenExpired = httperr.New(401, "token_expired", "the entry token has expired; join the queue again")
	errWrongRoom    = httperr.New(403, "wrong_room", "the entry token is for another room")
	errWrongVisitor = httperr.New(403, "wrong_visitor", "the entry token belongs to another visitor")
	// The visitor code stays missing_visitor, as on every other route.
	errTokenNoVisitor = httperr.New(401, "missing_visitor", "the entry token must come with the visitor credential it was issued to (cookie wr_visitor or X-Visitor)")
)

// tokenError maps a queue token check to the HTTP shape.
func (s *server) tokenError(c *fiber.Ctx, err error) error {
	var early *queue.TooEarlyError
	switch {
	case errors.As(err, &early):
		ms := max(early.Wait.Milliseconds(), 1)
		c.Set(fiber.HeaderRetryAfter, strconv.FormatInt((ms+999)/1000, 10))
		e := httperr.New(425, "too_early", "the entry token is valid in "+strconv.FormatInt(ms, 10)+" ms")
		e.WaitMs = ms
		return e
	case errors.Is(err, queue.ErrTokenExpired):
		return errTokenExpired
	case errors.Is(err, queue.ErrTokenUnknown):
		return errTokenUsed
	}
	return s.storeError(c, err)
}

// requireToken guards every route under the protected prefix: the entry
// token must be signed here, for this room, for the visitor who sends it,
// inside its validity window, and not used before. It uses the token up.
func (s *server) requireToken(c *fiber.Ctx) error {
	tok, err := s.roomToken(c)
	if err != nil {
		return err
	}
	if err := s.tokenHolder(c, tok); err != nil {
		return err
	}
	if s.uses.used(tok) {
		// Used here before: refused without asking a Redis that may have
		// lost the record of that use.
		return errTokenUsed
	}
	ctx, cancel := s.redisCtx(c)
	exp, err := s.q.Consume(ctx, tok, queue.Spend)
	cancel()
	if err != nil {
		if isTokenError(err) {
			return s.tokenError(c, err)
		}
		return s.failOpen(c, tok, err)
	}
	s.uses.add(tok, exp)
	c.Locals("token", tok)
	err = c.Next()
	// A request that failed on the protected side (a 5xx such as
	// db_timeout) did not use the token: give it back for the retry.
	if failed(c, err) {
		s.uses.forget(tok)
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		if rerr := s.q.Restore(rctx, tok, exp); rerr != nil {
			s.log.Warn("token not given back after a failed request", "room", tok.Room, "err", rerr, "request_id", requestID(c))
		}
	}
	return err
}

// tokenHolder checks that the request comes from the visitor tok was
// issued to: the credential (cookie wr_visitor or X-Visitor) is required,
// so a token alone cannot be handed over or resold. The visitor= query is
// not accepted here: it is for push clients that cannot send headers, and
// it would put the credential into logs next to the token.
func (s *server) tokenHolder(c *fiber.Ctx, tok queue.Token) error {
	cred := c.Get("X-Visitor")
	if cred == "" {
		cred = c.Cookies(visitorCookie)
	}
	if cred == "" {
		return errTokenNoVisitor
	}
	return s.holds(cred, tok)
}

// holds checks that the visitor credential cred is the one tok was issued
// to.
func (s *server) holds(cred string, tok queue.Token) error {
	id, err := s.signer.ParseVisitor(cred)
	if err != nil {
		return errInvalidVisitor
	}
	if id != tok.Visitor {
		return errWrongVisitor
	}
	return nil
}

// failed reports whether the rest of the chain answered a server error.
func failed(c *fiber.Ctx, err error) bool {
	var ae *httperr.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return err != nil || c.Response().StatusCode() >= 500
}

// isTokenError tells a verdict on the token from a failure to reach Redis.
func isTokenError(err error) bool {
	var early *queue.TooEarlyError
	return errors.As(err, &early) || errors.Is(err, queue.ErrTokenExpired) || errors.Is(err, queue.ErrTokenUnknown)
}

// order is the demo protected endpoint: it runs against the simulated DB
// pool so the effect of a herd is visible.
func (s *server) order(c *fiber.Ctx) error {
	tok := c.Locals("token").(queue.Token)
	start := time.Now()
	if err := s.db.run(c.UserContext()); err != nil {
		if errors.Is(err, errDBTimeout) {
			s.metrics.orders.WithLabelValues("db_timeout").Inc()
			c.Set(fiber.HeaderRetryAfter, "1")
			return httperr.New(503, "db_timeout", "the database had no free connection in time")
		}
		return err
	}
	s.metrics.orders.WithLabelValues("created").Inc()
	c.Status(fiber.StatusCreated)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	b := make([]byte, 0, 160)
	b = append(b, `{"order":{"room":`...)
	b = strconv.AppendQuote(b, tok.Room)
	b = append(b, `,"visitor":`...)
	b = strconv.AppendQuote(b, tok.Visitor)
	b = append(b, `,"dbMs":`...)
	b = strconv.AppendInt(b, time.Since(start).Milliseconds(), 10)
	b = append(b, "}}"...)
	return c.Send(b)
}

// verify tells other services whether a token is valid now, without using
// it up.
func (s *server) verify(c *fiber.Ctx) error {
	var req struct {
		Token   string `json:"token"`
		Visitor string `json:"visitor"` // optional: the credential the caller was given with the token
	}
	if err := httperr.DecodeObject(c.Body(), &req); err != nil {
		return err
	}
	if req.Token == "" {
		return httperr.New(400, "missing_field", "token is required")
	}
	tok, err := s.signer.ParseToken(req.Token)
	if err != nil {
		return errInvalidToken
	}
	if req.Visitor != "" {
		if err := s.holds(req.Visitor, tok); err != nil {
			return err
		}
	}
	return s.touchToken(c, tok, req.Visitor != "")
}

// touchToken checks tok and slides its idle expiry (capped by the room's
// absolute maximum): a buyer who keeps using the site keeps the token.
// visitorChecked says in the answer whether the visitor was checked
// against a credential (verify with a visitor, touch), so a caller that
// forgot to send one cannot mistake the answer for a full check.
func (s *server) touchToken(c *fiber.Ctx, tok queue.Token, visitorChecked bool) error {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	exp, err := s.q.Consume(ctx, tok, queue.Touch)
	if err != nil {
		if isTokenError(err) {
			return s.tokenError(c, err)
		}
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{
		"valid": true, "room": tok.Room, "visitor": tok.Visitor, "visitorChecked": visitorChecked,
		"notBefore": tok.NotBefore.UTC().Format(time.RFC3339Nano),
		"expiresAt": exp.UTC().Format(time.RFC3339Nano),
	})
}

// touch extends the entry token of the request (Authorization: Bearer or
// cookie) without using it up.
func (s *server) touch(c *fiber.Ctx) error {
	tok, err := s.roomToken(c)
	if err != nil {
		return err
	}
	if err := s.tokenHolder(c, tok); err != nil {
		return err
	}
	return s.touchToken(c, tok, true)
}

// roomToken returns the request's entry token, signed here and for the
// :room of the route.
func (s *server) roomToken(c *fiber.Ctx) (queue.Token, error) {
	r, err := room(c)
	if err != nil {
		return queue.Token{}, err
	}
	raw := bearer(c)
	if raw == "" {
		return queue.Token{}, errMissingToken
	}
	tok, err := s.signer.ParseToken(raw)
	if err != nil {
		return queue.Token{}, errInvalidToken
	}
	if tok.Room != r {
		return queue.Token{}, errWrongRoom
	}
	return tok, nil
}

func (s *server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz is ready when Redis answers and pub/sub is up.
func (s *server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), time.Second)
	defer cancel()
	if err := s.redis.ping(ctx); err != nil {
		return httperr.New(503, "redis_down", "redis does not answer")
	}
	if s.hub != nil && !s.hub.Ready() {
		return httperr.New(503, "pubsub_down", "redis pub/sub is reconnecting")
	}
	if s.draining.Load() {
		return httperr.New(503, "draining", "this instance is shutting down")
	}
	return c.JSON(fiber.Map{"status": "ready"})
}
