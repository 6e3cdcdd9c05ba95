// Package wire is the contract between the admit script, the queue, the hub
// and every transport: the room channel and the events published on it, and
// the state message that join, status polls, WebSocket and SSE all send.
// It is written once here so that polling and push cannot drift apart.
package wire

import (
	"math"
	"strconv"
	"time"
)

// Status is where a visitor stands in a room.
type Status string

// The statuses of the HTTP contract.
const (
	StatusWaiting    Status = "waiting"
	StatusAdmitted   Status = "admitted"
	StatusExpired    Status = "expired"
	StatusNotInQueue Status = "not_in_queue"
	StatusSoldOut    Status = "sold_out"
	StatusClosed     Status = "closed" // the room takes no one now (a join's answer); Message says why
)

// State is the one message every transport sends: the body of join and
// status, and every pushed message.
//
// Position and ETASeconds go out only for a waiting visitor with a place;
// in a room that admits by lottery (method random) a waiting visitor has no
// place: InDraw (the number of people in the draw) and ChancePerMinute go
// out instead (see DrawChance);
// ETARange goes out with either when set (High > 0): the likely span of
// the wait, around ETASeconds for a place, the lottery's quartiles in a
// draw;
// a visitor in the pre-queue of a room that has not opened yet gets OpensAt
// instead. Token, NotBefore and ExpiresAt go out only when admitted.
// NextPoll goes out when set: it tells a client that falls back to polling
// when to ask. Degraded goes out only when true: the server cannot reach
// its store, so positions stand still, and the place is kept.
type State struct {
	Room       string
	Status     Status
	Position   int64 // 1-based
	ETASeconds int64
	// ETARange is the span the wait likely falls in (see Range); zero
	// without a rate to estimate from (it is not sent then).
	ETARange Range
	// Rate is the admissions per second ETASeconds assumes (see RoundRate),
	// sent with a position: between two updates a page moves the position
	// on at this rate (see Shown), so a push connection is sent a new
	// position only when that drifts from the true one.
	Rate float64
	// InDraw is the size of the lottery a waiting visitor is in (0: not
	// in one); ChancePerMinute its chance to be drawn within a minute.
	InDraw          int64
	ChancePerMinute float64
	NextPoll        time.Duration
	Paused          bool
	Token           string
	NotBefore       time.Time
	ExpiresAt       time.Time
	OpensAt         time.Time
	Degraded        bool
	Reason          string // why an expired place is gone, when not the token's age: "away"
	// Message is the operator's message to everyone in the room ("" =
	// none), also what a join into a closed room is told; it goes out as
	// "message" when set.
	Message string
	// Settings is the version of the room's stored settings the state was
	// read with; it orders message changes and is not sent.
	Settings int64
	// Activation is, in a room with activation busy, whether it queues
	// or lets visitors straight through, and since when; it goes out as
	// "activation" when known (see Activation).
	Activation Activation
}

// Activation is whether a room with activation busy is queueing (anyone
// waits) or letting visitors straight through, and since when, as its
// instances last noted it. The zero Activation is none: a room with
// activation always, or one not noted yet.
type Activation struct {
	Queueing bool
	Since    time.Time
}

// IsZero reports whether a is no activation state.
func (a Activation) IsZero() bool { return a.Since.IsZero() }

// ActivationQueueing and ActivationPassing are the states "activation"
// says.
const (
	ActivationQueueing = "queueing"
	ActivationPassing  = "passing"
)

// State is "queueing" or "passing".
func (a Activation) State() string {
	if a.Queueing {
		return ActivationQueueing
	}
	return ActivationPassing
}

// Range is a span of a wait in whole seconds: Low <= High. For a place in
// line it holds the ETA (Low <= ETASeconds <= High); in a lottery it is
// the 25th to the 75th percentile of the wait. The zero Range is none.
type Range struct {
	Low, High int64
}

// IsZero reports whether r is no range.
func (r Range) IsZero() bool { return r.High <= 0 }

// ReasonAway says an expired place was lost because its visitor was away
// (no poll and no push connection) for the room's dropAfter.
const ReasonAway = "away"

// Heartbeat is the message a quiet push connection gets now and then, so
// that the client, and any proxy between, sees it alive. Clients ignore
// what they do not know, so it needs no handling beyond counting as a sign
// of life.
var Heartbeat = []byte(`{"type":"heartbeat"}`)

// PreQueue reports whether s is a place in the pre-queue, not yet drawn.
func (s State) PreQueue() bool { return s.Status == StatusWaiting && !s.OpensAt.IsZero() }

// AppendJSON appends the state's JSON encoding to b.
func (s State) AppendJSON(b []byte) []byte {
	b = s.appendJSON(b)
	b = AppendActivation(b, s.Activation)
	if s.Degraded {
		b = append(b[:len(b)-1], `,"degraded":true}`...)
	}
	return b
}

