package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
)

// opsFiles is what the operator's files say: the rooms file (-rooms) and
// the admin keys (-admin-key, -admin-keys). It is replaced whole by a
// reload, never changed.
type opsFiles struct {
	rooms *roomsfile.File // nil without -rooms
	keys  admin.Keys
}

// loadOpsFiles reads the operator's files. The error is one line naming
// the file, the line and the field.
func loadOpsFiles(cfg config) (*opsFiles, error) {
	keys, err := loadAdminKeysFlags(cfg)
	if err != nil {
		return nil, err
	}
	rooms, err := loadRoomsFlag(cfg)
	if err != nil {
		return nil, err
	}
	return &opsFiles{keys: keys, rooms: rooms}, nil
}

// loadAdminKeysFlags reads the keys of -admin-key and -admin-keys.
func loadAdminKeysFlags(cfg config) (admin.Keys, error) {
	var keys admin.Keys
	if cfg.AdminKey != "" {
		keys = admin.Keys{admin.NewKey("admin", []byte(cfg.AdminKey), admin.Admin)}
	}
	if cfg.AdminKeysFile != "" {
		ks, err := admin.LoadKeys(cfg.AdminKeysFile)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	return keys, nil
}

// loadRoomsFlag reads the -rooms file (nil without one).
func loadRoomsFlag(cfg config) (*roomsfile.File, error) {
	if cfg.RoomsFile == "" {
		return nil, nil
	}
	f, err := roomsfile.Load(cfg.RoomsFile)
	if err != nil {
		return nil, fmt.Errorf("-rooms %w", err)
	}
	return f, nil
}

// startOps reads the operator's files and applies the rooms file: at
// start, a bad file is the error that stops it.
func (s *server) startOps(ctx context.Context) error {
	o, err := loadOpsFiles(s.cfg)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, roomsApplyTimeout)
	defer cancel()
	if _, err := s.applyRoomsFile(actx, o.rooms); err != nil {
		return err
	}
	s.ops.Store(o)
	return nil
}

// fileRoom returns the rooms file's settings for room: what the file pins,
// which wins over anything stored or changed live. Whoever writes a room's
// settings (the admin API, a restore after Redis lost them) applies these
// on top.
func (s *server) fileRoom(room string) (roomsfile.Room, bool) {
	return s.opsNow().rooms.Room(room)
}

// opsNow is what the operator's files say now (nothing before start read
// them).
func (s *server) opsNow() *opsFiles {
	if o := s.ops.Load(); o != nil {
		return o
	}
	return &opsFiles{}
}

// fileAuditLabel is who the audit trail names for changes the rooms file
// made.
const fileAuditLabel = "rooms-file"

// errUnchanged ends an UpdateRoomConfig that has nothing to write.
var errUnchanged = errors.New("unchanged")

// roomsApplyTimeout bounds one apply of the rooms file. The largest file
// (roomsfile.MaxRooms rooms, each created) took 21 s on one local
// redis-server, 4 s when every room already matched (docs/rooms-file.md);
// the deadline leaves room for a slower network and a busy Redis, and
// stops a stuck apply, which then says what it applied.
const roomsApplyTimeout = 2 * time.Minute

// roomsApplied is what an apply of the rooms file wrote, in file order.
type roomsApplied struct {
	created, updated []string
	unchanged        int
}

func (a roomsApplied) changed() int { return len(a.created) + len(a.updated) }

// applyError is an apply of the rooms file that stopped part way: the
// rooms before the failed one are applied (those listed changed, the rest
// already matched), the failed one and those after it are not, except
// that the failed one's write may have reached Redis when its answer did
// not (Written says what a read afterwards found).
type applyError struct {
	path    string
	failed  roomsfile.Room
	index   int // of failed, 0-based, in the file's rooms
	total   int
	applied roomsApplied
	// written: "yes", "no", or "unknown" when the room could not be read
	// back.
	written string
	err     error
}

func (e *applyError) Error() string {
	what := "no room before it was written"
	if n := e.applied.changed(); n > 0 {
		what = fmt.Sprintf("%d rooms were written (created %d, updated %d; %s)", n,
			len(e.applied.created), len(e.applied.updated), strings.Join(append(slices.Clone(e.applied.created), e.applied.updated...), ", "))
	}
	return fmt.Sprintf("-rooms %s:%d: room %s (%d of %d): %v; applied in part: %s, %d already matched; room %s written: %s; the %d rooms after it were not applied",
		e.path, e.failed.Line, e.failed.Name, e.index+1, e.total, e.err, what, e.applied.unchanged, e.failed.Name, e.written, e.total-e.index-1)
}

func (e *applyError) Unwrap() error { return e.err }

