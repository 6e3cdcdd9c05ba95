package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
)

// adminAuth guards /api/v1/admin with the admin keys, compared in constant
// time; the key's label names who made a change in the audit trail, and
// its role must be at least the route's (adminRoutes).
func (a *API) adminAuth(c *fiber.Ctx) error {
	k, err := a.Key(c)
	if err != nil {
		return err
	}
	c.Locals("adminLabel", k.Label)
	c.Locals("adminRole", k.Role)
	if err := needRole(c, RouteRole(c.Method(), c.Path())); err != nil {
		return err
	}
	return c.Next()
}

// needRole refuses a request whose key's role is below need: 403
// forbidden, naming the role needed.
func needRole(c *fiber.Ctx, need Role) error {
	if have := roleOf(c); have < need {
		return httperr.New(403, "forbidden", "this needs the "+need.String()+" role; the key "+label(c)+" has the "+have.String()+" role")
	}
	return nil
}

// adminWhoami tells the dashboard who its key is and what it may do.
func (a *API) adminWhoami(c *fiber.Ctx) error {
	r := roleOf(c)
	return c.JSON(fiber.Map{
		"label": label(c), "role": r.String(),
		"may": fiber.Map{"read": true, "steer": r >= Operator, "configure": r >= Admin},
	})
}

// adminSettings describes the room settings for the dashboard's form, in
// the order it shows them: each one's name, label, kind, options and
// bounds, a hint, and whether an operator may change it.
func (a *API) adminSettings(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"settings": settings.Form()})
}

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

func (a *API) adminGetRoom(c *fiber.Ctx) error {
	r, cfg, err := a.roomConfig(c)
	if err != nil {
		return err
	}
	return c.JSON(a.View(r, cfg))
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
	a.Audit(ctx, r, label(c), action, before, cfg)
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

// adminPutRoom changes the fields present in the body; absent fields keep
// their value. Every instance applies the change from its next tick.
func (a *API) adminPutRoom(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
		return err
	}
	if !p.SteerOnly() {
		if err := needRole(c, Admin); err != nil {
			return err
		}
	}
	cfg, err := a.changeRoom(c, r, "update", p)
	if err != nil {
		return err
	}
	return c.JSON(a.View(r, cfg))
}

// adminCreateRoom creates a room with the settings in the body; 409 when
// it exists already.
func (a *API) adminCreateRoom(c *fiber.Ctx) error {
	var name *string
	p, err := readPatch(c.Body(), map[string]any{"room": &name})
	if err != nil {
		return err
	}
	if name == nil || !queue.ValidRoom(*name) {
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

// adminPreview answers what a change (the body of a PUT) would do, without
// making it: each setting's value before and after, and the effect in
// words, for the dashboard's confirmation.
func (a *API) adminPreview(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	p, err := readPatch(c.Body(), nil)
	if err != nil {
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

// adminMessage sets (PUT {"text": …}) or clears (DELETE) the room's
// message to everyone waiting.
func (a *API) adminMessage(clear bool) fiber.Handler {
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
		cfg, err := a.changeRoom(c, r, "update", settings.Patch{}.With("message", text))
		if err != nil {
			return err
		}
		return c.JSON(fiber.Map{"room": r, "message": cfg.Message})
	}
}

// adminPause returns a handler that pauses or resumes a room.
func (a *API) adminPause(paused bool) fiber.Handler {
	action := "resume"
	if paused {
		action = "pause"
	}
	return func(c *fiber.Ctx) error {
		r, err := roomParam(c)
		if err != nil {
			return err
		}
		cfg, err := a.changeRoom(c, r, action, settings.Patch{}.With("paused", paused))
		if err != nil {
			return err
		}
		return c.JSON(a.View(r, cfg))
	}
}

func (a *API) adminRooms(c *fiber.Ctx) error {
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
			Room: r, Waiting: st.Waiting + st.PreQueue, AdmittedPerSecond: st.Rate, Sessions: st.ActiveTokens,
			Paused: cfg.Paused, Configured: isConfigured[r], FromFile: inFile,
		})
	}
	return c.JSON(fiber.Map{"rooms": out})
}

// adminStats is the dashboard's feed for one room.
func (a *API) adminStats(c *fiber.Ctx) error {
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
func (a *API) adminVisitor(c *fiber.Ctx) error {
	var in struct {
		ID string `json:"id"`
	}
	if err := httperr.DecodeObject(c.Body(), &in); err != nil {
		return err
	}
	if !queue.ValidVisitor(in.ID) {
		return fieldError("id", "must match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	a.auditEvent(ctx, "", label(c), Entry{Action: "mint-visitor", Visitor: in.ID})
	return c.JSON(fiber.Map{"id": in.ID, "visitor": a.opts.Credential(in.ID)})
}

// Audit records a change in the room's audit trail (the last
// queue.AuditKeep are kept). The change is made already: a failure to
// record it is logged, not returned.
func (a *API) Audit(ctx context.Context, room, who, action string, before, after settings.Room) {
	e := Entry{At: time.Now().UTC().Format(time.RFC3339Nano), Who: who, Action: action, Changes: Changes(a.View(room, before), a.View(room, after))}
	if len(e.Changes) == 0 && action != "create" {
		return
	}
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	b, _ := json.Marshal(e)
	if err := a.store.AppendAudit(ctx, room, b); err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "err", err)
	}
}

// auditEvent records an action other than a change of settings: in
// room's audit trail, or with room "" in the instance-wide one (actions
// of no room, such as minting a visitor credential). Like audit, a failure
// to record is logged.
func (a *API) auditEvent(ctx context.Context, room, who string, e Entry) {
	e.At, e.Who = time.Now().UTC().Format(time.RFC3339Nano), who
	if e.Changes == nil {
		e.Changes = []FieldChange{}
	}
	b, _ := json.Marshal(e)
	var err error
	if room == "" {
		err = a.store.AppendAdminAudit(ctx, b)
	} else {
		err = a.store.AppendAudit(ctx, room, b)
	}
	if err != nil {
		a.log.Warn("audit not recorded", "room", room, "who", who, "action", e.Action, "err", err)
	}
}

// adminAudit lists a room's audit trail, newest first.
func (a *API) adminAudit(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	raw, err := a.store.Audit(ctx, r)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{"room": r, "entries": auditJSON(raw)})
}

