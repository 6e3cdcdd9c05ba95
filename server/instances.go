package main

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/instances"
)

// publishInstance writes this instance's push figures to the register and
// splits the rooms' rates by the instances live.
func (s *server) publishInstance(ctx context.Context) error {
	st := s.hub.Stats()
	live, err := s.instances.Publish(ctx, instances.Report{At: time.Now(), WS: st.Conns["ws"], SSE: st.Conns["sse"],
		LagP50: st.Lag.Quantile(0.5), LagP99: st.Lag.Quantile(0.99), LagCount: st.Lag.Count})
	if err != nil {
		return err
	}
	s.rooms.SetInstances(live)
	return nil
}

// housekeeping refreshes the room cache (and tells the webhooks what it
// shows) and publishes this instance's figures every interval until ctx
// ends.
func (s *server) housekeeping(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, every)
		if err := s.rooms.Refresh(rctx); err != nil && ctx.Err() == nil {
			s.log.Debug("housekeeping: rooms", "err", err)
		}
		s.noticeRooms(rctx)
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
