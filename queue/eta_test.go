package queue

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// TestRateSpread: a steady rate has no spread; one that swings has about
// the spread of its swings; samples at one moment weigh nothing, so a room
// polled often does not look steadier than one polled seldom.
func TestRateSpread(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var steady rateSpread
	for i := range 100 {
		steady.observe(t0.Add(time.Duration(i)*100*time.Millisecond), 40)
	}
	if sd := steady.sd(); sd != 0 {
		t.Fatalf("steady 40/s: sd %v, want 0", sd)
	}

	// 30 and 50 a second, alternating every second for two minutes: the
	// mean is 40 and the standard deviation 10.
	var swing rateSpread
	for i := range 120 {
		swing.observe(t0.Add(time.Duration(i)*time.Second), float64(30+20*(i%2)))
	}
	if sd := swing.sd(); sd < 8 || sd > 11 {
		t.Fatalf("30/50 alternating: sd %.2f, want about 10", sd)
	}
	if math.Abs(swing.mean-40) > 2 {
		t.Fatalf("30/50 alternating: mean %.2f, want about 40", swing.mean)
	}

	// The same swing seen by a thousand polls per second changes nothing:
	// the weight is in time, not in samples.
	var polled rateSpread
	for i := range 120 {
		at := t0.Add(time.Duration(i) * time.Second)
		for range 1000 {
			polled.observe(at, float64(30+20*(i%2)))
		}
	}
	if math.Abs(polled.sd()-swing.sd()) > 1e-9 {
		t.Fatalf("polled often: sd %.4f, polled once a second: %.4f", polled.sd(), swing.sd())
	}

	// A swing long past fades: after ten half-lives of a steady rate the
	// spread is almost gone.
	for i := range 200 {
		swing.observe(t0.Add(120*time.Second+time.Duration(i)*time.Second), 40)
	}
	if sd := swing.sd(); sd > 0.5 {
		t.Fatalf("after 200 s steady: sd %.2f, want near 0", sd)
	}
}

// TestPlaceRange: the range holds the ETA, is one number without spread,
// widens with it, and its slow end is clamped.
func TestPlaceRange(t *testing.T) {
	for _, c := range []struct {
		name      string
		pos       int64
		rate, sd  float64
		low, high int64
	}{
		{"no spread: the ETA alone", 700, 140, 0, 5, 5},
		{"rate 2 ± 0.5", 600, 2, 0.5, 240, 400},
		{"the slow end at a quarter of the rate", 100, 10, 20, 4, 40},
		{"first in line", 1, 14, 3, 1, 1},
		{"no position", 0, 14, 3, 0, 0},
		{"no rate", 10, 0, 3, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := placeRange(c.pos, c.rate, c.sd)
			if got != (wire.Range{Low: c.low, High: c.high}) {
				t.Fatalf("placeRange(%d, %v, %v) = %+v, want {%d %d}", c.pos, c.rate, c.sd, got, c.low, c.high)
			}
			if eta := etaAt(c.pos, c.rate); eta > 0 && (got.Low > eta || got.High < eta) {
				t.Fatalf("range %+v does not hold the ETA %d", got, eta)
			}
		})
	}
}

