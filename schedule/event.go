package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/waitroom/waitroom/settings"
)

// What happens to the visitors still waiting when an event ends
// (Event.AtEnd).
const (
	AtEndKeep  = "keep"  // they keep waiting, under the room's base settings
	AtEndClose = "close" // they leave the queue and are told closed, with the event's message
)

// Limits of a room's events.
const (
	// MaxUpcoming bounds the events of a room that have not ended.
	MaxUpcoming = 5
	// MaxStored bounds the events a room keeps, ended ones included.
	MaxStored = 50
)

// DefaultClosedMessage is what visitors closed out at the end of an event
// are told when the event sets no message.
const DefaultClosedMessage = "This event has ended."

// Event is one scheduled event of a room. Its Name is its id.
type Event struct {
	Name string
	// PrequeueAt, when set, is when the room starts taking joins for the
	// event; until StartsAt nobody is admitted.
	PrequeueAt time.Time
	StartsAt   time.Time
	EndsAt     time.Time
	// ShuffleAtStart places the pre-queue in the order of the room's
	// auditable draw at StartsAt (see queue.DrawOrder); without it the
	// pre-queue keeps the order of arrival.
	ShuffleAtStart bool
	// Settings are the room settings the event overrides, as a JSON
	// object of the admin API's names.
	Settings json.RawMessage
	AtEnd    string // AtEndKeep or AtEndClose
	// By is who wrote the event last, as the writer names it (the admin
	// API: the role of its key); "" for the rooms file. Parse leaves it
	// empty: a request's body cannot set it.
	By string
	// ID tells this event from an earlier one of the same name and times
	// (one deleted and created again): the marks of its transitions carry
	// it. Put gives a new event one; "" for an event stored before IDs.
	ID string
	// Failed is set once a transition of the event failed to apply for
	// good: its later transitions are not made.
	Failed *Failure

	patch settings.Patch
}

// Failure is why an event failed: the transition that could not be
// applied (prequeue, start or end), when it was given up on, after how
// many tries, and the last error.
type Failure struct {
	Transition string    `json:"transition"`
	At         time.Time `json:"at"`
	Tries      int       `json:"tries"`
	Reason     string    `json:"reason"`
}

// Patch is the change of settings the event makes.
func (e Event) Patch() settings.Patch { return e.patch }

// Begins is when the event's first transition happens: PrequeueAt when
// set, else StartsAt.
func (e Event) Begins() time.Time {
	if !e.PrequeueAt.IsZero() {
		return e.PrequeueAt
	}
	return e.StartsAt
}

// Fields are the settings the event changes while it runs: those its
// Settings name, and opensAt or paused for its pre-queue.
func (e Event) Fields() []string {
	out := e.patch.Names()
	if !e.PrequeueAt.IsZero() {
		out = append(out, e.prequeueField())
	}
	return out
}

// prequeueField is the setting that holds the pre-queue: opensAt (the
// room's draw places it at opening) with ShuffleAtStart, else paused (the
// queue fills in order of arrival and nobody is admitted).
func (e Event) prequeueField() string {
	if e.ShuffleAtStart {
		return "opensAt"
	}
	return "paused"
}

// Message is what visitors closed out at the event's end are told: the
// message its settings set, else DefaultClosedMessage.
func (e Event) Message() string {
	var r settings.Room
	e.patch.Apply(&r)
	if r.Message != "" {
		return r.Message
	}
	return DefaultClosedMessage
}

type eventJSON struct {
	Name           string          `json:"name"`
	PrequeueAt     *string         `json:"prequeueAt,omitempty"`
	StartsAt       string          `json:"startsAt"`
	EndsAt         string          `json:"endsAt"`
	ShuffleAtStart bool            `json:"shuffleAtStart"`
	Settings       json.RawMessage `json:"settings"`
	AtEnd          string          `json:"atEnd"`
	By             string          `json:"by,omitempty"`
}

// storedJSON is e as the schedule stores it: as the API shows it, with
// its ID and its failure.
func (e Event) storedJSON() []byte {
	b, _ := e.MarshalJSON()
	extra, _ := json.Marshal(struct {
		ID     string   `json:"id,omitempty"`
		Failed *Failure `json:"failed,omitempty"`
	}{e.ID, e.Failed})
	if len(extra) <= 2 {
		return b
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...)
}

