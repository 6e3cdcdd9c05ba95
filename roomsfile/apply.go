package roomsfile

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
)

// Store is what an apply reads and writes of the rooms' stored settings
// (*queue.Queue is one).
type Store interface {
	// RoomConfig is room's stored settings.
	RoomConfig(ctx context.Context, room string) (settings.Room, error)
	// RoomExists reports whether room was created.
	RoomExists(ctx context.Context, room string) (bool, error)
	// UpdateRoomConfig changes room's settings through change, creating
	// the room; change's error aborts the write and is returned.
	UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error)
}

// Auditor records a change an apply made to a room's settings.
type Auditor interface {
	// Audit records that who made action ("create" or "update") on room,
	// from before to after.
	Audit(ctx context.Context, room, who, action string, before, after settings.Room)
}

// AuditLabel is who the audit trail names for changes an apply made.
const AuditLabel = "rooms-file"

// ApplyOptions tune Apply. A nil *ApplyOptions means every default.
type ApplyOptions struct {
	// Effective fills in what a room's stored settings leave to the
	// deployment, for the error that lists the stored settings a value of
	// the file clashes with. Nil lists them as stored.
	Effective func(room string, stored settings.Room) settings.Room
	// Audit records every room created or updated, as AuditLabel. Nil
	// records nothing.
	Audit Auditor
	// Events stores the rooms' scheduled events the file lists; nil
	// writes none.
	Events Events
}

// Events is the store of rooms' scheduled events (a *schedule.Schedule).
type Events interface {
	Get(ctx context.Context, room, name string) (schedule.Event, error)
	Put(ctx context.Context, room string, e schedule.Event, create bool) error
}

// Applied is what an apply wrote, in file order.
type Applied struct {
	Created, Updated []string
	Unchanged        int // rooms whose settings already matched
}

// Changed is how many rooms the apply wrote.
func (a Applied) Changed() int { return len(a.Created) + len(a.Updated) }

// ApplyError is an apply that stopped part way: the rooms before Failed
// are applied (those in Applied changed, the rest already matched),
// Failed and those after it are not, except that Failed's write may have
// reached the store when its answer did not (Written says what a read
// afterwards found).
type ApplyError struct {
	Path    string
	Failed  Room
	Index   int // of Failed, 0-based, in the file's rooms
	Total   int // rooms in the file
	Applied Applied
	// Written is "yes", "no", or "unknown (…)" when Failed could not be
	// read back.
	Written string
	Err     error
}

