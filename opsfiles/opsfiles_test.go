package opsfiles

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore is a roomsfile.Store in memory; down makes every call fail.
type memStore struct {
	mu    sync.Mutex
	rooms map[string]settings.Room
	down  bool
}

var errDown = errors.New("store down")

func newMemStore() *memStore { return &memStore{rooms: map[string]settings.Room{}} }

func (m *memStore) RoomConfig(ctx context.Context, room string) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return settings.Room{}, errDown
	}
	return m.rooms[room], nil
}

func (m *memStore) RoomExists(ctx context.Context, room string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, errDown
	}
	_, ok := m.rooms[room]
	return ok, nil
}

func (m *memStore) UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return settings.Room{}, errDown
	}
	c := m.rooms[room]
	if err := change(&c); err != nil {
		return settings.Room{}, err
	}
	m.rooms[room] = c
	return c, nil
}

func (m *memStore) batch(room string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rooms[room].Batch
}

func (m *memStore) setDown(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a log both a reload and the test read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type fixture struct {
	store       *memStore
	rooms, keys string
	log         *lockedBuffer
	ops         *Ops
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{store: newMemStore(), rooms: filepath.Join(dir, "rooms.yaml"), keys: filepath.Join(dir, "keys.yaml"), log: &lockedBuffer{}}
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: 3\n")
	writeFile(t, f.keys, "alice: alice-key-0123456789abcdef\n")
	f.ops = New(f.store, &Options{
		AdminKey: "the-admin-key-0123456789", AdminKeysFile: f.keys, RoomsFile: f.rooms,
		Logger: slog.New(slog.NewTextHandler(f.log, nil)),
	})
	return f
}

func labels(f *Files) string {
	var out []string
	for _, k := range f.Keys {
		out = append(out, k.Label)
	}
	return strings.Join(out, ",")
}

// TestStart: nothing is in force before Start; after it, both files are,
// and the rooms file is applied.
func TestStart(t *testing.T) {
	f := newFixture(t)
	if now := f.ops.Now(); now.Rooms != nil || len(now.Keys) != 0 {
		t.Fatalf("in force before Start: %+v", now)
	}
	if _, ok := f.ops.Room("drop"); ok {
		t.Fatal("a pin before Start")
	}
	if err := f.ops.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := labels(f.ops.Now()); got != "admin,alice" {
		t.Errorf("keys %s", got)
	}
	if r, ok := f.ops.Room("drop"); !ok || r.Config.Batch != 3 {
		t.Errorf("pin %+v %v", r, ok)
	}
	if f.store.batch("drop") != 3 {
		t.Error("the rooms file was not applied")
	}
	if now := New(f.store, nil).Now(); now.Rooms != nil || len(now.Keys) != 0 {
		t.Errorf("no files: %+v", now)
	}
}

// TestStartRefusesBadFiles: a bad file or a failed apply stops the start
// and leaves nothing in force.
func TestStartRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*fixture)
		want  string
	}{
		{"bad rooms file", func(f *fixture) { writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: many\n") }, "-rooms "},
		{"bad keys file", func(f *fixture) { writeFile(t, f.keys, "alice: short\n") }, "-admin-keys "},
		{"store down", func(f *fixture) { f.store.setDown(true) }, "nothing was written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			err := f.ops.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start: %v, want %q in it", err, tc.want)
			}
			if now := f.ops.Now(); now.Rooms != nil || len(now.Keys) != 0 {
				t.Fatalf("in force after a refused start: %+v", now)
			}
		})
	}
}

// TestReloadEachFileOnItsOwn: a bad rooms file keeps its pins but lets
// the new keys in; a keys file with no key left keeps the old keys but
// lets the new rooms file in.
func TestReloadEachFileOnItsOwn(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	if err := f.ops.Start(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.keys, "bob: bob-key-0123456789abcdef00\n")
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: nine\n")
	if err := f.ops.Reload(ctx); err == nil || !strings.Contains(err.Error(), "rooms.yaml:3") {
		t.Fatalf("reload: %v", err)
	}
	if got := labels(f.ops.Now()); got != "admin,bob" {
		t.Errorf("keys after a bad rooms file: %s", got)
	}
	if r, _ := f.ops.Room("drop"); r.Config.Batch != 3 {
		t.Errorf("pins after a bad rooms file: %+v", r.Config)
	}
	if !strings.Contains(f.log.String(), "rooms file reload refused: nothing was written") {
		t.Errorf("log:\n%s", f.log)
	}

	noKeys := New(f.store, &Options{AdminKeysFile: f.keys, RoomsFile: f.rooms, Logger: slog.New(slog.NewTextHandler(f.log, nil))})
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: 3\n")
	if err := noKeys.Start(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.keys, "{}\n")
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: 8\n")
	if err := noKeys.Reload(ctx); err == nil || !strings.HasPrefix(err.Error(), "-admin-keys ") {
		t.Fatalf("reload: %v", err)
	}
	if got := labels(noKeys.Now()); got != "bob" {
		t.Errorf("keys after an empty keys file: %s", got)
	}
	if r, _ := noKeys.Room("drop"); r.Config.Batch != 8 || f.store.batch("drop") != 8 {
		t.Errorf("the rooms file beside an empty keys file: pin %d, stored %d", r.Config.Batch, f.store.batch("drop"))
	}
	if !strings.Contains(f.log.String(), `msg="reloaded the rooms file" rooms=1 created=0 updated=1 unchanged=0`) {
		t.Errorf("log:\n%s", f.log)
	}
}

// TestReloadOn: every signal reloads, and the loop ends with its context.
func TestReloadOn(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.ops.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ch := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- f.ops.ReloadOn(ctx, ch) }()
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: 4\n")
	ch <- os.Interrupt
	waitfor.Until(t, 5*time.Second, "the reload", func() bool { r, _ := f.ops.Room("drop"); return r.Config.Batch == 4 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ReloadOn: %v", err)
	}
}

// TestReloadNeedsAKey: a reload that would leave no admin key is refused,
// and the rooms file is applied all the same.
func TestReloadNeedsAKey(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	ops := New(f.store, &Options{RoomsFile: f.rooms})
	if err := ops.Start(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.rooms, "rooms:\n  drop:\n    batch: 6\n")
	if err := ops.Reload(ctx); err == nil || err.Error() != "-admin-keys: no admin key left" {
		t.Fatalf("reload: %v", err)
	}
	if r, _ := ops.Room("drop"); r.Config.Batch != 6 {
		t.Errorf("pin %d after the keys were refused", r.Config.Batch)
	}
}
