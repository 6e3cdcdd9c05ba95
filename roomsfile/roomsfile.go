// Package roomsfile reads the rooms file (-rooms): the rooms an operator
// declares as code, each with the settings the file pins. It is YAML, and
// since JSON is YAML, a JSON file reads the same. Every error names the
// field and its line, so a bad file is fixed without guessing.
//
//	rooms:
//	  drop-2026:
//	    batch: 30
//	    seats: 5000
//	    opensAt: 2026-12-01T09:00:00Z
//	    message: "Doors open at 9:00 UTC."
//	    events:
//	      - name: launch
//	        startsAt: 2026-12-01T09:00:00Z
//	        endsAt: 2026-12-01T11:00:00Z
//	        settings: {batch: 60}
//
// The field names are the admin API's (GET /api/v1/admin/rooms/{room}). A
// field the file sets wins over a live change; a field it leaves out is
// the operator's to steer.
package roomsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
	"go.yaml.in/yaml/v3"
)

// Fields are the settings a room may declare, in the order they are shown
// (settings.Names).
var Fields = settings.Names()

// The file's limits. Every instance applies the whole file at start and
// on SIGHUP, a few Redis round trips per room, so the limits keep one
// apply within the deadline the server gives it (see docs/rooms-file.md
// for the time the largest file takes).
const (
	MaxBytes = 1 << 20 // 1 MiB
	MaxRooms = 10000
)

// Error is a problem in the file, at a line.
type Error struct {
	File  string
	Line  int    // 1-based; 0 when unknown
	Field string // e.g. rooms.drop.batch; "" for the file as a whole
	Msg   string
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// Room is one declared room: the settings the file sets (the others are
// zero in Config and absent from Lines).
type Room struct {
	Name   string
	Line   int
	Config settings.Room
	// Lines maps each field the file sets to its line.
	Lines map[string]int
	// Events are the room's scheduled events (the key events, a list of
	// events as the admin API takes them), written on every apply.
	Events []schedule.Event
}

// Sets reports whether the file sets field (an admin API name).
func (r Room) Sets(field string) bool {
	_, ok := r.Lines[field]
	return ok
}

// Apply sets in c the fields the file sets and returns the names of those
// whose value changed.
func (r Room) Apply(c *settings.Room) []string {
	var changed []string
	for _, f := range settings.Fields {
		if r.Sets(f.Name) && !f.Equal(*c, r.Config) {
			f.Copy(c, r.Config)
			changed = append(changed, f.Name)
		}
	}
	return changed
}

// File is a parsed rooms file.
type File struct {
	Path  string
	rooms map[string]Room
	order []string
}

// Room returns the file's settings for the named room.
func (f *File) Room(name string) (Room, bool) {
	if f == nil {
		return Room{}, false
	}
	r, ok := f.rooms[name]
	return r, ok
}

// Rooms returns the declared rooms in file order.
func (f *File) Rooms() []Room {
	if f == nil {
		return nil
	}
	out := make([]Room, len(f.order))
	for i, n := range f.order {
		out[i] = f.rooms[n]
	}
	return out
}

// Load reads and parses the file at path.
func Load(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	if len(data) > MaxBytes {
		line := 1 + bytes.Count(data[:MaxBytes], []byte("\n"))
		return nil, &Error{File: path, Line: line, Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB), the limit, from this line on; split the rooms across instances or remove some", MaxBytes)}
	}
	return Parse(path, data)
}

// Parse parses data; path names the file in errors.
func Parse(path string, data []byte) (*File, error) {
	fail := func(line int, field, format string, args ...any) error {
		return &Error{File: path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, fail(0, "", "%s", te.Errors[0])
		}
		return nil, fail(0, "", "%s", err)
	}
	f := &File{Path: path, rooms: map[string]Room{}}
	if len(doc.Content) == 0 {
		return nil, fail(0, "", `is empty: want a "rooms" mapping`)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fail(top.Line, "", `want a mapping with the key "rooms"`)
	}
	var roomsNode *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "rooms" {
			return nil, fail(k.Line, k.Value, `is not a known key (the file has one key, "rooms")`)
		}
		if roomsNode != nil {
			return nil, fail(k.Line, "rooms", "appears twice")
		}
		roomsNode = v
	}
	if roomsNode == nil {
		return nil, fail(top.Line, "rooms", "is missing")
	}
	if roomsNode.Kind == yaml.ScalarNode && roomsNode.Tag == "!!null" {
		return f, nil // no rooms declared
	}
	if roomsNode.Kind != yaml.MappingNode {
		return nil, fail(roomsNode.Line, "rooms", "must map room names to their settings")
	}
	for i := 0; i+1 < len(roomsNode.Content); i += 2 {
		k, v := roomsNode.Content[i], roomsNode.Content[i+1]
		name := k.Value
		where := "rooms." + name
		if k.Kind != yaml.ScalarNode || !wire.ValidRoom(name) {
			return nil, fail(k.Line, where, "is not a valid room name (^[a-z0-9][a-z0-9-]{0,63}$)")
		}
		if _, dup := f.rooms[name]; dup {
			return nil, fail(k.Line, where, "is declared twice")
		}
		if len(f.order) == MaxRooms {
			return nil, fail(k.Line, where, "is room %d: a rooms file declares at most %d rooms", MaxRooms+1, MaxRooms)
		}
		r, err := parseRoom(path, name, k.Line, v)
		if err != nil {
			return nil, err
		}
		f.rooms[name] = r
		f.order = append(f.order, name)
	}
	return f, nil
}

