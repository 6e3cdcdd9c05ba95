package report

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/wire"
)

// Reasons a join is refused for, as Refused takes them and a report
// counts them.
const (
	RateLimit = "rate_limit" // over the join rate of the client's address
	Pow       = "pow"        // no valid proof of work
	Invite    = "invite"     // no valid invite for an invite-only room
	Closed    = "closed"     // the room takes nobody now
)

var reasons = [...]string{RateLimit, Pow, Invite, Closed}

// Options tune a Recorder; nil means the defaults.
type Options struct {
	// Retention is how long a room's minutes are kept (default 30 days).
	Retention time.Duration
	// Every is how often counts are written (default a second).
	Every time.Duration
	// OnReady is called by Finish with the final report of an event.
	OnReady func(ctx context.Context, r Report)
	Logger  *slog.Logger
}

// Recorder counts what happens in each room in memory and writes the
// counts to Redis every Options.Every, one script call per room (two
// when admissions wait to be matched with their joins). Its record
// methods never block and are safe for concurrent use.
type Recorder struct {
	r    rediscall.Redis
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	rooms    map[string]*pending
	finishes []finish // FinishLater's, in the order asked

	reading chan struct{} // held by the one Read under way
}

// finish is an event's report to hand to OnReady once due.
type finish struct {
	room, event string
	from, to    time.Time
	due         time.Time
}

// New is a Recorder writing to r. o may be nil; New keeps a copy of it.
func New(r rediscall.Redis, o *Options) *Recorder {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Retention <= 0 {
		opts.Retention = 30 * 24 * time.Hour
	}
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{r: r, opts: opts, log: log, rooms: make(map[string]*pending), reading: make(chan struct{}, 1)}
}

// matchAfter is how long an admission waits before it is matched with
// its join: the join may have been made on another instance, which
// writes it within Every.
func (rc *Recorder) matchAfter() time.Duration { return 2 * rc.opts.Every }

// room is room's pending counts; the caller holds mu.
func (rc *Recorder) room(room string) *pending {
	p := rc.rooms[room]
	if p == nil {
		p = &pending{minutes: make(map[int64]*minute)}
		// A caller's string may alias a request buffer (fiber's).
		rc.rooms[strings.Clone(room)] = p
	}
	return p
}

// Promise is the wait a visitor was told at join: ETA (negative: no
// estimate) and, when High > 0, the range [Low, High] it likely falls in.
type Promise struct {
	ETA       time.Duration
	Low, High time.Duration
}

// Joined counts a visitor that took a new place in room at issuedAt
// (Redis time, as its ticket says), told to wait as told says.
func (rc *Recorder) Joined(room, visitor string, issuedAt time.Time, told Promise) {
	if !wire.ValidRoom(room) || visitor == "" {
		return
	}
	v := joinValue(issuedAt, told)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	p := rc.room(room)
	p.at(time.Now()).arrivals++
	p.joins = append(p.joins, strings.Clone(visitor), v)
}

