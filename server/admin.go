package main

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/queue"
)

var errAdminKey = errorf(401, "invalid_admin_key", "a valid admin key is required (Authorization: Bearer <admin key>)")

// adminAuth guards /api/v1/admin with the admin key, compared in constant
// time.
func (s *server) adminAuth(c *fiber.Ctx) error {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(key)), []byte(s.cfg.AdminKey)) != 1 {
		return errAdminKey
	}
	return c.Next()
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
	return s.adminAuth(c)
}

// roomConfigJSON is a room's settings on the wire.
type roomConfigJSON struct {
	Room            string  `json:"room"`
	Paused          bool    `json:"paused"`
	Strategy        string  `json:"strategy"`
	Batch           int     `json:"batch"`
	MaxActive       int     `json:"maxActive"`
	Seats           int     `json:"seats"`
	OpensAt         *string `json:"opensAt"`
	TokenTTLSeconds float64 `json:"tokenTtlSeconds"`
	TokenMaxSeconds float64 `json:"tokenMaxSeconds"`
	FailMode        string  `json:"failMode"`
	JoinRate        float64 `json:"joinRate"`
	JoinBurst       int     `json:"joinBurst"`
	PowBits         int     `json:"powBits"`
	TickMs          int64   `json:"tickMs"`
	TPS             float64 `json:"tps"`

	Presence         bool    `json:"presence"`
	AwayAfterSeconds float64 `json:"awayAfterSeconds"`
	DropAfterSeconds float64 `json:"dropAfterSeconds"`
	Method           string  `json:"method"`
	Message          string  `json:"message"`
}

// effective fills the instance defaults into a room's stored settings.
func (s *server) effective(room string, c queue.RoomConfig) roomConfigJSON {
	out := roomConfigJSON{
		Room: room, Paused: c.Paused, Strategy: c.Strategy, Batch: c.Batch, MaxActive: c.MaxActive, Seats: c.Seats,
		TokenTTLSeconds: c.TokenTTL.Seconds(), TokenMaxSeconds: c.TokenMax.Seconds(), FailMode: c.FailMode,
		JoinRate: c.JoinRate, JoinBurst: c.JoinBurst, PowBits: c.PowBits, TickMs: s.cfg.Capacity.Tick.Milliseconds(),
		Presence: !c.NoPresence, AwayAfterSeconds: c.EffectiveAwayAfter().Seconds(),
		DropAfterSeconds: c.EffectiveDropAfter().Seconds(),
		Method:           cmp.Or(c.Method, queue.MethodFIFO), Message: c.Message,
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

func fieldError(field, msg string) *apiError {
	e := errorf(400, "invalid_field", field+": "+msg)
	e.Field = field
	return e
}

// adminPutRoom changes the fields present in the body; absent fields keep
// their value. Every instance applies the change from its next tick.
func (s *server) adminPutRoom(c *fiber.Ctx) error {
	if _, err := room(c); err != nil {
		return err
	}
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 || body[0] != '{' {
		return errInvalidJSON
	}
	var in struct {
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

		Presence         *bool    `json:"presence"`
		AwayAfterSeconds *float64 `json:"awayAfterSeconds"`
		DropAfterSeconds *float64 `json:"dropAfterSeconds"`
		Method           *string  `json:"method"`
		Message          *string  `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
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
	r, err := room(c)
	if err != nil {
		return err
	}
	var opensAt time.Time
	if in.OpensAt != nil && *in.OpensAt != "" {
		if opensAt, err = time.Parse(time.RFC3339Nano, *in.OpensAt); err != nil {
			return fieldError("opensAt", "must be an RFC 3339 time or empty")
		}
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	// Only the fields in the body change, applied to the settings as they
	// are when written: a concurrent change of other fields is kept.
	cfg, err := s.q.UpdateRoomConfig(ctx, r, func(cfg *queue.RoomConfig) error {
		if in.Paused != nil {
			cfg.Paused = *in.Paused
		}
		if in.Strategy != nil {
			cfg.Strategy = *in.Strategy
		}
		if in.Batch != nil {
			cfg.Batch = *in.Batch
		}
		if in.MaxActive != nil {
			cfg.MaxActive = *in.MaxActive
		}
		if in.Seats != nil {
			cfg.Seats = *in.Seats
		}
		if in.OpensAt != nil {
			cfg.OpensAt = opensAt
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
		seconds(in.TokenTTLSeconds, &cfg.TokenTTL)
		seconds(in.TokenMaxSeconds, &cfg.TokenMax)
		seconds(in.AwayAfterSeconds, &cfg.AwayAfter)
		seconds(in.DropAfterSeconds, &cfg.DropAfter)
		if in.Presence != nil {
			cfg.NoPresence = !*in.Presence
		}
		if in.Method != nil {
			cfg.Method = *in.Method
		}
		if in.Message != nil {
			cfg.Message = *in.Message
		}
		if in.FailMode != nil {
			cfg.FailMode = *in.FailMode
		}
		if in.JoinRate != nil {
			cfg.JoinRate = *in.JoinRate
		}
		if in.JoinBurst != nil {
			cfg.JoinBurst = *in.JoinBurst
		}
		if in.PowBits != nil {
			cfg.PowBits = *in.PowBits
		}
		return nil
	})
	if err != nil {
		var fe *queue.FieldError
		if errors.As(err, &fe) {
			return fieldError(fe.Field, fe.Msg)
		}
		return s.storeError(c, err)
	}
	return c.JSON(s.effective(r, cfg))
}

// adminPause returns a handler that pauses or resumes a room.
func (s *server) adminPause(paused bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := room(c)
		if err != nil {
			return err
		}
		ctx, cancel := s.redisCtx(c)
		defer cancel()
		cfg, err := s.q.UpdateRoomConfig(ctx, r, func(cfg *queue.RoomConfig) error {
			cfg.Paused = paused
			return nil
		})
		if err != nil {
			return s.storeError(c, err)
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
		Room    string `json:"room"`
		Waiting int64  `json:"waiting"`
	}
	out := make([]item, 0, len(rooms))
	for _, r := range rooms {
		st, err := s.q.Stats(ctx, r)
		if err != nil {
			return s.storeError(c, err)
		}
		out = append(out, item{Room: r, Waiting: st.Waiting + st.PreQueue})
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
		"room": r, "waiting": st.Waiting, "preQueue": st.PreQueue,
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
	if err := decodeObject(c.Body(), &in); err != nil {
		return err
	}
	if !queue.ValidVisitor(in.ID) {
		return fieldError("id", "must match ^[A-Za-z0-9_-]{1,64}$")
	}
	return c.JSON(fiber.Map{"id": in.ID, "visitor": s.signer.VisitorCredential(in.ID)})
}
