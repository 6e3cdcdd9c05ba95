package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/waitroom/waitroom/opsfiles"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
)

// newOps builds the operator's files in force (s.ops), applied into s's
// store and audited in the admin trail; nothing is read before Start.
func (s *server) newOps() *opsfiles.Ops {
	return opsfiles.New(roomsStore{s.q}, &opsfiles.Options{
		AdminKey: s.cfg.AdminKey, AdminKeysFile: s.cfg.AdminKeysFile, RoomsFile: s.cfg.RoomsFile,
		Apply: s.roomsApply(), Logger: s.log,
	})
}

// roomsApply is how the rooms file is written: clashes named with the
// deployment's defaults filled in, each change audited.
func (s *server) roomsApply() *roomsfile.ApplyOptions {
	return &roomsfile.ApplyOptions{
		Effective: func(room string, c settings.Room) settings.Room { return s.effective(room, c).Settings },
		Audit:     s.admin,
		Events:    s.events,
	}
}

// fileRoom returns the rooms file's settings for room: what the file pins,
// which wins over anything stored or changed live. Whoever writes a room's
// settings (the admin API, a restore after Redis lost them) applies these
// on top.
func (s *server) fileRoom(room string) (roomsfile.Room, bool) { return s.ops.Room(room) }

// opsNow is what the operator's files say now (nothing before start read
// them).
func (s *server) opsNow() *opsfiles.Files { return s.ops.Now() }

// roomsStore is the queue as an apply of the rooms file writes it.
type roomsStore struct{ *queue.Queue }

// UpdateRoomConfig writes, then calls the hook a test put in ctx
// (roomAppliedKey), whose error stands for a write whose answer was lost.
func (r roomsStore) UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error) {
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

// notifyHangup starts catching SIGHUP (which would otherwise end the
// process); reloadOnHangup handles what it catches.
func notifyHangup() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}

// reloadOnHangup reloads the operator's files on every signal on ch until
// ctx ends.
func (s *server) reloadOnHangup(ctx context.Context, ch chan os.Signal) error {
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
			s.reload(ctx)
		}
	}
}

// reload reads the files SIGHUP rereads, each on its own (a refused one is
// logged and leaves what it said in force): the admin keys and rooms file,
// then the service keys, compared with the admin keys just read.
func (s *server) reload(ctx context.Context) {
	_ = s.ops.Reload(ctx)
	_ = s.reloadServiceKeys()
}
