package main

import (
	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/queue"
)

const (
	visitorCookie = "wr_visitor"
	tokenCookie   = "wr_token"
)

// credential returns the visitor credential sent with the request: cookie,
// X-Visitor header or visitor= query (for EventSource and WebSocket).
func credential(c *fiber.Ctx) string {
	if v := c.Get("X-Visitor"); v != "" {
		return v
	}
	if v := c.Query("visitor"); v != "" {
		return v
	}
	return c.Cookies(visitorCookie)
}

var (
	errMissingVisitor = errorf(401, "missing_visitor", "no visitor credential: join first")
	errInvalidVisitor = errorf(401, "invalid_visitor", "the visitor credential is malformed or was not issued here")
	errInvalidRoom    = errorf(400, "invalid_room", "room names match ^[a-z0-9][a-z0-9-]{0,63}$")
)

// visitor returns the request's verified visitor id.
func (s *server) visitor(c *fiber.Ctx) (string, error) {
	cred := credential(c)
	if cred == "" {
		return "", errMissingVisitor
	}
	id, err := s.signer.ParseVisitor(cred)
	if err != nil {
		return "", errInvalidVisitor
	}
	return id, nil
}

// room returns the validated :room parameter.
func room(c *fiber.Ctx) (string, error) {
	r := c.Params("room")
	if !queue.ValidRoom(r) {
		return "", errInvalidRoom
	}
	return r, nil
}

// roomVisitor returns the validated :room and the request's verified
// visitor.
func (s *server) roomVisitor(c *fiber.Ctx) (string, string, error) {
	r, err := room(c)
	if err != nil {
		return "", "", err
	}
	id, err := s.visitor(c)
	if err != nil {
		return "", "", err
	}
	return r, id, nil
}