// MarshalJSON writes e as the admin API shows it, times in RFC 3339 UTC;
// its ID and failure are not part of it.
func (e Event) MarshalJSON() ([]byte, error) {
	j := eventJSON{Name: e.Name, StartsAt: fmtTime(e.StartsAt), EndsAt: fmtTime(e.EndsAt),
		ShuffleAtStart: e.ShuffleAtStart, Settings: e.Settings, AtEnd: e.AtEnd, By: e.By}
	if !e.PrequeueAt.IsZero() {
		s := fmtTime(e.PrequeueAt)
		j.PrequeueAt = &s
	}
	if len(j.Settings) == 0 {
		j.Settings = json.RawMessage("{}")
	}
	return json.Marshal(j)
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Error is an event refused: the HTTP status, a stable code and a
// sentence; Field names the offending field for invalid_field.
type Error struct {
	Status int
	Code   string
	Field  string
	Msg    string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func fail(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func fieldFail(field, msg string) *Error {
	return &Error{Status: 400, Code: "invalid_field", Field: field, Msg: field + ": " + msg}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// ValidName reports whether name may name an event (like a room's).
func ValidName(name string) bool { return nameRE.MatchString(name) }

// Parse reads an event from a JSON object and checks it on its own: the
// name, the times and their order, atEnd, and each setting's type and
// value. Checks against the room (the settings taken together with the
// room's, overlaps) are Store.Put's. The error is an *Error.
func Parse(body []byte) (Event, error) { return parse(body, false) }

// parse is Parse; stored (an event as the schedule stores it) takes its
// By too.
func parse(body []byte, stored bool) (Event, error) {
	var j struct {
		Name           *string         `json:"name"`
		PrequeueAt     *string         `json:"prequeueAt"`
		StartsAt       *string         `json:"startsAt"`
		EndsAt         *string         `json:"endsAt"`
		ShuffleAtStart *bool           `json:"shuffleAtStart"`
		Settings       json.RawMessage `json:"settings"`
		AtEnd          *string         `json:"atEnd"`
		By             *string         `json:"by"`
		ID             *string         `json:"id"`
		Failed         *Failure        `json:"failed"`
	}
	if err := decodeStrict(body, &j); err != nil {
		return Event{}, err
	}
	var e Event
	for f, set := range map[string]bool{"by": j.By != nil, "id": j.ID != nil, "failed": j.Failed != nil} {
		if set && !stored {
			return Event{}, fieldFail(f, notAField)
		}
	}
	if stored {
		e.By, e.ID, e.Failed = deref(j.By), deref(j.ID), j.Failed
	}
	if j.Name == nil || !ValidName(*j.Name) {
		return Event{}, fail(400, "invalid_event_name", "name is required and must match ^[a-z0-9][a-z0-9-]{0,63}$")
	}
	e.Name = *j.Name
	var err error
	if e.StartsAt, err = parseTime("startsAt", j.StartsAt, true); err != nil {
		return Event{}, err
	}
	if e.EndsAt, err = parseTime("endsAt", j.EndsAt, true); err != nil {
		return Event{}, err
	}
	if e.PrequeueAt, err = parseTime("prequeueAt", j.PrequeueAt, false); err != nil {
		return Event{}, err
	}
	if !e.EndsAt.After(e.StartsAt) {
		return Event{}, fail(400, "event_ends_before_start", "endsAt (%s) must be after startsAt (%s)", fmtTime(e.EndsAt), fmtTime(e.StartsAt))
	}
	if !e.PrequeueAt.IsZero() && !e.PrequeueAt.Before(e.StartsAt) {
		return Event{}, fail(400, "event_prequeue_after_start", "prequeueAt (%s) must be before startsAt (%s)", fmtTime(e.PrequeueAt), fmtTime(e.StartsAt))
	}
	e.ShuffleAtStart = j.ShuffleAtStart != nil && *j.ShuffleAtStart
	e.AtEnd = AtEndKeep
	if j.AtEnd != nil {
		if *j.AtEnd != AtEndKeep && *j.AtEnd != AtEndClose {
			return Event{}, fail(400, "invalid_at_end", `atEnd must be "keep" or "close"`)
		}
		e.AtEnd = *j.AtEnd
	}
	if err := e.parseSettings(j.Settings); err != nil {
		return Event{}, err
	}
	return e, nil
}

// parseSettings reads and checks the overrides, and keeps them in the
// canonical form the admin API writes.
func (e *Event) parseSettings(raw json.RawMessage) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	p, err := settings.DecodePatch(raw, nil)
	var fe *settings.FieldError
	switch {
	case errors.As(err, &fe):
		return fieldFail("settings."+fe.Field, fe.Msg)
	case err != nil:
		return fieldFail("settings", "must be a JSON object of room settings")
	}
	var r settings.Room
	p.Apply(&r)
	vals := make(map[string]any, len(p.Names()))
	for _, n := range p.Names() {
		f, _ := settings.Lookup(n)
		if n == "opensAt" {
			return fieldFail("settings.opensAt", "is set by the event itself (prequeueAt and startsAt)")
		}
		if msg := f.Check(r); msg != "" {
			return fieldFail("settings."+n, msg)
		}
		vals[n] = f.Value(r)
	}
	e.patch = p
	e.Settings, _ = json.Marshal(vals)
	return nil
}

func parseTime(field string, s *string, required bool) (time.Time, error) {
	if s == nil || *s == "" {
		if required {
			return time.Time{}, fail(400, "invalid_event_time", "%s is required: an RFC 3339 time such as 2026-12-01T09:00:00Z", field)
		}
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil || t.Year() < 2000 || t.Year() > 3000 {
		return time.Time{}, fail(400, "invalid_event_time", "%s must be an RFC 3339 time such as 2026-12-01T09:00:00Z, between the years 2000 and 3000", field)
	}
	// Milliseconds, as the room's settings store a time.
	return t.Truncate(time.Millisecond), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

const notAField = "is not an event field (name, prequeueAt, startsAt, endsAt, shuffleAtStart, settings, atEnd)"

// decodeStrict decodes one JSON object into dst, refusing unknown fields
// by name.
func decodeStrict(raw []byte, dst any) error {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 || body[0] != '{' {
		return fail(400, "invalid_json", "the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fieldFail(te.Field, "has the wrong type ("+te.Value+")")
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fieldFail(strings.Trim(f, `"`), notAField)
		}
		return fail(400, "invalid_json", "the body must be a JSON object")
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return fail(400, "invalid_json", "the body must be one JSON object")
	}
	return nil
}

// Overlap returns the error (an *Error event_overlap) naming a and b when
// their spans, from Begins to EndsAt, overlap; else nil.
func Overlap(a, b Event) error {
	if a.Begins().Before(b.EndsAt) && b.Begins().Before(a.EndsAt) {
		return fail(409, "event_overlap", "event %s (%s to %s) overlaps event %s (%s to %s)",
			a.Name, fmtTime(a.Begins()), fmtTime(a.EndsAt), b.Name, fmtTime(b.Begins()), fmtTime(b.EndsAt))
	}
	return nil
}
