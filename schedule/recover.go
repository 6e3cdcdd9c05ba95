package schedule

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// recover writes back what this instance remembers when Redis came back
// empty (the epoch key is gone while the instance has read events, or
// the rooms file declares some): each room's events, the base settings
// of the running ones and the transitions known to be applied, then the
// rooms file's events that have not ended and were not written back. A transition applied by an instance
// that read nothing since is not known and may run a second time; a base
// no live instance had read is lost (the end then leaves the event's
// settings in force, and says so in the log).
func (s *Schedule) recover(ctx context.Context) error {
	s.mu.Lock()
	remembered := len(s.seen) > 0
	s.mu.Unlock()
	var declared map[string][]Event
	if s.declared != nil {
		declared = s.declared()
	}
	if !remembered && len(declared) == 0 {
		return nil
	}
	v, err := s.r.Do(ctx, "EXISTS", epochKey)
	if err != nil {
		return fmt.Errorf("schedule: epoch: %w", err)
	}
	if n, _ := v.(int64); n == 1 {
		return nil
	}
	s.mu.Lock()
	seen := make(map[string]map[string]Event, len(s.seen)+len(declared))
	for r, m := range s.seen {
		seen[r] = m
	}
	for r, evs := range declared {
		m := make(map[string]Event, len(seen[r])+len(evs))
		for name, e := range seen[r] {
			m[name] = e
		}
		for _, e := range evs {
			if _, ok := m[e.Name]; !ok && time.Now().Before(e.EndsAt) {
				m[e.Name] = e
			}
		}
		seen[r] = m
	}
	bases := make(map[string]string, len(s.bases))
	for k, b := range s.bases {
		bases[k] = b
	}
	applied := make(map[string]time.Time, len(s.applied))
	for k, t := range s.applied {
		applied[k] = t
	}
	s.mu.Unlock()
	n := 0
	for room, m := range seen {
		for _, e := range m {
			if _, err := s.r.Do(ctx, "HSETNX", eventsKey(room), e.Name, string(e.storedJSON())); err != nil {
				return fmt.Errorf("schedule: restore: %w", err)
			}
			n++
		}
		if len(m) > 0 {
			if _, err := s.r.Do(ctx, "SADD", roomsKey, room); err != nil {
				return fmt.Errorf("schedule: restore: %w", err)
			}
		}
	}
	for k, b := range bases {
		if _, err := s.r.Do(ctx, "SET", k, b, "NX"); err != nil {
			return fmt.Errorf("schedule: restore: %w", err)
		}
	}
	for k, until := range applied {
		if _, err := s.r.Do(ctx, append([]string{"SET", k, markApplied, "NX"}, expiry(time.Until(until))...)...); err != nil {
			return fmt.Errorf("schedule: restore: %w", err)
		}
	}
	if _, err := s.r.Do(ctx, "SET", epochKey, strconv.FormatInt(time.Now().UnixMilli(), 10), "NX"); err != nil {
		return fmt.Errorf("schedule: restore: %w", err)
	}
	s.log.Warn("schedule restored after Redis lost it", "events", n, "bases", len(bases))
	return nil
}