// Refused counts a join of room refused for reason (RateLimit, Pow,
// Invite or Closed; anything else is ignored).
func (rc *Recorder) Refused(room, reason string) {
	i := reasonIndex(reason)
	if i < 0 || !wire.ValidRoom(room) {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.room(room).at(time.Now()).refused[i]++
}

// Left counts a visitor that left room's queue, or gave its token back,
// of its own accord. Those set aside as away and those dropped are read
// from the queue's own counts when the room's counts are written.
func (rc *Recorder) Left(room string) {
	if !wire.ValidRoom(room) {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.room(room).at(time.Now()).left++
}

// Ticked records one admission tick of room that this instance took:
// the visitors waiting as it found them (a sample of the peak) and those
// it admitted.
func (rc *Recorder) Ticked(room string, waiting int64, admitted []wire.Admission) {
	if !wire.ValidRoom(room) {
		return
	}
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	p := rc.room(room)
	m := p.at(now)
	m.peak = max(m.peak, waiting)
	m.admitted += int64(len(admitted))
	due := now.Add(rc.matchAfter())
	for _, a := range admitted {
		p.admits = append(p.admits, admission{visitor: strings.Clone(a.Visitor), notBefore: a.NotBefore, due: due})
	}
}

// Ended records a visitor's time on the origin in room: from start (the
// entry token's notBefore) to end (its session ended or its token was
// consumed).
func (rc *Recorder) Ended(room string, start, end time.Time) {
	if !wire.ValidRoom(room) || start.IsZero() || end.Before(start) {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.room(room).at(end).origin.Add(end.Sub(start))
}

func reasonIndex(reason string) int {
	for i, r := range reasons {
		if r == reason {
			return i
		}
	}
	return -1
}

// Run writes the counts every Options.Every until ctx ends, then once
// more (within a second) so that a clean shutdown loses nothing. It also
// finishes the reports FinishLater asked for, once due.
func (rc *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(rc.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			rc.flush(fctx, time.Time{})
			return nil
		case <-t.C:
			now := time.Now()
			rc.flush(ctx, now)
			rc.finishDue(ctx, now)
		}
	}
}

// FinishLater has Run Finish room's report of event over [from, to) once
// every instance has written its counts up to to: after the time other
// instances take to write a minute's last counts and match its last
// admissions (3 Every past to). It is for the one instance that applied
// the event's end; reports asked for again while pending are asked once.
func (rc *Recorder) FinishLater(room, event string, from, to time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, f := range rc.finishes {
		if f.room == room && f.event == event && f.to.Equal(to) {
			return
		}
	}
	rc.finishes = append(rc.finishes, finish{room: room, event: event, from: from, to: to, due: to.Add(rc.matchAfter() + rc.opts.Every)})
}

// finishDue finishes the reports due by now. One that fails is tried
// again at the next write, up to a minute past its due time.
func (rc *Recorder) finishDue(ctx context.Context, now time.Time) {
	rc.mu.Lock()
	var due []finish
	keep := rc.finishes[:0]
	for _, f := range rc.finishes {
		if now.Before(f.due) {
			keep = append(keep, f)
		} else {
			due = append(due, f)
		}
	}
	rc.finishes = keep
	rc.mu.Unlock()
	for _, f := range due {
		if _, err := rc.Finish(ctx, f.room, f.event, f.from, f.to); err != nil {
			if now.Sub(f.due) < time.Minute && ctx.Err() == nil {
				rc.log.Warn("report: finish, will retry", "room", f.room, "event", f.event, "err", err)
				rc.mu.Lock()
				rc.finishes = append(rc.finishes, f)
				rc.mu.Unlock()
				continue
			}
			rc.log.Error("report: event report not finished", "room", f.room, "event", f.event, "err", err)
		}
	}
}

// Flush writes every count made so far and matches every admission
// recorded so far with its join, without waiting for joins other
// instances have not written yet. It returns the first error.
func (rc *Recorder) Flush(ctx context.Context) error { return rc.flush(ctx, time.Time{}) }

// FlushRoom is Flush for room alone.
func (rc *Recorder) FlushRoom(ctx context.Context, room string) error {
	return rc.flushRoom(ctx, room, time.Time{})
}

// flush writes every room's counts; admissions are matched once due
// before now (all of them with a zero now).
func (rc *Recorder) flush(ctx context.Context, now time.Time) error {
	rc.mu.Lock()
	rooms := make([]string, 0, len(rc.rooms))
	for r := range rc.rooms {
		rooms = append(rooms, r)
	}
	rc.mu.Unlock()
	var first error
	for _, r := range rooms {
		if err := rc.flushRoom(ctx, r, now); err != nil {
			rc.log.Warn("report: write", "room", r, "err", err)
			first = cmpErr(first, err)
		}
	}
	return first
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
