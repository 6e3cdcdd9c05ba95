package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/branding"
)

// Admission strategies.
const (
	StrategyFixed     = "fixed"      // batch per tick, whatever is active
	StrategyMaxActive = "max-active" // keep live tokens at or under MaxActive
)

// Queueing methods (RoomConfig.Method).
const (
	MethodFIFO        = "fifo"        // tickets in order (the default)
	MethodRandom      = "random"      // a lottery among those waiting, each tick
	MethodPassthrough = "passthrough" // admitted at join, with a token
	MethodReject      = "reject"      // closed to new visitors, with a message
)

// Fail modes of the protected endpoint while Redis is unreachable.
const (
	FailOpen   = "open"   // admit through a local limiter at the room's rate
	FailClosed = "closed" // admit nobody
)

// RoomConfig is a room's live settings, stored in Redis; a zero field means
// the instance default. A change applies from the next tick everywhere.
type RoomConfig struct {
	Paused    bool
	Strategy  string
	Batch     int
	MaxActive int
	Seats     int
	OpensAt   time.Time
	TokenTTL  time.Duration // idle lifetime, extended by use
	TokenMax  time.Duration // absolute cap of a token's lifetime
	FailMode  string
	JoinRate  float64 // new visitors per second one client address may create here; 0 = the deployment's
	JoinBurst int     // with JoinRate: how many at once
	PowBits   int     // proof of work a new visitor's join needs (leading zero bits); 0 = none
	Message   string  // to everyone waiting, plain text ("" = none); see CheckMessage
	// InviteOnly rooms take a new visitor only with an invite code.
	InviteOnly bool

	// Presence (see Seen): with NoPresence unset, admission skips visitors
	// unseen for AwayAfter (default 60 s) and they lose their place after
	// DropAfter (default 10 min); with max-active or seats, an admitted
	// visitor unseen for AwayAfter gives its unused token's slot back
	// (under fixed, one never seen since its admission gives its token
	// back), and each token taken back is made up by an admission more in
	// a later tick.
	NoPresence bool
	AwayAfter  time.Duration
	DropAfter  time.Duration

	// Method is how the room admits (method.lua): "" or fifo, random,
	// passthrough, reject; Message is also what a join into a rejecting room is told.
	Method string

	// The waiting page's look (package branding checks them): a title, a
	// logo image URL, an accent colour, a background (colour or image URL)
	// and an HTML fragment for the footer, stored sanitized.
	BrandTitle      string
	BrandLogo       string
	BrandAccent     string
	BrandBackground string
	BrandFooter     string

	version int64 // of the stored settings this was read from
}

