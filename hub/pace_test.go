package hub

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// TestPositionsPacedLikePolling: with the Source telling a poll to come back
// in 5 s, a waiting visitor is sent a new position no more often than every
// 5 s while the queue moves every 100 ms; a pause still goes out at once.
func TestPositionsPacedLikePolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		src.nextPoll = 5 * time.Second
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5000})
		tr := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", tr)
		synctest.Wait()

		for range 200 { // 20 s of ticks admitting 14
			b.publish(t, "drop", admitJSON("drop", 14))
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		recs := tr.records()
		ms := tr.msgs(t)
		// The first update after the one at connect is spread over a second
		// interval, so 3 to 5 messages in 20 s.
		if len(ms) < 3 || len(ms) > 5 {
			t.Fatalf("%d messages in 20 s at nextPoll 5 s: %v", len(ms), recs)
		}
		for i := 1; i < len(recs); i++ {
			if gap := recs[i].at.Sub(recs[i-1].at); gap < 5*time.Second {
				t.Fatalf("updates %v apart: %v", gap, recs)
			}
			if *ms[i].Position >= *ms[i-1].Position {
				t.Fatalf("position did not fall: %v", recs)
			}
			if ms[i].NextPollMs == nil || *ms[i].NextPollMs != 5000 {
				t.Fatalf("no nextPollMs in %s", recs[i].data)
			}
		}

		// A pause is not a position: it goes out at once.
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5000 - 200*14, Paused: true})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		ms = tr.msgs(t)
		if last := ms[len(ms)-1]; !last.Paused {
			t.Fatalf("pause not pushed at once: %+v", last)
		}
	})
}

// TestPreQueueThenDraw: a visitor of the pre-queue is pushed opensAt and no
// position; the open event makes the hub read the drawn place at once, and
// that position goes out even though it is "higher" than nothing.
func TestPreQueueThenDraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		opens := time.Now().Add(time.Minute)
		src.set("drop", "a", wire.State{Room: "drop", Status: wire.StatusWaiting, OpensAt: opens, NextPoll: 5 * time.Second})
		tr := newTransport("sse")
		mustAttach(t, h.Hub, "drop", "a", tr)
		synctest.Wait()
		ms := tr.msgs(t)
		if len(ms) != 1 || ms[0].Position != nil || ms[0].OpensAt == "" || ms[0].NextPollMs == nil {
			t.Fatalf("pre-queue push: %s", tr.records())
		}
		// Admissions of others do not give a pre-queue visitor a position.
		b.publish(t, "drop", admitJSON("drop", 14))
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(tr.msgs(t)); n != 1 {
			t.Fatalf("%d messages before the draw: %s", n, tr.records())
		}

		time.Sleep(time.Minute)
		src.set("drop", "a", wire.State{Room: "drop", Status: wire.StatusWaiting, Position: 12, ETASeconds: 1})
		b.publish(t, "drop", `{"type":"open","count":40}`)
		synctest.Wait()
		ms = tr.msgs(t)
		if len(ms) != 2 || ms[1].Position == nil || *ms[1].Position != 12 || ms[1].OpensAt != "" {
			t.Fatalf("after the draw: %s", tr.records())
		}
	})
}

// TestQuietRoomReconciledLessOften: a room that receives no event is read
// every quietReconcile intervals instead of every one; an event brings it
// back to every interval.
func TestQuietRoomReconciledLessOften(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, &Options{ReconcileEvery: 10 * time.Second}))
		synctest.Wait() // the broker's first Up reconciles nothing yet
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5000})
		mustAttach(t, h.Hub, "drop", "a", newTransport("ws"))
		synctest.Wait()
		reads := func() int { return src.reads("drop", "a") - 1 } // less the one at attach
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		if reads() != 1 {
			t.Fatalf("first periodic reconcile: %d reads", reads())
		}
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if reads() != 1 {
			t.Fatalf("quiet room read %d times in 60 s", reads())
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if reads() != 2 {
			t.Fatalf("quiet room after %d intervals: %d reads", quietReconcile, reads())
		}
		b.publish(t, "drop", admitJSON("drop", 14))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if reads() != 3 {
			t.Fatalf("after an event: %d reads, want the next interval's", reads())
		}
	})
}

