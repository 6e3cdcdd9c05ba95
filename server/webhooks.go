package main

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/webhook"
)

// newHooks makes the webhooks: the -webhooks file's endpoints (read once,
// at start) and every room's own, delivered from the outbox in Redis.
func (s *server) newHooks() error {
	var deploy []webhook.Endpoint
	if s.cfg.Webhooks != "" {
		var err error
		if deploy, err = webhook.LoadFile(s.cfg.Webhooks); err != nil {
			return err
		}
	}
	o := s.opts.Webhooks
	o.Logger = s.log
	o.Allow = append(append(webhook.AllowList(nil), o.Allow...), s.cfg.WebhookAllow...)
	o.OnDropped, o.OnRestored = s.metrics.WebhookDropped, s.metrics.WebhooksRestored
	h, err := webhook.New(s.metrics.Redis(s.redis.Redis()), deploy, &o)
	if err != nil {
		return err
	}
	s.hooks = h
	return nil
}

// noticeRooms tells the webhooks what the last refresh of the rooms shows:
// an opening passed, seats all held (each sent once, whichever instance
// notices first).
func (s *server) noticeRooms(ctx context.Context) {
	now := time.Now()
	for room, st := range s.rooms.Stats() {
		cfg, ok := s.rooms.RoomSettings(room)
		if !ok {
			continue
		}
		rs := webhook.RoomState{OpensAt: cfg.OpensAt, Seats: int64(cfg.Seats), SeatsHeld: st.SeatsHeld}
		if err := s.hooks.Notice(ctx, room, rs, now); err != nil && ctx.Err() == nil {
			s.log.Warn("webhook event not sent", "room", room, "err", err)
		}
	}
}
