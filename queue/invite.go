package queue

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Errors of JoinInvite.
var (
	ErrInviteRequired = errors.New("queue: this room takes new visitors only with an invite code")
	ErrInviteUsed     = errors.New("queue: the invite code has no uses left")
)

// Replies of the invite check before a join.
const (
	replyInviteUsed     int64 = -1
	replyInviteRequired int64 = -2
)

// Invite is the code a join presents, already checked for its signature,
// room, expiry and visitor by the caller. A zero Invite is no code.
type Invite struct {
	ID      string
	Uses    int
	Expires time.Time
	// Priority: a new ticket taken with this code is one of the priority
	// band, ahead of every public ticket, in any room (see JoinInvite).
	Priority bool
}

// JoinInvite is Join for every room, invite-only ones included: a visitor
// who holds a place joins as always; otherwise an invite-only room needs
// inv, and one of its uses is recorded in the same script as the join, so
// a code of n uses admits exactly n visitors however many race for it.
// ErrInviteRequired and ErrInviteUsed say why a join was refused.
//
// A priority code (inv.Priority) takes a use in every room, unless the
// visitor already holds a place ahead of the public queue or a token: the
// visitor then takes a ticket of the priority band, admitted before every
// public ticket, in the order priority visitors joined (before a scheduled
// opening, held until it, then placed ahead of the draw). A visitor who
// waits in the public band moves into the priority band for one use, and
// gives up its public ticket. No use is taken when the room's method turns
// new visitors away.
func (q *Queue) JoinInvite(ctx context.Context, room, visitor string, inv Invite) (wire.State, wire.Ticket, error) {
	prio := "0"
	if inv.Priority && inv.ID != "" {
		prio = "1"
	}
	return q.join(ctx, joinInvScript, room, visitor,
		inv.ID, strconv.Itoa(max(inv.Uses, 1)), strconv.FormatInt(inv.Expires.UnixMilli(), 10), prio)
}
