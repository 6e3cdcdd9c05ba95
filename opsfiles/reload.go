package opsfiles

import (
	"cmp"
	"context"
	"errors"
	"os"

	"github.com/waitroom/waitroom/roomsfile"
)

// Reload reads the operator's files again and applies them, each on its
// own: a bad rooms file does not keep a removed admin key working, and a
// bad keys file does not stop the rooms file. The keys take effect before
// the rooms file is applied, which can take a while. A file that is
// refused leaves what it said in force; a rooms file that was applied only
// in part is logged with the rooms it wrote, and the previous file's pins
// stay (reload again to apply the rest). The error is the first refusal.
func (o *Ops) Reload(ctx context.Context) error {
	old := o.Now()
	next := &Files{Keys: old.Keys, Rooms: old.Rooms}
	keys, kerr := o.loadKeys()
	if kerr == nil && len(keys) == 0 {
		kerr = errors.New("-admin-keys: no admin key left")
	}
	if kerr == nil {
		next.Keys = keys
		o.log.Info("reloaded the admin keys", "adminKeys", len(keys))
	} else {
		o.log.Error("admin keys reload refused: the keys in force stay", "err", kerr)
	}
	o.now.Store(&Files{Keys: next.Keys, Rooms: old.Rooms})

	rooms, rerr := o.loadRooms()
	var done roomsfile.Applied
	if rerr == nil {
		done, rerr = o.apply(ctx, rooms)
	}
	var partial *roomsfile.ApplyError
	switch {
	case errors.As(rerr, &partial) && (partial.Applied.Changed() > 0 || partial.Written != "no"):
		// The failed room's own write may have landed: never "nothing".
		o.log.Error("rooms file applied in part: the rooms listed were written, the previous file's pins stay",
			"err", rerr, "created", partial.Applied.Created, "updated", partial.Applied.Updated,
			"failed", partial.Failed.Name, "failedWritten", partial.Written)
	case rerr != nil:
		o.log.Error("rooms file reload refused: nothing was written, the settings in force stay", "err", rerr)
	default:
		next.Rooms = rooms
		o.log.Info("reloaded the rooms file", "rooms", len(rooms.Rooms()), "created", len(done.Created),
			"updated", len(done.Updated), "unchanged", done.Unchanged)
	}
	o.now.Store(next)
	return cmp.Or(kerr, rerr)
}

// ReloadOn reloads on every signal received from ch until ctx ends, then
// returns nil. A refused reload is logged and waits for the next signal.
func (o *Ops) ReloadOn(ctx context.Context, ch <-chan os.Signal) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ch:
			_ = o.Reload(ctx)
		}
	}
}
