package visit

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
)

var (
	errInviteRequired = httperr.New(403, "invite_required", "this room is invite-only: join with an invite code (?invite= or the body's \"invite\")")
	errInviteInvalid  = httperr.New(403, "invalid_invite", "the invite code is malformed or was not issued here")
	errInviteExpired  = httperr.New(403, "invite_expired", "the invite code has expired")
	errInviteRoom     = httperr.New(403, "invite_wrong_room", "the invite code is for another room")
	errInviteVisitor  = httperr.New(403, "invite_wrong_visitor", "the invite code is for another visitor")
	errInviteUsed     = httperr.New(409, "invite_used", "the invite code has been used as often as it allows")
)

// inviteOf reads the join's invite code (?invite= or the body's "invite")
// and checks what can be checked without Redis: its signature, room,
// expiry and visitor. No code is a zero queue.Invite: the join script
// decides whether the room needs one.
func (a *API) inviteOf(c *fiber.Ctx, room, visitor string) (queue.Invite, error) {
	code := c.Query("invite")
	if code == "" && !noFields(c.Body()) {
		var in struct {
			Invite string `json:"invite"`
		}
		_ = json.Unmarshal(c.Body(), &in) // objectBody checked it is an object
		code = in.Invite
	}
	code = strings.TrimSpace(code)
	if code == "" {
		return queue.Invite{}, nil
	}
	ic, err := a.d.Invites.Parse(code)
	switch {
	case err != nil:
		return queue.Invite{}, errInviteInvalid
	case ic.Room != room:
		return queue.Invite{}, errInviteRoom
	case !time.Now().Before(ic.Expires):
		return queue.Invite{}, errInviteExpired
	case ic.Visitor != "" && ic.Visitor != visitor:
		return queue.Invite{}, errInviteVisitor
	}
	return queue.Invite{ID: ic.ID, Uses: ic.Uses, Expires: ic.Expires, Priority: ic.Priority}, nil
}

// inviteError maps the join script's invite refusals; nil for any other
// error.
func inviteError(err error) error {
	switch {
	case errors.Is(err, queue.ErrInviteRequired):
		return errInviteRequired
	case errors.Is(err, queue.ErrInviteUsed):
		return errInviteUsed
	}
	return nil
}