// FieldError names the setting that is invalid.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports the first invalid field.
func (c RoomConfig) Validate() error {
	switch {
	case c.Strategy != "" && c.Strategy != StrategyFixed && c.Strategy != StrategyMaxActive:
		return &FieldError{"strategy", `must be "fixed" or "max-active"`}
	case c.Batch < 0 || c.Batch > 100000:
		return &FieldError{"batch", "must be between 0 (default) and 100000"}
	case c.MaxActive < 0 || c.MaxActive > 10000000:
		return &FieldError{"maxActive", "must be between 0 and 10000000"}
	case c.Strategy == StrategyMaxActive && c.MaxActive == 0:
		return &FieldError{"maxActive", "is required with strategy max-active"}
	case c.Seats < 0 || c.Seats > 100000000:
		return &FieldError{"seats", "must be between 0 (no limit) and 100000000"}
	case c.TokenTTL != 0 && (c.TokenTTL < time.Second || c.TokenTTL > 24*time.Hour):
		return &FieldError{"tokenTtlSeconds", "must be 0 (the default) or between 1 and 86400"}
	case c.TokenMax != 0 && (c.TokenMax < time.Second || c.TokenMax > 7*24*time.Hour):
		return &FieldError{"tokenMaxSeconds", "must be 0 (the default) or between 1 and 604800"}
	case c.TokenMax != 0 && c.TokenTTL != 0 && c.TokenMax < c.TokenTTL:
		return &FieldError{"tokenMaxSeconds", "must be at least tokenTtlSeconds"}
	case c.JoinRate < 0 || c.JoinRate > 1e6 || c.JoinRate != c.JoinRate:
		return &FieldError{"joinRate", "must be between 0 (the default) and 1000000 per second"}
	case c.JoinBurst < 0 || c.JoinBurst > 1000000:
		return &FieldError{"joinBurst", "must be between 0 (the default) and 1000000"}
	case c.JoinBurst > 0 && c.JoinRate == 0:
		return &FieldError{"joinBurst", "needs joinRate"}
	case c.PowBits < 0 || c.PowBits > MaxPowBits:
		return &FieldError{"powBits", "must be between 0 (no proof of work) and " + strconv.Itoa(MaxPowBits)}
	case c.FailMode != "" && c.FailMode != FailOpen && c.FailMode != FailClosed:
		return &FieldError{"failMode", `must be "open" or "closed"`}
	case !c.OpensAt.IsZero() && (c.OpensAt.Year() < 2000 || c.OpensAt.Year() > 3000):
		return &FieldError{"opensAt", "must be a time between the years 2000 and 3000"}
	case c.Method != "" && c.Method != MethodFIFO && c.Method != MethodRandom && c.Method != MethodPassthrough && c.Method != MethodReject:
		return &FieldError{"method", `must be "fifo", "random", "passthrough" or "reject"`}
	case c.AwayAfter != 0 && (c.AwayAfter < MinAwayAfter || c.AwayAfter > time.Hour):
		return &FieldError{"awayAfterSeconds", "must be 0 (the default, 60) or between 15 (3 × the longest nextPollMs) and 3600"}
	case c.DropAfter != 0 && (c.DropAfter < c.awayAfter() || c.DropAfter > 24*time.Hour):
		return &FieldError{"dropAfterSeconds", "must be 0 (the default, 600) or between awayAfterSeconds and 86400"}
	case c.DropAfter == 0 && c.awayAfter() > DefaultDropAfter:
		return &FieldError{"awayAfterSeconds", "must be at most dropAfterSeconds (default 600)"}
	}
	if err := CheckMessage(c.Message); err != nil {
		return &FieldError{"message", err.Error()}
	}
	for _, b := range []struct{ field, msg string }{
		{"brandTitle", branding.CheckTitle(c.BrandTitle)},
		{"brandLogo", branding.CheckImageURL(c.BrandLogo)},
		{"brandAccent", branding.CheckColor(c.BrandAccent)},
		{"brandBackground", branding.CheckBackground(c.BrandBackground)},
		{"brandFooter", branding.CheckFooter(c.BrandFooter)},
	} {
		if b.msg != "" {
			return &FieldError{b.field, b.msg}
		}
	}
	return nil
}