func (e *ApplyError) Error() string {
	what := "no room before it was written"
	if n := e.Applied.Changed(); n > 0 {
		what = fmt.Sprintf("%d rooms were written (created %d, updated %d; %s)", n,
			len(e.Applied.Created), len(e.Applied.Updated), strings.Join(append(slices.Clone(e.Applied.Created), e.Applied.Updated...), ", "))
	}
	return fmt.Sprintf("-rooms %s:%d: room %s (%d of %d): %v; applied in part: %s, %d already matched; room %s written: %s; the %d rooms after it were not applied",
		e.Path, e.Failed.Line, e.Failed.Name, e.Index+1, e.Total, e.Err, what, e.Applied.Unchanged, e.Failed.Name, e.Written, e.Total-e.Index-1)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// errUnchanged ends an UpdateRoomConfig that has nothing to write.
var errUnchanged = errors.New("unchanged")

// readBackTimeout bounds the read of a room whose write failed, and the
// audit of one written (recorded even when the apply's deadline passed
// right after the write: the change is made).
const readBackTimeout = 2 * time.Second

// stored is a room's settings in the store before an apply.
type stored struct {
	cfg    settings.Room
	exists bool
}

// Apply writes f's settings into every room it declares, creating rooms
// that do not exist; a nil f applies nothing. Every room is checked first,
// against the settings stored now, so a file whose values clash with them
// (say a tokenMaxSeconds below a live tokenTtlSeconds) changes nothing; a
// room whose settings already match is not written. Rooms are written one
// at a time in file order, so an apply that fails part way (the store
// gone, ctx's deadline passed) is an *ApplyError that says exactly which
// rooms it wrote. Every other error means nothing was written.
func Apply(ctx context.Context, f *File, store Store, opts *ApplyOptions) (Applied, error) {
	var o ApplyOptions
	if opts != nil {
		o = *opts
	}
	if o.Effective == nil {
		o.Effective = func(_ string, c settings.Room) settings.Room { return c }
	}
	if f == nil {
		return Applied{}, nil
	}
	now, err := check(ctx, f, store, o)
	if err != nil {
		return Applied{}, err
	}
	done, err := write(ctx, f, store, o, now)
	if err != nil {
		return done, err
	}
	return done, writeEvents(ctx, f, o.Events)
}

// writeEvents stores every event the file lists that the store does not
// hold as listed: a new one is created, a changed one updated. An event
// that has ended is history, not written; events stored but not in the
// file are kept.
func writeEvents(ctx context.Context, f *File, events Events) error {
	if events == nil {
		return nil
	}
	for _, r := range f.Rooms() {
		for i, e := range r.Events {
			old, err := events.Get(ctx, r.Name, e.Name)
			exists := err == nil
			switch {
			case err != nil && !schedule.ErrNotFound(err):
				return fmt.Errorf("-rooms %s: rooms.%s.events[%d]: %w", f.Path, r.Name, i, err)
			case exists && sameEvent(old, e):
				continue
			case !exists && !e.EndsAt.After(time.Now()):
				continue
			}
			if err := events.Put(ctx, r.Name, e, !exists); err != nil {
				return fmt.Errorf("-rooms %s:%d: rooms.%s.events[%d] (%s): %w; the rooms' settings were applied", f.Path, r.Line, r.Name, i, e.Name, err)
			}
		}
	}
	return nil
}

func sameEvent(a, b schedule.Event) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

// check reads every room's stored settings and validates the file's on
// top of them.
func check(ctx context.Context, f *File, store Store, o ApplyOptions) ([]stored, error) {
	rooms := f.Rooms()
	now := make([]stored, len(rooms))
	for i, r := range rooms {
		cfg, err := store.RoomConfig(ctx, r.Name)
		if err == nil {
			now[i].exists, err = store.RoomExists(ctx, r.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("-rooms %s:%d: room %s: reading the stored settings: %w; nothing was written", f.Path, r.Line, r.Name, err)
		}
		now[i].cfg = cfg
		r.Apply(&cfg)
		if err := cfg.Validate(); err != nil {
			var fe *settings.FieldError
			if errors.As(err, &fe) {
				line, ok := r.Lines[fe.Field]
				if !ok {
					line = r.Line
				}
				return nil, fmt.Errorf("-rooms %s:%d: rooms.%s.%s: %s (with the settings stored now: %s); nothing was written", f.Path, line, r.Name, fe.Field, fe.Msg, storedBeside(r, now[i].cfg, o.Effective))
			}
			return nil, err
		}
	}
	return now, nil
}

// write writes the rooms whose settings differ from now, in file order.
func write(ctx context.Context, f *File, store Store, o ApplyOptions, now []stored) (Applied, error) {
	var done Applied
	rooms := f.Rooms()
	for i, r := range rooms {
		c := now[i].cfg
		if now[i].exists && len(r.Apply(&c)) == 0 {
			done.Unchanged++
			continue
		}
		var before settings.Room
		after, err := store.UpdateRoomConfig(ctx, r.Name, func(c *settings.Room) error {
			before = *c
			if len(r.Apply(c)) == 0 && now[i].exists {
				return errUnchanged
			}
			return nil
		})
		if errors.Is(err, errUnchanged) {
			done.Unchanged++
			continue
		}
		if err != nil {
			return done, &ApplyError{Path: f.Path, Failed: r, Index: i, Total: len(rooms), Applied: done, Written: wasWritten(store, r), Err: err}
		}
		action := "update"
		if now[i].exists {
			done.Updated = append(done.Updated, r.Name)
		} else {
			done.Created = append(done.Created, r.Name)
			action = "create"
		}
		if o.Audit != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
			o.Audit.Audit(actx, r.Name, AuditLabel, action, before, after)
			cancel()
		}
	}
	return done, nil
}

// storedBeside lists the settings stored now in room that the file does
// not set and that differ from the defaults: those a value of the file
// can clash with.
func storedBeside(r Room, cfg settings.Room, effective func(string, settings.Room) settings.Room) string {
	now, def := effective(r.Name, cfg), effective(r.Name, settings.Room{})
	var out []string
	for _, f := range settings.Fields {
		if v := f.Value(now); !r.Sets(f.Name) && !reflect.DeepEqual(v, f.Value(def)) {
			out = append(out, fmt.Sprintf("%s %v", f.Name, v))
		}
	}
	if len(out) == 0 {
		return "all defaults"
	}
	return strings.Join(out, ", ")
}

// wasWritten reads r back after its write failed, to tell whether the
// write reached the store anyway.
func wasWritten(store Store, r Room) string {
	ctx, cancel := context.WithTimeout(context.Background(), readBackTimeout)
	defer cancel()
	exists, err := store.RoomExists(ctx, r.Name)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	cfg, err := store.RoomConfig(ctx, r.Name)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if exists && len(r.Apply(&cfg)) == 0 {
		return "yes"
	}
	return "no"
}