// TestDrawRange: the formula's quartiles, checked against the numbers
// worked out by hand and against a simulated lottery.
func TestDrawRange(t *testing.T) {
	// 1000 in the draw, 100 a second in ticks of 100 ms: 10 a tick, p =
	// 0.01. t25 = ceil(ln 0.75 / ln 0.99) = ceil(28.62) = 29 ticks = 2.9 s;
	// t75 = ceil(ln 0.25 / ln 0.99) = ceil(137.93) = 138 ticks = 13.8 s.
	if got := drawRange(1000, 100, 100*time.Millisecond); got != (wire.Range{Low: 3, High: 14}) {
		t.Fatalf("drawRange(1000, 100/s, 100ms) = %+v, want {3 14}", got)
	}
	// Everyone is drawn in the next tick.
	if got := drawRange(5, 100, 100*time.Millisecond); got != (wire.Range{Low: 1, High: 1}) {
		t.Fatalf("a draw smaller than a batch: %+v, want {1 1}", got)
	}
	if got := drawRange(0, 100, time.Second); !got.IsZero() {
		t.Fatalf("an empty draw: %+v", got)
	}
	if got := drawRange(10, 0, time.Second); !got.IsZero() {
		t.Fatalf("no rate: %+v", got)
	}

	// A lottery of 200 drawing 5 a tick of 1 s, those drawn replaced by
	// newcomers: how many ticks does one visitor wait? The seed is fixed,
	// so the test cannot flake; the quartiles of 20000 waits sit within a
	// tick or two of the formula's (the sampling error is about half a
	// tick at the 75th percentile).
	const n, b, trials = 200, 5, 20000
	rng := rand.New(rand.NewPCG(1, 2))
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	waits := make([]int, trials)
	for i := range waits {
		ticks := 1
		for !drawnAmong(rng, idx, b) {
			ticks++
		}
		waits[i] = ticks
	}
	slices.Sort(waits)
	want := drawRange(n, b, time.Second)
	lo, hi := waits[trials/4], waits[3*trials/4]
	if math.Abs(float64(int64(lo)-want.Low)) > 2 || math.Abs(float64(int64(hi)-want.High)) > 2 {
		t.Fatalf("simulated quartiles %d and %d ticks, formula %+v", lo, hi, want)
	}
}

// drawnAmong draws b of the visitors in idx uniformly without replacement
// (a partial shuffle, which leaves idx another order of the same visitors)
// and reports whether visitor 0 is among them.
func drawnAmong(rng *rand.Rand, idx []int, b int) bool {
	n := len(idx)
	for i := range b {
		j := i + rng.IntN(n-i)
		idx[i], idx[j] = idx[j], idx[i]
		if idx[i] == 0 {
			return true
		}
	}
	return false
}

// TestStatusETARange: a waiting visitor is told the ETA alone as its
// range before this instance saw the room's rate measured (nothing is
// known of its spread), and a range that holds its ETA after, wider once
// the rate swung; in a lottery the range is the draw's quartiles. The
// hub's ETARange and DrawRange give what a poll gets.
func TestStatusETARange(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		const tick = 50 * time.Millisecond
		q := newQueue(t, r, fixedBatch(2, tick))
		vs := joinN(t, q, "ranges", 40, "v")
		st := mustStatus(t, q, "ranges", vs[39])
		if st.ETARange != (wire.Range{Low: st.ETASeconds, High: st.ETASeconds}) {
			t.Fatalf("before any admission: %+v, want the ETA alone", st)
		}
		for range 3 {
			admitTaken(t, q, "ranges")
		}
		st = mustStatus(t, q, "ranges", vs[39])
		if st.Status != wire.StatusWaiting || st.ETARange.IsZero() {
			t.Fatalf("after admissions: %+v, want a range", st)
		}
		if st.ETARange.Low > st.ETASeconds || st.ETARange.High < st.ETASeconds {
			t.Fatalf("range %+v does not hold the ETA %d", st.ETARange, st.ETASeconds)
		}
		if got := q.ETARange("ranges", st.Position); got != st.ETARange {
			t.Fatalf("ETARange for the hub %+v, a poll got %+v", got, st.ETARange)
		}
		// The rate this instance saw swings (as under max-active): the
		// range widens around the ETA.
		now := time.Now()
		m := q.roomMemOf("ranges")
		for i := range 20 {
			m.spread.observe(now.Add(time.Duration(i+1)*time.Second), float64(20+20*(i%2)))
		}
		st = mustStatus(t, q, "ranges", vs[39])
		if st.ETARange.Low >= st.ETASeconds && st.ETARange.High <= st.ETASeconds {
			t.Fatalf("after a swinging rate: %+v, want a range wider than the ETA %d", st.ETARange, st.ETASeconds)
		}
		if st.ETARange.Low > st.ETASeconds || st.ETARange.High < st.ETASeconds {
			t.Fatalf("range %+v does not hold the ETA %d", st.ETARange, st.ETASeconds)
		}

		randomRoom(t, q, "lot", settings.Room{})
		ls := joinN(t, q, "lot", 30, "l")
		for range 2 {
			admitTaken(t, q, "lot")
		}
		found := false
		for _, v := range ls {
			if st = mustStatus(t, q, "lot", v); st.Status == wire.StatusWaiting {
				found = true
				break
			}
		}
		if !found || st.InDraw == 0 {
			t.Fatalf("nobody in the draw after two ticks of 2 among 30: %+v", st)
		}
		want := drawRange(st.InDraw, q.rate("lot"), tick)
		if st.ETARange != want || want.IsZero() {
			t.Fatalf("in a draw: %+v, want the range %+v", st, want)
		}
		if got := q.DrawRange("lot", st.InDraw); got != want {
			t.Fatalf("DrawRange for the hub %+v, want %+v", got, want)
		}
	})
}

