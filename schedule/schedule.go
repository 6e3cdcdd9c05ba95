package schedule

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Rooms is the room store the schedule changes (a *queue.Queue): the same
// path the admin API writes settings through.
type Rooms interface {
	RoomConfig(ctx context.Context, room string) (settings.Room, error)
	UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error)
	// Leave takes a waiting visitor out of the room's queue.
	Leave(ctx context.Context, room, visitor string) (bool, error)
}

// The transitions of an event, as the audit trail and OnTransition name
// them.
const (
	ActionPrequeue = "event-prequeue"
	ActionStart    = "event-start"
	ActionEnd      = "event-end"
	// ActionFailed is an event given up on: a transition could not be
	// applied in MaxTries.
	ActionFailed = "event-failed"
)

// Auditor records a transition in the room's audit trail; action is
// event-prequeue, event-start, event-end or event-failed. A failure to
// record is the Auditor's to log.
type Auditor interface {
	AuditTransition(ctx context.Context, room string, e Event, action string, before, after settings.Room)
}

// Options tune a Schedule. A nil *Options means every default.
type Options struct {
	// Tick is how often due transitions are looked for (default 250 ms).
	Tick time.Duration
	// Retry is the wait before a transition that failed to apply is
	// tried again, doubled for each try after (default DefaultRetry).
	Retry time.Duration
	// Audit records each transition; nil records none.
	Audit Auditor
	// OnTransition is told each transition this instance applied, after
	// its audit: action is event-prequeue, event-start, event-end, or
	// event-failed for an event this instance gave up on. It
	// runs on the loop, so it must not block (a webhook goes to an
	// outbox); nil is told nothing.
	OnTransition func(ctx context.Context, room string, e Event, action string)
	// Declared are the events the rooms file lists, by room, written back
	// when Redis comes back empty; nil declares none.
	Declared func() map[string][]Event
	Logger   *slog.Logger
}

// DefaultTick is how often the loop looks for due transitions.
const DefaultTick = 250 * time.Millisecond

// ClosedFor is how long visitors closed out at an event's end are told
// closed (after that, not_in_queue).
const ClosedFor = time.Hour

// claimFor is how long a claimed transition stays claimed without being
// marked applied: if its instance dies while applying, another takes it
// over after this.
const claimFor = 10 * time.Second

// markApplied is the value of a transition's key once applied.
const markApplied = "applied"

// Schedule stores rooms' events and runs their transitions. Its methods
// are safe for concurrent use.
type Schedule struct {
	r     rediscall.Redis
	rooms Rooms
	audit Auditor
	// onTransition is Options.OnTransition.
	onTransition func(ctx context.Context, room string, e Event, action string)
	// declared are the rooms file's events (Options.Declared).
	declared func() map[string][]Event
	log      *slog.Logger
	tick     time.Duration
	retry    time.Duration // Options.Retry
	id       string        // this instance's claims

	wake chan struct{} // a write asks the loop to look now

	mu sync.Mutex
	// seen are the events of each room as last read: for the close
	// checks, and to write back if Redis comes back empty.
	seen map[string]map[string]Event
	// bases are the saved base settings of running events, by baseKey.
	bases map[string]string
	// applied are the transitions known to be applied, by markKey.
	applied map[string]time.Time // -> when the key may be forgotten

	// tickLog writes failing ticks as one outage: while Redis is down,
	// every tick fails.
	tickLog *lograte.Outage
}

