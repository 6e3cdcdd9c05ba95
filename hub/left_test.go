package hub

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// fakeLeaver is a fakePresence that also records Left calls.
type fakeLeaver struct {
	fakePresence
	left fakePresence
}

func (f *fakeLeaver) Left(ctx context.Context, room string, visitors []string) (time.Duration, error) {
	return f.left.Seen(ctx, room, visitors)
}

// TestPresenceLeft: a visitor whose last connection closed is written with
// Left; one who closed and connected again before the round is written as
// seen, not as gone.
func TestPresenceLeft(t *testing.T) {
	pres := &fakeLeaver{fakePresence: fakePresence{every: time.Hour}, left: fakePresence{every: time.Hour}}
	src := newSource()
	h := New(newBroker(), src, nil, &Options{Presence: pres})
	var conns []*Conn
	for _, v := range []string{"a", "b", "c"} {
		src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: 1})
		conns = append(conns, mustAttach(t, h, "drop", v, newTransport("ws")))
	}
	ctx := context.Background()
	t0 := time.Now()
	h.presenceRound(ctx, t0)
	pres.take()
	conns[0].Close()
	conns[1].Close()
	again := mustAttach(t, h, "drop", "b", newTransport("sse"))
	h.presenceRound(ctx, t0.Add(time.Minute))
	if got := pres.left.take(); len(got) != 1 || !slices.Equal(got[0], []string{"drop", "a"}) {
		t.Fatalf("left: %v, want [drop a]", got)
	}
	if got := pres.take(); len(got) != 1 || !slices.Equal(got[0], []string{"drop", "b"}) {
		t.Fatalf("seen: %v, want [drop b] (connected again)", got)
	}
	again.Close()
	conns[2].Close()
}
