package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

var errAdminKey = httperr.New(401, "invalid_admin_key", "a valid admin key is required (Authorization: Bearer <admin key>)")

// adminAuth guards /api/v1/admin with the admin keys, compared in constant
// time; the key's label names who made a change in the audit trail, and
// its role must be at least the route's (adminRoutes).
func (s *server) adminAuth(c *fiber.Ctx) error {
	k, err := s.adminKeyOf(c)
	if err != nil {
		return err
	}
	c.Locals("adminLabel", k.Label)
	c.Locals("adminRole", k.Role)
	if err := needRole(c, admin.RouteRole(c.Method(), c.Path())); err != nil {
		return err
	}
	return c.Next()
}

// adminKeyOf is the admin key the request's bearer token is.
func (s *server) adminKeyOf(c *fiber.Ctx) (admin.Key, error) {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok {
		return admin.Key{}, errAdminKey
	}
	k, ok := s.opsNow().keys.Match([]byte(strings.TrimSpace(key)))
	if !ok {
		return admin.Key{}, errAdminKey
	}
	return k, nil
}

// needRole refuses a request whose key's role is below need: 403
// forbidden, naming the role needed.
func needRole(c *fiber.Ctx, need admin.Role) error {
	if have := adminRole(c); have < need {
		return httperr.New(403, "forbidden", "this needs the "+need.String()+" role; the key "+adminLabel(c)+" has the "+have.String()+" role")
	}
	return nil
}

// adminWhoami tells the dashboard who its key is and what it may do.
func (s *server) adminWhoami(c *fiber.Ctx) error {
	r := adminRole(c)
	return c.JSON(fiber.Map{
		"label": adminLabel(c), "role": r.String(),
		"may": fiber.Map{"read": true, "steer": r >= admin.Operator, "configure": r >= admin.Admin},
	})
}

// metricsGate guards /metrics on the main listener: it lists room names.
// With -metrics-addr the metrics live only on that listener; otherwise they
// need the admin key unless -public-metrics.
func (s *server) metricsGate(c *fiber.Ctx) error {
	switch {
	case s.cfg.MetricsAddr != "":
		return fiber.ErrNotFound
	case s.cfg.PublicMetrics:
		return c.Next()
	}
	if _, err := s.adminKeyOf(c); err != nil {
		return err // any role may read them
	}
	return c.Next()
}

// effective fills the instance defaults into a room's stored settings.
func (s *server) effective(room string, c queue.RoomConfig) admin.View {
	v := admin.Effective(room, c, admin.Defaults{
		Defaults: settings.Defaults{
			Batch: s.cfg.Capacity.BatchSize(), TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax,
			FailMode: s.cfg.FailMode, JoinRate: s.cfg.JoinRate, JoinBurst: s.cfg.JoinBurst,
		},
		Tick: s.cfg.Capacity.Tick,
	})
	v.FromFile = s.fileLocks(room)
	return v
}

// adminSettings describes the room settings for the dashboard's form, in
// the order it shows them: each one's name, label, kind, options and
// bounds, a hint, and whether an operator may change it.
func (s *server) adminSettings(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"settings": settings.Form()})
}

// roomConfig reads the stored settings of the route's :room.
func (s *server) roomConfig(c *fiber.Ctx) (string, queue.RoomConfig, error) {
	r, err := room(c)
	if err != nil {
		return "", queue.RoomConfig{}, err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	cfg, err := s.q.RoomConfig(ctx, r)
	if err != nil {
		return "", queue.RoomConfig{}, s.storeError(c, err)
	}
	return r, cfg, nil
}

func (s *server) adminGetRoom(c *fiber.Ctx) error {
	r, cfg, err := s.roomConfig(c)
	if err != nil {
		return err
	}
	return c.JSON(s.effective(r, cfg))
}

func fieldError(field, msg string) *httperr.Error {
	e := httperr.New(400, "invalid_field", field+": "+msg)
	e.Field = field
	return e
}

// decodeStrict decodes a JSON object body into dst, refusing unknown
// fields with the field's name.
func decodeStrict(raw []byte, dst any) error {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 || body[0] != '{' {
		return errInvalidJSON
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fieldError(te.Field, "has the wrong type ("+te.Value+")")
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fieldError(strings.Trim(f, `"`), "is not a room setting")
		}
		return errInvalidJSON
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return errInvalidJSON
	}
	return nil
}

// readPatch reads a settings change from a request body; also are keys
// beside the settings (see settings.DecodePatch).
func readPatch(body []byte, also map[string]any) (settings.Patch, error) {
	p, err := settings.DecodePatch(body, also)
	var fe *settings.FieldError
	switch {
	case errors.As(err, &fe):
		return p, fieldError(fe.Field, fe.Msg)
	case err != nil:
		return p, errInvalidJSON
	}
	return p, nil
}

