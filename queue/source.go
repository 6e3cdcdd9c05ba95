package queue

import (
	"context"
	"errors"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// The hub reads exact state from a Queue: States, with Admitted, Estimate
// and DrawEstimate, is the hub's Source (and DrawSource).

// States reads the states of visitors of room as StatusMany does, and
// first gives each visitor Redis no longer knows what its claim says it
// held (see Reclaim), so a push connection never hears not_in_queue for a
// visitor Redis lost. claims is nil or has one entry per visitor.
//
// On an error States asks again, backing off, until ctx ends: right after
// pub/sub is back the command connections may still be reconnecting, and
// a reconcile that failed then would leave the room's visitors unread
// (and, after a loss, without their places) until the next periodic one.
func (q *Queue) States(ctx context.Context, room string, visitors []string, claims []wire.Claim) ([]wire.State, error) {
	states, err := q.claimedStates(ctx, room, visitors, claims)
	for wait := 50 * time.Millisecond; err != nil && ctx.Err() == nil; wait = min(2*wait, time.Second) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		states, err = q.claimedStates(ctx, room, visitors, claims)
	}
	return states, err
}

func (q *Queue) claimedStates(ctx context.Context, room string, visitors []string, claims []wire.Claim) ([]wire.State, error) {
	states, err := q.StatusMany(ctx, room, visitors)
	if err != nil {
		return nil, err
	}
	if claims == nil {
		return states, nil
	}
	if err := q.Reclaim(ctx, room, visitors, claims, states); err != nil {
		return nil, err
	}
	return states, nil
}

// Reclaim gives each visitor of room that Redis no longer knows (states[i]
// is not_in_queue) what claims[i] says it held, and puts its state again
// in states[i]: an admission whose entry token is still good stands (the
// token's record written back if Redis lost it, see Consume); else the
// claim's ticket takes the visitor's place back (see Retake). states and
// claims have one entry per visitor (claims may be shorter: the rest claim
// nothing); a ticket of another room is skipped. The error is the
// retake's; an admission that does not stand is none.
func (q *Queue) Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error {
	var ids []string
	var tickets []wire.Ticket
	var at []int
	for i, st := range states {
		if st.Status != wire.StatusNotInQueue || i >= len(claims) || i >= len(visitors) {
			continue
		}
		c := claims[i]
		if again, ok := q.readmit(ctx, room, visitors[i], c); ok {
			states[i] = again
			continue
		}
		if c.Ticket.Room == room && !c.Ticket.IsZero() {
			ids = append(ids, visitors[i])
			tickets = append(tickets, c.Ticket)
			at = append(at, i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	r, err := q.Retake(ctx, room, ids, tickets)
	if err != nil || r.Tickets == 0 {
		return err
	}
	again, err := q.StatusMany(ctx, room, ids)
	if err != nil {
		return err
	}
	for j, i := range at {
		states[i] = again[j]
	}
	return nil
}

// readmit returns the admitted state of visitor in room when c claims an
// admission whose entry token is still good (writing the token's record
// back if Redis lost it), so a page holding a token does not hear
// not_in_queue after a loss.
func (q *Queue) readmit(ctx context.Context, room, visitor string, c wire.Claim) (wire.State, bool) {
	if !time.Now().Before(c.ExpiresAt) {
		return wire.State{}, false
	}
	tok := visitorsig.Token{Room: room, Visitor: visitor, NotBefore: c.NotBefore, ExpiresAt: c.ExpiresAt}
	exp, err := q.Consume(ctx, tok, Check)
	var early *TooEarlyError
	if err != nil && !errors.As(err, &early) {
		return wire.State{}, false
	}
	if err == nil {
		tok.ExpiresAt = exp
	}
	return q.Admitted(room, visitor, tok.NotBefore, tok.ExpiresAt), true
}
