package main

import (
	"cmp"
	"context"
	"time"
)

// redisWatchEvery is how often the server checks that Redis answers, to
// tell push clients when it does not.
const redisWatchEvery = time.Second

// redisDownAfter is how many failed checks in a row mark the store
// unreachable: one slow answer is not an outage.
const redisDownAfter = 2

// watchRedis pings Redis every interval and tells the hub when it stops
// answering and when it is back, so waiting visitors read "positions
// paused, your place is kept" instead of figures that silently froze.
func (s *server) watchRedis(ctx context.Context) error {
	every := cmp.Or(s.cfg.redisWatch, redisWatchEvery)
	t := time.NewTicker(every)
	defer t.Stop()
	fails := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := s.redis.ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fails++
		} else {
			fails = 0
		}
		switch down := fails >= redisDownAfter; {
		case down && !s.hub.Degraded():
			s.log.Warn("redis unreachable: push clients told positions are paused", "err", err)
			s.hub.SetDegraded(true)
		case !down && fails == 0 && s.hub.Degraded():
			s.log.Info("redis reachable again")
			s.hub.SetDegraded(false)
		}
	}
}
