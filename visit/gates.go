package visit

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// The gates of a join that read the room cache (proof of work, join
// limits) hold from the moment a change of the room's settings returns, on
// every instance: the join script takes the place only if the settings
// are still of the version the cache held (queue.JoinAt). When they
// changed, the join reads them again, checks those gates again and joins
// again. The gates the join script reads itself (invite-only, method,
// pause) are always the stored settings.

// joinTries bounds the joins of one request while the settings keep
// changing under it.
const joinTries = 3

var errSettingsChanging = httperr.New(503, "settings_changing", "the room's settings are changing; retry the join")

// joinGated joins visitor (known is "" when the request created it) into
// room at the settings version the cache holds, running the cache's gates
// again each time the settings changed since.
func (a *API) joinGated(c *fiber.Ctx, ctx context.Context, r, visitor, known string, inv queue.Invite) (wire.State, wire.Ticket, error) {
	for range joinTries {
		st, t, err := a.d.Queue.JoinAt(ctx, r, visitor, inv, a.d.Rooms.Version(r))
		if !errors.Is(err, queue.ErrSettingsChanged) {
			return st, t, err
		}
		if err := a.regate(c, ctx, r, known); err != nil {
			return wire.State{}, wire.Ticket{}, err
		}
	}
	return wire.State{}, wire.Ticket{}, errSettingsChanging
}

// errHandled stops a join whose gate already answered (428 pow_required).
var errHandled = errors.New("answered")

// regate reads room's settings into the cache and checks the join's
// cache gates against them: the join limit when it changed, and the proof
// of work when the room now asks for more than the join proved.
func (a *API) regate(c *fiber.Ctx, ctx context.Context, r, known string) error {
	rate, burst := a.d.Rooms.JoinLimit(r)
	if err := a.d.Rooms.Reload(ctx, r); err != nil {
		return a.StoreError(c, err)
	}
	if nr, nb := a.d.Rooms.JoinLimit(r); nr != rate || nb != burst {
		if checked, _ := c.Locals(joinLimitKey).(bool); checked {
			if err := a.checkJoinLimit(c); err != nil {
				return err
			}
		}
	}
	proven, _ := c.Locals(powProvenKey).(int)
	if a.d.Rooms.PowBits(r) > proven {
		handled, err := a.requireProof(c, r, known)
		if handled && err == nil {
			return errHandled
		}
		return err
	}
	return nil
}
