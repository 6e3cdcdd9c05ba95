package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/visit"
)

// The helpers the server's own endpoints (admin, audit, gateway) share with
// the visitor API, so that they answer alike.

const visitorCookie = visit.VisitorCookie

var errInvalidJSON = httperr.ErrInvalidJSON

// room returns the validated :room parameter.
func room(c *fiber.Ctx) (string, error) { return visit.Room(c) }

// redisCtx bounds every Redis call a request makes.
func (s *server) redisCtx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), 2*time.Second)
}

// storeError maps a queue error to the HTTP shape (see visit.API.StoreError).
func (s *server) storeError(c *fiber.Ctx, err error) error { return s.visit.StoreError(c, err) }

// order is the demo protected endpoint: it runs against the simulated DB
// pool so the effect of a herd is visible.
func (s *server) order(c *fiber.Ctx) error {
	tok, _ := visit.Token(c) // behind RequireToken
	start := time.Now()
	if err := s.db.run(c.UserContext()); err != nil {
		if errors.Is(err, errDBTimeout) {
			s.orders.TimedOut()
			c.Set(fiber.HeaderRetryAfter, "1")
			return httperr.New(503, "db_timeout", "the database had no free connection in time")
		}
		return err
	}
	s.orders.Created()
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

// healthz answers while the process serves.
func (s *server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz is ready when Redis answers and pub/sub is up.
func (s *server) readyz(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), time.Second)
	defer cancel()
	if err := s.redis.Ping(ctx); err != nil {
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