// TestETAFromTheRoomsOwnRate: before a room measured an admission rate,
// and while it admits nobody, a waiting visitor's ETA comes from the
// room's own settings, never from the instance's default rate (140/s
// here); a paused room tells no ETA at all.
func TestETAFromTheRoomsOwnRate(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		rooms := settingsOf{
			"slow":   {Batch: 1},                                                    // 10/s
			"paused": {Batch: 1, Paused: true},                                      // 10/s once resumed
			"full":   {Strategy: "max-active", MaxActive: 2, TokenTTL: time.Minute}, // 2 slots a minute once full
		}
		opts := fixedBatch(14, 100*time.Millisecond)
		opts.Settings = rooms
		q := newQueue(t, r, opts)
		for room, cfg := range rooms {
			if err := q.SetRoomConfig(ctx, room, cfg); err != nil {
				t.Fatal(err)
			}
		}

		vs := joinN(t, q, "slow", 41, "s")
		joined, err := q.Join(ctx, "slow", vs[40])
		if err != nil {
			t.Fatal(err)
		}
		st := mustStatus(t, q, "slow", vs[40])
		for what, s := range map[string]wire.State{"join": joined, "status": st} {
			if s.Position != 41 || s.ETASeconds != 5 || s.Rate != 10 {
				t.Fatalf("%s of the 41st in a room of batch 1: %+v, want ETA 5 s at 10/s", what, s)
			}
		}

		vs = joinN(t, q, "paused", 41, "p")
		st = mustStatus(t, q, "paused", vs[40])
		if !st.Paused || st.ETASeconds != 0 || st.Rate != 0 || !st.ETARange.IsZero() {
			t.Fatalf("paused room: %+v, want no ETA", st)
		}
		if st.NextPoll < 2*time.Second {
			t.Fatalf("paused room's 41st told to ask again in %v, want the 2.5 s (±10%%) its place gets", st.NextPoll)
		}
		if eta, rate, _ := q.Estimate("paused", 41); eta != 5 || rate != 10 {
			t.Fatalf("Estimate (which the hub does not send while paused): %d s at %v/s, want 5 s at 10/s", eta, rate)
		}

		// Two join and take the two slots with nobody left waiting (no
		// rate measured); three more wait while the room is full, and the
		// ticks measure no admission.
		joinN(t, q, "full", 2, "f")
		if res := admitTaken(t, q, "full"); len(res.Admitted) != 2 {
			t.Fatalf("first tick admitted %d, want 2", len(res.Admitted))
		}
		more := joinN(t, q, "full", 3, "g")
		if res := admitTaken(t, q, "full"); len(res.Admitted) != 0 {
			t.Fatalf("a full room admitted %d", len(res.Admitted))
		}
		st = mustStatus(t, q, "full", more[2])
		if st.Position != 3 || st.ETASeconds != 90 {
			t.Fatalf("3rd waiting in a full max-active room of 2 slots a minute: %+v, want ETA 90 s", st)
		}
	})
}
