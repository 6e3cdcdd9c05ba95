package visit

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/wire"
)

var errTransportOff = httperr.New(503, "transport_disabled", "this transport is turned off here; fall back to the next one")

// ws hands a checked WebSocket request to the push transports.
func (a *API) ws(c *fiber.Ctx) error {
	t, err := a.pushTarget(c, a.noWS)
	if err != nil {
		return err
	}
	return a.d.Push.WS(c, t)
}

// sse hands a checked event-stream request to the push transports.
func (a *API) sse(c *fiber.Ctx) error {
	t, err := a.pushTarget(c, a.noSSE)
	if err != nil {
		return err
	}
	return a.d.Push.SSE(c, t)
}

// pushTarget checks a push request before its connection is taken over:
// the transport is on, the room and visitor are valid, the instance is not
// draining. The strings are copies: fiber's alias fasthttp's request
// buffers, which are reused once the hijack handler returns.
// The target also holds the ticket the credential carries, and whether
// the page shows an operator's message (see push.Target).
func (a *API) pushTarget(c *fiber.Ctx, off bool) (push.Target, error) {
	if off {
		return push.Target{}, errTransportOff
	}
	r, err := Room(c)
	if err != nil {
		return push.Target{}, err
	}
	// A connect ticket (see ticket.go) stands for the credential in the
	// URL; the queue ticket then comes back through the visitor's polls.
	var id string
	var t wire.Ticket
	if ct := c.Query("ticket"); ct != "" {
		id, err = a.redeemTicket(c, r, ct)
	} else {
		id, t, err = a.visitorTicket(c)
	}
	if err != nil {
		return push.Target{}, err
	}
	if a.d.Draining() {
		return push.Target{}, push.ErrDraining
	}
	t.Room = strings.Clone(t.Room)
	r = strings.Clone(r)
	// ?msg=1: the page shows an operator's message (push.Target).
	return push.Target{Room: r, Visitor: strings.Clone(id), Ticket: t, Message: c.Query("msg") == "1"}, nil
}
