package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
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

// roomsApplyTimeout bounds one apply of the rooms file. The largest file
// (roomsfile.MaxRooms rooms, each created) took 21 s on one local
// redis-server, 4 s when every room already matched (docs/rooms-file.md);
// the deadline leaves room for a slower network and a busy Redis, and
// stops a stuck apply, which then says what it applied.
const roomsApplyTimeout = 2 * time.Minute

// applyRoomsFile writes f's settings into the rooms it declares
// (roomsfile.Apply), audited in the admin trail.
func (s *server) applyRoomsFile(ctx context.Context, f *roomsfile.File) (roomsfile.Applied, error) {
	return roomsfile.Apply(ctx, f, roomsStore{s.q}, &roomsfile.ApplyOptions{
		Effective: func(room string, c queue.RoomConfig) queue.RoomConfig { return s.effective(room, c).Settings },
		Audit:     s.admin,
	})
}

// roomsStore is the queue as an apply of the rooms file writes it.
type roomsStore struct{ *queue.Queue }

// UpdateRoomConfig writes, then calls the hook a test put in ctx
// (roomAppliedKey), whose error stands for a write whose answer was lost.
func (r roomsStore) UpdateRoomConfig(ctx context.Context, room string, change func(*queue.RoomConfig) error) (queue.RoomConfig, error) {
	after, err := r.Queue.UpdateRoomConfig(ctx, room, change)
	if hook, ok := ctx.Value(roomAppliedKey{}).(func(string) error); ok && err == nil {
		err = hook(room)
	}
	return after, err
}

// roomAppliedKey is a test's hook in the context of an apply: called
// after each room is written, its error stops the apply there as a failed
// write would.
type roomAppliedKey struct{}

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
	var done roomsfile.Applied
	if rerr == nil {
		rctx, cancel := context.WithTimeout(ctx, roomsApplyTimeout)
		done, rerr = s.applyRoomsFile(rctx, rooms)
		cancel()
	}
	var partial *roomsfile.ApplyError
	switch {
	case errors.As(rerr, &partial) && (partial.Applied.Changed() > 0 || partial.Written != "no"):
		// The failed room's own write may have landed: never "nothing".
		s.log.Error("rooms file applied in part: the rooms listed were written, the previous file's pins stay",
			"err", rerr, "created", partial.Applied.Created, "updated", partial.Applied.Updated,
			"failed", partial.Failed.Name, "failedWritten", partial.Written)
	case rerr != nil:
		s.log.Error("rooms file reload refused: nothing was written, the settings in force stay", "err", rerr)
	default:
		next.rooms = rooms
		s.log.Info("reloaded the rooms file", "rooms", len(rooms.Rooms()), "created", len(done.Created),
			"updated", len(done.Updated), "unchanged", done.Unchanged)
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