func (s State) appendJSON(b []byte) []byte {
	b = appendHead(b, s.Room, s.Status)
	if s.InDraw > 0 && s.Status == StatusWaiting && !s.PreQueue() {
		b = appendDrawTail(b, s.InDraw, s.ChancePerMinute, s.ETARange, s.NextPoll, s.Paused)
		return appendMessage(b, s.Message)
	}
	if s.Status == StatusWaiting && !s.PreQueue() {
		b = appendWaitingTail(b, s.Position, s.ETASeconds, s.ETARange, s.Rate, s.NextPoll, s.Paused)
		return appendMessage(b, s.Message)
	}
	if s.PreQueue() {
		b = append(b, `,"opensAt":"`...)
		b = s.OpensAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = appendNextPoll(b, s.NextPoll)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, s.Paused)
	if s.Reason != "" {
		b = append(b, `,"reason":`...)
		b = AppendString(b, s.Reason)
	}
	if s.Status == StatusAdmitted {
		b = append(b, `,"token":`...)
		b = AppendString(b, s.Token)
		b = append(b, `,"notBefore":"`...)
		b = s.NotBefore.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","expiresAt":"`...)
		b = s.ExpiresAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return appendMessage(append(b, '}'), s.Message)
}

// appendMessage adds "message" to the object that ends b, when msg is set.
func appendMessage(b []byte, msg string) []byte {
	if msg == "" {
		return b
	}
	b = append(b[:len(b)-1], `,"message":`...)
	return append(AppendString(b, msg), '}')
}

// AppendActivation adds "activation" to the object that ends b, when a is
// set: a position update (AppendWaiting, AppendDraw) carries it as the
// full state does.
func AppendActivation(b []byte, a Activation) []byte {
	if a.IsZero() {
		return b
	}
	b = append(b[:len(b)-1], `,"activation":{"state":"`...)
	b = append(b, a.State()...)
	b = append(b, `","since":"`...)
	b = a.Since.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}}`...)
}

// MarshalJSON implements json.Marshaler.
func (s State) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

// WaitingPrefix is the encoded start of every waiting state of room: a
// position update appends its numbers to it with AppendWaiting instead of
// encoding the whole state.
func WaitingPrefix(room string) []byte { return appendHead(nil, room, StatusWaiting) }

// AppendWaiting appends to b (which holds the room's WaitingPrefix) the rest
// of a waiting state with a place (r: its ETARange). The result equals
// AppendJSON of the same state.
func AppendWaiting(b []byte, position, eta int64, r Range, rate float64, nextPoll time.Duration, paused bool) []byte {
	return appendWaitingTail(b, position, eta, r, rate, nextPoll, paused)
}

// RoundRate rounds an admission rate to what the state carries (3
// decimals), so that polling, push and the hub's model of a page use the
// same number.
func RoundRate(rate float64) float64 {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return 0
	}
	return math.Round(rate*1e3) / 1e3
}

// Shown is the position a page shows elapsed after it was told position
// at rate (ratePerSecond): moved on at that rate, rounded up, never below
// 1. This is how a client fills the time between two updates, and what the
// hub assumes a push client shows when it decides whether a new position
// is news. A rate of 0 (unknown, paused, degraded) leaves it standing.
func Shown(position int64, rate float64, elapsed time.Duration) int64 {
	if rate <= 0 || elapsed <= 0 || position <= 1 {
		return position
	}
	moved := rate * elapsed.Seconds()
	if moved >= float64(position) {
		return 1
	}
	return max(int64(math.Ceil(float64(position)-moved)), 1)
}

// AppendDraw appends to b (which holds the room's WaitingPrefix) the rest
// of a waiting state in a lottery (r: its ETARange). The result equals
// AppendJSON of the same state.
func AppendDraw(b []byte, size int64, chance float64, r Range, nextPoll time.Duration, paused bool) []byte {
	return appendDrawTail(b, size, chance, r, nextPoll, paused)
}

// DrawChance is the chance per minute of one visitor among size in a
// lottery that admits rate visitors a second: each tick's batch is a
// uniform random set of those in the draw, so a minute's admissions are
// too, and a given visitor is among them with probability 60·rate/size
// (exact while nobody joins; capped at 1). Rounded to 4 decimals, so that
// push and polling, which compute it apart, send the same number.
func DrawChance(size int64, rate float64) float64 {
	if size <= 0 || rate <= 0 {
		return 0
	}
	return math.Round(min(1, 60*rate/float64(size))*1e4) / 1e4
}

func appendDrawTail(b []byte, size int64, chance float64, r Range, nextPoll time.Duration, paused bool) []byte {
	b = append(b, `,"inDraw":`...)
	b = strconv.AppendInt(b, size, 10)
	b = append(b, `,"chancePerMinute":`...)
	b = strconv.AppendFloat(b, chance, 'f', -1, 64)
	b = appendRange(b, r)
	b = appendNextPoll(b, nextPoll)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, paused)
	return append(b, '}')
}

func appendHead(b []byte, room string, st Status) []byte {
	b = append(b, `{"type":"state","room":`...)
	b = AppendString(b, room)
	b = append(b, `,"status":"`...)
	b = append(b, st...)
	return append(b, '"')
}

func appendWaitingTail(b []byte, position, eta int64, r Range, rate float64, nextPoll time.Duration, paused bool) []byte {
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, position, 10)
	b = append(b, `,"etaSeconds":`...)
	b = strconv.AppendInt(b, eta, 10)
	b = appendRange(b, r)
	if rate > 0 {
		b = append(b, `,"ratePerSecond":`...)
		b = strconv.AppendFloat(b, rate, 'f', -1, 64)
	}
	b = appendNextPoll(b, nextPoll)
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, paused)
	return append(b, '}')
}

// appendRange adds "etaRange" when r is a range.
func appendRange(b []byte, r Range) []byte {
	if r.IsZero() {
		return b
	}
	b = append(b, `,"etaRange":{"low":`...)
	b = strconv.AppendInt(b, r.Low, 10)
	b = append(b, `,"high":`...)
	b = strconv.AppendInt(b, r.High, 10)
	return append(b, '}')
}

func appendNextPoll(b []byte, d time.Duration) []byte {
	if d <= 0 {
		return b
	}
	b = append(b, `,"nextPollMs":`...)
	return strconv.AppendInt(b, d.Milliseconds(), 10)
}
