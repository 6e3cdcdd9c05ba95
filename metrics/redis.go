package metrics

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/internal/rediscall"
)

// Redis returns next with every call timed by operation (the script's
// name, or the command's in lower case) and its failures counted.
func (m *Metrics) Redis(next rediscall.Redis) rediscall.Redis { return instrumented{next: next, m: m} }

// instrumented measures every Redis call the queue makes: latency by
// operation and failures.
type instrumented struct {
	next rediscall.Redis
	m    *Metrics
}

func (r instrumented) observe(op string, start time.Time, err error) {
	rs := r.m.redisOp(op)
	rs.seconds.Observe(time.Since(start).Seconds())
	if err != nil {
		rs.fails.Inc()
	}
}

func (r instrumented) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	start := time.Now()
	v, err := r.next.Eval(ctx, s, keys, args...)
	r.observe(s.Name, start, err)
	return v, err
}

func (r instrumented) Do(ctx context.Context, args ...string) (any, error) {
	start := time.Now()
	v, err := r.next.Do(ctx, args...)
	op := "unknown"
	if len(args) > 0 {
		op = strings.ToLower(args[0])
	}
	r.observe(op, start, err)
	return v, err
}

// redisSeries are one Redis operation's series, looked up once.
type redisSeries struct {
	seconds prometheus.Observer
	fails   prometheus.Counter
}

// redisOp returns op's series. The ops are script names and command names:
// a fixed set.
func (m *Metrics) redisOp(op string) *redisSeries {
	if v, ok := m.redisOps.Load(op); ok {
		return v.(*redisSeries)
	}
	v, _ := m.redisOps.LoadOrStore(op, &redisSeries{seconds: m.redisCalls.WithLabelValues(op), fails: m.redisFails.WithLabelValues(op)})
	return v.(*redisSeries)
}
