package queue

import (
	"context"
	"errors"
	"strconv"

	"github.com/waitroom/waitroom/wire"
)

// ErrSettingsChanged is returned by JoinAt when the room's settings are no
// longer those of the version given: the join did nothing.
var ErrSettingsChanged = errors.New("queue: the room's settings changed since they were read")

// replySettingsChanged is fresh.lua's reply.
const replySettingsChanged int64 = -3

// joinAtScript is the join with invite-only rooms' check behind the check
// of the settings version.
var joinAtScript = loadScript("fresh+invite+join")

// JoinAt is JoinInvite for a caller that checked gates of its own (proof
// of work, join limits) against room's settings of version settings: the
// join is made only if the stored settings are still of that version, in
// the same script, so no join passes gates older than the last change of
// the settings. Otherwise it does nothing and returns ErrSettingsChanged;
// the caller reads the settings again and retries. A join without a code
// may go to Redis with others of the room made at the same time, in one
// call (coalesce.go).
func (q *Queue) JoinAt(ctx context.Context, room, visitor string, inv Invite, settings int64) (wire.State, wire.Ticket, error) {
	if inv.ID == "" && q.batches != nil {
		return q.joinCoalesced(ctx, room, visitor, settings)
	}
	prio := "0"
	if inv.Priority && inv.ID != "" {
		prio = "1"
	}
	return q.join(ctx, joinAtScript, room, visitor,
		inv.ID, strconv.Itoa(max(inv.Uses, 1)), strconv.FormatInt(inv.Expires.UnixMilli(), 10), prio,
		strconv.FormatInt(settings, 10))
}
