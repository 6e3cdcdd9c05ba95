package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// roomConfig reads the stored settings of the route's :room.
func (a *API) roomConfig(c *fiber.Ctx) (string, settings.Room, error) {
	r, err := roomParam(c)
	if err != nil {
		return "", settings.Room{}, err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	cfg, err := a.store.RoomConfig(ctx, r)
	if err != nil {
		return "", settings.Room{}, a.storeError(c, err)
	}
	return r, cfg, nil
}

func (a *API) getRoom(c *fiber.Ctx) error {
	r, cfg, err := a.roomConfig(c)
	if err != nil {
		return err
	}
	return a.roomJSON(c, r, a.View(r, cfg))
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
func (a *API) changeRoom(c *fiber.Ctx, r, action string, p settings.Patch) (settings.Room, error) {
	ctx, cancel := a.ctx(c)
	defer cancel()
	var before settings.Room
	cfg, err := a.store.UpdateRoomConfig(ctx, r, func(cfg *settings.Room) error {
		before = *cfg
		p.Apply(cfg)
		return a.checkFileLocks(r, *cfg)
	})
	if err != nil {
		var fe *settings.FieldError
		var ae *httperr.Error
		switch {
		case errors.As(err, &fe):
			return cfg, fieldError(fe.Field, fe.Msg)
		case errors.As(err, &ae):
			return cfg, err
		}
		return cfg, a.storeError(c, err)
	}
	a.auditChange(ctx, r, trailOf(label(c), roleOf(c)), label(c), action, before, cfg)
	return cfg, nil
}

// checkFileLocks refuses cfg when it differs from the rooms file in a
// setting the file sets: the file wins over a live change.
func (a *API) checkFileLocks(r string, cfg settings.Room) error {
	fr, ok := a.pins(r)
	if !ok {
		return nil
	}
	if changed := fr.Apply(&cfg); len(changed) > 0 {
		f := changed[0]
		e := httperr.New(409, "set_by_rooms_file", f+" is "+a.fileLocks(r)[f])
		e.Field = f
		return e
	}
	return nil
}

// putRoom changes the fields present in the body; absent fields keep
// their value. Every instance applies the change from its next tick.
func (a *API) putRoom(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
		return err
	}
	if !p.SteerOnly() {
		if err := needAct(c, ActChangeSettings); err != nil {
			return err
		}
	}
	if err := a.roomMustExist(c, r); err != nil {
		return err
	}
	cfg, err := a.changeRoom(c, r, "update", p)
	if err != nil {
		return err
	}
	return c.JSON(a.View(r, cfg))
}

// createRoom creates a room with the settings in the body; 409 when
// it exists already.
func (a *API) createRoom(c *fiber.Ctx) error {
	var name *string
	p, err := readPatch(c.Body(), map[string]any{"room": &name})
	if err != nil {
		return err
	}
	if name == nil || !wire.ValidRoom(*name) {
		return fieldError("room", "must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	r := *name
	ctx, cancel := a.ctx(c)
	defer cancel()
	exists, err := a.store.RoomExists(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	if exists {
		return httperr.New(409, "room_exists", "room "+r+" exists already; change it with PUT /api/v1/admin/rooms/"+r)
	}
	cfg, err := a.changeRoom(c, r, "create", p)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(a.View(r, cfg))
}

// preview answers what a change (the body of a PUT) would do, without
// making it: each setting's value before and after, and the effect in
// words, for the dashboard's confirmation.
func (a *API) preview(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
		return err
	}
	if err := a.roomMustExist(c, r); err != nil {
		return err
	}
	r, before, err := a.roomConfig(c)
	if err != nil {
		return err
	}
	after := before
	p.Apply(&after)
	if err := after.Validate(); err != nil {
		var fe *settings.FieldError
		if errors.As(err, &fe) {
			return fieldError(fe.Field, fe.Msg)
		}
		return err
	}
	if err := a.checkFileLocks(r, after); err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	st, err := a.store.Stats(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{
		"room": r, "changes": Changes(a.View(r, before), a.View(r, after)),
		"effects": Effects(a.View(r, before), a.View(r, after), st),
	})
}

// setMessage sets (PUT {"text": …}) or clears (DELETE) the room's
// message to everyone waiting.
func (a *API) setMessage(clear bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := roomParam(c)
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
		if err := a.roomMustExist(c, r); err != nil {
			return err
		}
		cfg, err := a.changeRoom(c, r, "update", settings.Patch{}.With("message", text))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"room": r, "message": cfg.Message})
	}
}

