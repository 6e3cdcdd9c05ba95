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

// TestFlushLoopSleepsUntilDue: with nothing due but heartbeats, the flush
// loop wakes for them, not every step; a position filed earlier than its
// sleep (the head moved) wakes it, and the update goes out at its due.
func TestFlushLoopSleepsUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		src.nextPoll = 2 * time.Second
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 100, Paused: true})
		tr := newTransport("ws")
		c := mustAttach(t, h.Hub, "drop", "a", tr)
		const every = 20 * time.Second
		c.Beat(every, false)
		synctest.Wait()
		p0 := h.marks.passes.Load()

		// 60 s paused: three heartbeats, and a pass for each (one step
		// is 100 ms: an awake loop would make 600).
		time.Sleep(60 * time.Second)
		synctest.Wait()
		if n := countEvent(tr.records(), "heartbeat"); n != 3 {
			t.Fatalf("%d heartbeats in 60 s at 20 s, want 3: %v", n, tr.records())
		}
		if p := h.marks.passes.Load() - p0; p > 6 {
			t.Fatalf("%d serving passes in 60 s with a heartbeat every 20 s", p)
		}

		// Resumed and moving, with the next heartbeat 20 s away: the
		// position update due within nextPoll wakes the loop.
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 100})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		n0 := len(tr.msgs(t))
		src.rate = 0 // the page stands still: any move is news
		b.publish(t, "drop", admitJSON("drop", 10))
		synctest.Wait()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		ms := tr.msgs(t)
		if len(ms) <= n0 || ms[len(ms)-1].Position == nil || *ms[len(ms)-1].Position != 90 {
			t.Fatalf("no position update within 5 s of the head moving: %v", tr.records())
		}
	})
}
