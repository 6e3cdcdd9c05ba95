package queue

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// chiSquare is Pearson's statistic of counts against an even spread.
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	exp := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		d := float64(c) - exp
		x += d * d / exp
	}
	return x
}

// TestLotteryRankUniform: the lottery's pick function spreads evenly over
// the ranks, for any size, and stays in range. The seed is fixed, so the
// test is deterministic: it cannot flake.
func TestLotteryRankUniform(t *testing.T) {
	const seed = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	for _, n := range []int64{2, 7, 10, 1000} {
		counts := make([]int, min(n, 10))
		const draws = 20000
		for tick := range int64(draws / 5) {
			for i := range int64(5) {
				r := LotteryRank(seed, tick, i, n)
				if r < 0 || r >= n {
					t.Fatalf("n=%d: rank %d out of range", n, r)
				}
				counts[r*int64(len(counts))/n]++
			}
		}
		// Bound at a p-value of about 1e-6 for 9 degrees of freedom (the
		// most here): only a biased function exceeds it.
		if x := chiSquare(counts); x > 45 {
			t.Errorf("n=%d: chi-square %.1f over %v", n, x, counts)
		}
	}
	// 52 bits as a fraction, times n, rounded down: a small n is exact.
	if LotteryRank(seed, 1, 0, 1) != 0 {
		t.Fatal("one waiting: rank must be 0")
	}
}

// randomRoom makes room admit by lottery with batch visitors a tick.
func randomRoom(t *testing.T, q *Queue, room string, c settings.Room) {
	t.Helper()
	c.Method = settings.MethodRandom
	if err := q.SetRoomConfig(context.Background(), room, c); err != nil {
		t.Fatal(err)
	}
}

// TestRandomDrawsFromSeed: a random room shows its waiting visitors the
// draw (size and chance, no place) on join and status; each tick admits
// the picks the committed seed gives (recomputed here with LotteryRank
// from the revealed seed and the waiting list before the tick), a pick
// who is away is set aside and not admitted; the seed stays hidden while
// the lottery runs and matches its commitment once the room leaves random.
func TestRandomDrawsFromSeed(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "lottery"
		q := newQueue(t, r, fixedBatch(3, 5*time.Millisecond))
		randomRoom(t, q, room, settings.Room{})
		before, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if before.Commitment == "" || before.Seed != "" || before.Ended {
			t.Fatalf("lottery before the end: %+v, want a commitment and no seed", before)
		}
		joinN(t, q, room, 20, "v")
		st, err := q.Join(ctx, room, "v005")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != wire.StatusWaiting || st.InDraw != 20 || st.Position != 0 || st.ChancePerMinute <= 0 {
			t.Fatalf("join in a random room: %+v, want in a draw of 20", st)
		}
		if b := string(st.AppendJSON(nil)); !strings.Contains(b, `"inDraw":20,"chancePerMinute":`) || strings.Contains(b, "position") {
			t.Fatalf("encoded: %s", b)
		}
		away := []string{"v003", "v011", "v017"}
		lastSeen(t, r, room, "seen", 2*time.Minute, away...)

		type tickRec struct {
			tick    int64
			waiting []string
			got     []string
		}
		var recs []tickRec
		for len(recs) < 5 {
			w := queued(t, r, room)
			res := admitTaken(t, q, room)
			recs = append(recs, tickRec{res.Tick, w, admittedIDs(res)})
		}
		if st := mustStatus(t, q, room, "v000"); st.Status == wire.StatusWaiting && st.InDraw == 0 {
			t.Fatalf("status in a random room: %+v", st)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		l, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Ended || l.Seed == "" || Commitment(l.Seed) != before.Commitment || l.Commitment != before.Commitment {
			t.Fatalf("revealed %+v, committed %s", l, before.Commitment)
		}
		// Replay every tick from the seed.
		var admitted []string
		for _, rec := range recs {
			left := slices.Clone(rec.waiting)
			var want []string
			for i := int64(0); len(want) < 3 && len(left) > 0; i++ {
				k := LotteryRank(l.Seed, rec.tick, i, int64(len(left)))
				v := left[k]
				left = slices.Delete(left, int(k), int(k)+1)
				if !slices.Contains(away, v) {
					want = append(want, v)
				}
			}
			if !slices.Equal(rec.got, want) {
				t.Fatalf("tick %d admitted %v, the seed gives %v", rec.tick, rec.got, want)
			}
			admitted = append(admitted, rec.got...)
		}
		if len(admitted) != 15 {
			t.Fatalf("admitted %d, want 15", len(admitted))
		}
		for _, v := range away {
			if slices.Contains(admitted, v) {
				t.Fatalf("%s was away and was admitted", v)
			}
		}
	})
}

// TestRandomUniformInRedis: the script's picks are uniform over the ranks
// of those waiting. 10 wait, each tick admits one and a newcomer takes the
// back; over 300 ticks each rank should be drawn about 30 times. The bound
// is loose (p ≈ 1e-6 for 9 degrees of freedom) so that only a biased draw
// fails.
func TestRandomUniformInRedis(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		const room = "uniform"
		q := newQueue(t, r, fixedBatch(1, 2*time.Millisecond))
		randomRoom(t, q, room, settings.Room{})
		joinN(t, q, room, 10, "v")
		counts := make([]int, 10)
		for i := range 300 {
			w := queued(t, r, room)
			if len(w) != 10 {
				t.Fatalf("%d waiting, want 10", len(w))
			}
			got := admittedIDs(admitTaken(t, q, room))
			if len(got) != 1 {
				t.Fatalf("admitted %v, want one", got)
			}
			counts[slices.Index(w, got[0])]++
			if _, err := q.Join(context.Background(), room, "n"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		if x := chiSquare(counts); x > 45 {
			t.Fatalf("chi-square %.1f over ranks %v", x, counts)
		}
	})
}