// TestUpdatesSpreadAfterStandstill: when a queue that stood still moves
// again, its visitors' first position updates are spread over one interval
// instead of all going out in the first flush.
func TestUpdatesSpreadAfterStandstill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		src.nextPoll = 5 * time.Second
		h := start(t, New(b, src, nil, quiet(Options{})))
		synctest.Wait()
		const n = 200
		var trs []*fakeTransport
		for i := range n {
			v := fmt.Sprint("v", i)
			src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: int64(1000 + i)})
			tr := newTransport("ws")
			trs = append(trs, tr)
			mustAttach(t, h.Hub, "drop", v, tr)
		}
		synctest.Wait()
		// Everyone's first update after connecting, then a standstill.
		b.publish(t, "drop", admitJSON("drop", 14))
		time.Sleep(11 * time.Second)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		counts := func() int {
			k := 0
			for _, tr := range trs {
				k += len(tr.records())
			}
			return k
		}
		before := counts()
		b.publish(t, "drop", admitJSON("drop", 14))
		time.Sleep(time.Second)
		synctest.Wait()
		first := counts() - before
		time.Sleep(5 * time.Second)
		synctest.Wait()
		all := counts() - before
		if all != n {
			t.Fatalf("%d of %d visitors updated within an interval", all, n)
		}
		if first > n/3 {
			t.Fatalf("%d of %d updates in the first second after the standstill", first, n)
		}
	})
}

// TestPositionsOnlyWhenThePageDrifts: a page moves its figure on at the
// rate it was sent, so while the queue moves at that rate a waiting
// visitor is sent nothing after connecting; when the queue stands still or
// runs faster, the true position goes out, no more often than nextPoll;
// going degraded, the page is told to stop where it stands.
func TestPositionsOnlyWhenThePageDrifts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		src.nextPoll, src.rate = 5*time.Second, 140
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5000})
		tr := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", tr)
		synctest.Wait()
		admit := func(ticks, each int) {
			for range ticks {
				b.publish(t, "drop", admitJSON("drop", each))
				time.Sleep(100 * time.Millisecond)
				synctest.Wait()
			}
		}
		admit(200, 14) // 20 s at the rate told
		ms := tr.msgs(t)
		if len(ms) != 1 || ms[0].Rate != 140 || *ms[0].Position != 5000 {
			t.Fatalf("moving at the rate told: %s", tr.records())
		}

		// The queue stands still: the page runs ahead of it and is
		// corrected to the true place within an interval, then again at
		// most every interval.
		stood := time.Now()
		time.Sleep(20 * time.Second)
		synctest.Wait()
		recs, ms := tr.records(), tr.msgs(t)
		if len(ms) < 3 || len(ms) > 5 {
			t.Fatalf("%d messages in 20 s of standstill: %s", len(ms)-1, recs)
		}
		if first := recs[1].at.Sub(stood); first > 5*time.Second+time.Second {
			t.Fatalf("first correction %v after the queue stopped", first)
		}
		for i := 1; i < len(ms); i++ {
			if *ms[i].Position != 5000-200*14 {
				t.Fatalf("correction %d: %s, want the true place %d", i, recs[i].data, 5000-200*14)
			}
			if i > 1 && recs[i].at.Sub(recs[i-1].at) < 5*time.Second {
				t.Fatalf("corrections closer than nextPoll: %s", recs)
			}
		}

		// Half as fast again as the rate told: corrections come, each
		// lower, each true. The page is looked at every nextPoll, at a
		// phase the standstill's spread left random: a look just before
		// the queue sped up finds it close enough, so the first
		// correction may take up to two intervals.
		n0 := len(ms)
		admit(100, 21)
		recs, ms = tr.records(), tr.msgs(t)
		if len(ms) < n0+1 {
			t.Fatalf("no correction while the queue ran faster: %s", recs)
		}
		for i := n0; i < len(ms); i++ {
			if *ms[i].Position >= *ms[i-1].Position {
				t.Fatalf("a correction rose: %s", recs)
			}
			if recs[i].at.Sub(recs[i-1].at) < 5*time.Second {
				t.Fatalf("corrections closer than nextPoll: %s", recs)
			}
		}

		// Degraded: the page is sent the place as last known, to stand
		// still there, not a figure it ran ahead to.
		time.Sleep(2 * time.Second)
		h.SetDegraded(true)
		synctest.Wait()
		recs, ms = tr.records(), tr.msgs(t)
		d := ms[len(ms)-1]
		want := int64(5000 - 200*14 - 100*21)
		if d.Position == nil || *d.Position != want || !strings.Contains(string(recs[len(recs)-1].data), `"degraded":true`) {
			t.Fatalf("degraded: %s, want position %d", recs[len(recs)-1].data, want)
		}
	})
}
