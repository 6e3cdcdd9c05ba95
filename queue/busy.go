package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
)

// busyScript lets a visitor in on the spot in a room with activation busy.
var busyScript = loadScript("busy")

// Refusals of PassBusy: why a visitor was not let in on the spot.
const (
	BusyAlways     = "always"      // the room's activation is always
	BusyPaused     = "paused"      // the room is paused
	BusyNotOpen    = "not_open"    // a scheduled opening is ahead
	BusyClosed     = "closed"      // method reject
	BusyInviteOnly = "invite_only" // a join needs an invite code
	BusyPow        = "pow"         // a join needs a proof of work
	BusyWaiting    = "waiting"     // someone waits: they go first
	BusySoldOut    = "sold_out"    // every seat is held
	BusyFull       = "full"        // the threshold is reached
)

// Pass is PassBusy's answer.
type Pass struct {
	// Admitted: the visitor holds a live entry token (visitorsig.Token), made by
	// this call when New, else one it held already (whose NotBefore may
	// be ahead: admitted by a tick, not valid yet).
	Admitted bool
	New      bool
	Token    visitorsig.Token
	// Refused is why the visitor was not let in (one of the Busy
	// constants) when not Admitted.
	Refused string
}

// PassBusy lets visitor, who holds no valid session, into room on the
// spot when the room's activation is busy, nobody waits and the room is
// under its threshold (free max-active slots, else its rate for the
// current second): one script in the room's slot, so instances together
// never let in more than the threshold. A visitor that already holds a
// live token gets it back, whatever the activation. The token is valid
// from now, recorded as a tick's admission is (its max-active slot, its
// seat, the admitted count).
func (q *Queue) PassBusy(ctx context.Context, room, visitor string) (Pass, error) {
	if err := check(room, visitor); err != nil {
		return Pass{}, err
	}
	c := q.opts.Capacity
	v, err := q.r.Eval(ctx, busyScript.Script, visitorKeys(room, visitor),
		prefix(room), visitor,
		strconv.FormatInt(c.Tick.Milliseconds(), 10),
		strconv.Itoa(c.BatchSize()),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10),
		strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10),
		strconv.Itoa(q.opts.MaxActive),
	)
	if err != nil {
		return Pass{}, fmt.Errorf("queue: pass busy: %w", err)
	}
	r, err := decodeBusy(v)
	if err != nil {
		return Pass{}, fmt.Errorf("queue: pass busy: %w", err)
	}
	if r.Code == 0 {
		return Pass{Refused: r.Reason}, nil
	}
	return Pass{Admitted: true, New: r.Code == 1, Token: visitorsig.Token{Room: room, Visitor: visitor,
		NotBefore: time.UnixMilli(r.NotBefore), ExpiresAt: time.UnixMilli(r.ExpiresAt)}}, nil
}

// busyReply is the reply of busy.lua: {code, notBefore, expiresAt,
// reason}.
type busyReply struct {
	Code                 int64 // 1 admitted now, 2 held a live token, 0 refused
	NotBefore, ExpiresAt int64 // Unix ms, when admitted
	Reason               string
}

func decodeBusy(v any) (busyReply, error) {
	n, err := asInts(v, 4)
	if err != nil {
		return busyReply{}, err
	}
	r := busyReply{Code: n[0], NotBefore: n[1], ExpiresAt: n[2], Reason: stringAt(v, 3)}
	if r.Code < 0 || r.Code > 2 || (r.Code == 0 && r.Reason == "") {
		return busyReply{}, fmt.Errorf("queue: unexpected reply %v", v)
	}
	return r, nil
}
