package autopilot

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// maxRooms bounds the rooms a Recorder holds counts of between two
// flushes; samples of more rooms are dropped (and counted).
const maxRooms = 10000

// Recorder gathers samples in memory and sends them to a Store a few
// times a second, one call per room. Add never blocks on Redis: it is
// called on the request path of the built-in proxy.
type Recorder struct {
	store   *Store
	log     *slog.Logger
	mu      sync.Mutex
	rooms   map[string]*Window
	dropped atomic.Int64
}

// NewRecorder is a Recorder sending to store.
func NewRecorder(store *Store, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{store: store, log: log, rooms: map[string]*Window{}}
}

// Add counts one sample of room's origin.
func (r *Recorder) Add(room string, s Sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.rooms[room]
	if w == nil {
		if len(r.rooms) >= maxRooms {
			r.dropped.Add(1)
			return
		}
		w = &Window{}
		r.rooms[room] = w
	}
	w.Add(s)
}

// Dropped is how many samples were dropped for want of room.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Run sends what was gathered every 250 ms until ctx ends.
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.Flush(ctx)
		}
	}
}

// Flush sends what was gathered; counts that could not be sent are lost
// (the next seconds' are what a decision reads).
func (r *Recorder) Flush(ctx context.Context) {
	r.mu.Lock()
	rooms := r.rooms
	r.rooms = make(map[string]*Window, len(rooms))
	r.mu.Unlock()
	for room, w := range rooms {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := r.store.Record(cctx, room, *w)
		cancel()
		if err != nil && ctx.Err() == nil {
			r.log.Debug("autopilot: samples not recorded", "room", room, "err", err)
		}
	}
}
