package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

// The join and status benchmarks run against a real redis-server with each
// client at 50 concurrent callers (RunParallel with parallelism 25 on 2
// cores), the concurrency redis-benchmark -c 50 uses.
//
//	go test -run '^$' -bench . -benchtime 3s ./queue/
func benchEach(b *testing.B, f func(b *testing.B, q *Queue)) {
	for _, client := range clients {
		b.Run("real/"+client, func(b *testing.B) {
			srv := redistest.StartReal(b)
			q := newQueue(b, newRedis(b, srv, client), nil)
			f(b, q)
		})
	}
}

func reportRate(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

func BenchmarkJoin(b *testing.B) {
	benchEach(b, func(b *testing.B, q *Queue) {
		var n atomic.Int64
		b.SetParallelism(25)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				if _, err := q.Join(ctx, "bench", fmt.Sprintf("v%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportRate(b, start)
	})
}

func BenchmarkStatus(b *testing.B) {
	benchEach(b, func(b *testing.B, q *Queue) {
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
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := q.Status(ctx, "bench", fmt.Sprintf("v%d", n.Add(1)%waiting)); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportRate(b, start)
	})
}
