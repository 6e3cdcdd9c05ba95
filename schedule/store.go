package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/settings"
)

// The keys of the schedule. A room's carry its {room} hash tag, so they
// are in the room's cluster slot; the list of rooms with events is one
// key, like the queue's list of rooms.
const (
	roomsKey = "wr:schedule:rooms" // set: rooms with events
	// epochKey is written with the first event and never removed: when it
	// is missing while an instance remembers events, Redis came back empty.
	epochKey = "wr:schedule:epoch"
)

func prefix(room string) string     { return "wr:{" + room + "}:" }
func eventsKey(room string) string  { return prefix(room) + "events" }  // hash: name -> event JSON
func versionKey(room string) string { return prefix(room) + "eventsv" } // counter of writes of eventsKey
func baseKey(room, name string) string {
	return prefix(room) + "evbase:" + name // the room's settings hash as it was before the event
}
func markKey(room string, t transition) string {
	id := ""
	if t.id != "" {
		id = t.id + ":"
	}
	return prefix(room) + "evx:" + t.event + ":" + id + t.kind + ":" + strconv.FormatInt(t.at.UnixMilli(), 10)
}

// triesKey counts the failed tries of transition t.
func triesKey(room string, t transition) string { return markKey(room, t) + ":tries" }

func closedKey(room string) string    { return prefix(room) + "evclosed" }    // set: visitors closed out
func closedMsgKey(room string) string { return prefix(room) + "evclosedmsg" } // what they are told

// writeSrc writes or deletes one event if the room's events are still at
// the version the caller read: KEYS = events, version; ARGV = version,
// op (put or del), name, JSON. Returns 1 when written.
const writeSrc = `local v = redis.call('GET', KEYS[2]) or '0'
if v ~= ARGV[1] then return 0 end
if ARGV[2] == 'put' then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) else redis.call('HDEL', KEYS[1], ARGV[3]) end
redis.call('INCR', KEYS[2])
return 1`

var writeScript = rediscall.NewScript("schedule-write", writeSrc)

var (
	errNotFound   = &Error{Status: 404, Code: "event_not_found", Msg: "no such event in this room"}
	errContention = errors.New("schedule: the room's events changed by others too often; retry")
)

// ErrNotFound reports whether err is an event that does not exist.
func ErrNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == errNotFound.Code
}

// readEvents reads room's events and the version they are at.
func (s *Schedule) readEvents(ctx context.Context, room string) (map[string]Event, string, error) {
	v, err := s.r.Do(ctx, "GET", versionKey(room))
	if err != nil {
		return nil, "", fmt.Errorf("schedule: events: %w", err)
	}
	version, _ := v.(string)
	if version == "" {
		version = "0"
	}
	raw, err := s.r.Do(ctx, "HGETALL", eventsKey(room))
	if err != nil {
		return nil, "", fmt.Errorf("schedule: events: %w", err)
	}
	flat, _ := raw.([]any)
	out := make(map[string]Event, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		b, _ := flat[i+1].(string)
		e, err := parse([]byte(b), true)
		if err != nil {
			s.log.Warn("stored event unreadable: skipped", "room", room, "event", flat[i], "err", err)
			continue
		}
		out[e.Name] = e
	}
	return out, version, nil
}

// List returns room's events in the order they begin.
func (s *Schedule) List(ctx context.Context, room string) ([]Event, error) {
	m, _, err := s.readEvents(ctx, room)
	if err != nil {
		return nil, err
	}
	return sorted(m), nil
}

func sorted(m map[string]Event) []Event {
	out := make([]Event, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Event) int { return a.Begins().Compare(b.Begins()) })
	return out
}

// Get returns room's event name (an *Error event_not_found when none).
func (s *Schedule) Get(ctx context.Context, room, name string) (Event, error) {
	m, _, err := s.readEvents(ctx, room)
	if err != nil {
		return Event{}, err
	}
	e, ok := m[name]
	if !ok {
		return Event{}, errNotFound
	}
	return e, nil
}

// Put stores e in room: a new event with create (409 event_exists if it
// exists), else a change of an existing one (404 if it does not). It
// refuses, with an *Error, an event that has ended already, one that
// overlaps another of the room's, more than MaxUpcoming that have not
// ended, settings that are invalid together with the room's, and a change
// of a running event other than of its end (endsAt, atEnd).
func (s *Schedule) Put(ctx context.Context, room string, e Event, create bool) error {
	return s.PutIf(ctx, room, e, create, nil)
}

// PutIf is Put, refused with may's error when may refuses the event as
// stored now (asked only when it exists; nil: anything may be replaced).
// may is asked again if the room's events change before e is written.
func (s *Schedule) PutIf(ctx context.Context, room string, e Event, create bool, may func(old Event) error) error {
	for range 20 {
		m, version, err := s.readEvents(ctx, room)
		if err != nil {
			return err
		}
		old, exists := m[e.Name]
		if exists && may != nil {
			if err := may(old); err != nil {
				return err
			}
		}
		if err := s.check(ctx, room, m, e, create); err != nil {
			return err
		}
		e.ID, e.Failed = old.ID, nil
		if !exists {
			e.ID = newID()
		}
		ok, err := s.write(ctx, room, version, "put", e.Name, string(e.storedJSON()))
		if err != nil || ok {
			return err
		}
	}
	return errContention
}

