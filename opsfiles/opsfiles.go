// Package opsfiles holds what the operator's files say, in force: the
// rooms file (-rooms), applied into the store, and the admin keys
// (-admin-key, -admin-keys). A reload reads them again and replaces what
// is in force whole; each file reloads on its own, so a bad one never
// keeps the other from taking effect.
package opsfiles

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/roomsfile"
)

// Files is what the operator's files say. It is replaced whole by a
// reload, never changed.
type Files struct {
	Rooms *roomsfile.File // nil without a rooms file
	Keys  admin.Keys
}

// Options name the operator's files and tune their apply. A nil *Options
// means every default: no files.
type Options struct {
	AdminKey      string // one key, labelled "admin" (-admin-key)
	AdminKeysFile string // a file of labelled keys (-admin-keys)
	RoomsFile     string // the rooms file (-rooms)

	// Apply is how the rooms file is written into the store (its
	// Effective and Audit); nil means roomsfile's defaults.
	Apply *roomsfile.ApplyOptions
	// ApplyTimeout bounds one apply of the rooms file; 0 or less means
	// DefaultApplyTimeout.
	ApplyTimeout time.Duration
	// Logger logs each reload; nil discards.
	Logger *slog.Logger
}

// DefaultApplyTimeout bounds one apply of the rooms file. The largest file
// (roomsfile.MaxRooms rooms, each created) took 21 s on one local
// redis-server, 4 s when every room already matched (docs/rooms-file.md);
// the deadline leaves room for a slower network and a busy Redis, and
// stops a stuck apply, which then says what it applied.
const DefaultApplyTimeout = 2 * time.Minute

// Ops is the operator's files in force. Its methods are safe for
// concurrent use.
type Ops struct {
	store roomsfile.Store
	opts  Options
	log   *slog.Logger
	now   atomic.Pointer[Files]
}

// New returns the files in force, empty until Start, applying the rooms
// file into store. The caller's opts is not kept.
func New(store roomsfile.Store, opts *Options) *Ops {
	o := &Ops{store: store}
	if opts != nil {
		o.opts = *opts
	}
	if o.opts.ApplyTimeout <= 0 {
		o.opts.ApplyTimeout = DefaultApplyTimeout
	}
	o.log = o.opts.Logger
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	o.now.Store(&Files{})
	return o
}

// Now is what the operator's files say now (nothing before Start).
func (o *Ops) Now() *Files { return o.now.Load() }

// Room returns the rooms file's settings for room: what the file pins,
// which wins over anything stored or changed live.
func (o *Ops) Room(room string) (roomsfile.Room, bool) { return o.Now().Rooms.Room(room) }

// Start reads the operator's files and applies the rooms file: a bad file,
// or an apply that fails, is the error that stops the start, and nothing
// is in force then.
func (o *Ops) Start(ctx context.Context) error {
	keys, err := o.loadKeys()
	if err != nil {
		return err
	}
	rooms, err := o.loadRooms()
	if err != nil {
		return err
	}
	if _, err := o.apply(ctx, rooms); err != nil {
		return err
	}
	o.now.Store(&Files{Rooms: rooms, Keys: keys})
	return nil
}

func (o *Ops) apply(ctx context.Context, f *roomsfile.File) (roomsfile.Applied, error) {
	actx, cancel := context.WithTimeout(ctx, o.opts.ApplyTimeout)
	defer cancel()
	return roomsfile.Apply(actx, f, o.store, o.opts.Apply)
}

// loadKeys reads the keys of AdminKey and AdminKeysFile.
func (o *Ops) loadKeys() (admin.Keys, error) {
	var keys admin.Keys
	if o.opts.AdminKey != "" {
		keys = admin.Keys{admin.NewKey("admin", []byte(o.opts.AdminKey), admin.Admin)}
	}
	if o.opts.AdminKeysFile != "" {
		ks, err := admin.LoadKeys(o.opts.AdminKeysFile)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	return keys, nil
}

// loadRooms reads the rooms file (nil without one). The error is one line
// naming the file, the line and the field.
func (o *Ops) loadRooms() (*roomsfile.File, error) {
	if o.opts.RoomsFile == "" {
		return nil, nil
	}
	f, err := roomsfile.Load(o.opts.RoomsFile)
	if err != nil {
		return nil, fmt.Errorf("-rooms %w", err)
	}
	return f, nil
}
