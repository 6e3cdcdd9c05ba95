package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/hub"
)

// InstancesKey is a hash of every live instance's push figures, so the
// dashboard can show connections across instances.
const instancesKey = "wr:instances"

// instanceStats is one instance's line in InstancesKey.
type instanceStats struct {
	At             time.Time
	WS, SSE        int64
	LagP50, LagP99 time.Duration
	LagCount       uint64
}

func encodeInstance(at time.Time, st hub.Stats) string {
	return fmt.Sprintf("%d %d %d %d %d %d", at.UnixMilli(), st.Conns["ws"], st.Conns["sse"],
		st.Lag.Quantile(0.5).Microseconds(), st.Lag.Quantile(0.99).Microseconds(), st.Lag.Count)
}

func decodeInstance(s string) (instanceStats, bool) {
	f := strings.Fields(s)
	if len(f) != 6 {
		return instanceStats{}, false
	}
	var n [6]int64
	for i, x := range f {
		v, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return instanceStats{}, false
		}
		n[i] = v
	}
	return instanceStats{At: time.UnixMilli(n[0]), WS: n[1], SSE: n[2],
		LagP50: time.Duration(n[3]) * time.Microsecond, LagP99: time.Duration(n[4]) * time.Microsecond, LagCount: uint64(n[5])}, true
}

// publishInstance writes this instance's line and drops lines of instances
// gone for a minute.
func (s *server) publishInstance(ctx context.Context) error {
	now := time.Now()
	if _, err := s.redis.Do(ctx, "HSET", instancesKey, s.id, encodeInstance(now, s.hub.Stats())); err != nil {
		return err
	}
	all, err := s.instances(ctx)
	if err != nil {
		return err
	}
	live := 0
	for id, st := range all {
		switch {
		case now.Sub(st.At) > time.Minute:
			_, _ = s.redis.Do(ctx, "HDEL", instancesKey, id)
		case now.Sub(st.At) <= 10*time.Second:
			live++ // publishes every 2 s
		}
	}
	s.rooms.SetInstances(live)
	return nil
}

// instances reads every instance's line.
func (s *server) instances(ctx context.Context) (map[string]instanceStats, error) {
	v, err := s.redis.Do(ctx, "HGETALL", instancesKey)
	if err != nil {
		return nil, err
	}
	flat, _ := v.([]any)
	out := make(map[string]instanceStats, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		id, _ := flat[i].(string)
		line, _ := flat[i+1].(string)
		if st, ok := decodeInstance(line); ok {
			out[id] = st
		}
	}
	return out, nil
}

// housekeeping refreshes the room cache and publishes this instance's
// figures every interval until ctx ends.
func (s *server) housekeeping(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, every)
		if err := s.rooms.Refresh(rctx); err != nil && ctx.Err() == nil {
			s.log.Debug("housekeeping: rooms", "err", err)
		}
		if err := s.publishInstance(rctx); err != nil && ctx.Err() == nil {
			s.log.Debug("housekeeping: instance", "err", err)
		}
		if err := s.tokens.Publish(rctx, s.redis, s.id); err != nil && ctx.Err() == nil {
			s.log.Debug("housekeeping: entry keys", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
