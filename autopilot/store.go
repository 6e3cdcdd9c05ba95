package autopilot

import (
	"context"
	"embed"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func loadScript(name string) *rediscall.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return rediscall.NewScript("autopilot_"+name, string(src))
}

var (
	recordScript = loadScript("record")
	takeScript   = loadScript("take")
)

// Keys of a room's autopilot carry the room's hash tag, so they share the
// slot of its queue.
func prefix(room string) string   { return "wr:{" + room + "}:" }
func stateKey(room string) string { return prefix(room) + "ap" }

const (
	// secondTTL is how long a second's counts are kept: long enough for
	// any window, short enough that a room's samples are a few small keys.
	secondTTL = 30
	// stateTTL is how long a room's state outlives its last decision.
	stateTTL = 24 * 3600
	// MaxWindow bounds the window a decision reads, in seconds.
	MaxWindow = 20
)

// Store keeps the rooms' samples and the controller's state in Redis.
type Store struct {
	r rediscall.Redis
}

// NewStore is a Store on r.
func NewStore(r rediscall.Redis) *Store { return &Store{r: r} }

// Record adds w's counts to room's current second. A window without
// samples is not sent.
func (s *Store) Record(ctx context.Context, room string, w Window) error {
	if w.Samples == 0 {
		return nil
	}
	args := append([]string{prefix(room), strconv.Itoa(secondTTL)}, w.fields()...)
	if _, err := s.r.Eval(ctx, recordScript, []string{stateKey(room)}, args...); err != nil {
		return fmt.Errorf("autopilot: record: %w", err)
	}
	return nil
}

// take takes room's decision of this second if nobody did: it reports
// whether it did, the second (Unix), the state as stored and, when taken,
// the last window whole seconds' samples.
func (s *Store) take(ctx context.Context, room string, window int) (bool, int64, stored, Window, error) {
	v, err := s.r.Eval(ctx, takeScript, []string{stateKey(room)}, prefix(room), strconv.Itoa(window), strconv.Itoa(stateTTL))
	if err != nil {
		return false, 0, nil, Window{}, fmt.Errorf("autopilot: take: %w", err)
	}
	a, _ := v.([]any)
	if len(a) != 4 {
		return false, 0, nil, Window{}, fmt.Errorf("autopilot: take: reply %v", v)
	}
	taken, _ := a[0].(int64)
	now, _ := a[1].(int64)
	st := pairs(a[2])
	var w Window
	wp, _ := a[3].([]any)
	for i := 0; i+1 < len(wp); i += 2 {
		f, _ := wp[i].(string)
		n, _ := strconv.ParseInt(fmt.Sprint(wp[i+1]), 10, 64)
		w.addField(f, n)
	}
	return taken == 1, now, st, w, nil
}

// save writes the state d leaves and what the window showed.
func (s *Store) save(ctx context.Context, room string, d Decision, samples int64) error {
	args := []string{"HSET", stateKey(room)}
	for k, v := range (stored{}).with(d, samples) {
		args = append(args, k, v)
	}
	if _, err := s.r.Do(ctx, args...); err != nil {
		return fmt.Errorf("autopilot: save: %w", err)
	}
	return nil
}

// Forget drops room's state, so that an autopilot turned on again starts
// from the rate the room has then.
func (s *Store) Forget(ctx context.Context, room string) error {
	_, err := s.r.Do(ctx, "DEL", stateKey(room))
	return err
}

// Status reads what room's autopilot last decided (ok false: nothing yet).
func (s *Store) Status(ctx context.Context, room string) (Status, bool, error) {
	v, err := s.r.Do(ctx, "HGETALL", stateKey(room))
	if err != nil {
		return Status{}, false, fmt.Errorf("autopilot: status: %w", err)
	}
	st := pairs(v)
	if st["rate"] == "" {
		return Status{}, false, nil
	}
	return st.status(), true, nil
}

// stored is the state hash as field → value.
type stored map[string]string

func pairs(v any) stored {
	a, _ := v.([]any)
	out := make(stored, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		out[k] = fmt.Sprint(a[i+1])
	}
	return out
}

func (s stored) num(k string) float64 {
	v, _ := strconv.ParseFloat(s[k], 64)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func (s stored) state() State {
	st := State{Rate: s.num("rate"), Best: s.num("best"), Smooth: s.num("smooth"), Dev: s.num("dev"), Ceiling: s.num("ceil"),
		CutP95: s.num("cutp95"), CutErrors: s.num("cuterr"), Overloaded: s["over"] == "true", Reason: s["reason"]}
	if ms := int64(s.num("at")); ms > 0 {
		st.ChangedAt = time.UnixMilli(ms).UTC()
	}
	if ms := int64(s.num("hold")); ms > 0 {
		st.HoldUntil = time.UnixMilli(ms).UTC()
	}
	if ms := int64(s.num("cutat")); ms > 0 {
		st.CutAt = time.UnixMilli(ms).UTC()
	}
	return st
}

func (s stored) status() Status {
	st := s.state()
	out := Status{On: true, Rate: st.Rate, P50Ms: math.Round(s.num("p50")), P95Ms: math.Round(s.num("p95")),
		ErrorRate: math.Round(s.num("err")*10000) / 10000, Samples: int64(s.num("n")), Overloaded: st.Overloaded, Reason: st.Reason}
	if !st.ChangedAt.IsZero() {
		out.ChangedAt = st.ChangedAt.Format(time.RFC3339)
	}
	return out
}

// Status is what a room's autopilot shows (the admin stats' "autopilot").
type Status struct {
	On         bool    `json:"on"`
	Rate       float64 `json:"rate"` // admissions/s, or slots under max-active
	P50Ms      float64 `json:"p50Ms"`
	P95Ms      float64 `json:"p95Ms"`
	ErrorRate  float64 `json:"errorRate"`
	Samples    int64   `json:"samples"` // in the last window
	Overloaded bool    `json:"overloaded"`
	Reason     string  `json:"reason"`    // of the last change
	ChangedAt  string  `json:"changedAt"` // RFC 3339; "" before any change
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
