// Package queue is a room's fair queue in Redis: join, status, leave, the
// leaderless admission tick and token consumption, each one atomic Lua
// script using Redis TIME as the only clock; plus capacity maths and the
// signing of visitor credentials and entry tokens.
package queue

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

func loadScript(name string) *Script {
	prelude, err := scriptFS.ReadFile("scripts/now.lua")
	if err != nil {
		panic(err)
	}
	body, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return newScript(name, string(prelude)+"\n"+string(body))
}

var (
	joinScript      = loadScript("join")
	statusScript    = loadScript("status")
	leaveScript     = loadScript("leave")
	consumeScript   = loadScript("consume")
	admitScript     = loadScript("admit")
	setcfgScript    = loadScript("setcfg")
	restoreScript   = loadScript("restore")
	roomstatsScript = loadScript("roomstats")
)

// RoomsKey is the set of rooms that have waiting visitors (its hash tag
// keeps it in one cluster slot with ConfiguredRoomsKey); every instance's
// tick loop reads it, so admission goes on when the instance that took the
// joins is gone.
const RoomsKey = "wr:{rooms}:waiting"

// Keys of a room share the prefix "wr:{room}:"; the {room} hash tag keeps
// them in one cluster slot.
func prefix(room string) string   { return "wr:{" + room + "}:" }
func queueKey(room string) string { return prefix(room) + "q" }

// Channel is the room's pub/sub channel: one admission event per tick.
func Channel(room string) string { return "wr:{" + room + "}:events" }

// Options configure a Queue. The zero value of a field means its default.
type Options struct {
	Capacity  Capacity
	TokenTTL  time.Duration            // idle lifetime of an entry token, extended by use; default 300s
	TokenMax  time.Duration            // absolute cap of a token's lifetime; default 3 × TokenTTL
	Retention time.Duration            // how long an expired token still answers "expired"; default 1h
	MaxActive int                      // live tokens per room; 0 = unlimited
	NoJitter  bool                     // admit a whole batch at the start of the window (to measure what jitter buys)
	OnAdmit   func(room string, n int) // called by the tick loop after it admitted n visitors
	Logger    *slog.Logger
}

// Queue runs the queue operations of every room against one Redis.
// Safe for concurrent use.
type Queue struct {
	r      Redis
	signer *Signer
	opts   Options
	log    *slog.Logger
	rates  sync.Map // room -> measured admission rate (float64), for ETAs
}