func (c RoomConfig) fields() []string {
	var f []string
	add := func(k, v string) { f = append(f, k, v) }
	if c.Paused {
		add("paused", "1")
	}
	if c.Strategy != "" {
		add("strategy", c.Strategy)
	}
	if c.Batch > 0 {
		add("batch", strconv.Itoa(c.Batch))
	}
	if c.MaxActive > 0 {
		add("maxActive", strconv.Itoa(c.MaxActive))
	}
	if c.Seats > 0 {
		add("seats", strconv.Itoa(c.Seats))
	}
	if !c.OpensAt.IsZero() {
		add("opensAt", strconv.FormatInt(c.OpensAt.UnixMilli(), 10))
	}
	if c.TokenTTL > 0 {
		add("ttlMs", strconv.FormatInt(c.TokenTTL.Milliseconds(), 10))
	}
	if c.TokenMax > 0 {
		add("maxMs", strconv.FormatInt(c.TokenMax.Milliseconds(), 10))
	}
	if c.FailMode != "" {
		add("failMode", c.FailMode)
	}
	if c.JoinRate > 0 {
		add("joinRate", strconv.FormatFloat(c.JoinRate, 'g', -1, 64))
	}
	if c.JoinBurst > 0 {
		add("joinBurst", strconv.Itoa(c.JoinBurst))
	}
	if c.PowBits > 0 {
		add("powBits", strconv.Itoa(c.PowBits))
	}
	if c.NoPresence {
		add("presence", "off")
	}
	if c.Method != "" && c.Method != MethodFIFO {
		add("method", c.Method)
	}
	if c.Message != "" {
		add("message", c.Message)
	}
	if c.AwayAfter > 0 {
		add("awayMs", strconv.FormatInt(c.AwayAfter.Milliseconds(), 10))
	}
	if c.DropAfter > 0 {
		add("dropMs", strconv.FormatInt(c.DropAfter.Milliseconds(), 10))
	}
	if c.InviteOnly {
		add("inviteOnly", "1")
	}
	for _, b := range [][2]string{
		{"brandTitle", c.BrandTitle}, {"brandLogo", c.BrandLogo}, {"brandAccent", c.BrandAccent},
		{"brandBackground", c.BrandBackground}, {"brandFooter", c.BrandFooter},
	} {
		if b[1] != "" {
			add(b[0], b[1])
		}
	}
	return f
}

func parseRoomConfig(flat []any) RoomConfig {
	var c RoomConfig
	for i := 0; i+1 < len(flat); i += 2 {
		k, _ := flat[i].(string)
		v, _ := flat[i+1].(string)
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "paused":
			c.Paused = v == "1"
		case "strategy":
			c.Strategy = v
		case "batch":
			c.Batch = int(n)
		case "maxActive":
			c.MaxActive = int(n)
		case "seats":
			c.Seats = int(n)
		case "opensAt":
			c.OpensAt = time.UnixMilli(n)
		case "ttlMs":
			c.TokenTTL = time.Duration(n) * time.Millisecond
		case "maxMs":
			c.TokenMax = time.Duration(n) * time.Millisecond
		case "failMode":
			c.FailMode = v
		case "joinRate":
			c.JoinRate, _ = strconv.ParseFloat(v, 64)
		case "joinBurst":
			c.JoinBurst = int(n)
		case "powBits":
			c.PowBits = int(n)
		case "method":
			c.Method = v
		case "message":
			c.Message = v
		case "presence":
			c.NoPresence = v == "off"
		case "awayMs":
			c.AwayAfter = time.Duration(n) * time.Millisecond
		case "dropMs":
			c.DropAfter = time.Duration(n) * time.Millisecond
		case "inviteOnly":
			c.InviteOnly = v == "1"
		case "brandTitle":
			c.BrandTitle = v
		case "brandLogo":
			c.BrandLogo = v
		case "brandAccent":
			c.BrandAccent = v
		case "brandBackground":
			c.BrandBackground = v
		case "brandFooter":
			c.BrandFooter = v
		case "v":
			c.version = n
		}
	}
	return c
}

// RoomConfig reads room's stored settings.
func (q *Queue) RoomConfig(ctx context.Context, room string) (RoomConfig, error) {
	if !ValidRoom(room) {
		return RoomConfig{}, ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "HGETALL", prefix(room)+"cfg")
	if err != nil {
		return RoomConfig{}, fmt.Errorf("queue: room config: %w", err)
	}
	flat, _ := v.([]any)
	return parseRoomConfig(flat), nil
}

// SetRoomConfig replaces room's settings; every instance applies them from
// its next tick, and hubs are told to reconcile the room.
func (q *Queue) SetRoomConfig(ctx context.Context, room string, c RoomConfig) error {
	_, err := q.writeRoomConfig(ctx, room, c, "")
	return err
}

// ErrConfigContention is returned by UpdateRoomConfig when other writers
// kept changing the settings under it.
var ErrConfigContention = errors.New("queue: room settings changed by others too often; retry")

