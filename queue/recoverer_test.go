package queue

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/settings"
)

// callLog is a Redis that records every call, answers SMEMBERS with rooms
// and anything else with nil.
type callLog struct {
	mu    sync.Mutex
	calls []string
	rooms []any
}

func (c *callLog) Eval(_ context.Context, s *rediscall.Script, _ []string, _ ...string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, "EVAL "+s.Name)
	if s == retakeScript.Script {
		return []any{int64(0), int64(0), int64(0)}, nil
	}
	return nil, nil
}

func (c *callLog) Do(_ context.Context, args ...string) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, args[0])
	if args[0] == "SMEMBERS" {
		return c.rooms, nil
	}
	return nil, nil
}

func (c *callLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// TestConfiguredRoomsOnlyRead: reading the configured rooms writes
// nothing, even with a loss to put back; the recoverer, handed what was
// read, writes back (the settings of the room Redis lacks) and sets the
// alive marker, and then the loss is over.
func TestConfiguredRoomsOnlyRead(t *testing.T) {
	ctx := context.Background()
	r := &callLog{rooms: []any{"b"}}
	q := newQueue(t, r, &Options{Settings: settingsOf{"a": settings.Room{}, "b": settings.Room{}}})
	q.recovery.markLost()
	rooms, fresh := q.configured.read(ctx, q, q.recovery.pending())
	if calls := r.take(); !slices.Equal(calls, []string{"SMEMBERS"}) || !fresh || !slices.Equal(rooms, []string{"b"}) {
		t.Fatalf("reading the rooms with a loss pending: calls %q, rooms %q (fresh %v), want SMEMBERS alone", calls, rooms, fresh)
	}
	if !q.recovery.pending() {
		t.Fatal("reading the rooms settled the loss")
	}
	q.configuredRooms(ctx)
	calls := r.take()
	if n := slices.Index(calls, "EVAL retake"); n < 0 || !slices.Contains(calls, "SET") {
		t.Fatalf("the recoverer's calls %q: want the write-back and the marker", calls)
	}
	if q.recovery.pending() {
		t.Fatal("the loss is still pending after the write-back")
	}
	// With nothing lost and every room's settings there, a look only reads.
	r.rooms = []any{"a", "b"}
	q.configured.set(nil)
	q.configured.at = q.configured.at.AddDate(0, 0, -1)
	q.configuredRooms(ctx)
	if calls := r.take(); !slices.Equal(calls, []string{"SMEMBERS"}) {
		t.Fatalf("a look with nothing lost: calls %q, want SMEMBERS alone", calls)
	}
}
