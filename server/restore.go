package main

import (
	"context"
	"errors"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// restoreSettings says what a room's settings are when Redis lost them:
// the settings this instance last read, with what the rooms file (-rooms)
// sets on top, as every other write of a room's settings applies it.
type restoreSettings struct{ s *server }

func (r restoreSettings) RoomSettings(room string) (queue.RoomConfig, bool) {
	var c queue.RoomConfig
	var ok bool
	if r.s.rooms != nil {
		c, ok = r.s.rooms.RoomSettings(room)
	}
	if fr, found := r.s.fileRoom(room); found {
		fr.Apply(&c)
		ok = true
	}
	return c, ok
}

func (r restoreSettings) SettingsRooms() []string {
	var out []string
	if r.s.rooms != nil {
		out = r.s.rooms.SettingsRooms()
	}
	for _, fr := range r.s.opsNow().rooms.Rooms() {
		out = append(out, fr.Name)
	}
	return out
}

// heldTicket is what the hub keeps for a push connection of visitor in
// room: the ticket its credential carries, so that a reconcile that finds
// the visitor missing from a Redis that lost its queue can give the place
// back before the connection hears anything else (see hubSource).
func heldTicket(room string, t queue.Ticket) hub.Held {
	if t.Room != room || t.IsZero() {
		return hub.Held{}
	}
	return hub.Held{Seq: t.Seq, IssuedAt: t.IssuedAt.UnixMilli(), Priority: t.Priority}
}

// heldBy returns the ticket a push connection of visitor in room holds
// here, and the admission the hub told it of, if any; ok is false when the
// visitor has no push connection here or its credential carried no ticket.
func (s *server) heldBy(room, visitor string) (t queue.Ticket, adm queue.Token, ok bool) {
	held, last, found := s.hub.Held(room, visitor)
	if !found || held.Seq == 0 {
		return t, adm, false
	}
	t = queue.Ticket{Room: room, Seq: held.Seq, IssuedAt: time.UnixMilli(held.IssuedAt), Priority: held.Priority}
	if last.Status == wire.StatusAdmitted {
		adm = queue.Token{Room: room, Visitor: visitor, NotBefore: last.NotBefore, ExpiresAt: last.ExpiresAt}
	}
	return t, adm, true
}

// readmit answers for a visitor Redis no longer knows who holds tok, signed
// here: when the token is still good (its record written back if Redis
// lost it, see queue.Consume), the admitted state, so a page holding a
// token does not hear not_in_queue after a loss.
func (s *server) readmit(ctx context.Context, tok queue.Token) (wire.State, bool) {
	if tok.Visitor == "" || !time.Now().Before(tok.ExpiresAt) {
		return wire.State{}, false
	}
	exp, err := s.q.Consume(ctx, tok, queue.Check)
	var early *queue.TooEarlyError
	if err != nil && !errors.As(err, &early) {
		return wire.State{}, false
	}
	if err == nil {
		tok.ExpiresAt = exp
	}
	return s.q.Admitted(tok.Room, tok.Visitor, tok.NotBefore, tok.ExpiresAt), true
}

// retake gives back the places of the visitors among states that Redis
// lost (not_in_queue while their signed ticket says they had one), and
// reads their states again. tickets has one entry per visitor (zero for
// none). states is updated in place.
func (s *server) retake(ctx context.Context, room string, visitors []string, tickets []queue.Ticket, states []wire.State) error {
	var ids []string
	var ts []queue.Ticket
	var at []int
	for i, st := range states {
		if st.Status == wire.StatusNotInQueue && tickets[i].Room == room && !tickets[i].IsZero() {
			ids = append(ids, visitors[i])
			ts = append(ts, tickets[i])
			at = append(at, i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	r, err := s.q.Retake(ctx, room, ids, ts)
	if err != nil || r.Tickets == 0 {
		return err
	}
	again, err := s.q.StatusMany(ctx, room, ids)
	if err != nil {
		return err
	}
	for j, i := range at {
		states[i] = again[j]
	}
	return nil
}