// New returns a Queue. opts is copied.
func New(r Redis, signer *Signer, opts *Options) (*Queue, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Capacity == (Capacity{}) {
		o.Capacity = Capacity{DBPool: 40, ServiceTime: 200 * time.Millisecond, Safety: 0.7, Tick: 100 * time.Millisecond}
	}
	if err := o.Capacity.Validate(); err != nil {
		return nil, err
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 300 * time.Second
	}
	if o.TokenTTL < time.Second {
		return nil, errors.New("token-ttl must be at least 1s")
	}
	if o.TokenMax == 0 {
		o.TokenMax = 3 * o.TokenTTL
	}
	if o.TokenMax < o.TokenTTL {
		return nil, errors.New("token-max must be at least token-ttl")
	}
	if o.Retention == 0 {
		o.Retention = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Queue{r: r, signer: signer, opts: o, log: o.Logger}, nil
}

// Capacity returns the queue's capacity settings.
func (q *Queue) Capacity() Capacity { return q.opts.Capacity }

// Signer returns the queue's signer.
func (q *Queue) Signer() *Signer { return q.signer }

// ErrInvalidRoom is returned for a room name that does not match the rules.
var ErrInvalidRoom = errors.New("invalid room name")

func check(room, visitor string) error {
	if !ValidRoom(room) {
		return ErrInvalidRoom
	}
	if !ValidVisitor(visitor) {
		return ErrInvalidToken
	}
	return nil
}

func seed() string { return strconv.FormatInt(1+rand.Int64N(2147483646), 10) }

// Join puts visitor in room's queue (or its pre-queue before opening), or
// returns its current state when it is already there (a refresh keeps the
// place). Idempotent.
func (q *Queue) Join(ctx context.Context, room, visitor string) (State, error) {
	if err := check(room, visitor); err != nil {
		return State{}, err
	}
	v, err := q.r.Eval(ctx, joinScript, []string{queueKey(room)}, prefix(room), visitor, seed())
	if err != nil {
		return State{}, fmt.Errorf("queue: join: %w", err)
	}
	n, err := asInts(v, 4)
	if err != nil {
		return State{}, err
	}
	if n[3] == 1 {
		if _, err := q.r.Do(ctx, "SADD", RoomsKey, room); err != nil {
			return State{}, fmt.Errorf("queue: join: %w", err)
		}
	}
	h := roomHeader{rate: q.rate(room)}
	if n[0] == 4 {
		h.opensAt = n[1]
	}
	return q.state(room, visitor, h, n[0], n[1], n[2]), nil
}

// Status returns visitor's state in room.
func (q *Queue) Status(ctx context.Context, room, visitor string) (State, error) {
	s, err := q.StatusMany(ctx, room, []string{visitor})
	if err != nil {
		return State{}, err
	}
	return s[0], nil
}

// roomHeader is what a status read learns about the room.
type roomHeader struct {
	rate    float64
	paused  bool
	soldOut bool
	opensAt int64
}

// StatusMany returns the states of several visitors of one room in one
// round trip.
func (q *Queue) StatusMany(ctx context.Context, room string, visitors []string) ([]State, error) {
	if !ValidRoom(room) {
		return nil, ErrInvalidRoom
	}
	args := make([]string, 0, len(visitors)+2)
	args = append(args, prefix(room), seed())
	for _, v := range visitors {
		if !ValidVisitor(v) {
			return nil, ErrInvalidToken
		}
		args = append(args, v)
	}
	v, err := q.r.Eval(ctx, statusScript, []string{queueKey(room)}, args...)
	if err != nil {
		return nil, fmt.Errorf("queue: status: %w", err)
	}
	n, err := asInts(v, 5+3*len(visitors))
	if err != nil {
		return nil, err
	}
	h := roomHeader{rate: float64(n[0]) / 1000, paused: n[1] == 1, soldOut: n[2] == 1, opensAt: n[3]}
	if h.rate > 0 {
		q.rates.Store(room, h.rate)
	}
	out := make([]State, len(visitors))
	for i, vis := range visitors {
		out[i] = q.state(room, vis, h, n[5+3*i], n[5+3*i+1], n[5+3*i+2])
	}
	return out, nil
}

// rate is the last measured admission rate of room, or the configured one.
func (q *Queue) rate(room string) float64 {
	if r, ok := q.rates.Load(room); ok {
		return r.(float64)
	}
	return q.opts.Capacity.TPS()
}

// ETA estimates the wait in seconds for a 1-based position in room from
// the measured admission rate (so it stays honest under max-active limits),
// falling back to the configured rate before anything was measured.
func (q *Queue) ETA(room string, position int64) int64 {
	return etaAt(position, q.rate(room))
}

func etaAt(position int64, rate float64) int64 {
	if position <= 0 || rate <= 0 {
		return 0
	}
	return int64(math.Ceil(float64(position)/rate - 1e-9))
}

func (q *Queue) state(room, visitor string, h roomHeader, code, a, b int64) State {
	s := State{Room: room, Paused: h.paused}
	c := q.opts.Capacity
	rate := h.rate
	if rate <= 0 {
		rate = q.rate(room)
	}
	switch code {
	case 1:
		s.Status = StatusWaiting
		s.Position = a + 1
		s.ETASeconds = etaAt(s.Position, rate)
		s.NextPoll = c.nextPoll(s.Position, s.ETASeconds)
		if h.soldOut {
			s.Status = StatusSoldOut
		}
	case 2:
		s.Status = StatusAdmitted
		s.NotBefore = time.UnixMilli(a)
		s.ExpiresAt = time.UnixMilli(b)
		s.Token = q.signer.SignToken(Token{Room: room, Visitor: visitor, NotBefore: s.NotBefore, ExpiresAt: s.ExpiresAt})
	case 3:
		s.Status = StatusExpired
	case 4:
		// In the pre-queue: the place is drawn at opening.
		s.Status = StatusWaiting
		s.OpensAt = time.UnixMilli(a)
		s.NextPoll = min(max(time.Until(s.OpensAt), 500*time.Millisecond), 5*time.Second)
	default:
		s.Status = StatusNotInQueue
	}
	return s
}

// Admitted returns the admitted state for an admission event entry.
func (q *Queue) Admitted(room, visitor string, notBefore, expiresAt time.Time) State {
	return q.state(room, visitor, roomHeader{}, 2, notBefore.UnixMilli(), expiresAt.UnixMilli())
}

// Leave takes visitor out of room's queue, or gives back its unused token.
// It reports whether there was anything to leave.
func (q *Queue) Leave(ctx context.Context, room, visitor string) (bool, error) {
	if err := check(room, visitor); err != nil {
		return false, err
	}
	v, err := q.r.Eval(ctx, leaveScript, []string{queueKey(room)}, prefix(room), visitor)
	if err != nil {
		return false, fmt.Errorf("queue: leave: %w", err)
	}
	n, err := asInt(v)
	return n == 1, err
}

// Token check results.
var (
	ErrTokenUnknown = errors.New("token unknown or already used")
	ErrTokenExpired = errors.New("token expired")
)

// TooEarlyError says a token is not valid yet.
type TooEarlyError struct{ Wait time.Duration }

func (e *TooEarlyError) Error() string { return "token not valid for another " + e.Wait.String() }

// Use says what Consume does with a valid token.
type Use int

// Ways to check a token.
const (
	Check Use = iota // only check
	Spend            // use it up: a token is good once
	Touch            // check and slide its expiry (idle TTL, capped)
)

// Consume checks tok against the room's records with the Redis clock and,
// when it is valid now, does what use says. It returns the token's current
// expiry. Errors: ErrTokenUnknown, ErrTokenExpired, *TooEarlyError, or a
// Redis error.
func (q *Queue) Consume(ctx context.Context, t Token, use Use) (time.Time, error) {
	if err := check(t.Room, t.Visitor); err != nil {
		return time.Time{}, err
	}
	idle := q.opts.TokenTTL
	if use == Touch {
		if cfg, err := q.RoomConfig(ctx, t.Room); err == nil && cfg.TokenTTL > 0 {
			idle = cfg.TokenTTL
		}
	}
	v, err := q.r.Eval(ctx, consumeScript, []string{queueKey(t.Room)},
		prefix(t.Room), t.Visitor, strconv.FormatInt(t.NotBefore.UnixMilli(), 10),
		strconv.Itoa(int(use)), strconv.FormatInt(idle.Milliseconds(), 10))
	if err != nil {
		return time.Time{}, fmt.Errorf("queue: consume: %w", err)
	}
	n, err := asInts(v, 2)
	if err != nil {
		return time.Time{}, err
	}
	switch n[0] {
	case 1:
		return time.UnixMilli(n[1]), nil
	case -2:
		return time.Time{}, &TooEarlyError{Wait: time.Duration(n[1]) * time.Millisecond}
	case -3:
		return time.Time{}, ErrTokenExpired
	}
	return time.Time{}, ErrTokenUnknown
}

// Restore gives back a token that Spend used up when the request it
// guarded then failed on the protected side (so a retry can succeed). It
// does nothing if the token has expired or the visitor holds another
// record. expiresAt is the expiry Consume returned; the restored token
// keeps it and no longer slides.
func (q *Queue) Restore(ctx context.Context, t Token, expiresAt time.Time) error {
	if err := check(t.Room, t.Visitor); err != nil {
		return err
	}
	capAt := expiresAt.UnixMilli()
	_, err := q.r.Eval(ctx, restoreScript, []string{queueKey(t.Room)},
		prefix(t.Room), t.Visitor, strconv.FormatInt(t.NotBefore.UnixMilli(), 10),
		strconv.FormatInt(expiresAt.UnixMilli(), 10), strconv.FormatInt(capAt, 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10))
	if err != nil {
		return fmt.Errorf("queue: restore: %w", err)
	}
	return nil
}

// Admission is one visitor let in by a tick.
type Admission struct {
	Visitor   string
	NotBefore time.Time
	ExpiresAt time.Time
}

// Result is what one Admit call did.
type Result struct {
	Taken    bool  // false: another caller already took this tick
	Tick     int64 // tick number: floor(Redis TIME / tick)
	Admitted []Admission
	Waiting  int64 // left in the queue
}

// Event is the message published on Channel(room) once per tick that
// admitted anyone.
type Event struct {
	Type     string            `json:"type"`
	Room     string            `json:"room"`
	Tick     int64             `json:"tick"`
	Count    int               `json:"count"`
	Admitted []json.RawMessage `json:"admitted"`
}

// ParseEvent decodes an admission event.
func ParseEvent(data []byte) (room string, tick int64, adm []Admission, err error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return "", 0, nil, err
	}
	adm = make([]Admission, 0, len(e.Admitted))
	for _, raw := range e.Admitted {
		var a [3]any
		if err := json.Unmarshal(raw, &a); err != nil {
			return "", 0, nil, err
		}
		v, _ := a[0].(string)
		nb, _ := a[1].(float64)
		exp, _ := a[2].(float64)
		adm = append(adm, Admission{Visitor: v, NotBefore: time.UnixMilli(int64(nb)), ExpiresAt: time.UnixMilli(int64(exp))})
	}
	return e.Room, e.Tick, adm, nil
}

