package schedule

import (
	"context"
	"fmt"
	"time"
)

// closeWaiting takes every visitor waiting in room out of its queue and
// records them, with msg, as closed out: Closed tells them so for
// ClosedFor. It costs a call per waiting visitor, once, at the event's end.
func (s *Schedule) closeWaiting(ctx context.Context, room, msg string) error {
	var waiting []string
	p := prefix(room)
	for _, cmd := range [][]string{
		{"ZRANGE", p + "q", "0", "-1"}, {"SMEMBERS", p + "pre"}, {"ZRANGE", p + "ppre", "0", "-1"},
		{"ZRANGE", p + "back", "0", "-1"},
	} {
		v, err := s.r.Do(ctx, cmd...)
		if err != nil {
			return fmt.Errorf("list waiting: %w", err)
		}
		arr, _ := v.([]any)
		for _, x := range arr {
			if id, ok := x.(string); ok {
				waiting = append(waiting, id)
			}
		}
	}
	// Set aside (away) with a ticket are waiting too; with ticket 0 they
	// held a token, which the end leaves alone.
	v, err := s.r.Do(ctx, "HGETALL", p+"awayt")
	if err != nil {
		return fmt.Errorf("list waiting: %w", err)
	}
	arr, _ := v.([]any)
	for i := 0; i+1 < len(arr); i += 2 {
		if id, _ := arr[i].(string); id != "" && arr[i+1] != "0" {
			waiting = append(waiting, id)
		}
	}
	// The record first: a visitor who asks between its Leave and the
	// restore of the settings is told closed, not not_in_queue.
	if _, err := s.r.Do(ctx, "SET", closedMsgKey(room), msg, "PX", ms(ClosedFor)); err != nil {
		return fmt.Errorf("record closed: %w", err)
	}
	for i := 0; i < len(waiting); i += 500 {
		chunk := waiting[i:min(i+500, len(waiting))]
		if _, err := s.r.Do(ctx, append([]string{"SADD", closedKey(room)}, chunk...)...); err != nil {
			return fmt.Errorf("record closed: %w", err)
		}
	}
	if _, err := s.r.Do(ctx, "PEXPIRE", closedKey(room), ms(ClosedFor)); err != nil {
		return fmt.Errorf("record closed: %w", err)
	}
	for _, id := range waiting {
		if _, err := s.rooms.Leave(ctx, room, id); err != nil {
			return fmt.Errorf("close out %s: %w", id, err)
		}
	}
	s.log.Info("event ended: waiting visitors closed out", "room", room, "visitors", len(waiting))
	return nil
}

// MayClose reports whether room has an event that ended, closing out
// its waiting, less than ClosedFor ago (as this instance last read the
// room's events): only then can Closed say yes. It is cheap (memory only).
func (s *Schedule) MayClose(room string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, e := range s.seen[room] {
		// A second of slack: this instance's clock against Redis's.
		if e.AtEnd == AtEndClose && now.After(e.EndsAt.Add(-time.Second)) && now.Before(e.EndsAt.Add(ClosedFor)) {
			return true
		}
	}
	return false
}

// Closed reports whether visitor was closed out of room at the end of an
// event, and what it is told; without MayClose it asks nothing of Redis.
func (s *Schedule) Closed(ctx context.Context, room, visitor string) (string, bool, error) {
	if !s.MayClose(room) {
		return "", false, nil
	}
	v, err := s.r.Do(ctx, "SISMEMBER", closedKey(room), visitor)
	if err != nil {
		return "", false, fmt.Errorf("schedule: closed: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return "", false, nil
	}
	m, err := s.r.Do(ctx, "GET", closedMsgKey(room))
	if err != nil {
		return "", false, fmt.Errorf("schedule: closed: %w", err)
	}
	msg, _ := m.(string)
	if msg == "" {
		msg = DefaultClosedMessage
	}
	return msg, true, nil
}
