package admin

import (
	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/settings"
)

// needRole refuses a request whose key's role is below need: 403
// forbidden, naming the role needed.
func needRole(c *fiber.Ctx, need Role) error {
	if have := roleOf(c); have < need {
		return httperr.New(403, "forbidden", "this needs the "+need.String()+" role; the key "+label(c)+" has the "+have.String()+" role")
	}
	return nil
}

// needAct refuses a request whose key's role is below the one act needs
// (Acts): 403 forbidden, naming the role and the act.
func needAct(c *fiber.Ctx, act string) error {
	need := Acts[act]
	if have := roleOf(c); have < need {
		return httperr.New(403, "forbidden", "this needs the "+need.String()+" role (to "+act+"); the key "+label(c)+" has the "+have.String()+" role")
	}
	return nil
}

// roomMustExist refuses, with 404 room_not_found, a call on a room nobody
// created by a key whose role may not create rooms (ActCreateRoom): the
// call would create it. Any other call goes on.
func (a *API) roomMustExist(c *fiber.Ctx, room string) error {
	if roleOf(c) >= Acts[ActCreateRoom] {
		return nil
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	ok, err := a.store.RoomExists(ctx, room)
	if err != nil {
		return a.storeError(c, err)
	}
	if !ok {
		return errRoomNotFound
	}
	return nil
}

// whoami tells the dashboard who its key is and what it may do.
func (a *API) whoami(c *fiber.Ctx) error {
	r := roleOf(c)
	return c.JSON(fiber.Map{
		"label": label(c), "role": r.String(),
		"may": fiber.Map{"read": true, "steer": r >= Operator, "configure": r >= Admin},
	})
}

// describeSettings describes the room settings for the dashboard's form, in
// the order it shows them: each one's name, label, kind, options and
// bounds, a hint, and whether an operator may change it.
func (a *API) describeSettings(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"settings": settings.Form()})
}
