package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/waitroom/waitroom/autopilot"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
	"github.com/waitroom/waitroom/wire"
)

// maxHealthSamples bounds the samples of one health report.
const maxHealthSamples = 1000

// apMetrics are the autopilot's series.
type apMetrics struct {
	rate       *prometheus.GaugeVec
	latency    *prometheus.GaugeVec
	errRatio   *prometheus.GaugeVec
	overloaded *prometheus.GaugeVec
	changes    *prometheus.CounterVec
}

func newAPMetrics(reg *prometheus.Registry) *apMetrics {
	m := &apMetrics{
		rate:       prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_autopilot_rate", Help: "Rooms with autopilot on: the rate it set (admissions/s; slots under max-active)."}, []string{"room"}),
		latency:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_origin_latency_seconds", Help: "Rooms with autopilot on: the origin's latency over the last window, by quantile (0.5, 0.95)."}, []string{"room", "quantile"}),
		errRatio:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_origin_error_ratio", Help: "Rooms with autopilot on: the share of the origin's requests that failed over the last window."}, []string{"room"}),
		overloaded: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "waitroom_autopilot_overloaded", Help: "Rooms with autopilot on: 1 while the origin is overloaded (the last decision cut the rate on errors or latency)."}, []string{"room"}),
		changes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waitroom_autopilot_changes_total", Help: "Changes of a room's rate by its autopilot, by direction (up, down), counted by the instance that made them."}, []string{"room", "direction"}),
	}
	reg.MustRegister(m.rate, m.latency, m.errRatio, m.overloaded, m.changes)
	return m
}

func (m *apMetrics) status(room string, st autopilot.Status) {
	m.rate.WithLabelValues(room).Set(st.Rate)
	m.latency.WithLabelValues(room, "0.5").Set(st.P50Ms / 1000)
	m.latency.WithLabelValues(room, "0.95").Set(st.P95Ms / 1000)
	m.errRatio.WithLabelValues(room).Set(st.ErrorRate)
	v := 0.0
	if st.Overloaded {
		v = 1
	}
	m.overloaded.WithLabelValues(room).Set(v)
	m.changes.WithLabelValues(room, "up")
	m.changes.WithLabelValues(room, "down")
}

// newAutopilot makes the rooms' autopilot: the pilot that decides each
// second, and the recorder of the built-in proxy's samples.
func (s *server) newAutopilot() {
	r := s.metrics.Redis(s.redis.Redis())
	m := newAPMetrics(s.metrics.Registry())
	defaults := settings.Defaults{Batch: s.cfg.Capacity.BatchSize(), TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax, FailMode: s.cfg.FailMode}
	s.pilot = autopilot.New(r, autopilot.Options{
		Tick: s.cfg.Capacity.Tick,
		Rooms: func() []string {
			var out []string
			for _, room := range s.rooms.SettingsRooms() {
				if cfg, ok := s.rooms.RoomSettings(room); ok && cfg.Autopilot {
					out = append(out, room)
				}
			}
			return out
		},
		Settings: func(room string) (settings.Room, bool) {
			cfg, ok := s.rooms.RoomSettings(room)
			return cfg.Effective(defaults), ok
		},
		Waiting: func(ctx context.Context, room string) (int64, error) {
			st, err := s.q.Stats(ctx, room)
			return st.Waiting, err
		},
		Update: s.q.UpdateRoomConfig,
		OnChange: func(ctx context.Context, room string, before, after settings.Room, d autopilot.Decision) {
			dir := "up"
			if after.Batch < before.Batch || after.MaxActive < before.MaxActive {
				dir = "down"
			}
			m.changes.WithLabelValues(s.rooms.Label(room), dir).Inc()
			s.admin.AuditReason(ctx, room, "autopilot", "autopilot", d.State.Reason, before, after)
		},
		OnOverload: func(ctx context.Context, room string, d autopilot.Decision) {
			t := webhook.OriginRecovered
			if d.Entered {
				t = webhook.OriginOverloaded
			}
			at := d.State.ChangedAt
			data := map[string]any{"reason": d.State.Reason, "rate": d.State.Rate, "p95Ms": d.P95, "errorRate": d.ErrorRate}
			if err := s.hooks.EmitOnce(ctx, room, t, strconv.FormatInt(at.UnixMilli(), 10), data); err != nil && ctx.Err() == nil {
				s.log.Warn("webhook event not sent", "room", room, "type", t, "err", err)
			}
		},
		OnStatus: func(room string, st autopilot.Status) { m.status(s.rooms.Label(room), st) },
		Logger:   s.log,
	})
	s.apRec = autopilot.NewRecorder(s.pilot.Store(), s.log)
}

// healthSample is one sample of a health report.
type healthSample struct {
	Ms *float64 `json:"ms"`
	OK *bool    `json:"ok"`
}

var (
	errHealthSamples = httperr.New(400, "invalid_samples", `samples must be a list of 1 to 1000 objects {"ms": milliseconds from 0 to 3600000, "ok": true or false}`)
	errServiceKey    = httperr.New(401, "invalid_service_key", "a valid service key is required (Authorization: Bearer <service key>); admin keys are not accepted here")
)

// health takes a batch of samples of a room's origin from an app or a
// sidecar (POST /api/v1/rooms/{room}/health, service key): each request's
// latency and whether it succeeded, for the room's autopilot.
func (s *server) health(c *fiber.Ctx) error {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || s.serviceKeys == nil {
		return errServiceKey
	}
	if _, ok := s.serviceKeys.ServiceKey(strings.TrimSpace(key)); !ok {
		return errServiceKey
	}
	room := c.Params("room")
	if !wire.ValidRoom(room) {
		return httperr.New(400, "invalid_room", "a room name is 1 to 64 of a-z, 0-9 and -, starting with a letter or digit")
	}
	var req struct {
		Samples []healthSample `json:"samples"`
	}
	if err := httperr.DecodeObject(c.Body(), &req); err != nil {
		return err
	}
	if len(req.Samples) == 0 || len(req.Samples) > maxHealthSamples {
		return errHealthSamples
	}
	var w autopilot.Window
	for _, hs := range req.Samples {
		if hs.Ms == nil || hs.OK == nil || *hs.Ms < 0 || *hs.Ms > 3600000 || *hs.Ms != *hs.Ms {
			return errHealthSamples
		}
		w.Add(autopilot.Sample{Latency: time.Duration(*hs.Ms * float64(time.Millisecond)), OK: *hs.OK})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if exists, err := s.rooms.Exists(ctx, room); err != nil {
		return s.storeError(c, err)
	} else if !exists {
		return httperr.New(404, "room_not_found", "no such room")
	}
	if err := s.pilot.Store().Record(ctx, room, w); err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{"accepted": len(req.Samples)})
}

// autopilotStatus is what the admin stats show of room's autopilot
// (nil: off, or nothing decided yet).
func (s *server) autopilotStatus(ctx context.Context, room string, cfg settings.Room) (json.RawMessage, error) {
	if !cfg.Autopilot {
		return nil, nil
	}
	st, ok, err := s.pilot.Store().Status(ctx, room)
	if err != nil || !ok {
		return nil, err
	}
	return json.Marshal(st)
}
