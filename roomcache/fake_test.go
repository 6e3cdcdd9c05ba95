package roomcache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

var errDown = errors.New("store down")

// fakeStore is a Store in memory. A room in fail answers errDown.
type fakeStore struct {
	capacity queue.Capacity

	mu    sync.Mutex
	rooms map[string]settings.Room
	stats map[string]queue.RoomStats
	fail  map[string]bool
	down  bool

	exists   atomic.Int64  // RoomExists calls
	inFlight atomic.Int64  // RoomConfig and Stats calls running now
	most     atomic.Int64  // the most in flight at once
	hold     chan struct{} // when set, every RoomConfig waits for a value
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		capacity: queue.Capacity{Batch: 10, Tick: 100 * time.Millisecond},
		rooms:    map[string]settings.Room{}, stats: map[string]queue.RoomStats{}, fail: map[string]bool{},
	}
}

// stored is cfg as the store gives it back: with version v.
func stored(cfg settings.Room, v int64) settings.Room {
	return settings.FromHash(append(cfg.Hash(), settings.VersionHash, strconv.FormatInt(v, 10)))
}

func (f *fakeStore) put(room string, cfg settings.Room, v int64, st queue.RoomStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rooms[room], f.stats[room] = stored(cfg, v), st
}

func (f *fakeStore) lose(room string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.rooms, room)
	delete(f.stats, room)
}

func (f *fakeStore) setFail(room string, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[room] = fail
}

func (f *fakeStore) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *fakeStore) err(room string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down || f.fail[room] {
		return errDown
	}
	return nil
}

func (f *fakeStore) Capacity() queue.Capacity { return f.capacity }

func (f *fakeStore) RoomExists(ctx context.Context, room string) (bool, error) {
	f.exists.Add(1)
	if err := f.err(room); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.rooms[room]
	return ok, nil
}

func (f *fakeStore) RoomConfig(ctx context.Context, room string) (settings.Room, error) {
	defer f.enter()()
	if f.hold != nil {
		<-f.hold
	}
	if err := f.err(room); err != nil {
		return settings.Room{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rooms[room], nil
}

func (f *fakeStore) Stats(ctx context.Context, room string) (queue.RoomStats, error) {
	defer f.enter()()
	if err := f.err(room); err != nil {
		return queue.RoomStats{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats[room], nil
}

func (f *fakeStore) ConfiguredRooms(ctx context.Context) ([]string, error) {
	if err := f.err(""); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.rooms)+len(f.fail))
	for r := range f.rooms {
		out = append(out, r)
	}
	for r, failing := range f.fail {
		if _, ok := f.rooms[r]; failing && !ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// enter counts a read in flight until the returned func runs.
func (f *fakeStore) enter() func() {
	n := f.inFlight.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { f.inFlight.Add(-1) }
}
