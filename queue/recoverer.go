package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// recoverer owns this instance's part in getting over a Redis loss: it is
// told what says Redis may have lost its data (a call that could not reach
// Redis; the alive marker gone, or another value than this instance last
// saw) and, when the tick loop hands it the configured rooms it read,
// before anything is admitted, it writes back what this instance
// remembers (writeBack) and sets the marker again. It also writes back the
// settings of a room the rooms file or the admin API knows whose settings
// Redis lacks. Nothing else writes back a room's state: a visitor's own
// place comes back from its claim (Reclaim, below), a token's record from
// the token (Consume). No read writes back: States and Status report a
// visitor Redis lost as not_in_queue, and the caller that holds its claim
// (the hub's reconcile and attach, the poll) calls Reclaim next.
type recoverer struct {
	// mu is held through a whole recover, so a loss noted meanwhile (by a
	// background write-back or a tick's call) counts for the next one.
	mu   sync.Mutex
	lost bool // Redis may have lost its data: put back before admitting
	// alive is the alive marker's value as this instance last saw it (""
	// before it saw one). Each write-back after a loss writes a new value
	// unless another instance wrote one first, so an instance that sees
	// another value than its own knows Redis lost its data even though the
	// marker is there again: it puts back what it remembers too.
	alive string
}

// markLost notes that Redis may have lost its data: a call could not
// reach it. The next recover puts back what this instance remembers.
func (r *recoverer) markLost() {
	r.mu.Lock()
	r.lost = true
	r.mu.Unlock()
}

// pending reports whether a loss waits to be put back.
func (r *recoverer) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lost
}

// lostBy reports whether the marker's value alive says that Redis lost
// its data since this instance last looked: it is gone, or it changed.
func (r *recoverer) lostBy(alive string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if alive == "" {
		return true
	}
	if r.alive == "" {
		r.alive = alive
	}
	return alive != r.alive
}

// recover puts back, before the tick loop admits from a Redis that came
// back (maybe empty, maybe a promoted replica without the last writes),
// what this instance remembers, and the settings of every room the
// settings source knows that rooms (the configured rooms just read,
// sorted) lacks. It returns the configured rooms to tick (read again
// after a write-back); ok is false when a write-back failed, and the next
// look tries again: a room left unwritten would let another instance give
// a visitor let in here a place again.
func (r *recoverer) recover(ctx context.Context, q *Queue, rooms []string) (_ []string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var restore []string
	if r.lost {
		restore = q.settingsRooms()
		// Rooms only visitors made may be many: they are written back in
		// the background, so the tick does not wait for them.
		q.writeBackOthers(ctx, restore)
	} else if q.opts.Settings != nil {
		for _, room := range q.opts.Settings.SettingsRooms() {
			if _, ok := slices.BinarySearch(rooms, room); !ok {
				restore = append(restore, room)
			}
		}
	}
	if len(restore) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		err := q.writeBack(wctx, restore)
		wcancel()
		if err != nil {
			r.lost = true
			return nil, false
		}
		rctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick)
		defer cancel()
		if v, err := q.r.Do(rctx, "SMEMBERS", configuredRoomsKey); err == nil {
			rooms = validRooms(v)
			slices.Sort(rooms)
		}
	}
	if r.lost {
		// What this instance remembers is back (the rest of it is on its
		// way): a Redis that loses its data again lacks the marker again.
		// If this write fails, the next look finds it missing and puts
		// back again, which only ever fills in.
		actx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick)
		// Another instance that put back first wrote its value: it stands.
		if _, err := q.r.Do(actx, "SET", aliveKey, strconv.FormatUint(rand.Uint64(), 36), "NX"); err == nil {
			if v, err := q.r.Do(actx, "GET", aliveKey); err == nil {
				r.alive, _ = v.(string)
			}
		}
		cancel()
	}
	r.lost = false
	return rooms, true
}

// Reclaim is the explicit write-back of what visitors' claims say Redis
// lost, called after a read (States, Status) found them not_in_queue,
// never inside one. It gives each visitor of room that Redis no longer
// knows (states[i] is not_in_queue) what claims[i] says it held, and puts
// its state, read again, in states[i]: an admission whose entry token is
// still good stands (the token's record written back if Redis lost it,
// see Consume); else the claim's ticket takes the visitor's place back
// (see Retake). states and claims have one entry per visitor (claims may
// be shorter: the rest claim nothing); a ticket of another room is
// skipped. On an error it tries again, backing off, until ctx ends, as
// States does; the error is the retake's or the read's (an admission that
// does not stand is none).
func (q *Queue) Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error {
	return retry(ctx, func() error { return q.reclaim(ctx, room, visitors, claims, states) })
}

func (q *Queue) reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error {
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
