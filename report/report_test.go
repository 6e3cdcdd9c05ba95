package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

func TestBuckets(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {999 * time.Millisecond, 0}, {time.Second, 1}, {2 * time.Second, 5},
		{2*time.Second - time.Millisecond, 4}, {4 * time.Second, 9}, {1000 * time.Hour, Buckets - 1},
	} {
		if got := bucketOf(tc.d); got != tc.want {
			t.Errorf("bucketOf(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
	for b := 1; b < Buckets; b++ {
		lo, hi := bucketBounds(b)
		if got := bucketOf(time.Duration(math.Ceil(lo * float64(time.Second)))); got != b && b > 1 {
			t.Errorf("bucketOf(lower bound of %d) = %d", b, got)
		}
		if got := bucketOf(time.Duration(hi*float64(time.Second)) - time.Millisecond); got != b && b < Buckets-1 {
			t.Errorf("bucketOf(just under the upper bound of %d) = %d", b, got)
		}
	}
	var h Histogram
	if h.Quantile(0.5) != 0 {
		t.Fatal("an empty histogram's median is not 0")
	}
	for s := 1; s <= 100; s++ {
		h.Add(time.Duration(s) * time.Second)
	}
	for _, q := range []float64{0.5, 0.9, 0.99} {
		checkWithinBucket(t, fmt.Sprint("q", q), h.Quantile(q), q*100)
	}
}

// checkWithinBucket fails unless got (seconds) is in the bucket of want.
func checkWithinBucket(t *testing.T, what string, got, want float64) {
	t.Helper()
	gb := bucketOf(time.Duration(got * float64(time.Second)))
	wb := bucketOf(time.Duration(want * float64(time.Second)))
	if gb != wb {
		t.Errorf("%s = %v s (bucket %d), want the bucket of %v s (%d)", what, got, gb, want, wb)
	}
}

// run is a known run of one room over two instances: joins and refusals
// on a, admissions and origin times on b.
type run struct {
	visitors int
	waits    []time.Duration // lived by visitor i
	promised int64           // visitors told a wait
	within   int64           // of those, admitted within ±20 % of it
}

// play records the run's events; every visitor i waits i+1 seconds. Even
// visitors are told their wait exactly, visitors 4k+1 twice it, visitors
// 4k+3 nothing.
func (k *run) play(a, b *Recorder, room string) {
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var adm []wire.Admission
	for i := range k.visitors {
		v := fmt.Sprintf("v%03d", i)
		w := time.Duration(i+1) * time.Second
		eta := w
		switch i % 4 {
		case 1:
			eta = 2 * w
		case 3:
			eta = -1
		}
		if eta >= 0 {
			k.promised++
		}
		if i%2 == 0 {
			k.within++
		}
		k.waits = append(k.waits, w)
		a.Joined(room, v, base, Promise{ETA: eta})
		adm = append(adm, wire.Admission{Visitor: v, NotBefore: base.Add(w), ExpiresAt: base.Add(w + time.Minute)})
	}
	for _, r := range []struct {
		reason string
		n      int
	}{{RateLimit, 3}, {Pow, 2}, {Invite, 1}, {Closed, 4}, {"unknown", 9}} {
		for range r.n {
			a.Refused(room, r.reason)
		}
	}
	for range 5 {
		a.Left(room)
	}
	// Four ticks: 100 waiting before, the largest sample.
	q := len(adm) / 4
	b.Ticked(room, int64(k.visitors), nil)
	for i := range 4 {
		b.Ticked(room, int64(k.visitors-(i+1)*q), adm[i*q:(i+1)*q])
	}
	now := time.Now()
	for s := 1; s <= 10; s++ {
		b.Ended(room, now.Add(-time.Duration(s*30)*time.Second), now)
	}
}

func TestKnownRun(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r rediscall.Redis) {
		ctx := context.Background()
		a, b := New(r, nil), New(r, nil)
		const room = "drop"
		// The queue's presence counts as the recorders first see them,
		// then as they stand after the run.
		stats := "wr:{" + room + "}:stats"
		mustDo(t, r, "HSET", stats, "skipped", "7", "dropped", "2")
		k := &run{visitors: 100}
		k.play(a, b, room)
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mustDo(t, r, "HSET", stats, "skipped", "10", "dropped", "5", "full", "1")
		before := time.Now()
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := a.Read(ctx, room, time.Now().Add(-24*time.Hour), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		tot := rep.Totals
		if tot.Arrivals != 100 || tot.Admitted != 100 || tot.PeakWaiting != 100 {
			t.Errorf("arrivals %d, admitted %d, peak %d; want 100 each", tot.Arrivals, tot.Admitted, tot.PeakWaiting)
		}
		if want := (Refused{RateLimit: 3, Pow: 2, Invite: 1, Closed: 4}); tot.Refused != want {
			t.Errorf("refused %+v, want %+v", tot.Refused, want)
		}
		if want := (Left{Waiting: 5, Away: 3, Dropped: 3}); tot.Left != want {
			t.Errorf("left %+v, want %+v", tot.Left, want)
		}
		if tot.QueueSeconds.Count != 100 {
			t.Errorf("queue times counted: %d, want 100", tot.QueueSeconds.Count)
		}
		checkWithinBucket(t, "queue p50", tot.QueueSeconds.P50, 50)
		checkWithinBucket(t, "queue p90", tot.QueueSeconds.P90, 90)
		checkWithinBucket(t, "queue p99", tot.QueueSeconds.P99, 99)
		if tot.OriginSeconds.Count != 10 {
			t.Errorf("origin times counted: %d, want 10", tot.OriginSeconds.Count)
		}
		checkWithinBucket(t, "origin p50", tot.OriginSeconds.P50, 150)
		checkWithinBucket(t, "origin p90", tot.OriginSeconds.P90, 270)
		p := tot.Promised
		if p.Count != k.promised || math.Abs(p.WithinShare-float64(k.within)/float64(k.promised)) > 1e-9 {
			t.Errorf("promised %+v, want count %d and share %d/%d", p, k.promised, k.within, k.promised)
		}
		// 50 were told exactly, 25 missed by their wait: the median miss is 0.
		checkWithinBucket(t, "median miss", p.MedianAbsErrorSeconds, 0)
		if tot.SoldOutAt == nil || tot.SoldOutAt.Before(before.Add(-time.Second)) || tot.SoldOutAt.After(time.Now().Add(time.Second)) {
			t.Errorf("sold out at %v, want about %v", tot.SoldOutAt, before)
		}
		var series Minute
		for _, m := range rep.Series {
			series.Arrivals += m.Arrivals
			series.Admitted += m.Admitted
		}
		if series.Arrivals != 100 || series.Admitted != 100 {
			t.Errorf("series sums %+v", series)
		}
		// Matched joins are gone; nothing is counted twice.
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		again, err := a.Read(ctx, room, rep.From, rep.To)
		if err != nil {
			t.Fatal(err)
		}
		if again.Totals.QueueSeconds.Count != 100 || again.Totals.Left != tot.Left {
			t.Errorf("a second flush changed the report: %+v", again.Totals)
		}
		n, _ := r.Do(ctx, "HLEN", joinKey(room, time.Now().Unix()/86400))
		if n != int64(0) {
			t.Errorf("%v joins left after their admission", n)
		}
	})
}

func mustDo(t *testing.T, r rediscall.Redis, args ...string) {
	t.Helper()
	if _, err := r.Do(context.Background(), args...); err != nil {
		t.Fatal(err)
	}
}

// An admission on the instance that took the join, before it wrote it,
// is matched from memory.
func TestMatchLocalJoin(t *testing.T) {
	srv := redistest.StartMini(t)
	r := newRedis(t, srv, "go-redis")
	ctx := context.Background()
	rc := New(r, nil)
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	rc.Joined("r1", "v1", at, Promise{ETA: 40 * time.Second, Low: 30 * time.Second, High: 50 * time.Second})
	rc.Joined("r1", "v2", at, Promise{ETA: -1, Low: 10 * time.Second, High: 20 * time.Second})
	rc.Joined("r1", "v3", at, Promise{ETA: 50 * time.Second})
	rc.Ticked("r1", 0, []wire.Admission{
		{Visitor: "v1", NotBefore: at.Add(45 * time.Second)},
		{Visitor: "v2", NotBefore: at.Add(45 * time.Second)},
		{Visitor: "v3", NotBefore: at.Add(45 * time.Second)},
	})
	if err := rc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := rc.Read(ctx, "r1", time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// v1 and v3 were told an ETA, both kept; v1 and v2 a range, v2's
	// missed.
	p := rep.Totals.Promised
	if p.Count != 2 || p.WithinShare != 1 || p.RangeCount != 2 || p.InRangeShare != 0.5 || rep.Totals.QueueSeconds.Count != 3 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	checkWithinBucket(t, "median miss", p.MedianAbsErrorSeconds, 5)
	checkWithinBucket(t, "queue p50", rep.Totals.QueueSeconds.P50, 45)
	if n, _ := r.Do(ctx, "EXISTS", joinKey("r1", time.Now().Unix()/86400)); n != int64(0) {
		t.Error("a join matched in memory was written")
	}
}

// Minutes of an earlier hour go to that hour's hash, which expires after
// the retention.
func TestHoursAndRetention(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r rediscall.Redis) {
		ctx := context.Background()
		rc := New(r, &Options{Retention: 2 * time.Hour})
		old := time.Now().Add(-3 * time.Hour)
		rc.mu.Lock()
		rc.room("r2").at(old).arrivals = 7
		rc.mu.Unlock()
		rc.Joined("r2", "v1", time.Now(), Promise{ETA: -1})
		if err := rc.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := rc.Read(ctx, "r2", old.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Totals.Arrivals != 8 || len(rep.Series) != 2 || rep.Series[0].Arrivals != 7 {
			t.Fatalf("report %+v", rep)
		}
		ttl, err := r.Do(ctx, "TTL", hourKey("r2", old.Unix()/3600))
		if n, _ := ttl.(int64); err != nil || n <= 0 || n > 3*3600 {
			t.Fatalf("ttl of an hour's hash: %v %v", ttl, err)
		}
		// A range that ends before the old minute leaves it out.
		rep, err = rc.Read(ctx, "r2", old.Add(-time.Hour), old.Add(-time.Minute))
		if err != nil || rep.Totals.Arrivals != 0 {
			t.Fatalf("earlier range: %+v %v", rep.Totals, err)
		}
	})
}

func TestReadRange(t *testing.T) {
	srv := redistest.StartMini(t)
	rc := New(newRedis(t, srv, "go-redis"), nil)
	now := time.Now()
	if _, err := rc.Read(context.Background(), "r", now, now); !errors.Is(err, ErrRange) {
		t.Fatalf("empty range: %v", err)
	}
	if _, err := rc.Read(context.Background(), "Bad Room", now, now.Add(time.Hour)); !errors.Is(err, wire.ErrInvalidRoom) {
		t.Fatalf("bad room: %v", err)
	}
	rep, err := rc.Read(context.Background(), "r", now.Add(-30*24*time.Hour), now)
	if err != nil || rep.Series == nil || rep.Totals.SoldOutAt != nil {
		t.Fatalf("30 days of nothing: %+v %v", rep, err)
	}
}

// Run writes within Every and once more when it stops; Finish hands the
// event's report to OnReady.
func TestRunAndFinish(t *testing.T) {
	srv := redistest.StartMini(t)
	r := newRedis(t, srv, "rueidis")
	ready := make(chan Report, 1)
	rc := New(r, &Options{Every: 20 * time.Millisecond, OnReady: func(_ context.Context, rep Report) { ready <- rep }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rc.Run(ctx) }()
	from := time.Now().Add(-time.Minute)
	reader := New(r, nil)
	rc.Joined("r3", "v1", time.Now(), Promise{ETA: time.Second})
	waitfor.Until(t, 5*time.Second, "the join written", func() bool {
		rep, err := reader.Read(context.Background(), "r3", from, time.Now().Add(time.Minute))
		return err == nil && rep.Totals.Arrivals == 1
	})
	rc.Refused("r3", Closed)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rep, err := reader.Read(context.Background(), "r3", from, time.Now().Add(time.Minute))
	if err != nil || rep.Totals.Refused.Closed != 1 {
		t.Fatalf("after stop: %+v %v", rep.Totals, err)
	}
	rc.Refused("r3", Pow)
	got, err := rc.Finish(context.Background(), "r3", "launch", from, time.Now().Add(time.Minute))
	if err != nil || got.Event != "launch" || got.Totals.Refused.Pow != 1 {
		t.Fatalf("finish: %+v %v", got, err)
	}
	if rep := <-ready; rep.Event != "launch" {
		t.Fatalf("ready: %+v", rep)
	}
}

// FinishLater finishes an event's report once after its end, late enough
// to hold what another instance counted just before the end.
func TestFinishLater(t *testing.T) {
	srv := redistest.StartMini(t)
	r := newRedis(t, srv, "go-redis")
	ready := make(chan Report, 2)
	every := 20 * time.Millisecond
	a := New(r, &Options{Every: every, OnReady: func(_ context.Context, rep Report) { ready <- rep }})
	b := New(r, &Options{Every: every}) // another instance
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, rc := range []*Recorder{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); rc.Run(ctx) }()
	}
	from, to := time.Now().Add(-time.Minute), time.Now().Add(50*time.Millisecond)
	a.FinishLater("r5", "sale", from, to)
	a.FinishLater("r5", "sale", from, to) // asked twice: finished once
	b.Joined("r5", "v1", time.Now(), Promise{ETA: time.Second})
	rep := <-ready
	if got := time.Now(); got.Before(to.Add(3 * every)) {
		t.Errorf("finished %v after the end, want at least %v", got.Sub(to), 3*every)
	}
	if rep.Event != "sale" || rep.Room != "r5" || rep.Totals.Arrivals != 1 {
		t.Fatalf("report %+v", rep)
	}
	a.mu.Lock()
	pending := len(a.finishes)
	a.mu.Unlock()
	if pending != 0 || len(ready) != 0 {
		t.Fatalf("after the report: %d pending, %d more ready", pending, len(ready))
	}
	cancel()
	wg.Wait()
}

