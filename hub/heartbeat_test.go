package hub

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// countEvent counts the records of event.
func countEvent(recs []record, event string) int {
	n := 0
	for _, r := range recs {
		if r.event == event {
			n++
		}
	}
	return n
}

// TestBeat: in a paused room a quiet connection gets a heartbeat every
// interval; one that had a message gets none until an interval after it
// unless it asked for them always; a closed connection gets no more, and
// its entry leaves the schedule.
func TestBeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		for _, v := range []string{"quiet", "busy", "always"} {
			src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: 10, Paused: true})
		}
		quietT, busyT, alwaysT := newTransport("ws"), newTransport("ws"), newTransport("sse")
		quietC := mustAttach(t, h.Hub, "drop", "quiet", quietT)
		busyC := mustAttach(t, h.Hub, "drop", "busy", busyT)
		alwaysC := mustAttach(t, h.Hub, "drop", "always", alwaysT)
		const every = 10 * time.Second
		quietC.Beat(every, false)
		busyC.Beat(every, false)
		alwaysC.Beat(every, true)

		// 35 s: three rounds.
		time.Sleep(35 * time.Second)
		synctest.Wait()
		if n := countEvent(quietT.records(), "heartbeat"); n != 3 {
			t.Fatalf("quiet connection got %d heartbeats in 35 s at 10 s, want 3: %v", n, quietT.records())
		}
		recs := quietT.records()
		for i := 2; i < len(recs); i++ {
			if gap := recs[i].at.Sub(recs[i-1].at); gap < every || gap > every+time.Second {
				t.Fatalf("heartbeats %v apart: %v", gap, recs)
			}
		}

		// A message 2 s before the next round stands in for its heartbeat,
		// except where heartbeats go out always.
		time.Sleep(3 * time.Second)
		src.set("drop", "busy", wire.State{Status: wire.StatusWaiting, Position: 10})
		src.set("drop", "always", wire.State{Status: wire.StatusWaiting, Position: 10})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		time.Sleep(5 * time.Second) // past the round at 40 s
		synctest.Wait()
		if n := countEvent(busyT.records(), "heartbeat"); n != 3 {
			t.Fatalf("busy connection got %d heartbeats, want 3 (none in the round after its message): %v", n, busyT.records())
		}
		if n := countEvent(alwaysT.records(), "heartbeat"); n != 4 {
			t.Fatalf("always connection got %d heartbeats, want 4: %v", n, alwaysT.records())
		}

		quietC.Close()
		before := countEvent(quietT.records(), "heartbeat")
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := countEvent(quietT.records(), "heartbeat"); n != before {
			t.Fatalf("closed connection got %d more heartbeats", n-before)
		}
		h.beats.mu.Lock()
		entries := 0
		for _, s := range h.beats.slots {
			for _, c := range s {
				if c == quietC && c.beatAt != 0 {
					entries++
				}
			}
		}
		h.beats.mu.Unlock()
		if entries != 0 {
			t.Fatalf("closed connection still has %d live entries", entries)
		}
	})
}
