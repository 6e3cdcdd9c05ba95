package report

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// countingRedis counts the calls made through it.
type countingRedis struct {
	queue.Redis
	calls atomic.Int64
}

func (c *countingRedis) Eval(ctx context.Context, s *queue.Script, keys []string, args ...string) (any, error) {
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
