package report

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/wire"
)

// countingRedis counts the calls made through it.
type countingRedis struct {
	rediscall.Redis
	calls atomic.Int64
}

func (c *countingRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	c.calls.Add(1)
	return c.Redis.Eval(ctx, s, keys, args...)
}

func (c *countingRedis) Do(ctx context.Context, args ...string) (any, error) {
	c.calls.Add(1)
	return c.Redis.Do(ctx, args...)
}

// BenchmarkRecorderCalls is what the reports add per admitted visitor, as
// a server does it: joins on one instance, admissions in ticks of 50 on
// another, each writing once a second. It reports the Redis calls (script
// calls: each is one round trip) per admitted visitor.
//
//	go test ./report -run '^$' -bench RecorderCalls -benchtime 20000x
func BenchmarkRecorderCalls(b *testing.B) {
	srv := redistest.StartReal(b)
	r := &countingRedis{Redis: newRedis(b, srv, "rueidis")}
	ctx := context.Background()
	joins, ticks := New(r, nil), New(r, nil)
	const batch, perSecond = 50, 10 // ticks of 100 ms
	at := time.Now().Add(-time.Minute)
	b.ResetTimer()
	var adm []wire.Admission
	for i := range b.N {
		v := fmt.Sprintf("v%d", i)
		joins.Joined("drop", v, at, Promise{ETA: time.Second})
		adm = append(adm, wire.Admission{Visitor: v, NotBefore: at.Add(time.Second)})
		if len(adm) == batch {
			ticks.Ticked("drop", 100, adm)
			adm = nil
		}
		if (i+1)%(batch*perSecond) == 0 {
			// A second: each instance writes once.
			if err := joins.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			if err := ticks.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	_ = joins.Flush(ctx)
	_ = ticks.Flush(ctx)
	b.StopTimer()
	b.ReportMetric(float64(r.calls.Load())/float64(b.N), "calls/admitted")
}

// BenchmarkMonthReadBesidePings reads a 31-day report of a busy room (every
// minute of every hour holds counts and histogram buckets) four times at
// once, as four dashboards would, while another client sends PING in a
// loop as a stand-in for admission's commands. It reports the slowest
// PING and the 99th percentile of them during the reads.
//
//	go test ./report -run '^$' -bench MonthReadBesidePings -benchtime 3x
func BenchmarkMonthReadBesidePings(b *testing.B) {
	srv := redistest.StartReal(b)
	r := newRedis(b, srv, "rueidis")
	ping := newRedis(b, srv, "go-redis")
	ctx := context.Background()
	to := time.Now().Truncate(time.Hour)
	from := to.Add(-31 * 24 * time.Hour)
	for h := from.Unix() / 3600; h < to.Unix()/3600; h++ {
		args := []string{"HSET", hourKey("drop", h)}
		for m := range 60 {
			for _, f := range []string{"a", "n", "w", "q3", "q7", "q11", "o2", "o5", "e1", "e4", "pn", "pw"} {
				args = append(args, fmt.Sprintf("%d:%s", m, f), "17")
			}
		}
		if _, err := r.Do(ctx, args...); err != nil {
			b.Fatal(err)
		}
	}
	rc := New(r, nil)
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := rc.Read(ctx, "drop", from, to); err != nil {
					b.Error(err)
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
				t0 := time.Now()
				if _, err := ping.Do(ctx, "PING"); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ping-max-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ping-p99-ms")
	}
}