// Admit runs one admission tick for room: at most one batch per room per
// tick however many instances call it. Pop, token records and the publish
// are one atomic script.
func (q *Queue) Admit(ctx context.Context, room string) (Result, error) {
	if !ValidRoom(room) {
		return Result{}, ErrInvalidRoom
	}
	c := q.opts.Capacity
	v, err := q.r.Eval(ctx, admitScript, []string{queueKey(room)},
		prefix(room), room,
		strconv.FormatInt(c.Tick.Milliseconds(), 10),
		strconv.Itoa(c.BatchSize()),
		strconv.FormatInt(q.opts.TokenTTL.Milliseconds(), 10),
		strconv.FormatInt(q.opts.TokenMax.Milliseconds(), 10),
		strconv.FormatInt(q.opts.Retention.Milliseconds(), 10),
		seed(),
		strconv.Itoa(q.opts.MaxActive),
		jitterArg(q.opts.NoJitter),
	)
	if err != nil {
		return Result{}, fmt.Errorf("queue: admit: %w", err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 5 {
		return Result{}, fmt.Errorf("queue: admit: unexpected reply %v", v)
	}
	taken, _ := asInt(arr[0])
	tick, _ := asInt(arr[1])
	waiting, _ := asInt(arr[3])
	res := Result{Taken: taken == 1, Tick: tick, Waiting: waiting}
	if ev, _ := arr[4].(string); ev != "" {
		if _, _, res.Admitted, err = ParseEvent([]byte(ev)); err != nil {
			return res, fmt.Errorf("queue: admit: bad event: %w", err)
		}
	}
	return res, nil
}

func jitterArg(off bool) string {
	if off {
		return "0"
	}
	return "1"
}

// Rooms lists the rooms with waiting visitors.
func (q *Queue) Rooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SMEMBERS", RoomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}

func validRooms(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok && ValidRoom(s) {
			out = append(out, s)
		}
	}
	return out
}

// forget drops room from the rooms set once its queue is empty. The ZCARD
// after SREM closes the race with a join that lands in between.
func (q *Queue) forget(ctx context.Context, room string) error {
	if _, err := q.r.Do(ctx, "SREM", RoomsKey, room); err != nil {
		return err
	}
	v, err := q.r.Do(ctx, "ZCARD", queueKey(room))
	if err != nil {
		return err
	}
	pre, err := q.r.Do(ctx, "SCARD", prefix(room)+"pre")
	if err != nil {
		return err
	}
	n, _ := asInt(v)
	m, _ := asInt(pre)
	if n+m > 0 {
		_, err = q.r.Do(ctx, "SADD", RoomsKey, room)
	}
	return err
}

// Run admits visitors of every room with waiting visitors once per tick
// until ctx ends. Ticks fire just after each tick boundary; the script's
// tick record makes sure that several instances admit one batch per tick.
func (q *Queue) Run(ctx context.Context) error {
	tick := q.opts.Capacity.Tick
	t := time.NewTimer(untilNextTick(time.Now(), tick))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		q.tickOnce(ctx)
		t.Reset(untilNextTick(time.Now(), tick))
	}
}

// untilNextTick aims a little past the next boundary so that a caller a few
// ms early does not land in the tick it already took.
func untilNextTick(now time.Time, tick time.Duration) time.Duration {
	offset := tick / 10
	d := tick - time.Duration(now.UnixNano())%tick + offset
	if d > tick {
		d -= tick
	}
	return d
}

func (q *Queue) tickOnce(ctx context.Context) {
	tctx, cancel := context.WithTimeout(ctx, q.opts.Capacity.Tick*5)
	defer cancel()
	rooms, err := q.Rooms(tctx)
	if err != nil {
		if ctx.Err() == nil {
			q.log.Warn("tick: rooms", "err", err)
		}
		return
	}
	for _, room := range rooms {
		res, err := q.Admit(tctx, room)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("tick: admit", "room", room, "err", err)
			}
			continue
		}
		if n := len(res.Admitted); n > 0 && q.opts.OnAdmit != nil {
			q.opts.OnAdmit(room, n)
		}
		if res.Taken && res.Waiting == 0 {
			if err := q.forget(tctx, room); err != nil && ctx.Err() == nil {
				q.log.Warn("tick: forget room", "room", room, "err", err)
			}
		}
	}
}
