package main

import (
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
	h, err := webhook.New(s.metrics.Redis(s.redis.Redis()), deploy, &o)
	if err != nil {
		return err
	}
	s.hooks = h
	return nil
}
