package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
)

// opsFiles is what the operator's files say: the rooms file (-rooms) and
// the admin keys (-admin-key, -admin-keys). It is replaced whole by a
// reload, never changed.
type opsFiles struct {
	rooms *roomsfile.File // nil without -rooms
	keys  adminKeys
}

// loadOpsFiles reads the operator's files. The error is one line naming
// the file, the line and the field.
func loadOpsFiles(cfg config) (*opsFiles, error) {
	o := &opsFiles{}
	if cfg.AdminKey != "" {
		o.keys = adminKeys{{label: "admin", key: []byte(cfg.AdminKey)}}
	}
	if cfg.AdminKeysFile != "" {
		ks, err := loadAdminKeys(cfg.AdminKeysFile)
		if err != nil {
			return nil, err
		}
		o.keys = append(o.keys, ks...)
	}
	if cfg.RoomsFile != "" {
		f, err := roomsfile.Load(cfg.RoomsFile)
		if err != nil {
			return nil, fmt.Errorf("-rooms %w", err)
		}
		o.rooms = f
	}
	return o, nil
}

// startOps reads the operator's files and applies the rooms file: at
// start, a bad file is the error that stops it.
func (s *server) startOps(ctx context.Context) error {
	o, err := loadOpsFiles(s.cfg)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.applyRoomsFile(actx, o.rooms); err != nil {
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

// fileLocks maps each setting of room that the rooms file sets to the
// reason it cannot be changed live.
func (s *server) fileLocks(room string) map[string]string {
	fr, ok := s.fileRoom(room)
	if !ok || len(fr.Lines) == 0 {
		return nil
	}
	out := make(map[string]string, len(fr.Lines))
	for f, line := range fr.Lines {
		out[f] = fmt.Sprintf("set by the rooms file (%s, line %d): change it there and reload (SIGHUP)", s.opsNow().rooms.Path, line)
	}
	return out
}

// fileAuditLabel is who the audit trail names for changes the rooms file
// made.
const fileAuditLabel = "rooms-file"

// errUnchanged ends an UpdateRoomConfig that has nothing to write.
var errUnchanged = errors.New("unchanged")

// applyRoomsFile writes the file's settings into every declared room
// (creating rooms that do not exist). Every room is checked first, against
// the settings stored now, so a file whose values clash with them (say a
// tokenMaxSeconds below a live tokenTtlSeconds) changes nothing.
func (s *server) applyRoomsFile(ctx context.Context, f *roomsfile.File) error {
	if f == nil {
		return nil
	}
	rooms := f.Rooms()
	for _, r := range rooms {
		cfg, err := s.q.RoomConfig(ctx, r.Name)
		if err != nil {
			return err
		}
		r.Apply(&cfg)
		if err := cfg.Validate(); err != nil {
			var fe *queue.FieldError
			if errors.As(err, &fe) {
				line, ok := r.Lines[fe.Field]
				if !ok {
					line = r.Line
				}
				return fmt.Errorf("-rooms %s:%d: rooms.%s.%s: %s (with the settings stored now)", f.Path, line, r.Name, fe.Field, fe.Msg)
			}
			return err
		}
	}
	for _, r := range rooms {
		exists, err := s.q.RoomExists(ctx, r.Name)
		if err != nil {
			return err
		}
		var before queue.RoomConfig
		after, err := s.q.UpdateRoomConfig(ctx, r.Name, func(c *queue.RoomConfig) error {
			before = *c
			if len(r.Apply(c)) == 0 && exists {
				return errUnchanged
			}
			return nil
		})
		if errors.Is(err, errUnchanged) {
			continue
		}
		if err != nil {
			return fmt.Errorf("-rooms: room %s: %w", r.Name, err)
		}
		action := "update"
		if !exists {
			action = "create"
		}
		s.audit(ctx, r.Name, fileAuditLabel, action, before, after)
	}
	return nil
}

// reload reads the operator's files again and applies them. A bad file is
// refused and logged; what was in force stays.
func (s *server) reload(ctx context.Context) error {
	o, err := loadOpsFiles(s.cfg)
	if err == nil && len(o.keys) == 0 {
		err = errors.New("-admin-keys: no admin key left")
	}
	if err == nil {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = s.applyRoomsFile(rctx, o.rooms)
		cancel()
	}
	if err != nil {
		s.log.Error("reload refused: the settings in force stay", "err", err)
		return err
	}
	s.ops.Store(o)
	s.log.Info("reloaded", "rooms", len(o.rooms.Rooms()), "adminKeys", len(o.keys))
	return nil
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