func parseRoom(path, name string, line int, n *yaml.Node) (Room, error) {
	r := Room{Name: name, Line: line, Lines: map[string]int{}}
	where := "rooms." + name
	fail := func(line int, field, format string, args ...any) (Room, error) {
		return Room{}, &Error{File: path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return r, nil // the room, with every setting left to the operator
	}
	if n.Kind != yaml.MappingNode {
		return fail(n.Line, where, "must be a mapping of settings")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := where + "." + k.Value
		if k.Value == "events" {
			if r.Events != nil {
				return fail(k.Line, field, "is set twice")
			}
			evs, err := parseEvents(path, field, v)
			if err != nil {
				return Room{}, err
			}
			r.Events = evs
			continue
		}
		f, ok := settings.Lookup(k.Value)
		if !ok || f.Name != k.Value {
			return fail(k.Line, field, "is not a room setting (known: %v)", Fields)
		}
		if _, dup := r.Lines[k.Value]; dup {
			return fail(k.Line, field, "is set twice")
		}
		if v.Tag == "!!null" && strings.Contains(f.YAMLHint, `"#`) {
			return fail(v.Line, field, `has no value: in YAML a # starts a comment, so quote the colour ("#c2185b")`)
		}
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			return fail(v.Line, field, "must be a single value")
		}
		val, err := value(f, v)
		if err != nil {
			return fail(v.Line, field, "%s", err)
		}
		f.Set(&r.Config, val)
		r.Lines[k.Value] = v.Line
	}
	if err := r.Config.Validate(); err != nil {
		var fe *settings.FieldError
		if errors.As(err, &fe) {
			line, ok := r.Lines[fe.Field]
			if !ok {
				line = r.Line
			}
			return fail(line, where+"."+fe.Field, "%s", fe.Msg)
		}
		return fail(r.Line, where, "%s", err)
	}
	return r, nil
}

// value reads v as a value of f, of the type f.Set takes.
func value(f settings.Field, v *yaml.Node) (any, error) {
	switch f.Kind {
	case settings.Bool:
		var b bool
		return b, decode(v, "!!bool", "true or false", &b)
	case settings.Int:
		var n int
		return n, decode(v, "!!int", "a whole number", &n)
	case settings.Number:
		var x float64
		return x, decodeFloat(v, &x)
	case settings.Seconds:
		var d time.Duration
		return d, decodeSeconds(v, &d)
	case settings.Time:
		if v.Value == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, v.Value)
		if err != nil {
			return nil, errors.New("must be an RFC 3339 time (2026-12-01T09:00:00Z) or empty")
		}
		return t.Truncate(time.Millisecond), nil
	}
	want := "a string"
	if f.YAMLHint != "" {
		want += " (" + f.YAMLHint + ")"
	}
	var s string
	return s, decode(v, "!!str", want, &s)
}

func decode(v *yaml.Node, tag, want string, dst any) error {
	if v.Tag != tag {
		return fmt.Errorf("must be %s, not %q", want, v.Value)
	}
	if err := v.Decode(dst); err != nil {
		return fmt.Errorf("must be %s, not %q", want, v.Value)
	}
	return nil
}

func decodeFloat(v *yaml.Node, dst *float64) error {
	if v.Tag != "!!int" && v.Tag != "!!float" {
		return fmt.Errorf("must be a number, not %q", v.Value)
	}
	if err := v.Decode(dst); err != nil || math.IsNaN(*dst) || math.IsInf(*dst, 0) {
		return fmt.Errorf("must be a number, not %q", v.Value)
	}
	return nil
}

// decodeSeconds reads a number of seconds; out-of-range values become one
// that RoomConfig.Validate refuses with the field's own message.
func decodeSeconds(v *yaml.Node, dst *time.Duration) error {
	var s float64
	if err := decodeFloat(v, &s); err != nil {
		return err
	}
	*dst = -1
	if s >= 0 && s < 1e9 {
		// Milliseconds, as stored, so the pinned value equals what is read back.
		*dst = time.Duration(s * float64(time.Second)).Truncate(time.Millisecond)
	}
	return nil
}

// parseEvents reads a room's list of events: each a mapping of the admin
// API's event fields, checked as the API checks them, and no two
// overlapping.
func parseEvents(path, where string, n *yaml.Node) ([]schedule.Event, error) {
	fail := func(line int, field, format string, args ...any) error {
		return &Error{File: path, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fail(n.Line, where, "must be a list of events")
	}
	if len(n.Content) > schedule.MaxStored {
		return nil, fail(n.Line, where, "lists %d events: a room keeps at most %d", len(n.Content), schedule.MaxStored)
	}
	out := make([]schedule.Event, 0, len(n.Content))
	for i, en := range n.Content {
		at := fmt.Sprintf("%s[%d]", where, i)
		var v any
		if err := en.Decode(&v); err != nil || en.Kind != yaml.MappingNode {
			return nil, fail(en.Line, at, "must be a mapping of event fields (name, prequeueAt, startsAt, endsAt, shuffleAtStart, settings, atEnd)")
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fail(en.Line, at, "%s", err)
		}
		e, err := schedule.Parse(raw)
		if err != nil {
			var se *schedule.Error
			if errors.As(err, &se) && se.Field != "" {
				return nil, fail(en.Line, at+"."+se.Field, "%s", strings.TrimPrefix(se.Msg, se.Field+": "))
			}
			if errors.As(err, &se) {
				return nil, fail(en.Line, at, "%s", se.Msg)
			}
			return nil, fail(en.Line, at, "%s", err)
		}
		for j, o := range out {
			if o.Name == e.Name {
				return nil, fail(en.Line, at, "names event %s again (as %s[%d])", e.Name, where, j)
			}
			var se *schedule.Error
			if errors.As(schedule.Overlap(o, e), &se) {
				return nil, fail(en.Line, at, "%s", se.Msg)
			}
		}
		out = append(out, e)
	}
	return out, nil
}
