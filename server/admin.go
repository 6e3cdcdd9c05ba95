package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/gateway"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// newAdmin builds the admin API on s's store, keys, rooms file, signer
// and gateway; the gateway may come later (it is looked up per call).
func (s *server) newAdmin() *admin.API {
	return admin.New(admin.Options{
		Store:   s.q,
		Invites: s.invites,
		Keys:    func() admin.Keys { return s.opsNow().Keys },
		// Loaded at start (startEntry) before any request.
		ServiceKey: func(key string) (string, bool) { return s.serviceKeys.ServiceKey(key) },
		Pins: func(room string) (roomsfile.Room, string, bool) {
			o := s.opsNow()
			r, ok := o.Rooms.Room(room)
			if !ok {
				return r, "", false
			}
			return r, o.Rooms.Path, true
		},
		Defaults: admin.Defaults{
			Defaults: settings.Defaults{
				Batch: s.cfg.Capacity.BatchSize(), TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax,
				FailMode: s.cfg.FailMode, JoinRate: s.cfg.JoinRate, JoinBurst: s.cfg.JoinBurst,
			},
			Tick: s.cfg.Capacity.Tick,
		},
		Instances:  s.adminInstances,
		Credential: s.signer.VisitorCredential,
		EndSession: func(ctx context.Context, room, visitor string, nb, exp time.Time) error {
			return s.gw.EndSession(ctx, gateway.Session{Room: room, Visitor: visitor, NotBefore: nb, ExpiresAt: exp})
		},
		StoreError: s.storeError,
		// Made before the admin API is used (build).
		Autopilot: func(ctx context.Context, room string, cfg settings.Room) (json.RawMessage, error) {
			return s.autopilotStatus(ctx, room, cfg)
		},
		Log:      s.log,
		Webhooks: s.hooks,
		Pages:    visitPages{s},
		Events:   s.events,
		Reports:  s.report,
	})
}

// visitPages is the visitor API's waiting page for the admin API's
// preview, looked up per call: the visitor API is built after the admin
// API.
type visitPages struct{ s *server }

func (p visitPages) Languages() []string { return p.s.visit.Languages() }

func (p visitPages) PreviewPage(ctx context.Context, room, lang string, st wire.State) ([]byte, error) {
	return p.s.visit.PreviewPage(ctx, room, lang, st)
}

// adminInstances lists what the instances last reported, for the admin
// API's stats.
func (s *server) adminInstances(ctx context.Context) ([]admin.Instance, error) {
	insts, err := s.instances.All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]admin.Instance, 0, len(insts))
	for _, in := range insts {
		out = append(out, admin.Instance{At: in.At, WS: in.WS, SSE: in.SSE, LagP50: in.LagP50, LagP99: in.LagP99, LagCount: in.LagCount})
	}
	return out, nil
}

// metricsGate guards /metrics on the main listener: it lists room names.
// With -metrics-addr or -ops-addr the metrics live only on that listener;
// otherwise they need the admin key unless -public-metrics.
func (s *server) metricsGate(c *fiber.Ctx) error {
	switch {
	case s.cfg.MetricsAddr != "" || s.cfg.OpsAddr != "":
		return fiber.ErrNotFound
	case s.cfg.PublicMetrics:
		return c.Next()
	}
	if _, err := s.admin.Key(c); err != nil {
		return err // any role may read them
	}
	return c.Next()
}

// effective is a room's stored settings as the admin API shows them.
func (s *server) effective(room string, c settings.Room) admin.View { return s.admin.View(room, c) }
