package hub

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// rangedSource is a fakeSource that also tells ranges: a place's is one
// second either side of its ETA (a second per place), a draw's is the
// size's tenth to its half.
type rangedSource struct {
	*fakeSource
	drawSize int64 // > 0: DrawEstimate knows of a draw this big
}

func (s rangedSource) ETARange(room string, position int64) wire.Range {
	return wire.Range{Low: position - 1, High: position + 1}
}

func (s rangedSource) DrawRange(room string, size int64) wire.Range {
	return wire.Range{Low: size / 10, High: size / 2}
}

func (s rangedSource) DrawEstimate(room string) (int64, float64, time.Duration, bool) {
	return s.drawSize, 0.5, time.Second, s.drawSize > 0
}

// rangeOf decodes the etaRange of a pushed message (nil: none).
func rangeOf(t *testing.T, data []byte) *wire.Range {
	t.Helper()
	var m struct {
		ETARange *struct{ Low, High int64 } `json:"etaRange"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if m.ETARange == nil {
		return nil
	}
	return &wire.Range{Low: m.ETARange.Low, High: m.ETARange.High}
}

// TestPushedPositionsCarryTheRange: a position update built by the hub
// carries the Source's range for that position, as a poll there would.
func TestPushedPositionsCarryTheRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, rangedSource{fakeSource: src}, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 500, ETASeconds: 500})
		tr := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", tr)
		synctest.Wait()
		for range 5 {
			b.publish(t, "drop", admitJSON("drop", 14))
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		recs, ms := tr.records(), tr.msgs(t)
		if len(ms) < 2 {
			t.Fatalf("no position update: %v", recs)
		}
		last := recs[len(recs)-1]
		pos := *ms[len(ms)-1].Position
		if pos >= 500 {
			t.Fatalf("position did not move: %s", last.data)
		}
		if got := rangeOf(t, last.data); got == nil || *got != (wire.Range{Low: pos - 1, High: pos + 1}) {
			t.Fatalf("pushed %s, want the range around %d", last.data, pos)
		}
	})
}

// TestPushedDrawCarriesTheRange: a lottery state pushed from the Source's
// draw figures carries the draw's range; without a RangeSource none.
func TestPushedDrawCarriesTheRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, rangedSource{fakeSource: src, drawSize: 80}, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, InDraw: 100, ChancePerMinute: 0.4, NextPoll: time.Second})
		tr := newTransport("sse")
		mustAttach(t, h.Hub, "drop", "a", tr)
		synctest.Wait()
		recs := tr.records()
		if len(recs) == 0 {
			t.Fatal("nothing pushed")
		}
		if got := rangeOf(t, recs[0].data); got == nil || *got != (wire.Range{Low: 8, High: 40}) {
			t.Fatalf("pushed %s, want the range of a draw of 80", recs[0].data)
		}

		plain := newTransport("ws")
		src2, b2 := newSource(), newBroker()
		h2 := start(t, New(b2, src2, nil, quiet(Options{})))
		src2.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 9, ETASeconds: 9})
		mustAttach(t, h2.Hub, "drop", "a", plain)
		synctest.Wait()
		for _, r := range plain.records() {
			if rangeOf(t, r.data) != nil {
				t.Fatalf("a Source without ranges: %s", r.data)
			}
		}
	})
}
