// Package lograte keeps a line that repeats from drowning the others in the
// log. A loop that calls Redis every tick would write a warning per call for
// as long as Redis is down (hundreds in a few seconds); a client that keeps
// sending a refused request would write one per request. Here the first of
// them is written at once, then at most one line per interval that says how
// many were left out, and an outage's end is one line of its own.
//
// The lines keep the caller's message and attributes, so a search for the
// message still finds them; the added attributes are "suppressed" (lines left
// out since the last one written) and, for an outage, "failing_for".
package lograte

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	// DefaultEvery is how often a repeated line is written at most, after
	// the first.
	DefaultEvery = 10 * time.Second
	// DefaultSettle is how long an outage must see no failure before a
	// success ends it.
	DefaultSettle = time.Second
)

// Options tune an Outage or a Repeats. A nil *Options means every default.
type Options struct {
	// Every is the least time between two lines after the first
	// (DefaultEvery when 0).
	Every time.Duration
	// Settle is, for an Outage, how long after its last failure a success
	// ends it (DefaultSettle when 0). A loop whose calls go to several
	// Redis nodes, one of them down, sees successes between the failures:
	// the outage goes on until the failures stop.
	Settle time.Duration
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time
}

func (o *Options) resolve() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Every <= 0 {
		r.Every = DefaultEvery
	}
	if r.Settle <= 0 {
		r.Settle = DefaultSettle
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

// Outage logs the failures of one loop's calls (a tick loop's calls to
// Redis, say) as an outage: its first failure at warn at once; while it
// lasts, at most one warn line per Every, with the failures left out since
// the last line; and its end, the first success at least Settle after the
// last failure, at info with how long it lasted. Its methods are safe for
// concurrent use; OK costs one atomic load while nothing fails.
type Outage struct {
	log  *slog.Logger
	name string
	opts Options

	down atomic.Bool // an outage is on: OK must look

	mu       sync.Mutex
	since    time.Time // the outage's first failure
	lastFail time.Time
	lastLine time.Time
	failures int // in this outage
	left     int // failures not written since lastLine
}

// NewOutage returns the outage log of the loop called name ("tick",
// "schedule"), writing to log. The caller's opts is not kept.
func NewOutage(log *slog.Logger, name string, opts *Options) *Outage {
	return &Outage{log: log, name: name, opts: opts.resolve()}
}

// Fail notes a failed call: msg, err and args are what the line about it
// says, when one is written.
func (o *Outage) Fail(msg string, err error, args ...any) {
	now := o.opts.Now()
	o.mu.Lock()
	o.lastFail = now
	o.failures++
	if !o.down.Load() {
		o.down.Store(true)
		o.since, o.lastLine, o.failures, o.left = now, now, 1, 0
		o.mu.Unlock()
		o.log.Warn(msg, with(args, "err", err)...)
		return
	}
	if now.Sub(o.lastLine) < o.opts.Every {
		o.left++
		o.mu.Unlock()
		return
	}
	left, since := o.left, o.since
	o.lastLine, o.left = now, 0
	o.mu.Unlock()
	o.log.Warn(msg, with(args, "err", err, "suppressed", left, "failing_for", now.Sub(since).Round(time.Millisecond))...)
}

// OK notes a call that succeeded. During an outage, the first success at
// least Settle after its last failure ends it with one info line.
func (o *Outage) OK() {
	if !o.down.Load() {
		return
	}
	now := o.opts.Now()
	o.mu.Lock()
	if !o.down.Load() || now.Sub(o.lastFail) < o.opts.Settle {
		o.mu.Unlock()
		return
	}
	o.down.Store(false)
	failures, left, since := o.failures, o.left, o.since
	o.mu.Unlock()
	o.log.Info(o.name+": calls succeed again", "failures", failures, "suppressed", left, "failed_for", o.lastFail.Sub(since).Round(time.Millisecond))
}

// Down reports whether an outage is on.
func (o *Outage) Down() bool { return o.down.Load() }

// Repeats logs one kind of line that each of many requests may earn (a
// refused host, a refused origin) at level: the first at once, then at most
// one per Every, with how many were left out since the last. Its methods
// are safe for concurrent use.
type Repeats struct {
	log   *slog.Logger
	level slog.Level
	opts  Options

	mu       sync.Mutex
	lastLine time.Time
	written  bool
	left     int
}

// NewRepeats returns a Repeats writing to log at level. The caller's opts
// is not kept.
func NewRepeats(log *slog.Logger, level slog.Level, opts *Options) *Repeats {
	return &Repeats{log: log, level: level, opts: opts.resolve()}
}

// Log writes msg with args if no line was written in the last Every, with
// the number of lines left out since the last one; else it counts this one
// as left out.
func (r *Repeats) Log(msg string, args ...any) {
	now := r.opts.Now()
	r.mu.Lock()
	if r.written && now.Sub(r.lastLine) < r.opts.Every {
		r.left++
		r.mu.Unlock()
		return
	}
	left := r.left
	r.written, r.lastLine, r.left = true, now, 0
	r.mu.Unlock()
	r.log.Log(context.Background(), r.level, msg, with(args, "suppressed", left)...)
}

// with is args followed by more, in a new slice: the caller's is not
// written to.
func with(args []any, more ...any) []any {
	return append(args[:len(args):len(args)], more...)
}

// Clip is s cut to at most 200 bytes (and "…"), whole UTF-8 characters
// only: what a client sends (a host, a path, an Origin) goes into a line
// that stays short.
func Clip(s string) string {
	const most = 200
	if len(s) <= most {
		return s
	}
	return strings.ToValidUTF8(s[:most], "") + "…"
}