// TestRandomBigRoomTick: a tick of a big random room draws by rank, so it
// stays short: 100,000 waiting and a batch of 50; so do the ticks that
// walk the waiting for the lottery's log when the room turns random.
func TestRandomBigRoomTick(t *testing.T) {
	if testing.Short() {
		t.Skip("big room")
	}
	srv := redistest.StartReal(t)
	r := newRedis(t, srv, "rueidis")
	ctx := context.Background()
	const room = "big"
	q := newQueue(t, r, fixedBatch(50, 5*time.Millisecond))
	randomRoom(t, q, room, settings.Room{Paused: true})
	// Fill the queue directly: 100,000 joins would take the test's time.
	for i := 0; i < 100000; i += 1000 {
		args := []string{"ZADD", prefix(room) + "q"}
		for j := i; j < i+1000; j++ {
			args = append(args, strconv.Itoa(j+1), fmt.Sprintf("b%06d", j))
		}
		if _, err := r.Do(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	randomRoom(t, q, room, settings.Room{})
	// The lottery's log first lists who waits, a slice per call at most
	// every 20 ms (lotlog.lua); the room draws once it is done.
	var worst time.Duration
	walk := time.Now()
	walked := 0
	for {
		start := time.Now()
		res := admitTaken(t, q, room)
		worst = max(worst, time.Since(start))
		if len(res.Admitted) > 0 {
			break
		}
		walked++
		if time.Since(walk) > 30*time.Second {
			t.Fatal("the log's walk of 100,000 did not end")
		}
	}
	t.Logf("the log's walk of 100,000 waiting: %v over %d ticks without a draw", time.Since(walk), walked)
	for range 5 {
		start := time.Now()
		res := admitTaken(t, q, room)
		worst = max(worst, time.Since(start))
		if len(res.Admitted) != 50 {
			t.Fatalf("admitted %d, want 50", len(res.Admitted))
		}
	}
	t.Logf("slowest tick of a 100,000 room: %v", worst)
}

// TestRandomKeepsLimits: maxActive and seats bound a lottery's admissions
// as they bound fifo's.
func TestRandomKeepsLimits(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(5, 5*time.Millisecond))
		randomRoom(t, q, "ma", settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 3})
		randomRoom(t, q, "seats", settings.Room{Seats: 4})
		joinN(t, q, "ma", 20, "m")
		joinN(t, q, "seats", 20, "s")
		var ma, seats int
		for range 4 {
			ma += len(admitTaken(t, q, "ma").Admitted)
			seats += len(admitTaken(t, q, "seats").Admitted)
		}
		if ma != 3 || seats != 4 {
			t.Fatalf("admitted %d under maxActive 3 and %d with 4 seats", ma, seats)
		}
		st, err := q.Status(ctx, "ma", "m000")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == wire.StatusWaiting && st.InDraw != 17 {
			t.Fatalf("m000 after 3 admitted: %+v, want in a draw of 17", st)
		}
	})
}

// TestRandomSeedAfterLoss: Redis loses a random room. The lottery that
// goes on draws with a seed of 256 bits whose commitment is stored and
// begins the log before the first pick; once the room leaves random, the
// revealed seed matches that commitment and gives every pick logged since.
func TestRandomSeedAfterLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "lottery"
		opts := fixedBatch(3, 5*time.Millisecond)
		opts.Settings = settingsOf{room: {Method: settings.MethodRandom}}
		q := newQueue(t, r, opts)
		randomRoom(t, q, room, settings.Room{})
		before, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		vs := joinN(t, q, room, 30, "v")
		admitTaken(t, q, room)
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		// The visitors come back with their tickets; the settings with
		// them.
		var tickets []wire.Ticket
		for i := range vs {
			tickets = append(tickets, wire.Ticket{Room: room, Seq: int64(i + 1), IssuedAt: time.Now().Add(-time.Minute)})
		}
		if res, err := q.Retake(ctx, room, vs, tickets); err != nil || !res.Settings || res.Tickets == 0 {
			t.Fatalf("retake: %+v %v", res, err)
		}
		picked := 0
		for range 4 {
			picked += len(admitTaken(t, q, room).Admitted)
		}
		if picked == 0 {
			t.Fatal("nothing drawn after the loss")
		}
		during, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if len(during.Commitment) != 64 || during.Commitment == before.Commitment || during.Seed != "" {
			t.Fatalf("lottery after the loss: %+v (before: %s), want a new commitment and no seed", during, before.Commitment)
		}
		log, err := q.ReadLotteryLog(ctx, room, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Entries) == 0 || log.Entries[0].Event != LogStart || log.Entries[0].Commitment == nil ||
			*log.Entries[0].Commitment != during.Commitment {
			t.Fatalf("the log after the loss does not begin with the commitment %s: %+v", during.Commitment, log.Entries)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		l, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(l.Seed)
		if err != nil || len(raw) != 32 {
			t.Fatalf("seed %q is not 256 bits of hex", l.Seed)
		}
		if Commitment(l.Seed) != during.Commitment {
			t.Fatalf("revealed seed does not match the commitment %s", during.Commitment)
		}
		checked := 0
		for _, e := range log.Entries {
			for _, pk := range e.Picks {
				if got := LotteryRank(l.Seed, *e.Tick, pk.I, pk.N); got != pk.Rank {
					t.Fatalf("tick %d pick %d: rank %d logged, the seed gives %d", *e.Tick, pk.I, pk.Rank, got)
				}
				checked++
			}
		}
		if checked < picked {
			t.Fatalf("checked %d picks, %d admitted", checked, picked)
		}
	})
}
