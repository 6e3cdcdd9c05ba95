package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/branding"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
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
	c.Locals("adminLabel", k.label)
	c.Locals("adminRole", k.role)
	if err := needRole(c, routeRole(c.Method(), c.Path())); err != nil {
		return err
	}
	return c.Next()
}

// adminKeyOf is the admin key the request's bearer token is.
func (s *server) adminKeyOf(c *fiber.Ctx) (adminKey, error) {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok {
		return adminKey{}, errAdminKey
	}
	k, ok := s.opsNow().keys.match([]byte(strings.TrimSpace(key)))
	if !ok {
		return adminKey{}, errAdminKey
	}
	return k, nil
}

// adminRoutes is the least role that may call each admin route (method
// and path under /api/v1/admin, as registered); a route not listed needs
// admin. An operator's PUT of a room's settings may change only paused and
// message (adminPutRoom).
var adminRoutes = map[string]role{
	"GET /whoami":                 roleReadOnly,
	"GET /audit":                  roleReadOnly,
	"GET /rooms":                  roleReadOnly,
	"GET /rooms/:room":            roleReadOnly,
	"GET /rooms/:room/stats":      roleReadOnly,
	"GET /rooms/:room/audit":      roleReadOnly,
	"POST /rooms/:room/pause":     roleOperator,
	"POST /rooms/:room/resume":    roleOperator,
	"PUT /rooms/:room/message":    roleOperator,
	"DELETE /rooms/:room/message": roleOperator,
	"POST /rooms/:room/preview":   roleOperator,
	"PUT /rooms/:room":            roleOperator,

	"POST /rooms":                           roleAdmin,
	"POST /rooms/:room/invites":             roleAdmin,
	"POST /visitors":                        roleAdmin,
	"DELETE /rooms/:room/sessions/:visitor": roleAdmin,
}

// routeRole is the least role for a request to path (under /api/v1/admin)
// by method: the path is matched as the router matches it (any case, a
// trailing slash ignored), with the room and visitor segments as
// parameters. Anything it cannot place needs admin.
func routeRole(method, path string) role {
	rest, ok := strings.CutPrefix(strings.ToLower(path), "/api/v1/admin")
	if !ok {
		return roleAdmin
	}
	rest = strings.TrimSuffix(rest, "/")
	segs := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(segs) >= 2 && segs[0] == "rooms" {
		segs[1] = ":room"
	}
	if len(segs) >= 4 && segs[2] == "sessions" {
		segs[3] = ":visitor"
	}
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	if r, ok := adminRoutes[method+" /"+strings.Join(segs, "/")]; ok {
		return r
	}
	return roleAdmin
}