// changeRoom applies p to room's settings as they are when written (a
// concurrent change of other fields is kept), refusing a change of a
// setting the rooms file sets, and records it in the audit trail.
func (s *server) changeRoom(c *fiber.Ctx, r, action string, p settings.Patch) (queue.RoomConfig, error) {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	var before queue.RoomConfig
	cfg, err := s.q.UpdateRoomConfig(ctx, r, func(cfg *queue.RoomConfig) error {
		before = *cfg
		p.Apply(cfg)
		return s.checkFileLocks(r, *cfg)
	})
	if err != nil {
		var fe *queue.FieldError
		var ae *httperr.Error
		switch {
		case errors.As(err, &fe):
			return cfg, fieldError(fe.Field, fe.Msg)
		case errors.As(err, &ae):
			return cfg, err
		}
		return cfg, s.storeError(c, err)
	}
	s.audit(ctx, r, adminLabel(c), action, before, cfg)
	return cfg, nil
}

// checkFileLocks refuses cfg when it differs from the rooms file in a
// setting the file sets: the file wins over a live change.
func (s *server) checkFileLocks(r string, cfg queue.RoomConfig) error {
	fr, ok := s.fileRoom(r)
	if !ok {
		return nil
	}
	if changed := fr.Apply(&cfg); len(changed) > 0 {
		f := changed[0]
		e := httperr.New(409, "set_by_rooms_file", f+" is "+s.fileLocks(r)[f])
		e.Field = f
		return e
	}
	return nil
}

// adminPutRoom changes the fields present in the body; absent fields keep
// their value. Every instance applies the change from its next tick.
func (s *server) adminPutRoom(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
		return err
	}
	if !p.SteerOnly() {
		if err := needRole(c, admin.Admin); err != nil {
			return err
		}
	}
	cfg, err := s.changeRoom(c, r, "update", p)
	if err != nil {
		return err
	}
	return c.JSON(s.effective(r, cfg))
}