func TestCSV(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 4, 0, 0, time.UTC)
	rep := Report{Series: []Minute{{At: at, Arrivals: 3, PeakWaiting: 9, Admitted: 2, Refused: Refused{Pow: 1}, Left: Left{Dropped: 4}}}}
	var buf bytes.Buffer
	if err := rep.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "minute,arrivals,") || lines[1] != "2026-12-01T10:04:00Z,3,9,2,0,1,0,0,0,0,4" {
		t.Fatalf("csv:\n%s", buf.String())
	}
}

// A room or visitor string the caller reuses (fiber's alias request
// buffers) is not the key the recorder keeps.
func TestCallerBuffersReused(t *testing.T) {
	srv := redistest.StartMini(t)
	r := newRedis(t, srv, "go-redis")
	rc := New(r, nil)
	room, visitor := []byte("r4"), []byte("v1")
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	rc.Joined(unsafe.String(&room[0], len(room)), unsafe.String(&visitor[0], len(visitor)), at, Promise{ETA: time.Second})
	copy(room, "zz")
	copy(visitor, "zz")
	rc.Joined("r4", "v2", at, Promise{ETA: time.Second})
	rc.Ticked("r4", 2, []wire.Admission{{Visitor: "v1", NotBefore: at.Add(time.Second)}})
	if err := rc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := rc.Read(context.Background(), "r4", time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
	if err != nil || rep.Totals.Arrivals != 2 || rep.Totals.QueueSeconds.Count != 1 {
		t.Fatalf("report %+v %v", rep.Totals, err)
	}
}
