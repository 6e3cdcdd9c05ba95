package instances

import (
	"context"
	"sync"
	"testing"
	"time"
)

type memStore struct {
	mu sync.Mutex
	h  map[string]string
}

func (m *memStore) Do(_ context.Context, args ...string) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch args[0] {
	case "HSET":
		m.h[args[2]] = args[3]
	case "HDEL":
		delete(m.h, args[2])
	case "HGETALL":
		var out []any
		for k, v := range m.h {
			out = append(out, k, v)
		}
		return out, nil
	}
	return nil, nil
}

// TestPublish: reports read back as written; instances quiet for longer
// than Live do not count, those quiet for longer than Gone are dropped,
// and a line that does not parse is left out.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	r := &memStore{h: map[string]string{}}
	now := time.UnixMilli(time.Now().UnixMilli())
	a, b, c := New(r, "a"), New(r, "b"), New(r, "c")
	if _, err := c.Publish(ctx, Report{At: now.Add(-2 * Gone)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, Report{At: now.Add(-Live - time.Second)}); err != nil {
		t.Fatal(err)
	}
	r.h["junk"] = "not a line"
	rep := Report{At: now, WS: 3, SSE: 2, LagP50: 1500 * time.Microsecond, LagP99: 4 * time.Millisecond, LagCount: 9}
	live, err := a.Publish(ctx, rep)
	if err != nil || live != 1 {
		t.Fatalf("live %d, %v; want 1 (b is quiet, c gone)", live, err)
	}
	all, err := a.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all["c"]; ok {
		t.Error("c, gone for two minutes, still listed")
	}
	if _, ok := all["junk"]; ok {
		t.Error("a line that does not parse was listed")
	}
	if got := all["a"]; got != rep {
		t.Errorf("a read back as %+v, want %+v", got, rep)
	}
	if _, ok := all["b"]; !ok {
		t.Error("b, quiet but not gone, not listed")
	}
}
