// Package settings declares a room's settings once: each setting's name,
// type, bounds, default, one-line doc and check live in one table
// (Fields), and everything that reads or writes a room's settings derives
// from it: validation, the admin API's JSON and its partial updates, the
// rooms file, the Redis hash the queue stores them in (and the field list
// its Lua scripts read), the dashboard's form and the reference table in
// docs/rooms.md.
//
// Adding a setting is a field of Room, one entry in Fields and, in the
// admin API, its effect in words.
package settings

import (
	"time"
)

// Admission strategies (Room.Strategy).
const (
	StrategyFixed     = "fixed"      // batch per tick, whatever is active
	StrategyMaxActive = "max-active" // keep live tokens at or under MaxActive
)

// Queueing methods (Room.Method).
const (
	MethodFIFO        = "fifo"        // tickets in order (the default)
	MethodRandom      = "random"      // a lottery among those waiting, each tick
	MethodPassthrough = "passthrough" // admitted at join, with a token
	MethodReject      = "reject"      // closed to new visitors, with a message
)

// Activations (Room.Activation): when a room queues its visitors.
const (
	ActivationAlways = "always" // every new visitor queues (the default)
	ActivationBusy   = "busy"   // admitted on the spot while the room has room and nobody waits
)

// Fail modes of the protected endpoint while Redis is unreachable
// (Room.FailMode).
const (
	FailOpen   = "open"   // admit through a local limiter at the room's rate
	FailClosed = "closed" // admit nobody
)

// Presence defaults and bounds of a room (Room.AwayAfter, DropAfter).
// AwayAfter is at least three times the longest nextPollMs a waiting
// visitor is given (5 s), so a visitor who polls as told is never away.
const (
	DefaultAwayAfter = 60 * time.Second
	DefaultDropAfter = 10 * time.Minute
	MinAwayAfter     = 15 * time.Second
)

// MaxPowBits bounds a room's powBits: 2^28 hashes take a phone minutes.
const MaxPowBits = 28

// Room is a room's live settings, stored in Redis; a zero field means
// the instance default. A change applies from the next tick everywhere.
// Fields says what each one is.
type Room struct {
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

	// Autopilot sets the room's rate (Batch under fixed, MaxActive under
	// max-active) every second from the origin's measured health: p95
	// latency at or under LatencyTarget (ms), errors at or under
	// MaxErrorRate, the rate within MinRate and MaxRate. Zero means the
	// default of each (EffectiveAutopilot).
	Autopilot     bool
	LatencyTarget int
	MaxErrorRate  float64
	MinRate       float64
	MaxRate       float64

	// Presence: with NoPresence unset, admission skips visitors unseen
	// for AwayAfter (default 60 s) and they lose their place after
	// DropAfter (default 10 min); with max-active or seats, an admitted
	// visitor unseen for AwayAfter gives its unused token's slot back
	// (under fixed, one never seen since its admission gives its token
	// back), and each token taken back is made up by an admission more in
	// a later tick.
	NoPresence bool
	AwayAfter  time.Duration
	DropAfter  time.Duration

	// Method is how the room admits: "" (fifo), random, passthrough,
	// reject; Message is also what a join into a rejecting room is told.
	Method string

	// Activation is when the room queues: "" (always) or busy, where a
	// visitor without a place is admitted on the spot while the room is
	// under its threshold and nobody waits.
	Activation string

	// The waiting page's look (package branding checks them): a title, a
	// logo image URL, an accent colour, a background (colour or image URL)
	// and an HTML fragment for the footer, stored sanitized.
	BrandTitle      string
	BrandLogo       string
	BrandAccent     string
	BrandBackground string
	BrandFooter     string

	version int64 // of the stored settings this was read from (FromHash)
}

// Version is the version of the stored settings r was read from (0 for
// settings never stored).
func (r Room) Version() int64 { return r.version }

// EffectiveAwayAfter is the room's awayAfter with the default filled in.
func (r Room) EffectiveAwayAfter() time.Duration {
	if r.AwayAfter > 0 {
		return r.AwayAfter
	}
	return DefaultAwayAfter
}

