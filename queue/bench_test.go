package queue

import (
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/waitroom/waitroom/internal/redistest"
)

// The join and status benchmarks run against a real redis-server with each
// client at 50 concurrent callers (RunParallel with parallelism 25 on 2
// cores), the concurrency redis-benchmark -c 50 uses. Each also measures
// raw redis-benchmark (no pipelining, -c 50: ZADD for join, ZRANK for
// status) on the same machine in the same run and reports the ratio, since
// absolute rates on a shared 2-core machine mean little alone.
//
//	go test -run '^$' -bench . -benchtime 3s ./queue/
func benchEach(b *testing.B, raw string, f func(b *testing.B, q *Queue)) {
	for _, client := range clients {
		b.Run("real/"+client, func(b *testing.B) {
			srv := redistest.StartReal(b)
			q := newQueue(b, newRedis(b, srv, client), nil)
			r := rawRate(b, raw) // before f, which resets the timer
			f(b, q)
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "ops/s")
			if r > 0 {
				b.ReportMetric(r, "raw-"+raw+"/s")
				b.ReportMetric(rate/r, "of-raw")
			}
		})
	}
}

var (
	rawOnce  sync.Once
	rawRates map[string]float64
)

// rawRate is redis-benchmark's rate for cmd ("zadd" or "zrank") against a
// redis-server of its own, measured once per process.
func rawRate(b *testing.B, cmd string) float64 {
	rawOnce.Do(func() {
		rawRates = map[string]float64{}
		if _, err := exec.LookPath("redis-benchmark"); err != nil {
			return
		}
		srv := redistest.StartReal(b)
		port := srv.Addr[strings.LastIndexByte(srv.Addr, ':')+1:]
		run := func(name string, args ...string) {
			out, err := exec.Command("redis-benchmark", append([]string{"-p", port, "-c", "50", "-n", "200000", "-r", "100000", "--csv"}, args...)...).Output()
			if err != nil {
				return
			}
			recs, _ := csv.NewReader(strings.NewReader(string(out))).ReadAll()
			for _, rec := range recs {
				if len(rec) > 1 {
					if v, err := strconv.ParseFloat(rec[1], 64); err == nil {
						rawRates[name] = v
					}
				}
			}
		}
		run("zadd", "-t", "zadd")
		run("zrank", "ZRANK", "myzset", "element:__rand_int__")
	})
	return rawRates[cmd]
}

func BenchmarkJoin(b *testing.B) {
	benchEach(b, "zadd", func(b *testing.B, q *Queue) {
		var n atomic.Int64
		b.SetParallelism(25)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := q.Join(ctx, "bench", fmt.Sprintf("v%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

func BenchmarkStatus(b *testing.B) {
	benchEach(b, "zrank", func(b *testing.B, q *Queue) {
		ctx := context.Background()
		const waiting = 10000
		for i := range waiting {
			if _, err := q.Join(ctx, "bench", fmt.Sprintf("v%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		var n atomic.Int64
		b.SetParallelism(25)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := q.Status(ctx, "bench", fmt.Sprintf("v%d", n.Add(1)%waiting)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
