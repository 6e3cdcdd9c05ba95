package roomsfile

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/settings"
)

var errLost = errors.New("the reply was lost")

// memStore is a Store in memory. failAt makes the write of that room
// fail (after writing it when landed); down makes every call fail.
type memStore struct {
	mu     sync.Mutex
	rooms  map[string]settings.Room
	writes []string
	failAt string
	landed bool
	down   bool
}

func newMemStore() *memStore { return &memStore{rooms: map[string]settings.Room{}} }

func (m *memStore) RoomConfig(ctx context.Context, room string) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return settings.Room{}, errLost
	}
	return m.rooms[room], nil
}

func (m *memStore) RoomExists(ctx context.Context, room string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return false, errLost
	}
	_, ok := m.rooms[room]
	return ok, nil
}

func (m *memStore) UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return settings.Room{}, errLost
	}
	c := m.rooms[room]
	if err := change(&c); err != nil {
		return settings.Room{}, err
	}
	if room == m.failAt && !m.landed {
		return settings.Room{}, errLost
	}
	m.rooms[room] = c
	m.writes = append(m.writes, room)
	if room == m.failAt {
		return settings.Room{}, errLost
	}
	return c, nil
}

type auditEntry struct{ room, who, action string }

type memAudit struct{ entries []auditEntry }

func (a *memAudit) Audit(ctx context.Context, room, who, action string, before, after settings.Room) {
	a.entries = append(a.entries, auditEntry{room, who, action})
}

func mustParse(t *testing.T, data string) *File {
	t.Helper()
	f, err := Parse("rooms.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const threeRooms = "rooms:\n  new:\n    batch: 3\n  same:\n    batch: 4\n  old:\n    batch: 5\n"

// TestApplyWritesWhatDiffers: rooms missing are created, rooms that
// differ updated, rooms that match left alone, and each write audited.
func TestApplyWritesWhatDiffers(t *testing.T) {
	st := newMemStore()
	st.rooms["same"] = settings.Room{Batch: 4}
	st.rooms["old"] = settings.Room{Batch: 1, Seats: 9}
	audit := &memAudit{}
	done, err := Apply(context.Background(), mustParse(t, threeRooms), st, &ApplyOptions{Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(done.Created, ",") != "new" || strings.Join(done.Updated, ",") != "old" || done.Unchanged != 1 || done.Changed() != 2 {
		t.Fatalf("applied %+v", done)
	}
	if strings.Join(st.writes, ",") != "new,old" {
		t.Errorf("writes %v", st.writes)
	}
	if c := st.rooms["old"]; c.Batch != 5 || c.Seats != 9 {
		t.Errorf("old: %+v, want batch 5 and its own seats", c)
	}
	want := []auditEntry{{"new", AuditLabel, "create"}, {"old", AuditLabel, "update"}}
	if len(audit.entries) != 2 || audit.entries[0] != want[0] || audit.entries[1] != want[1] {
		t.Errorf("audit %v, want %v", audit.entries, want)
	}

	again, err := Apply(context.Background(), mustParse(t, threeRooms), st, nil)
	if err != nil || again.Changed() != 0 || again.Unchanged != 3 {
		t.Fatalf("applied again: %+v %v", again, err)
	}
	if none, err := Apply(context.Background(), nil, st, nil); err != nil || none.Changed()+none.Unchanged != 0 {
		t.Fatalf("no file: %+v %v", none, err)
	}
}

// TestApplyClashWritesNothing: a value that clashes with a stored one
// stops the apply before any write, naming the line, the field and the
// stored settings beside it (as Effective gives them).
func TestApplyClashWritesNothing(t *testing.T) {
	st := newMemStore()
	st.rooms["drop"] = settings.Room{TokenTTL: 600 * time.Second, Seats: 7}
	f := mustParse(t, "rooms:\n  first:\n    batch: 2\n  drop:\n    batch: 5\n    tokenMaxSeconds: 300\n")
	for _, tc := range []struct {
		name string
		opts *ApplyOptions
		want string
	}{
		{"as stored", nil, "seats 7, tokenTtlSeconds 600"},
		{"effective", &ApplyOptions{Effective: func(room string, c settings.Room) settings.Room {
			if c.Seats == 0 {
				c.Seats = 7 // the deployment's default: the stored 7 is no clash
			}
			return c
		}}, "tokenTtlSeconds 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Apply(context.Background(), f, st, tc.opts)
			want := "-rooms rooms.yaml:6: rooms.drop.tokenMaxSeconds: must be at least tokenTtlSeconds (with the settings stored now: " + tc.want + "); nothing was written"
			if err == nil || err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if len(st.writes) != 0 {
				t.Fatalf("wrote %v", st.writes)
			}
		})
	}
}

// TestApplyStopsPartWay: a failed write stops the apply there, and the
// error says what was written before, whether the failed room's write
// landed, and how many rooms were not applied.
func TestApplyStopsPartWay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		landed  bool
		written string
	}{{"write lost", false, "no"}, {"answer lost", true, "yes"}} {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			st.rooms["same"] = settings.Room{Batch: 4}
			st.failAt, st.landed = "old", tc.landed
			_, err := Apply(context.Background(), mustParse(t, threeRooms+"  last:\n    batch: 6\n"), st, nil)
			var ae *ApplyError
			if !errors.As(err, &ae) || !errors.Is(err, errLost) {
				t.Fatalf("apply: %v", err)
			}
			if ae.Failed.Name != "old" || ae.Index != 2 || ae.Total != 4 || ae.Written != tc.written || strings.Join(ae.Applied.Created, ",") != "new" || ae.Applied.Unchanged != 1 {
				t.Fatalf("%+v", ae)
			}
			want := "-rooms rooms.yaml:6: room old (3 of 4): the reply was lost; applied in part: 1 rooms were written (created 1, updated 0; new), 1 already matched; room old written: " + tc.written + "; the 1 rooms after it were not applied"
			if err.Error() != want {
				t.Fatalf("got %v\nwant %s", err, want)
			}
			if _, ok := st.rooms["last"]; ok {
				t.Fatal("a room after the failed one was written")
			}
		})
	}
}

// TestApplyStoreDown: a store that does not answer the first reads writes
// nothing, and says so.
func TestApplyStoreDown(t *testing.T) {
	st := newMemStore()
	st.down = true
	_, err := Apply(context.Background(), mustParse(t, threeRooms), st, nil)
	if !errors.Is(err, errLost) || !strings.Contains(err.Error(), "nothing was written") || !strings.HasPrefix(err.Error(), "-rooms rooms.yaml:2: room new: reading the stored settings") {
		t.Fatalf("apply: %v", err)
	}
	var ae *ApplyError
	if errors.As(err, &ae) {
		t.Fatal("an apply that wrote nothing is an ApplyError")
	}
}