// EffectiveDropAfter is the room's dropAfter with the default filled in.
func (r Room) EffectiveDropAfter() time.Duration {
	if r.DropAfter > 0 {
		return r.DropAfter
	}
	return DefaultDropAfter
}

// Autopilot defaults (Room.LatencyTarget, MaxErrorRate, MinRate, MaxRate).
const (
	DefaultLatencyTarget = 500 * time.Millisecond
	DefaultMaxErrorRate  = 0.01
	DefaultMinRate       = 1.0
	DefaultMaxRate       = 1000.0
)

// AutopilotLimits are a room's autopilot settings with the defaults
// filled in.
type AutopilotLimits struct {
	LatencyTarget time.Duration
	MaxErrorRate  float64
	MinRate       float64
	MaxRate       float64
}

// EffectiveAutopilot is r's autopilot settings with the defaults filled in.
func (r Room) EffectiveAutopilot() AutopilotLimits {
	l := AutopilotLimits{LatencyTarget: DefaultLatencyTarget, MaxErrorRate: DefaultMaxErrorRate, MinRate: DefaultMinRate, MaxRate: DefaultMaxRate}
	if r.LatencyTarget > 0 {
		l.LatencyTarget = time.Duration(r.LatencyTarget) * time.Millisecond
	}
	if r.MaxErrorRate > 0 {
		l.MaxErrorRate = r.MaxErrorRate
	}
	if r.MinRate > 0 {
		l.MinRate = r.MinRate
	}
	if r.MaxRate > 0 {
		l.MaxRate = r.MaxRate
	}
	return l
}

// Defaults are an instance's values for the settings a room leaves zero.
type Defaults struct {
	Strategy  string // "" = fixed
	Batch     int
	TokenTTL  time.Duration
	TokenMax  time.Duration
	FailMode  string
	JoinRate  float64
	JoinBurst int
}

// Effective is r with d filled in where r leaves a setting to the
// instance: what the room really does.
func (r Room) Effective(d Defaults) Room {
	if r.JoinRate == 0 {
		r.JoinRate, r.JoinBurst = d.JoinRate, d.JoinBurst
	} else if r.JoinBurst == 0 {
		r.JoinBurst = max(int(r.JoinRate), 1)
	}
	if r.Strategy == "" {
		r.Strategy = d.Strategy
	}
	if r.Strategy == "" {
		r.Strategy = StrategyFixed
	}
	if r.Batch == 0 {
		r.Batch = d.Batch
	}
	if r.TokenTTL == 0 {
		r.TokenTTL = d.TokenTTL
	}
	if r.TokenMax == 0 {
		r.TokenMax = d.TokenMax
	}
	if r.FailMode == "" {
		r.FailMode = d.FailMode
	}
	if r.Method == "" {
		r.Method = MethodFIFO
	}
	if r.Activation == "" {
		r.Activation = ActivationAlways
	}
	r.AwayAfter, r.DropAfter = r.EffectiveAwayAfter(), r.EffectiveDropAfter()
	return r
}

// FieldError names the setting that is invalid.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate reports the first invalid field: each setting's own check in
// the order of Fields, then the checks of settings taken together.
func (r Room) Validate() error {
	for _, f := range Fields {
		if msg := f.check(r); msg != "" {
			return &FieldError{f.Name, msg}
		}
	}
	switch {
	case r.Strategy == StrategyMaxActive && r.MaxActive == 0:
		return &FieldError{"maxActive", "is required with strategy max-active"}
	case r.TokenMax != 0 && r.TokenTTL != 0 && r.TokenMax < r.TokenTTL:
		return &FieldError{"tokenMaxSeconds", "must be at least tokenTtlSeconds"}
	case r.JoinBurst > 0 && r.JoinRate == 0:
		return &FieldError{"joinBurst", "needs joinRate"}
	case r.EffectiveAutopilot().MinRate > r.EffectiveAutopilot().MaxRate:
		return &FieldError{"maxRate", "must be at least minRate (defaults 1 and 1000)"}
	case r.DropAfter == 0 && r.EffectiveAwayAfter() > DefaultDropAfter:
		return &FieldError{"awayAfterSeconds", "must be at most dropAfterSeconds (default 600)"}
	}
	return nil
}