// adminAuditAll lists the instance-wide audit trail (actions of no room),
// newest first.
func (a *API) adminAuditAll(c *fiber.Ctx) error {
	ctx, cancel := a.ctx(c)
	defer cancel()
	raw, err := a.store.AdminAudit(ctx)
	if err != nil {
		return a.storeError(c, err)
	}
	return c.JSON(fiber.Map{"entries": auditJSON(raw)})
}

func auditJSON(raw []string) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(raw))
	for _, e := range raw {
		if json.Valid([]byte(e)) {
			out = append(out, json.RawMessage(e))
		}
	}
	return out
}

// maxInvites bounds the codes one mint call makes.
const maxInvites = 10000

// adminInvites mints invite codes for the route's room: one, or a batch of
// count, each admitting uses joins until it expires, optionally only for
// one visitor id (a signed-in user's), and priority codes (priority: true),
// whose joins go ahead of the public queue in any room. Nothing is stored: a code is
// checked by its signature and counted when used.
func (a *API) adminInvites(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	var in struct {
		Count            *int     `json:"count"`
		Uses             *int     `json:"uses"`
		ExpiresAt        *string  `json:"expiresAt"`
		ExpiresInSeconds *float64 `json:"expiresInSeconds"`
		Visitor          *string  `json:"visitor"`
		Priority         *bool    `json:"priority"`
	}
	if err := decodeStrict(c.Body(), &in); err != nil {
		return err
	}
	count, uses := 1, 1
	if in.Count != nil {
		count = *in.Count
	}
	if in.Uses != nil {
		uses = *in.Uses
	}
	expires := time.Now().Add(7 * 24 * time.Hour)
	switch {
	case count < 1 || count > maxInvites:
		return fieldError("count", "must be between 1 and 10000")
	case uses < 1 || uses > 1000000:
		return fieldError("uses", "must be between 1 and 1000000")
	case in.ExpiresAt != nil && in.ExpiresInSeconds != nil:
		return fieldError("expiresAt", "give expiresAt or expiresInSeconds, not both")
	case in.Visitor != nil && !queue.ValidVisitor(*in.Visitor):
		return fieldError("visitor", "must match ^[A-Za-z0-9_-]{1,64}$")
	case in.Visitor != nil && count > 1:
		return fieldError("visitor", "a code for one visitor is minted alone (count 1)")
	}
	if in.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *in.ExpiresAt)
		if err != nil {
			return fieldError("expiresAt", "must be an RFC 3339 time")
		}
		expires = t
	}
	if in.ExpiresInSeconds != nil {
		sec := *in.ExpiresInSeconds
		if !(sec >= 1 && sec <= 366*24*3600) {
			return fieldError("expiresInSeconds", "must be between 1 and 31622400")
		}
		expires = time.Now().Add(time.Duration(sec * float64(time.Second)))
	}
	if !expires.After(time.Now()) || expires.After(time.Now().Add(366*24*time.Hour)) {
		return fieldError("expiresAt", "must be in the future, within a year")
	}
	expires = expires.Truncate(time.Second)
	visitor := ""
	if in.Visitor != nil {
		visitor = *in.Visitor
	}
	prio := in.Priority != nil && *in.Priority
	codes := make([]string, count)
	for i := range codes {
		codes[i] = a.opts.Invites.Mint(invite.Code{Room: r, ID: invite.NewID(), Expires: expires, Uses: uses, Visitor: visitor, Priority: prio})
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	a.auditEvent(ctx, r, label(c), Entry{Action: "mint-invites", Visitor: visitor, Invites: &Invites{
		Count: count, Uses: uses, Priority: prio, ExpiresAt: expires.UTC().Format(time.RFC3339),
	}})
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"room": r, "codes": codes, "uses": uses, "visitor": visitor, "priority": prio,
		"expiresAt": expires.UTC().Format(time.RFC3339),
	})
}

var errNoSession = httperr.New(404, "session_not_found", "this visitor holds no session in this room")

// adminEndSession is DELETE /api/v1/admin/rooms/{room}/sessions/{visitor}.
func (a *API) adminEndSession(c *fiber.Ctx) error {
	r, err := roomParam(c)
	if err != nil {
		return err
	}
	id := c.Params("visitor")
	if !queue.ValidVisitor(id) {
		return httperr.New(400, "invalid_visitor", "visitor ids match ^[A-Za-z0-9_-]{1,64}$")
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	nb, exp, ok, err := a.store.Session(ctx, r, id)
	if err != nil {
		return a.storeError(c, err)
	}
	if !ok {
		return errNoSession
	}
	if err := a.opts.EndSession(ctx, r, id, nb, exp); err != nil {
		return a.storeError(c, err)
	}
	a.auditEvent(ctx, r, label(c), Entry{Action: "end-session", Visitor: id})
	return c.SendStatus(fiber.StatusNoContent)
}
