package main

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
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
		s.noticeActivation(ctx, room, cfg)
	}
}

// noticeActivation records whether room, when its activation is busy, is
// queueing or letting visitors straight through, sets its series, keeps
// it for the visitors' replies (s.acts), and sends room.queueing or
// room.passing when this instance is the one that saw the state change.
func (s *server) noticeActivation(ctx context.Context, room string, cfg settings.Room) {
	label := s.rooms.Label(room)
	if cfg.Activation != settings.ActivationBusy {
		s.metrics.ForgetActivation(label)
		s.acts.forget(room)
		return
	}
	s.noteActivation(ctx, room)
}

// noteActivation is noticeActivation for a room with activation busy; ok
// is false when the store could not be read.
func (s *server) noteActivation(ctx context.Context, room string) (queue.Activation, bool) {
	a, err := s.q.NoteActivation(ctx, room)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("housekeeping: activation", "room", room, "err", err)
		}
		return queue.Activation{}, false
	}
	s.metrics.Activation(s.rooms.Label(room), a.Queueing, a.Since)
	s.acts.set(room, a)
	if !a.Changed {
		return a, true
	}
	t := webhook.RoomPassing
	if a.Queueing {
		t = webhook.RoomQueueing
	}
	since := a.Since.UTC()
	if err := s.hooks.EmitOnce(ctx, room, t, strconv.FormatInt(since.UnixMilli(), 10),
		map[string]any{"since": since.Format(time.RFC3339Nano)}); err != nil && ctx.Err() == nil {
		s.log.Warn("webhook event not sent", "room", room, "type", t, "err", err)
	}
	return a, true
}
