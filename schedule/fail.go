package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/settings"
)

// fail gives up on e, whose transition t could not be applied in tries
// (the last error cause): what e's earlier transitions changed gets its
// base value back (a start after a pre-queue; a pre-queue, a start
// without one and an end changed nothing they could give back) and the
// base is forgotten (a give-back the settings refuse is logged, and the
// room keeps them); the failure is stored with the event, where the API
// shows it and the loop sees it (none of e's later transitions is made,
// and the room's next events go on); then t is marked failed and the
// failure audited. A failed step returns its error, and the next tick
// tries t once more and gets here again.
func (s *Schedule) fail(ctx context.Context, room string, e Event, t transition, keep time.Duration, tries int, cause error) error {
	var before, after settings.Room
	if t.kind == kindStart && !e.PrequeueAt.IsZero() {
		var err error
		if before, after, err = s.restore(ctx, room, e); err != nil {
			// Tried once: a restore the settings refuse would refuse
			// every time.
			s.log.Error("failed event: its pre-queue's settings could not be given back; the room keeps them",
				"room", room, "event", e.Name, "err", err)
		}
	}
	if err := s.forgetBase(ctx, room, e); err != nil {
		return err
	}
	f := &Failure{Transition: t.kind, At: time.Now().UTC().Truncate(time.Millisecond), Tries: tries, Reason: cause.Error()}
	if err := s.recordFailure(ctx, room, e, f); err != nil {
		return err
	}
	if _, err := s.r.Do(ctx, append([]string{"SET", markKey(room, t), markFailed}, expiry(keep)...)...); err != nil {
		return fmt.Errorf("schedule: mark failed: %w", err)
	}
	if _, err := s.r.Do(ctx, "DEL", triesKey(room, t)); err != nil {
		return fmt.Errorf("schedule: forget tries: %w", err)
	}
	s.log.Error("event failed: a transition could not be applied", "room", room, "event", e.Name,
		"transition", t.kind, "tries", tries, "err", cause)
	e.Failed = f
	s.auditTransition(ctx, room, e, ActionFailed, before, after)
	return nil
}

// recordFailure stores f with room's event e, unless e was deleted or
// replaced by a new event of its name meanwhile.
func (s *Schedule) recordFailure(ctx context.Context, room string, e Event, f *Failure) error {
	for range 20 {
		m, version, err := s.readEvents(ctx, room)
		if err != nil {
			return err
		}
		cur, ok := m[e.Name]
		if !ok || cur.ID != e.ID {
			return nil
		}
		cur.Failed = f
		ok, err = s.write(ctx, room, version, "put", e.Name, string(cur.storedJSON()))
		if err != nil || ok {
			return err
		}
	}
	return errContention
}
