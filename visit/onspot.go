package visit

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// ErrJoinElsewhere is JoinOnSpot's refusal: the room asks more of a new
// visitor than a request to the protected site carries (a proof of work,
// an invite code), or the client's address is over its join rate; the
// visitor joins through the API.
var ErrJoinElsewhere = errors.New("visit: join through the API")

// JoinOnSpot is the join of an API client that asked the gateway for a
// protected address without a session: the same join as POST …/join
// (the same join limit per client address, the same credential carrying
// the ticket, counted alike), from a request that is no join. cred is the
// visitor's credential ("" or invalid: a new visitor); it returns the
// state and the credential to hand back. A room with a proof of work or
// invite codes, and a client over its join rate, get ErrJoinElsewhere.
func (a *API) JoinOnSpot(ctx context.Context, r, cred string, client netip.Addr) (wire.State, string, error) {
	var id string
	if cred != "" {
		var err error
		if id, err = a.d.Visitors.ParseVisitor(cred); err != nil {
			cred = ""
		}
	}
	fresh := cred == ""
	if a.d.Rooms.PowBits(r) > 0 && fresh {
		return wire.State{}, "", ErrJoinElsewhere
	}
	if fresh {
		if !a.allowJoin(r, client) {
			return wire.State{}, "", ErrJoinElsewhere
		}
		id = a.d.Visitors.NewVisitorID()
	}
	var (
		st  wire.State
		t   wire.Ticket
		err error
	)
	for range joinTries {
		st, t, err = a.d.Queue.JoinAt(ctx, r, id, queue.Invite{}, a.d.Rooms.Version(r))
		if !errors.Is(err, queue.ErrSettingsChanged) {
			break
		}
		if err = a.d.Rooms.Reload(ctx, r); err != nil {
			return wire.State{}, "", err
		}
		if a.d.Rooms.PowBits(r) > 0 && fresh {
			return wire.State{}, "", ErrJoinElsewhere
		}
		err = errSettingsChanging
	}
	switch {
	case inviteError(err) != nil:
		return wire.State{}, "", ErrJoinElsewhere
	case err != nil:
		return wire.State{}, "", err
	}
	placed := false
	switch {
	case t.IsZero():
		if fresh {
			cred = a.d.Visitors.TicketCredential(id, t)
		}
	case fresh || !holdsTicket(a.d.Visitors, cred, t):
		cred, placed = a.d.Visitors.TicketCredential(id, t), true
	}
	a.noteJoin(r, id, st, t, placed)
	if !fresh {
		a.polls.Forget(r, id) // as a join: the next poll reads the store
	}
	return st, cred, nil
}

// allowJoin takes one new visitor of room from client's join rate, as
// checkJoinLimit does for a join.
func (a *API) allowJoin(room string, client netip.Addr) bool {
	rate, burst := a.d.Rooms.JoinLimit(room)
	if rate <= 0 && a.openJoins == nil {
		return true
	}
	key := limit.Key(client)
	if rate > 0 {
		ok, _ := a.roomJoins.AllowRate(room+"|"+key, time.Now(), rate, burst)
		return ok
	}
	ok, _ := a.openJoins.Allow(key, time.Now())
	return ok
}