// UpdateRoomConfig reads room's settings, applies change and writes the
// result only if nobody changed them in between; otherwise it reads them
// again and applies change to what is there now. So two operators changing
// different fields at once both keep their change.
func (q *Queue) UpdateRoomConfig(ctx context.Context, room string, change func(*RoomConfig) error) (RoomConfig, error) {
	for range 20 {
		c, err := q.RoomConfig(ctx, room)
		if err != nil {
			return RoomConfig{}, err
		}
		if err := change(&c); err != nil {
			return RoomConfig{}, err
		}
		ok, err := q.writeRoomConfig(ctx, room, c, strconv.FormatInt(c.version, 10))
		if err != nil || ok {
			return c, err
		}
	}
	return RoomConfig{}, ErrConfigContention
}

// writeRoomConfig writes c if the stored version is still version ("" =
// any); it reports whether it wrote.
func (q *Queue) writeRoomConfig(ctx context.Context, room string, c RoomConfig, version string) (bool, error) {
	if !ValidRoom(room) {
		return false, ErrInvalidRoom
	}
	if err := c.Validate(); err != nil {
		return false, err
	}
	// The draw's commitment exists before anyone can join the pre-queue.
	if !c.OpensAt.IsZero() {
		if err := q.commitDraw(ctx, room); err != nil {
			return false, err
		}
	}
	// So is the lottery's, before any tick draws with it.
	if c.Method == MethodRandom {
		if _, err := q.lottery(ctx, room, "commit"); err != nil {
			return false, err
		}
	}
	args := append([]string{prefix(room), room, q.channel(room), version}, c.fields()...)
	v, err := q.r.Eval(ctx, setcfgScript, roomKeys(room), args...)
	if err != nil {
		return false, fmt.Errorf("queue: set room config: %w", err)
	}
	if n, _ := asInt(v); n != 1 {
		return false, nil
	}
	// A resume (or any change) is admitted from the next tick here; the
	// other instances look at a paused room once a second (pausedEvery).
	q.paused.forget(room)
	// A lottery that ended may show its seed; the next gets a new one.
	if c.Method != MethodRandom {
		if _, err := q.lottery(ctx, room, "end"); err != nil {
			return true, err
		}
	}
	if _, err := q.r.Do(ctx, "SADD", configuredRoomsKey, room); err != nil {
		return true, fmt.Errorf("queue: set room config: %w", err)
	}
	// A room that opens later must be in the tick loop's set so that its
	// pre-queue is drawn at opening.
	if _, err := q.r.Do(ctx, "SADD", roomsKey, room); err != nil {
		return true, fmt.Errorf("queue: set room config: %w", err)
	}
	q.poke()
	return true, nil
}

// RoomStats is a snapshot of a room's counters.
type RoomStats struct {
	Waiting       int64
	PreQueue      int64
	ActiveTokens  int64
	AdmittedTotal int64
	SeatsHeld     int64
	Rate          float64 // measured admissions per second (smoothed)
	Priority      int64   // of Waiting and PreQueue, those in the priority band
}

// Stats reads room's counters in one round trip.
func (q *Queue) Stats(ctx context.Context, room string) (RoomStats, error) {
	if !ValidRoom(room) {
		return RoomStats{}, ErrInvalidRoom
	}
	v, err := q.r.Eval(ctx, roomstatsScript, roomKeys(room), prefix(room))
	if err != nil {
		return RoomStats{}, fmt.Errorf("queue: room stats: %w", err)
	}
	return decodeRoomStats(v)
}

// RoomExists reports whether an operator created room (stored settings).
func (q *Queue) RoomExists(ctx context.Context, room string) (bool, error) {
	if !ValidRoom(room) {
		return false, ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "SISMEMBER", configuredRoomsKey, room)
	if err != nil {
		return false, fmt.Errorf("queue: room exists: %w", err)
	}
	n, err := asInt(v)
	return n == 1, err
}

// ConfiguredRooms lists the rooms an operator created.
func (q *Queue) ConfiguredRooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SMEMBERS", configuredRoomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}

// AllRooms lists rooms with waiting visitors or stored settings.
func (q *Queue) AllRooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SUNION", roomsKey, configuredRoomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}