// needRole refuses a request whose key's role is below need: 403
// forbidden, naming the role needed.
func needRole(c *fiber.Ctx, need role) error {
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
		"may": fiber.Map{"read": true, "steer": r >= roleOperator, "configure": r >= roleAdmin},
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

// roomConfigJSON is a room's settings on the wire.
type roomConfigJSON struct {
	Room             string  `json:"room"`
	Paused           bool    `json:"paused"`
	Strategy         string  `json:"strategy"`
	Batch            int     `json:"batch"`
	MaxActive        int     `json:"maxActive"`
	Seats            int     `json:"seats"`
	OpensAt          *string `json:"opensAt"`
	TokenTTLSeconds  float64 `json:"tokenTtlSeconds"`
	TokenMaxSeconds  float64 `json:"tokenMaxSeconds"`
	FailMode         string  `json:"failMode"`
	JoinRate         float64 `json:"joinRate"`
	JoinBurst        int     `json:"joinBurst"`
	PowBits          int     `json:"powBits"`
	Message          string  `json:"message"`
	InviteOnly       bool    `json:"inviteOnly"`
	TickMs           int64   `json:"tickMs"`
	TPS              float64 `json:"tps"`
	Presence         bool    `json:"presence"`
	AwayAfterSeconds float64 `json:"awayAfterSeconds"`
	DropAfterSeconds float64 `json:"dropAfterSeconds"`
	Method           string  `json:"method"`
	BrandTitle       string  `json:"brandTitle"`
	BrandLogo        string  `json:"brandLogo"`
	BrandAccent      string  `json:"brandAccent"`
	BrandBackground  string  `json:"brandBackground"`
	BrandFooter      string  `json:"brandFooter"`
	// FromFile maps each setting the rooms file sets to why it is
	// read-only here.
	FromFile map[string]string `json:"fromFile,omitempty"`
}

// effective fills the instance defaults into a room's stored settings.
func (s *server) effective(room string, c queue.RoomConfig) roomConfigJSON {
	out := roomConfigJSON{
		Room: room, Paused: c.Paused, Strategy: c.Strategy, Batch: c.Batch, MaxActive: c.MaxActive, Seats: c.Seats,
		TokenTTLSeconds: c.TokenTTL.Seconds(), TokenMaxSeconds: c.TokenMax.Seconds(), FailMode: c.FailMode,
		JoinRate: c.JoinRate, JoinBurst: c.JoinBurst, PowBits: c.PowBits, Message: c.Message, InviteOnly: c.InviteOnly, TickMs: s.cfg.Capacity.Tick.Milliseconds(),
		Presence: !c.NoPresence, AwayAfterSeconds: c.EffectiveAwayAfter().Seconds(),
		DropAfterSeconds: c.EffectiveDropAfter().Seconds(),
		Method:           cmp.Or(c.Method, queue.MethodFIFO),
		BrandTitle:       c.BrandTitle, BrandLogo: c.BrandLogo, BrandAccent: c.BrandAccent,
		BrandBackground: c.BrandBackground, BrandFooter: c.BrandFooter,
	}
	if out.JoinRate == 0 {
		out.JoinRate, out.JoinBurst = s.cfg.JoinRate, s.cfg.JoinBurst
	} else if out.JoinBurst == 0 {
		out.JoinBurst = max(int(out.JoinRate), 1)
	}
	if out.Strategy == "" {
		out.Strategy = queue.StrategyFixed
	}
	if out.Batch == 0 {
		out.Batch = s.cfg.Capacity.BatchSize()
	}
	if out.TokenTTLSeconds == 0 {
		out.TokenTTLSeconds = s.cfg.TokenTTL.Seconds()
	}
	if out.TokenMaxSeconds == 0 {
		out.TokenMaxSeconds = s.cfg.TokenMax.Seconds()
	}
	if out.FailMode == "" {
		out.FailMode = s.cfg.FailMode
	}
	if !c.OpensAt.IsZero() {
		t := c.OpensAt.UTC().Format(time.RFC3339Nano)
		out.OpensAt = &t
	}
	out.TPS = float64(out.Batch) / s.cfg.Capacity.Tick.Seconds()
	out.FromFile = s.fileLocks(room)
	return out
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

// roomPatch is a change of some of a room's settings: the fields present
// in a request body. Absent fields keep their value.
type roomPatch struct {
	Paused          *bool    `json:"paused"`
	Strategy        *string  `json:"strategy"`
	Batch           *int     `json:"batch"`
	MaxActive       *int     `json:"maxActive"`
	Seats           *int     `json:"seats"`
	OpensAt         *string  `json:"opensAt"`
	TokenTTLSeconds *float64 `json:"tokenTtlSeconds"`
	TokenMaxSeconds *float64 `json:"tokenMaxSeconds"`
	FailMode        *string  `json:"failMode"`
	JoinRate        *float64 `json:"joinRate"`
	JoinBurst       *int     `json:"joinBurst"`
	PowBits         *int     `json:"powBits"`
	Message         *string  `json:"message"`
	InviteOnly      *bool    `json:"inviteOnly"`

	Presence         *bool    `json:"presence"`
	AwayAfterSeconds *float64 `json:"awayAfterSeconds"`
	DropAfterSeconds *float64 `json:"dropAfterSeconds"`
	Method           *string  `json:"method"`

	BrandTitle      *string `json:"brandTitle"`
	BrandLogo       *string `json:"brandLogo"`
	BrandAccent     *string `json:"brandAccent"`
	BrandBackground *string `json:"brandBackground"`
	// BrandFooter is stored as branding.Footer cleans it.
	BrandFooter *string `json:"brandFooter"`

	opensAt time.Time
}

// steerOnly reports whether p changes nothing but paused and message:
// what an operator may change.
func (p roomPatch) steerOnly() bool {
	q := p
	q.Paused, q.Message = nil, nil
	return reflect.ValueOf(q).IsZero()
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

// readPatch reads a settings change from a request body.
func readPatch(body []byte) (roomPatch, error) {
	var p roomPatch
	if err := decodeStrict(body, &p); err != nil {
		return p, err
	}
	return p, p.check()
}

// check parses what needs parsing; the rest is RoomConfig.Validate's.
func (p *roomPatch) check() error {
	if p.OpensAt != nil && *p.OpensAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *p.OpensAt)
		if err != nil {
			return fieldError("opensAt", "must be an RFC 3339 time or empty")
		}
		p.opensAt = t
	}
	return nil
}

// apply changes cfg's fields that p has.
func (p *roomPatch) apply(cfg *queue.RoomConfig) {
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if p.Paused != nil {
		cfg.Paused = *p.Paused
	}
	if p.Strategy != nil {
		cfg.Strategy = *p.Strategy
	}
	set(&cfg.Batch, p.Batch)
	set(&cfg.MaxActive, p.MaxActive)
	set(&cfg.Seats, p.Seats)
	if p.OpensAt != nil {
		cfg.OpensAt = p.opensAt
	}
	// The bounds are RoomConfig.Validate's; a value no duration can hold
	// becomes one it refuses with the field's message.
	seconds := func(v *float64, dst *time.Duration) {
		if v == nil {
			return
		}
		*dst = -1
		if *v >= 0 && *v < 1e9 {
			*dst = time.Duration(*v * float64(time.Second))
		}
	}
	seconds(p.TokenTTLSeconds, &cfg.TokenTTL)
	seconds(p.TokenMaxSeconds, &cfg.TokenMax)
	seconds(p.AwayAfterSeconds, &cfg.AwayAfter)
	seconds(p.DropAfterSeconds, &cfg.DropAfter)
	if p.Presence != nil {
		cfg.NoPresence = !*p.Presence
	}
	if p.Method != nil {
		cfg.Method = *p.Method
	}
	if p.FailMode != nil {
		cfg.FailMode = *p.FailMode
	}
	if p.JoinRate != nil {
		cfg.JoinRate = *p.JoinRate
	}
	set(&cfg.JoinBurst, p.JoinBurst)
	set(&cfg.PowBits, p.PowBits)
	if p.Message != nil {
		cfg.Message = *p.Message
	}
	if p.InviteOnly != nil {
		cfg.InviteOnly = *p.InviteOnly
	}
	str := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	str(&cfg.BrandTitle, p.BrandTitle)
	str(&cfg.BrandLogo, p.BrandLogo)
	str(&cfg.BrandAccent, p.BrandAccent)
	str(&cfg.BrandBackground, p.BrandBackground)
	if p.BrandFooter != nil {
		cfg.BrandFooter = *p.BrandFooter
		if branding.CheckFooter(cfg.BrandFooter) == "" { // else Validate names the field
			cfg.BrandFooter = branding.Footer(cfg.BrandFooter)
		}
	}
}

// changeRoom applies p to room's settings as they are when written (a
// concurrent change of other fields is kept), refusing a change of a
// setting the rooms file sets, and records it in the audit trail.
func (s *server) changeRoom(c *fiber.Ctx, r, action string, p *roomPatch) (queue.RoomConfig, error) {
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	var before queue.RoomConfig
	cfg, err := s.q.UpdateRoomConfig(ctx, r, func(cfg *queue.RoomConfig) error {
		before = *cfg
		p.apply(cfg)
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
	p, err := readPatch(c.Body())
	if err != nil {
		return err
	}
	if !p.steerOnly() {
		if err := needRole(c, roleAdmin); err != nil {
			return err
		}
	}
	cfg, err := s.changeRoom(c, r, "update", &p)
	if err != nil {
		return err
	}
	return c.JSON(s.effective(r, cfg))
}

// adminCreateRoom creates a room with the settings in the body; 409 when
// it exists already.
func (s *server) adminCreateRoom(c *fiber.Ctx) error {
	var in struct {
		Room *string `json:"room"`
		roomPatch
	}
	if err := decodeStrict(c.Body(), &in); err != nil {
		return err
	}
	if in.Room == nil || !queue.ValidRoom(*in.Room) {
		return fieldError("room", "must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	if err := in.check(); err != nil {
		return err
	}
	r := *in.Room
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	exists, err := s.q.RoomExists(ctx, r)
	if err != nil {
		return s.storeError(c, err)
	}
	if exists {
		return httperr.New(409, "room_exists", "room "+r+" exists already; change it with PUT /api/v1/admin/rooms/"+r)
	}
	cfg, err := s.changeRoom(c, r, "create", &in.roomPatch)
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
	p, err := readPatch(c.Body())
	if err != nil {
		return err
	}
	r, before, err := s.roomConfig(c)
	if err != nil {
		return err
	}
	after := before
	p.apply(&after)
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
		"room": r, "changes": s.changes(r, before, after),
		"effects": s.effects(r, before, after, st),
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
		cfg, err := s.changeRoom(c, r, "update", &roomPatch{Message: &text})
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
		cfg, err := s.changeRoom(c, r, action, &roomPatch{Paused: &paused})
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
		"paused": cfg.Paused, "strategy": eff.Strategy,
		"connections": fiber.Map{"ws": ws, "sse": sse}, "instances": live,
		"deliveryLagMs": fiber.Map{"p50": float64(p50.Microseconds()) / 1000, "p99": float64(p99.Microseconds()) / 1000, "count": lagN},
		"batch":         eff.Batch, "tickMs": eff.TickMs, "tps": eff.TPS,
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
	s.auditEvent(ctx, "", adminLabel(c), auditEntry{Action: "mint-visitor", Visitor: in.ID})
	return c.JSON(fiber.Map{"id": in.ID, "visitor": s.signer.VisitorCredential(in.ID)})
}
