package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/autopilot"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/webhook"
	"github.com/waitroom/waitroom/wire"
)

// maxHealthSamples bounds the samples of one health report.
const maxHealthSamples = 1000

// newAutopilot makes the rooms' autopilot: the pilot that decides each
// second, and the recorder of the built-in proxy's samples.
func (s *server) newAutopilot() {
	r := s.metrics.Redis(s.redis.Redis())
	shown := map[string]bool{} // rooms whose series are set, by label (Run's goroutine)
	defaults := settings.Defaults{Batch: s.cfg.Capacity.BatchSize(), TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax, FailMode: s.cfg.FailMode}
	s.pilot = autopilot.New(r, autopilot.Options{
		Tick: s.cfg.Capacity.Tick,
		Rooms: func() []string {
			var out []string
			on := map[string]bool{}
			for _, room := range s.rooms.SettingsRooms() {
				if cfg, ok := s.rooms.RoomSettings(room); ok && cfg.Autopilot {
					out = append(out, room)
					on[s.rooms.Label(room)] = true
				}
			}
			for label := range shown {
				if !on[label] {
					s.metrics.ForgetAutopilot(label)
					delete(shown, label)
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
			b, a := before.Effective(defaults), after.Effective(defaults)
			s.metrics.AutopilotChanged(s.rooms.Label(room), a.Batch > b.Batch || a.MaxActive > b.MaxActive)
			s.admin.AuditAutopilot(ctx, room, d.State.Reason, before, after)
		},
		OnOverload: func(ctx context.Context, room string, d autopilot.Decision) {
			t := webhook.OriginRecovered
			if d.Entered {
				t = webhook.OriginOverloaded
			}
			// The second decided, not the last change: a cut held at
			// minRate changes nothing, and is news all the same.
			at := d.At
			data := map[string]any{"reason": d.Reason, "rate": d.State.Rate, "p95Ms": d.P95, "errorRate": d.ErrorRate}
			if err := s.hooks.EmitOnce(ctx, room, t, strconv.FormatInt(at.UnixMilli(), 10), data); err != nil && ctx.Err() == nil {
				s.log.Warn("webhook event not sent", "room", room, "type", t, "err", err)
			}
		},
		OnStatus: func(room string, st autopilot.Status) {
			label := s.rooms.Label(room)
			shown[label] = true
			s.metrics.Autopilot(label, st.Rate, st.P50Ms/1000, st.P95Ms/1000, st.ErrorRate, st.Overloaded)
		},
		Logger: s.log,
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