// check is Put's refusals of e among room's events m.
func (s *Schedule) check(ctx context.Context, room string, m map[string]Event, e Event, create bool) error {
	now, err := s.now(ctx)
	if err != nil {
		return err
	}
	old, exists := m[e.Name]
	switch {
	case create && exists:
		return fail(409, "event_exists", "event %s exists already; change it with PUT", e.Name)
	case !create && !exists:
		return errNotFound
	case !e.EndsAt.After(now):
		return fail(400, "event_in_past", "endsAt (%s) has passed already", fmtTime(e.EndsAt))
	}
	if exists && old.Failed != nil {
		return fail(409, "event_failed", "event %s failed at its %s: delete it, and create it again", e.Name, old.Failed.Transition)
	}
	if exists && !now.Before(old.Begins()) {
		if err := s.checkRunningChange(ctx, room, old, e); err != nil {
			return err
		}
	}
	upcoming := 1
	for _, o := range sorted(m) {
		if o.Name == e.Name {
			continue
		}
		if err := Overlap(e, o); err != nil {
			return err
		}
		if o.EndsAt.After(now) {
			upcoming++
		}
	}
	if upcoming > MaxUpcoming {
		return fail(409, "too_many_events", "a room has at most %d events that have not ended", MaxUpcoming)
	}
	if !exists && len(m) >= MaxStored {
		return fail(409, "too_many_events", "a room keeps at most %d events: delete some that have ended", MaxStored)
	}
	cfg, err := s.rooms.RoomConfig(ctx, room)
	if err != nil {
		return err
	}
	e.patch.Apply(&cfg)
	if err := cfg.Validate(); err != nil {
		var fe *settings.FieldError
		if errors.As(err, &fe) {
			return fieldFail("settings."+fe.Field, fe.Msg+" (with the room's other settings)")
		}
		return err
	}
	return nil
}

// checkRunningChange refuses a change of a running event other than of its
// end: its settings are in force and its base is saved.
func (s *Schedule) checkRunningChange(ctx context.Context, room string, old, e Event) error {
	done, err := s.markDone(ctx, room, endOf(old))
	if err != nil {
		return err
	}
	if done {
		return fail(409, "event_ended", "event %s has ended; create a new one", e.Name)
	}
	same := old.StartsAt.Equal(e.StartsAt) && old.PrequeueAt.Equal(e.PrequeueAt) &&
		old.ShuffleAtStart == e.ShuffleAtStart && string(old.Settings) == string(e.Settings)
	if !same {
		return fail(409, "event_running", "event %s is running: only its endsAt and atEnd may change until it ends", e.Name)
	}
	return nil
}

// Delete removes room's event name. A running event is refused (409
// event_running): end it early by changing its endsAt. One that has
// ended, or failed, may go.
func (s *Schedule) Delete(ctx context.Context, room, name string) error {
	return s.DeleteIf(ctx, room, name, nil)
}

// DeleteIf is Delete, refused with may's error when may refuses the event
// as stored now (nil: any may be deleted).
func (s *Schedule) DeleteIf(ctx context.Context, room, name string, may func(Event) error) error {
	for range 20 {
		m, version, err := s.readEvents(ctx, room)
		if err != nil {
			return err
		}
		e, ok := m[name]
		if !ok {
			return errNotFound
		}
		if may != nil {
			if err := may(e); err != nil {
				return err
			}
		}
		now, err := s.now(ctx)
		if err != nil {
			return err
		}
		if !now.Before(e.Begins()) && e.Failed == nil {
			done, err := s.markDone(ctx, room, endOf(e))
			if err != nil {
				return err
			}
			if !done {
				return fail(409, "event_running", "event %s is running: end it early by setting its endsAt to now", name)
			}
		}
		ok, err = s.write(ctx, room, version, "del", name, "")
		if err != nil || ok {
			return err
		}
	}
	return errContention
}

// write runs writeScript, then lists the room for the loop.
func (s *Schedule) write(ctx context.Context, room, version, op, name, body string) (bool, error) {
	v, err := s.r.Eval(ctx, writeScript, []string{eventsKey(room), versionKey(room)}, version, op, name, body)
	if err != nil {
		return false, fmt.Errorf("schedule: write event: %w", err)
	}
	if n, _ := v.(int64); n != 1 {
		return false, nil
	}
	if _, err := s.r.Do(ctx, "SADD", roomsKey, room); err != nil {
		return true, fmt.Errorf("schedule: write event: %w", err)
	}
	if _, err := s.r.Do(ctx, "SET", epochKey, strconv.FormatInt(time.Now().UnixMilli(), 10), "NX"); err != nil {
		return true, fmt.Errorf("schedule: write event: %w", err)
	}
	s.poke()
	return true, nil
}

// newID is a new event's ID.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// now is Redis's clock, the one every instance shares.
func (s *Schedule) now(ctx context.Context) (time.Time, error) {
	v, err := s.r.Do(ctx, "TIME")
	if err != nil {
		return time.Time{}, fmt.Errorf("schedule: time: %w", err)
	}
	arr, _ := v.([]any)
	if len(arr) != 2 {
		return time.Time{}, fmt.Errorf("schedule: time: unexpected reply %v", v)
	}
	sec, _ := strconv.ParseInt(fmt.Sprint(arr[0]), 10, 64)
	usec, _ := strconv.ParseInt(fmt.Sprint(arr[1]), 10, 64)
	return time.Unix(sec, usec*1000), nil
}

// markDone reports whether transition t of room is applied.
func (s *Schedule) markDone(ctx context.Context, room string, t transition) (bool, error) {
	v, err := s.r.Do(ctx, "GET", markKey(room, t))
	if err != nil {
		return false, fmt.Errorf("schedule: transition: %w", err)
	}
	return v == markApplied, nil
}