// adminCreateRoom creates a room with the settings in the body; 409 when
// it exists already.
func (s *server) adminCreateRoom(c *fiber.Ctx) error {
	var name *string
	p, err := readPatch(c.Body(), map[string]any{"room": &name})
	if err != nil {
		return err
	}
	if name == nil || !queue.ValidRoom(*name) {
		return fieldError("room", "must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	r := *name
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	exists, err := s.q.RoomExists(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	if exists {
		return httperr.New(409, "room_exists", "room "+r+" exists already; change it with PUT /api/v1/admin/rooms/"+r)
	}
	cfg, err := s.changeRoom(c, r, "create", p)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(s.effective(r, cfg))
}

// adminPreview answers what a change (the body of a PUT) would do, without
// making it: each setting's value before and after, and the effect in
// words, for the dashboard's confirmation.
func (s *server) adminPreview(c *fiber.Ctx) error {
	r, err := room(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
		return err
	}
	r, before, err := s.roomConfig(c)
	if err != nil {
		return err
	}
	after := before
	p.Apply(&after)
	if err := after.Validate(); err != nil {
		var fe *queue.FieldError
		if errors.As(err, &fe) {
			return fieldError(fe.Field, fe.Msg)
		}
		return err
	}
	if err := s.checkFileLocks(r, after); err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	st, err := s.q.Stats(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	return c.JSON(fiber.Map{
		"room": r, "changes": admin.Changes(s.effective(r, before), s.effective(r, after)),
		"effects": admin.Effects(s.effective(r, before), s.effective(r, after), st),
	})
}

// adminMessage sets (PUT {"text": …}) or clears (DELETE) the room's
// message to everyone waiting.
func (s *server) adminMessage(clear bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := room(c)
		if err != nil {
			return err
		}
		var in struct {
			Text *string `json:"text"`
		}
		text := ""
		if !clear {
			if err := decodeStrict(c.Body(), &in); err != nil {
				return err
			}
			if in.Text == nil {
				return fieldError("text", "is required (an empty text clears the message)")
			}
			text = *in.Text
		}
		if err := queue.CheckMessage(text); err != nil {
			return fieldError("text", err.Error())
		}
		cfg, err := s.changeRoom(c, r, "update", settings.Patch{}.With("message", text))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"room": r, "message": cfg.Message})
	}
}

// adminPause returns a handler that pauses or resumes a room.
func (s *server) adminPause(paused bool) fiber.Handler {
	action := "resume"
	if paused {
		action = "pause"
	}
	return func(c *fiber.Ctx) error {
		r, err := room(c)
		if err != nil {
			return err
		}
		cfg, err := s.changeRoom(c, r, action, settings.Patch{}.With("paused", paused))
		if err != nil {
			return err
		}
		return c.JSON(s.effective(r, cfg))
	}
}

func (s *server) adminRooms(c *fiber.Ctx) error {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	rooms, err := s.q.AllRooms(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	sort.Strings(rooms)
	if len(rooms) > 1000 {
		rooms = rooms[:1000]
	}
	type item struct {
		Room              string  `json:"room"`
		Waiting           int64   `json:"waiting"`
		AdmittedPerSecond float64 `json:"admittedPerSecond"`
		Sessions          int64   `json:"sessions"`
		Paused            bool    `json:"paused"`
		Configured        bool    `json:"configured"`
		FromFile          bool    `json:"fromFile"`
	}
	configured, err := s.q.ConfiguredRooms(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	isConfigured := make(map[string]bool, len(configured))
	for _, r := range configured {
		isConfigured[r] = true
	}
	out := make([]item, 0, len(rooms))
	for _, r := range rooms {
		st, err := s.q.Stats(ctx, r)
		if err != nil {
			return s.storeError(c, err)
		}
		cfg, err := s.q.RoomConfig(ctx, r)
		if err != nil {
			return s.storeError(c, err)
		}
		_, inFile := s.fileRoom(r)
		out = append(out, item{
			Room: r, Waiting: st.Waiting + st.PreQueue, AdmittedPerSecond: st.Rate, Sessions: st.ActiveTokens,
			Paused: cfg.Paused, Configured: isConfigured[r], FromFile: inFile,
		})
	}
	return c.JSON(fiber.Map{"rooms": out})
}

// adminStats is the dashboard's feed for one room.
func (s *server) adminStats(c *fiber.Ctx) error {
	r, cfg, err := s.roomConfig(c)
	if err != nil {
		return err
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	st, err := s.q.Stats(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	insts, err := s.instances(ctx)
	if err != nil {
		return s.storeError(c, err)
	}
	pres, err := s.q.Presence(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	eff := s.effective(r, cfg)
	var ws, sse int64
	var p50, p99 time.Duration
	var lagN uint64
	live := 0
	for _, in := range insts {
		if time.Since(in.At) > 10*time.Second {
			continue
		}
		live++
		ws += in.WS
		sse += in.SSE
		// The worst instance's quantiles: an upper bound across instances.
		p50, p99 = max(p50, in.LagP50), max(p99, in.LagP99)
		lagN += in.LagCount
	}
	return c.JSON(fiber.Map{
		"room": r, "waiting": st.Waiting, "preQueue": st.PreQueue, "priority": st.Priority,
		"admittedTotal": st.AdmittedTotal, "admittedPerSecond": st.Rate,
		"activeTokens": st.ActiveTokens, "seats": cfg.Seats, "seatsHeld": st.SeatsHeld,
		"paused": cfg.Paused, "strategy": eff.Settings.Strategy,
		"connections": fiber.Map{"ws": ws, "sse": sse}, "instances": live,
		"deliveryLagMs": fiber.Map{"p50": float64(p50.Microseconds()) / 1000, "p99": float64(p99.Microseconds()) / 1000, "count": lagN},
		"batch":         eff.Settings.Batch, "tickMs": eff.Tick.Milliseconds(), "tps": eff.TPS,
		"presence": fiber.Map{
			"on": pres.On, "waitingPresent": pres.WaitingPresent, "away": pres.Away, "back": pres.Back,
			"reclaimedPerMinute": pres.ReclaimedPerMinute, "skippedPerMinute": pres.SkippedPerMinute,
			"droppedPerMinute": pres.DroppedPerMinute, "reclaimedTotal": pres.ReclaimedTotal,
			"skippedTotal": pres.SkippedTotal, "droppedTotal": pres.DroppedTotal,
			"madeUpPerMinute": pres.MadeUpPerMinute, "madeUpTotal": pres.MadeUpTotal,
		},
		"at": time.Now().UTC().Format(time.RFC3339Nano),
	})
}

// adminVisitor mints a visitor credential for an id chosen by a trusted
// backend (a signed-in user's id), so that user has one place per room
// across tabs and devices. The backend hands the credential to its page,
// which sends it as X-Visitor or visitor=.
func (s *server) adminVisitor(c *fiber.Ctx) error {
	var in struct {
		ID string `json:"id"`
	}
	if err := httperr.DecodeObject(c.Body(), &in); err != nil {
		return err
	}
	if !queue.ValidVisitor(in.ID) {
		return fieldError("id", "must match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	s.auditEvent(ctx, "", adminLabel(c), admin.Entry{Action: "mint-visitor", Visitor: in.ID})
	return c.JSON(fiber.Map{"id": in.ID, "visitor": s.signer.VisitorCredential(in.ID)})
}
