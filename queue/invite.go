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
}

// JoinInvite is Join for every room, invite-only ones included: a visitor
// who holds a place joins as always; otherwise an invite-only room needs
// inv, and one of its uses is recorded in the same script as the join, so
// a code of n uses admits exactly n visitors however many race for it.
// ErrInviteRequired and ErrInviteUsed say why a join was refused.
func (q *Queue) JoinInvite(ctx context.Context, room, visitor string, inv Invite) (wire.State, Ticket, error) {
	return q.join(ctx, joinInvScript, room, visitor,
		inv.ID, strconv.Itoa(max(inv.Uses, 1)), strconv.FormatInt(inv.Expires.UnixMilli(), 10))
}
