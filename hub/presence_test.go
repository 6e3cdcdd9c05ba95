package hub

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// fakePresence records Seen calls.
type fakePresence struct {
	every time.Duration
	mu    sync.Mutex
	calls [][]string
}

func (f *fakePresence) Seen(ctx context.Context, room string, visitors []string) (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	vs := slices.Clone(visitors)
	slices.Sort(vs)
	f.calls = append(f.calls, append([]string{room}, vs...))
	return f.every, nil
}

func (f *fakePresence) take() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// TestPresenceBatches: the connected visitors of a room are written in one
// batch, then not again before the room's interval; a visitor whose last
// connection closed is written once at the next round.
func TestPresenceBatches(t *testing.T) {
	pres := &fakePresence{every: time.Hour}
	src := newSource()
	h := New(newBroker(), src, nil, &Options{Presence: pres, ReconcileBatch: 2})
	var conns []*Conn
	for _, v := range []string{"a", "b", "c"} {
		src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: 1})
		conns = append(conns, mustAttach(t, h, "drop", v, newTransport("ws")))
	}
	// A second tab of a opens and closes: a still has a connection.
	extra := mustAttach(t, h, "drop", "a", newTransport("ws"))
	extra.Close()

	t0 := time.Now()
	ctx := context.Background()
	h.presenceRound(ctx, t0)
	var all []string
	for _, call := range pres.take() {
		if call[0] != "drop" || len(call) > 3 {
			t.Fatalf("first round call %v, want room drop and at most 2 visitors", call)
		}
		all = append(all, call[1:]...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []string{"a", "b", "c"}) {
		t.Fatalf("first round wrote %v, want a, b and c once each", all)
	}
	h.presenceRound(ctx, t0.Add(30*time.Minute))
	if got := pres.take(); len(got) != 0 {
		t.Fatalf("written again before the interval: %v", got)
	}
	conns[1].Close()
	h.presenceRound(ctx, t0.Add(31*time.Minute))
	if got := pres.take(); len(got) != 1 || !slices.Equal(got[0], []string{"drop", "b"}) {
		t.Fatalf("after b closed: %v, want [drop b]", got)
	}
	h.presenceRound(ctx, t0.Add(61*time.Minute))
	if got := pres.take(); len(got) != 1 || !slices.Equal(got[0], []string{"drop", "a", "c"}) {
		t.Fatalf("after the interval: %v, want [drop a c]", got)
	}
	for _, c := range conns {
		c.Close()
	}
}

// TestPresenceLoopRuns: a running hub writes its visitors by itself.
func TestPresenceLoopRuns(t *testing.T) {
	pres := &fakePresence{every: time.Hour}
	src := newSource()
	h := New(newBroker(), src, nil, &Options{Presence: pres})
	start(t, h)
	src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 1})
	c := mustAttach(t, h, "drop", "a", newTransport("ws"))
	defer c.Close()
	var seen bool
	waitfor.Until(t, 10*time.Second, "a written by the presence loop", func() bool {
		for _, call := range pres.take() {
			seen = seen || slices.Equal(call, []string{"drop", "a"})
		}
		return seen
	})
}
