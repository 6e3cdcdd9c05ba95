package main

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/demo"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/visit"
)

// The helpers the server's own endpoints (admin, audit, gateway) share with
// the visitor API, so that they answer alike.

const visitorCookie = visit.VisitorCookie

// room returns the validated :room parameter.
func room(c *fiber.Ctx) (string, error) { return visit.Room(c) }

// storeError maps a queue error to the HTTP shape (see visit.API.StoreError).
func (s *server) storeError(c *fiber.Ctx, err error) error { return s.visit.StoreError(c, err) }

// healthz answers while the process serves.
func (s *server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz is ready when Redis answers, pub/sub is up and this instance
// signs entry tokens with keys the others accept.
func (s *server) readyz(c *fiber.Ctx) error {
	if err := s.readiness(c.UserContext()); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

// readiness is why the instance is not ready (Redis, pub/sub, draining,
// entry token keys that differ from the other instances'),
// or nil: what /readyz answers on every listener.
func (s *server) readiness(ctx context.Context) *httperr.Error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
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
	if s.tokens.Signing() != nil {
		// Why is in the log: the fingerprints are no business of a prober.
		return httperr.New(503, "entry_keys_differ", "this instance's -signing-keys differ from those of the instances that joined before it: it signs no entry token")
	}
	return nil
}

// newDemo builds the demo protected endpoint (-demo) on a simulated pool
// the size the capacity flags describe.
func newDemo(cfg config) *demo.Demo {
	wait := cfg.DBWait
	if wait == 0 {
		wait = -1 // the demo's "do not wait"; its zero means the default
	}
	return demo.New(&demo.Options{Slots: cfg.Capacity.DBPool, ServiceTime: cfg.Capacity.ServiceTime, Wait: wait})
}

// tokenHolder names the holder of the entry token s.visit.RequireToken
// accepted.
func tokenHolder(c *fiber.Ctx) (room, visitor string) {
	tok, _ := visit.Token(c)
	return tok.Room, tok.Visitor
}
