package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/waitroom/waitroom/settings"
)

// apply makes transition t of room's event e.
func (s *Schedule) apply(ctx context.Context, room string, e Event, t transition) error {
	switch t.kind {
	case kindPrequeue:
		return s.begin(ctx, room, e, ActionPrequeue, func(c *settings.Room, _ settings.Room) {
			e.patch.Apply(c)
			if e.ShuffleAtStart {
				c.OpensAt = e.StartsAt // the room's draw places the pre-queue then
			} else {
				c.Paused = true // joins queue in order; nobody is admitted yet
			}
		})
	case kindStart:
		if e.PrequeueAt.IsZero() {
			return s.begin(ctx, room, e, ActionStart, func(c *settings.Room, _ settings.Room) { e.patch.Apply(c) })
		}
		return s.begin(ctx, room, e, ActionStart, func(c *settings.Room, base settings.Room) {
			if !e.ShuffleAtStart {
				// Admission starts: paused as the event or the base has it.
				c.Paused = base.Paused
				e.patch.Apply(c)
			}
			// With the shuffle the queue opens itself at opensAt.
		})
	case kindEnd:
		return s.end(ctx, room, e)
	}
	return fmt.Errorf("unknown transition %q", t.kind)
}

// begin saves room's settings as its base for e unless saved already (a
// retry of a transition whose instance died keeps the first), then
// changes them with change, given the base.
func (s *Schedule) begin(ctx context.Context, room string, e Event, action string, change func(c *settings.Room, base settings.Room)) error {
	cur, err := s.rooms.RoomConfig(ctx, room)
	if err != nil {
		return err
	}
	flat, _ := json.Marshal(cur.Hash())
	if _, err := s.r.Do(ctx, "SET", baseKey(room, e.Name), string(flat), "NX"); err != nil {
		return fmt.Errorf("save base: %w", err)
	}
	base, ok, err := s.base(ctx, room, e.Name)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("base settings not saved")
	}
	var before settings.Room
	after, err := s.rooms.UpdateRoomConfig(ctx, room, func(c *settings.Room) error {
		before = *c
		change(c, base)
		return nil
	})
	if err != nil {
		return err
	}
	s.auditTransition(ctx, room, e, action, before, after)
	return nil
}

// base reads the base settings saved for room's event name.
func (s *Schedule) base(ctx context.Context, room, name string) (settings.Room, bool, error) {
	v, err := s.r.Do(ctx, "GET", baseKey(room, name))
	if err != nil {
		return settings.Room{}, false, fmt.Errorf("read base: %w", err)
	}
	raw, _ := v.(string)
	if raw == "" {
		return settings.Room{}, false, nil
	}
	var flat []string
	if err := json.Unmarshal([]byte(raw), &flat); err != nil {
		return settings.Room{}, false, fmt.Errorf("read base: %w", err)
	}
	s.mu.Lock()
	s.bases[baseKey(room, name)] = raw
	s.mu.Unlock()
	return settings.FromHash(flat), true, nil
}

// end closes out the waiting when e says so, then gives each setting e
// changed back its base value and forgets the base.
func (s *Schedule) end(ctx context.Context, room string, e Event) error {
	if e.AtEnd == AtEndClose {
		if err := s.closeWaiting(ctx, room, e.Message()); err != nil {
			return err
		}
	}
	before, after, err := s.restore(ctx, room, e)
	if err != nil {
		return err
	}
	s.auditTransition(ctx, room, e, ActionEnd, before, after)
	return nil
}

// restore gives each setting e changed back its base value and forgets
// the base; before and after are the room's settings around it.
func (s *Schedule) restore(ctx context.Context, room string, e Event) (before, after settings.Room, err error) {
	base, ok, err := s.base(ctx, room, e.Name)
	if err != nil {
		return before, after, err
	}
	after, err = s.rooms.UpdateRoomConfig(ctx, room, func(c *settings.Room) error {
		before = *c
		if !ok {
			return nil // nothing to restore from: the settings stay as they are
		}
		for _, name := range e.Fields() {
			f, _ := settings.Lookup(name)
			f.Copy(c, base)
		}
		return nil
	})
	if err != nil {
		return before, after, err
	}
	if !ok {
		s.log.Error("event ended without its base settings (lost with Redis): the room keeps the event's settings",
			"room", room, "event", e.Name)
	}
	return before, after, s.forgetBase(ctx, room, e)
}

func (s *Schedule) forgetBase(ctx context.Context, room string, e Event) error {
	if _, err := s.r.Do(ctx, "DEL", baseKey(room, e.Name)); err != nil {
		return fmt.Errorf("forget base: %w", err)
	}
	s.mu.Lock()
	delete(s.bases, baseKey(room, e.Name))
	s.mu.Unlock()
	return nil
}

func (s *Schedule) auditTransition(ctx context.Context, room string, e Event, action string, before, after settings.Room) {
	s.log.Info("event transition", "room", room, "event", e.Name, "action", action)
	if s.audit != nil {
		s.audit.AuditTransition(ctx, room, e, action, before, after)
	}
	if s.onTransition != nil {
		s.onTransition(ctx, room, e, action)
	}
}