// applyRoomsFile writes the file's settings into every declared room
// (creating rooms that do not exist). Every room is checked first, against
// the settings stored now, so a file whose values clash with them (say a
// tokenMaxSeconds below a live tokenTtlSeconds) changes nothing; a room
// whose settings already match is not written. Rooms are written one at a
// time in file order, so an apply that fails part way (Redis gone, the
// deadline passed) is an *applyError that says exactly which rooms it
// wrote.
func (s *server) applyRoomsFile(ctx context.Context, f *roomsfile.File) (roomsApplied, error) {
	var done roomsApplied
	if f == nil {
		return done, nil
	}
	rooms := f.Rooms()
	type stored struct {
		cfg    queue.RoomConfig
		exists bool
	}
	now := make([]stored, len(rooms))
	for i, r := range rooms {
		cfg, err := s.q.RoomConfig(ctx, r.Name)
		if err == nil {
			now[i].exists, err = s.q.RoomExists(ctx, r.Name)
		}
		if err != nil {
			return done, fmt.Errorf("-rooms %s:%d: room %s: reading the stored settings: %w; nothing was written", f.Path, r.Line, r.Name, err)
		}
		now[i].cfg = cfg
		r.Apply(&cfg)
		if err := cfg.Validate(); err != nil {
			var fe *queue.FieldError
			if errors.As(err, &fe) {
				line, ok := r.Lines[fe.Field]
				if !ok {
					line = r.Line
				}
				return done, fmt.Errorf("-rooms %s:%d: rooms.%s.%s: %s (with the settings stored now: %s); nothing was written", f.Path, line, r.Name, fe.Field, fe.Msg, storedBeside(s, r, now[i].cfg))
			}
			return done, err
		}
	}
	for i, r := range rooms {
		c := now[i].cfg
		if now[i].exists && len(r.Apply(&c)) == 0 {
			done.unchanged++
			continue
		}
		var before queue.RoomConfig
		after, err := s.q.UpdateRoomConfig(ctx, r.Name, func(c *queue.RoomConfig) error {
			before = *c
			if len(r.Apply(c)) == 0 && now[i].exists {
				return errUnchanged
			}
			return nil
		})
		if errors.Is(err, errUnchanged) {
			done.unchanged++
			continue
		}
		if hook, ok := ctx.Value(roomAppliedKey{}).(func(string) error); ok && err == nil {
			err = hook(r.Name)
		}
		if err != nil {
			return done, &applyError{path: f.Path, failed: r, index: i, total: len(rooms), applied: done, written: s.wasWritten(r), err: err}
		}
		action := "update"
		if now[i].exists {
			done.updated = append(done.updated, r.Name)
		} else {
			done.created = append(done.created, r.Name)
			action = "create"
		}
		// Recorded even when the deadline passes right after the write:
		// the change is made.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		s.admin.Audit(actx, r.Name, fileAuditLabel, action, before, after)
		cancel()
	}
	return done, nil
}

// roomAppliedKey is a test's hook in the context of an apply: called
// after each room is written, its error stops the apply there as a failed
// write would.
type roomAppliedKey struct{}

// storedBeside lists the settings stored now in room that the file does
// not set and that differ from the defaults: those a value of the file
// can clash with.
func storedBeside(s *server, r roomsfile.Room, cfg queue.RoomConfig) string {
	now, def := s.effective(r.Name, cfg).Values(), s.effective(r.Name, queue.RoomConfig{}).Values()
	var out []string
	for _, f := range roomsfile.Fields {
		if !r.Sets(f) && !reflect.DeepEqual(now[f], def[f]) {
			out = append(out, fmt.Sprintf("%s %v", f, now[f]))
		}
	}
	if len(out) == 0 {
		return "all defaults"
	}
	return strings.Join(out, ", ")
}

// wasWritten reads r back after its write failed, to tell whether the
// write reached Redis anyway.
func (s *server) wasWritten(r roomsfile.Room) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	exists, err := s.q.RoomExists(ctx, r.Name)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	cfg, err := s.q.RoomConfig(ctx, r.Name)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if exists && len(r.Apply(&cfg)) == 0 {
		return "yes"
	}
	return "no"
}

// reload reads the operator's files again and applies them, each on its
// own: a bad rooms file does not keep a removed admin key working, and a
// bad keys file does not stop the rooms file. A file that is refused
// leaves what it said in force; a rooms file that was applied only in part
// is logged with the rooms it wrote, and the previous file's pins stay
// (reload again to apply the rest). The error is the first refusal.
func (s *server) reload(ctx context.Context) error {
	old := s.opsNow()
	next := &opsFiles{keys: old.keys, rooms: old.rooms}
	keys, kerr := loadAdminKeysFlags(s.cfg)
	if kerr == nil && len(keys) == 0 {
		kerr = errors.New("-admin-keys: no admin key left")
	}
	if kerr == nil {
		next.keys = keys
		s.log.Info("reloaded the admin keys", "adminKeys", len(keys))
	} else {
		s.log.Error("admin keys reload refused: the keys in force stay", "err", kerr)
	}
	// The keys take effect before the rooms file is applied, which can
	// take a while.
	s.ops.Store(&opsFiles{keys: next.keys, rooms: old.rooms})

	rooms, rerr := loadRoomsFlag(s.cfg)
	var done roomsApplied
	if rerr == nil {
		rctx, cancel := context.WithTimeout(ctx, roomsApplyTimeout)
		done, rerr = s.applyRoomsFile(rctx, rooms)
		cancel()
	}
	var partial *applyError
	switch {
	case errors.As(rerr, &partial) && (partial.applied.changed() > 0 || partial.written != "no"):
		// The failed room's own write may have landed: never "nothing".
		s.log.Error("rooms file applied in part: the rooms listed were written, the previous file's pins stay",
			"err", rerr, "created", partial.applied.created, "updated", partial.applied.updated,
			"failed", partial.failed.Name, "failedWritten", partial.written)
	case rerr != nil:
		s.log.Error("rooms file reload refused: nothing was written, the settings in force stay", "err", rerr)
	default:
		next.rooms = rooms
		s.log.Info("reloaded the rooms file", "rooms", len(rooms.Rooms()), "created", len(done.created),
			"updated", len(done.updated), "unchanged", done.unchanged)
	}
	s.ops.Store(next)
	return cmp.Or(kerr, rerr)
}

// notifyHangup starts catching SIGHUP (which would otherwise end the
// process); reloadOnHangup handles what it catches.
func notifyHangup() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}

// reloadOnHangup reloads on every signal on ch until ctx ends.
func (s *server) reloadOnHangup(ctx context.Context, ch chan os.Signal) error {
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
			_ = s.reload(ctx)
		}
	}
}
