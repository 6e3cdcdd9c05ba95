package lograte

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time.Now that the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// lines is a JSON log that the test reads back, one map per line.
type lines struct{ buf bytes.Buffer }

func (l *lines) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(&l.buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (l *lines) read(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

// TestOutage: an outage of 100 failures a second for 25 s writes its first
// failure at once, one line per 10 s with the failures left out, and its
// end once; successes between failures (another node answers) do not end
// it.
func TestOutage(t *testing.T) {
	var l lines
	c := newClock()
	o := NewOutage(l.logger(), "tick", &Options{Now: c.Now})
	errDown := errors.New("connection refused")

	o.OK() // nothing failed yet: no line
	if o.Down() {
		t.Fatal("down before any failure")
	}
	for range 2500 { // 25 s, a failure every 10 ms
		o.Fail("tick: admit", errDown, "room", "drop")
		o.OK() // another room's call: not the end, a failure came just before
		c.Add(10 * time.Millisecond)
	}
	if !o.Down() {
		t.Fatal("not down during the failures")
	}
	got := l.read(t)
	if len(got) != 3 {
		t.Fatalf("%d lines during 25 s of failures, want 3 (at 0, 10 and 20 s):\n%s", len(got), l.buf.String())
	}
	first := got[0]
	if first["level"] != "WARN" || first["msg"] != "tick: admit" || first["room"] != "drop" || first["err"] != "connection refused" {
		t.Errorf("first line: %v", first)
	}
	if _, ok := first["suppressed"]; ok {
		t.Errorf("first line says suppressed: %v", first)
	}
	for i, line := range got[1:] {
		if line["level"] != "WARN" || line["msg"] != "tick: admit" || line["suppressed"] != float64(999) || line["room"] != "drop" {
			t.Errorf("line %d: %v", i+1, line)
		}
	}
	if got[1]["failing_for"] != float64(10*time.Second) || got[2]["failing_for"] != float64(20*time.Second) {
		t.Errorf("failing_for: %v, %v", got[1]["failing_for"], got[2]["failing_for"])
	}

	// Calls succeed from now on: the outage ends only once the last
	// failure is Settle old.
	l.buf.Reset()
	c.Add(500 * time.Millisecond)
	o.OK()
	if !o.Down() || l.buf.Len() > 0 {
		t.Fatalf("ended 0.5 s after the last failure: %s", l.buf.String())
	}
	c.Add(500 * time.Millisecond)
	o.OK()
	o.OK()
	got = l.read(t)
	if o.Down() || len(got) != 1 {
		t.Fatalf("down %v, lines at the end:\n%s", o.Down(), l.buf.String())
	}
	end := got[0]
	if end["level"] != "INFO" || end["msg"] != "tick: calls succeed again" || end["failures"] != float64(2500) || end["suppressed"] != float64(499) {
		t.Errorf("end line: %v", end)
	}
	if end["failed_for"] != float64(24990*time.Millisecond) {
		t.Errorf("failed_for %v", end["failed_for"])
	}

	// The next failure starts a new outage, written at once.
	l.buf.Reset()
	o.Fail("tick: rooms", errDown)
	got = l.read(t)
	if len(got) != 1 || got[0]["msg"] != "tick: rooms" {
		t.Fatalf("a new outage's first line:\n%s", l.buf.String())
	}
}

// TestRepeats: a line each request earns is written once per Every, with
// how many were left out.
func TestRepeats(t *testing.T) {
	var l lines
	c := newClock()
	r := NewRepeats(l.logger(), slog.LevelInfo, &Options{Every: 5 * time.Second, Now: c.Now})
	for i := range 1200 { // 12 s, one every 10 ms
		r.Log("gateway: unknown host", "host", "x"+string(rune('a'+i%26)))
		c.Add(10 * time.Millisecond)
	}
	got := l.read(t)
	if len(got) != 3 {
		t.Fatalf("%d lines, want 3 (at 0, 5 and 10 s):\n%s", len(got), l.buf.String())
	}
	for i, want := range []float64{0, 499, 499} {
		if got[i]["level"] != "INFO" || got[i]["msg"] != "gateway: unknown host" || got[i]["suppressed"] != want {
			t.Errorf("line %d: %v, want suppressed %v", i, got[i], want)
		}
	}
	if got[1]["host"] != "x"+string(rune('a'+500%26)) {
		t.Errorf("line 1 names %v, not the request that wrote it", got[1]["host"])
	}
}

// TestWithKeepsCallerArgs: the attributes added to a line do not land in
// the caller's slice.
func TestWithKeepsCallerArgs(t *testing.T) {
	args := make([]any, 2, 8)
	args[0], args[1] = "room", "drop"
	out := with(args, "err", "x")
	if len(out) != 4 || len(args) != 2 || args[:cap(args)][2] != nil {
		t.Fatalf("with wrote into the caller's slice: %v %v", out, args[:cap(args)])
	}
}

// TestClip: what a client sends is cut before it goes into a line, on a
// character boundary.
func TestClip(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes
	got := Clip(long)
	if len(got) > 204 || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Fatalf("Clip: %d bytes %q", len(got), got)
	}
	if Clip("shop.example.com") != "shop.example.com" {
		t.Fatal("a short text changed")
	}
}