// New is a schedule on r, changing rooms through rooms.
func New(r rediscall.Redis, rooms Rooms, o *Options) *Schedule {
	var opts Options
	if o != nil {
		opts = *o
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Schedule{
		r: r, rooms: rooms, audit: opts.Audit, onTransition: opts.OnTransition, declared: opts.Declared, log: cmp.Or(opts.Logger, slog.Default()),
		tick: cmp.Or(opts.Tick, DefaultTick), retry: cmp.Or(opts.Retry, DefaultRetry), id: hex.EncodeToString(b[:]),
		wake: make(chan struct{}, 1),
		seen: map[string]map[string]Event{}, bases: map[string]string{}, applied: map[string]time.Time{},
		tickLog: lograte.NewOutage(cmp.Or(opts.Logger, slog.Default()), "schedule", nil),
	}
}

func (s *Schedule) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run applies due transitions every tick until ctx ends; it returns
// ctx's error. A failed tick is logged and the next one tries again.
func (s *Schedule) Run(ctx context.Context) error {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		switch err := s.step(ctx); {
		case err == nil:
			s.tickLog.OK()
		case ctx.Err() == nil:
			s.tickLog.Fail("schedule tick", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		case <-s.wake:
		}
	}
}

// step is one tick: every room's due transitions, in order.
func (s *Schedule) step(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.recover(ctx); err != nil {
		return err
	}
	now, err := s.now(ctx)
	if err != nil {
		return err
	}
	v, err := s.r.Do(ctx, "SMEMBERS", roomsKey)
	if err != nil {
		return fmt.Errorf("schedule: rooms: %w", err)
	}
	arr, _ := v.([]any)
	var errs []error
	for _, x := range arr {
		room, _ := x.(string)
		if !wire.ValidRoom(room) {
			continue
		}
		if err := s.stepRoom(ctx, room, now); err != nil {
			errs = append(errs, fmt.Errorf("room %s: %w", room, err))
		}
	}
	s.forget(now)
	return errors.Join(errs...)
}

// stepRoom applies room's due transitions.
func (s *Schedule) stepRoom(ctx context.Context, room string, now time.Time) error {
	m, _, err := s.readEvents(ctx, room)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.seen[room] = m
	s.mu.Unlock()
	if len(m) == 0 {
		return s.unlist(ctx, room)
	}
	// Events in the order they begin, so that one ending and the next
	// beginning at the same moment restore and then save the base.
	for _, e := range sorted(m) {
		if e.Failed != nil {
			continue // none of its transitions is made any more
		}
		if err := s.keepBase(ctx, room, e, now); err != nil {
			return err
		}
		for _, t := range transitions(e) {
			if t.at.After(now) {
				break
			}
			o, err := s.run(ctx, room, e, t, now)
			if err != nil {
				return err
			}
			if o == failed {
				break // the event failed: the next one goes on
			}
			if o != applied {
				// Another instance is applying it, or it waits to be
				// tried again; what follows waits for it (an end
				// restores the base the next event saves).
				return nil
			}
		}
	}
	return nil
}

// unlist takes room, whose events are gone, off the loop's list. A write
// of an event lists the room after storing it, so a look after the SREM
// that finds an event (stored meanwhile) lists the room again: it is
// never left off with an event.
func (s *Schedule) unlist(ctx context.Context, room string) error {
	if _, err := s.r.Do(ctx, "SREM", roomsKey, room); err != nil {
		return fmt.Errorf("schedule: rooms: %w", err)
	}
	v, err := s.r.Do(ctx, "HLEN", eventsKey(room))
	if err != nil {
		return fmt.Errorf("schedule: rooms: %w", err)
	}
	if n, _ := v.(int64); n > 0 {
		if _, err := s.r.Do(ctx, "SADD", roomsKey, room); err != nil {
			return fmt.Errorf("schedule: rooms: %w", err)
		}
	}
	return nil
}

// keepBase reads the base settings of e once while it runs, so that this
// instance can write them back if Redis loses them (recover).
func (s *Schedule) keepBase(ctx context.Context, room string, e Event, now time.Time) error {
	if now.Before(e.Begins()) || !now.Before(e.EndsAt) {
		return nil
	}
	s.mu.Lock()
	_, have := s.bases[baseKey(room, e.Name)]
	s.mu.Unlock()
	if have {
		return nil
	}
	_, _, err := s.base(ctx, room, e.Name)
	return err
}

// transition is one moment of an event: kind is prequeue, start or end;
// id is the event's ID.
type transition struct {
	event, kind string
	at          time.Time
	id          string
}

const (
	kindPrequeue = "prequeue"
	kindStart    = "start"
	kindEnd      = "end"
)

func transitions(e Event) []transition {
	var out []transition
	if !e.PrequeueAt.IsZero() {
		out = append(out, transition{e.Name, kindPrequeue, e.PrequeueAt, e.ID})
	}
	return append(out, transition{e.Name, kindStart, e.StartsAt, e.ID}, transition{e.Name, kindEnd, e.EndsAt, e.ID})
}

func endOf(e Event) transition { return transition{e.Name, kindEnd, e.EndsAt, e.ID} }

// outcome is where a transition is after run.
type outcome int

const (
	pending outcome = iota // another instance holds its claim, or it waits to be tried again
	applied
	failed // given up on: its event failed
)

// run applies t unless it is applied, once across instances, and says
// where t is now (by Redis's clock, now).
func (s *Schedule) run(ctx context.Context, room string, e Event, t transition, now time.Time) (outcome, error) {
	key := markKey(room, t)
	s.mu.Lock()
	_, known := s.applied[key]
	s.mu.Unlock()
	if known {
		return applied, nil
	}
	keep := keepFor(e, time.Now())
	retried := false
	v, err := s.r.Do(ctx, "SET", key, "claimed:"+s.id, "NX", "PX", ms(claimFor))
	if err != nil {
		return pending, fmt.Errorf("schedule: claim: %w", err)
	}
	if v == nil { // claimed before: applied, or being applied elsewhere
		got, err := s.r.Do(ctx, "GET", key)
		if err != nil {
			return pending, fmt.Errorf("schedule: claim: %w", err)
		}
		mark, _ := got.(string)
		switch {
		case mark == markApplied:
			s.noteApplied(key, keep)
			return applied, nil
		case mark == markFailed: // its event's record is written
			return failed, nil
		case !strings.HasPrefix(mark, markRetry):
			return pending, nil
		}
		// Failed before: tried again once its wait is over, by the
		// instance that swaps the mark for its claim.
		at, _ := strconv.ParseInt(strings.TrimPrefix(mark, markRetry), 10, 64)
		if now.UnixMilli() < at {
			return pending, nil
		}
		v, err := s.r.Eval(ctx, swapScript, []string{key}, mark, "claimed:"+s.id, ms(claimFor))
		if err != nil {
			return pending, fmt.Errorf("schedule: claim: %w", err)
		}
		if n, _ := v.(int64); n != 1 {
			return pending, nil
		}
		retried = true
	}
	if err := s.apply(ctx, room, e, t); err != nil {
		return s.retryOrFail(ctx, room, e, t, now, keep, fmt.Errorf("schedule: %s of event %s: %w", t.kind, e.Name, err))
	}
	if _, err := s.r.Do(ctx, append([]string{"SET", key, markApplied}, expiry(keep)...)...); err != nil {
		return pending, fmt.Errorf("schedule: mark applied: %w", err)
	}
	s.noteApplied(key, keep)
	if retried {
		if _, err := s.r.Do(ctx, "DEL", triesKey(room, t)); err != nil {
			s.log.Warn("schedule: tries of a transition not forgotten", "room", room, "event", e.Name, "err", err)
		}
	}
	return applied, nil
}

// MaxTries is how many times a transition is tried, across instances,
// before its event is failed.
const MaxTries = 5

// DefaultRetry is the wait before a failed transition's second try; each
// try after waits twice the one before (1, 2, 4 and 8 s by default).
const DefaultRetry = time.Second

// The values of a transition's key once given up on, and while it waits
// to be tried again (followed by when, in Unix ms by Redis's clock: the
// wait is in the value, not the key's expiry, which the embedded Redis
// does not count down).
const (
	markFailed = "failed"
	markRetry  = "retry:"
)

// swapSrc sets a key to a new value if it holds the one the caller read:
// KEYS = the key; ARGV = the value read, the new value, its expiry in ms.
// Returns 1 when set.
const swapSrc = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`

var swapScript = rediscall.NewScript("schedule-swap", swapSrc)

// retryOrFail follows t's failure to apply (cause): t is tried again once
// its wait is over, here or by another instance, and after MaxTries its
// event fails (fail).
func (s *Schedule) retryOrFail(ctx context.Context, room string, e Event, t transition, now time.Time, keep time.Duration, cause error) (outcome, error) {
	key, tk := markKey(room, t), triesKey(room, t)
	v, err := s.r.Do(ctx, "INCR", tk)
	if err != nil {
		// Nothing counted: free the claim so the next tick tries again.
		_, _ = s.r.Do(ctx, "DEL", key)
		return pending, errors.Join(cause, err)
	}
	if px := expiry(keep); px != nil {
		if _, err := s.r.Do(ctx, "PEXPIRE", tk, px[1]); err != nil {
			return pending, errors.Join(cause, err)
		}
	}
	tries, _ := v.(int64)
	if tries < MaxTries {
		wait := s.retry << min(tries-1, 20)
		next := markRetry + strconv.FormatInt(now.Add(wait).UnixMilli(), 10)
		if _, err := s.r.Do(ctx, append([]string{"SET", key, next}, expiry(keep)...)...); err != nil {
			return pending, errors.Join(cause, err)
		}
		return pending, fmt.Errorf("%w (try %d of %d; the next in %v)", cause, tries, MaxTries, wait)
	}
	if err := s.fail(ctx, room, e, t, keep, int(tries), cause); err != nil {
		return pending, errors.Join(cause, err)
	}
	return failed, nil
}

// markKeep is how long a transition's mark outlives its event: a mark
// gone while its event still runs would let the transition run again.
const markKeep = 7 * 24 * time.Hour

// maxExpiry is the longest expiry a mark is given; one that must last
// longer is kept without any. An event may end as late as the year 3000,
// further than a time.Duration reaches from now (about 292 years).
const maxExpiry = 100 * 365 * 24 * time.Hour

// keepFor is how long from now the marks of e's transitions are kept:
// until markKeep after e ends. time.Time.Sub saturates where adding
// Durations would overflow (to a mark that expires at once).
func keepFor(e Event, now time.Time) time.Duration {
	return e.EndsAt.Add(markKeep).Sub(now)
}

// expiry is the SET arguments that keep a mark for keep: at least a
// minute, and none beyond maxExpiry (the key then lasts).
func expiry(keep time.Duration) []string {
	if keep > maxExpiry {
		return nil
	}
	return []string{"PX", ms(max(keep, time.Minute))}
}

func (s *Schedule) noteApplied(key string, keep time.Duration) {
	s.mu.Lock()
	s.applied[key] = time.Now().Add(keep)
	s.mu.Unlock()
}

// forget drops what the instance remembers of events long gone.
func (s *Schedule) forget(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, until := range s.applied {
		if now.After(until) {
			delete(s.applied, k)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprint(max(d.Milliseconds(), 1)) }