// pause returns a handler that pauses or resumes a room.
func (a *API) pause(paused bool) fiber.Handler {
	action := "resume"
	if paused {
		action = "pause"
	}
	return func(c *fiber.Ctx) error {
		r, err := roomParam(c)
		if err != nil {
			return err
		}
		if err := a.roomMustExist(c, r); err != nil {
			return err
		}
		cfg, err := a.changeRoom(c, r, action, settings.Patch{}.With("paused", paused))
		if err != nil {
			return err
		}
		return c.JSON(a.View(r, cfg))
	}
}

func (a *API) listRooms(c *fiber.Ctx) error {
	ctx, cancel := a.ctx(c)
	defer cancel()
	rooms, err := a.store.AllRooms(ctx)
	if err != nil {
		return a.storeError(c, err)
	}
	sort.Strings(rooms)
	if len(rooms) > 1000 {
		rooms = rooms[:1000]
	}
	type item struct {
		Room              string  `json:"room"`
		Waiting           int64   `json:"waiting"`
		AdmittedPerSecond float64 `json:"admittedPerSecond"`
		AdmittedTotal     int64   `json:"admittedTotal"`
		Sessions          int64   `json:"sessions"`
		Paused            bool    `json:"paused"`
		Configured        bool    `json:"configured"`
		FromFile          bool    `json:"fromFile"`
	}
	configured, err := a.store.ConfiguredRooms(ctx)
	if err != nil {
		return a.storeError(c, err)
	}
	isConfigured := make(map[string]bool, len(configured))
	for _, r := range configured {
		isConfigured[r] = true
	}
	out := make([]item, 0, len(rooms))
	for _, r := range rooms {
		st, err := a.store.Stats(ctx, r)
		if err != nil {
			return a.storeError(c, err)
		}
		cfg, err := a.store.RoomConfig(ctx, r)
		if err != nil {
			return a.storeError(c, err)
		}
		_, inFile := a.pins(r)
		out = append(out, item{
			Room: r, Waiting: st.Waiting + st.PreQueue, AdmittedPerSecond: st.Rate, AdmittedTotal: st.AdmittedTotal, Sessions: st.ActiveTokens,
			Paused: cfg.Paused, Configured: isConfigured[r], FromFile: inFile,
		})
	}
	return c.JSON(fiber.Map{"rooms": out})
}

// stats is the dashboard's feed for one room.
func (a *API) stats(c *fiber.Ctx) error {
	r, cfg, err := a.roomConfig(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	st, err := a.store.Stats(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	insts, err := a.opts.Instances(ctx)
	if err != nil {
		return a.storeError(c, err)
	}
	pres, err := a.store.Presence(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	eff := a.View(r, cfg)
	activation := fiber.Map{"mode": eff.Settings.Activation}
	if cfg.Activation == settings.ActivationBusy {
		act, ok, err := a.store.ActivationOf(ctx, r)
		if err != nil {
			return a.storeError(c, err)
		}
		if ok {
			activation["state"], activation["since"] = "passing", act.Since.UTC().Format(time.RFC3339Nano)
			if act.Queueing {
				activation["state"] = "queueing"
			}
		}
	}
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
	out := fiber.Map{
		"room": r, "waiting": st.Waiting, "preQueue": st.PreQueue, "priority": st.Priority,
		"admittedTotal": st.AdmittedTotal, "admittedPerSecond": st.Rate,
		"activeTokens": st.ActiveTokens, "seats": cfg.Seats, "seatsHeld": st.SeatsHeld,
		"paused": cfg.Paused, "strategy": eff.Settings.Strategy, "activation": activation,
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
	}
	if a.opts.Autopilot != nil {
		ap, err := a.opts.Autopilot(ctx, r, cfg)
		if err != nil {
			return a.storeError(c, err)
		}
		if ap != nil {
			out["autopilot"] = ap
		}
	}
	return c.JSON(out)
}
