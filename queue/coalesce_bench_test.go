package queue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// BenchmarkJoinBatch measures the Redis time of a coalesced call of n
// joins (fresh visitors of an open room, and of a room with presence
// off), as BenchmarkScripts does one join's: joinbatch-us/call from INFO
// commandstats, and its share per visitor, joinbatch-us/join, which is
// what a room's Redis core spends per join when joins arrive n at a time.
//
//	go test -run '^$' -bench JoinBatch -benchtime 2000x ./queue/
func BenchmarkJoinBatch(b *testing.B) {
	for _, bench := range []struct {
		room string
		n    int
	}{{"open", 1}, {"open", 8}, {"open", 50}, {"nopresence", 50}} {
		b.Run(fmt.Sprint(bench.room, "/", bench.n), func(b *testing.B) {
			room, n := bench.room, bench.n
			q, ctx := scriptsBench(b, "open")
			var version int64
			if room == "nopresence" {
				if err := q.SetRoomConfig(ctx, room, settings.Room{NoPresence: true}); err != nil {
					b.Fatal(err)
				}
				cfg, err := q.RoomConfig(ctx, room)
				if err != nil {
					b.Fatal(err)
				}
				version = cfg.Version()
			}
			key := batchKey{room: room, settings: version}
			// A batch of one is the single join's call: warm the batch
			// script too.
			q.joinBatch(ctx, key, []*batchJoin{{visitor: "w1"}, {visitor: "w2"}})
			cpu0 := resetStats(b, q)
			b.ResetTimer()
			for i := range b.N {
				run := make([]*batchJoin, n)
				for k := range run {
					run[k] = &batchJoin{visitor: benchVisitor(i*n + k)}
				}
				q.joinBatch(ctx, key, run)
				if run[0].err != nil {
					b.Fatal(run[0].err)
				}
			}
			reportScript(b, q, "joinbatch", cpu0)
			b.ReportMetric(lastMetric(b, q)/float64(n), "joinbatch-us/join")
		})
	}
}

// lastMetric is EVALSHA's usec_per_call since the last reset.
func lastMetric(b *testing.B, q *Queue) float64 {
	_, usec := evalshaSince(b, q, "usec_per_call")
	return usec
}

// evalshaSince is EVALSHA's calls and its field num (usec, usec_per_call)
// since the last reset of Redis's stats.
func evalshaSince(b *testing.B, q *Queue, num string) (int64, float64) {
	b.Helper()
	v, err := q.r.Do(context.Background(), "INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	info, _ := v.(string)
	calls, x, ok := evalshaStat(info, "cmdstat_evalsha:", "calls", num)
	if !ok || calls == 0 {
		b.Fatalf("no cmdstat_evalsha in INFO commandstats:\n%s", info)
	}
	return calls, x
}

// concurrently runs b.N calls of call (i = 0 … b.N-1) from callers
// goroutines at once, after resetting Redis's stats, and reports the
// Redis time of a call (all EVALSHA time over the b.N), the calls made in
// one EVALSHA, and the latency of a call as its caller sees it, p50 and
// p99; unit (and its plural units) names a call in the metrics.
func concurrently(b *testing.B, q *Queue, callers int, unit, units string, call func(i int) error) {
	b.Helper()
	resetStats(b, q)
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := range callers {
		wg.Go(func() {
			for i := c; i < b.N; i += callers {
				t0 := time.Now()
				if err := call(i); err != nil {
					b.Error(err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	calls, usec := evalshaSince(b, q, "usec")
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(usec/float64(b.N), "redis-us/"+unit)
	b.ReportMetric(float64(b.N)/float64(calls), units+"/call")
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-us")
}

// BenchmarkCoalescedJoins runs joins of one room from 50 goroutines at
// once, each join a new visitor, with each join a call of its own
// ("single", JoinBatch -1) and coalesced (the default): the Redis time
// per join (all EVALSHA time over the joins), the joins per call, and the
// latency of a join as its caller sees it, p50 and p99, which is what
// coalescing adds or saves. One op is one join.
//
//	go test -run '^$' -bench CoalescedJoins -benchtime 40000x ./queue/
func BenchmarkCoalescedJoins(b *testing.B) {
	const callers = 50
	for _, mode := range []struct {
		name  string
		batch int
	}{{"single", -1}, {"coalesced", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			q := newQueue(b, newRedis(b, redistest.StartReal(b), "rueidis"), &Options{JoinBatch: mode.batch})
			if _, _, err := q.JoinAt(ctx, "open", "warm", Invite{}, 0); err != nil {
				b.Fatal(err)
			}
			q.joinBatch(ctx, batchKey{room: "open"}, []*batchJoin{{visitor: "w1"}, {visitor: "w2"}})
			concurrently(b, q, callers, "join", "joins", func(i int) error {
				_, _, err := q.JoinAt(ctx, "open", benchVisitor(i), Invite{}, 0)
				return err
			})
		})
	}
}

// BenchmarkHerdJoins is BenchmarkCoalescedJoins for a herd: 256
// goroutines join one room at once, many more than a batch (64), with
// one call of the room's joins on the way at a time. One op is one join.
//
//	go test -run '^$' -bench HerdJoins -benchtime 100000x ./queue/
func BenchmarkHerdJoins(b *testing.B) {
	const callers = 256
	ctx := context.Background()
	q := newQueue(b, newRedis(b, redistest.StartReal(b), "rueidis"), nil)
	if _, _, err := q.JoinAt(ctx, "herd", "warm", Invite{}, 0); err != nil {
		b.Fatal(err)
	}
	q.joinBatch(ctx, batchKey{room: "herd"}, []*batchJoin{{visitor: "w1"}, {visitor: "w2"}})
	concurrently(b, q, callers, "join", "joins", func(i int) error {
		_, _, err := q.JoinAt(ctx, "herd", benchVisitor(i), Invite{}, 0)
		return err
	})
}

// BenchmarkCoalescedStatus is BenchmarkCoalescedJoins for status reads:
// 50 goroutines read the states of visitors waiting in one room, each
// read a call of its own ("single") and coalesced (the default). One op
// is one read.
//
//	go test -run '^$' -bench CoalescedStatus -benchtime 40000x ./queue/
func BenchmarkCoalescedStatus(b *testing.B) {
	const callers = 50
	for _, mode := range []struct {
		name  string
		batch int
	}{{"single", -1}, {"coalesced", 0}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			q := newQueue(b, newRedis(b, redistest.StartReal(b), "rueidis"), &Options{JoinBatch: mode.batch})
			const waiting = 5000
			for i := 0; i < waiting; i += 50 {
				run := make([]*batchJoin, 50)
				for k := range run {
					run[k] = &batchJoin{visitor: benchVisitor(i + k)}
				}
				q.joinBatch(ctx, batchKey{room: "open"}, run)
				if run[0].err != nil {
					b.Fatal(run[0].err)
				}
			}
			if _, err := q.Status(ctx, "open", benchVisitor(0)); err != nil {
				b.Fatal(err)
			}
			concurrently(b, q, callers, "status", "statuses", func(i int) error {
				_, err := q.Status(ctx, "open", benchVisitor(i%waiting))
				return err
			})
		})
	}
}
