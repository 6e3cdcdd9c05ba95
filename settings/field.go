package settings

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a setting's value.
type Kind string

// The kinds of setting, as the admin API and the rooms file write them.
const (
	Bool    Kind = "bool"    // true or false
	Int     Kind = "int"     // a whole number
	Number  Kind = "number"  // a number
	Seconds Kind = "seconds" // a number of seconds, stored in milliseconds
	Time    Kind = "time"    // an RFC 3339 time, or empty
	Enum    Kind = "enum"    // one of Options
	Text    Kind = "text"    // a string
)

// Field is one setting: how it is named, typed, bounded and documented,
// and how its value moves between Room, the admin API's JSON and the
// room's Redis hash. The unexported functions are set by the kind's
// constructor in Fields; a Field made elsewhere is unusable.
type Field struct {
	Name    string   // in the admin API, the rooms file and the dashboard
	Hash    string   // in the room's Redis hash (and its Lua scripts)
	Kind    Kind     //
	Options []string // Enum: the values allowed (besides "", the default)
	// Min and Max bound Int, Number and Seconds values other than 0,
	// which always means the default.
	Min, Max float64
	Default  string // in words, e.g. "-token-ttl (300)"
	Label    string // the dashboard's label
	Doc      string // one line: what it does
	// Steer marks the settings an operator may change; the others need
	// the admin role.
	Steer bool
	// NoForm leaves the setting out of the dashboard's settings form
	// (paused has buttons of its own).
	NoForm bool
	// YAMLHint says how to write a string value in the rooms file, e.g.
	// "quote it".
	YAMLHint string

	check      func(Room) string
	equal      func(a, b Room) bool
	copy       func(dst *Room, src Room)
	value      func(Room) any      // as the admin API shows it
	set        func(*Room, any)    // from a value as decodeJSON gives it
	encode     func(Room) string   // "" = not stored
	decode     func(*Room, string) //
	decodeJSON func(json.RawMessage) (any, error)
}

// Check reports why r's value of f is invalid on its own ("" = valid);
// Room.Validate adds the checks of settings taken together.
func (f Field) Check(r Room) string { return f.check(r) }

// Equal reports whether a and b have the same value of f.
func (f Field) Equal(a, b Room) bool { return f.equal(a, b) }

// Copy sets dst's value of f to src's.
func (f Field) Copy(dst *Room, src Room) { f.copy(dst, src) }

// Value is r's value of f as the admin API writes it: a bool, int,
// float64 (Number; seconds for Seconds), string, or for Time an RFC 3339
// string or nil.
func (f Field) Value(r Room) any { return f.value(r) }

// Set sets r's value of f from v, a value of the type Value returns (for
// Time a time.Time; for Seconds also a time.Duration). A Seconds value no
// duration can hold becomes one Check refuses; text is stored as the
// setting stores it (a footer sanitized). Set panics on a value of
// another type.
func (f Field) Set(r *Room, v any) { f.set(r, v) }

func access[T comparable](f Field, p func(*Room) *T) Field {
	f.equal = func(a, b Room) bool { return *p(&a) == *p(&b) }
	f.copy = func(dst *Room, src Room) { *p(dst) = *p(&src) }
	return f
}

func decodeAs[T any](raw json.RawMessage) (any, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// boolField is a setting true or false; stored is its hash value when the
// field of Room is true. With invert, Room holds the opposite of what the
// API shows (NoPresence for presence).
func boolField(f Field, p func(*Room) *bool, stored string, invert bool) Field {
	f.Kind = Bool
	f = access(f, p)
	f.check = func(Room) string { return "" }
	f.value = func(r Room) any { return *p(&r) != invert }
	f.set = func(r *Room, v any) { *p(r) = v.(bool) != invert }
	f.encode = func(r Room) string {
		if *p(&r) {
			return stored
		}
		return ""
	}
	f.decode = func(r *Room, v string) { *p(r) = v == stored }
	f.decodeJSON = decodeAs[bool]
	return f
}

// between is the message of a value outside 0 (zero says what it means)
// and max.
func between(zero string, max float64, unit string) string {
	if zero != "" {
		zero = " (" + zero + ")"
	}
	return strings.TrimSpace("must be between 0" + zero + " and " + num(max) + " " + unit)
}

func intField(f Field, p func(*Room) *int, zero string) Field {
	f.Kind = Int
	f = access(f, p)
	f.check = func(r Room) string {
		if v := float64(*p(&r)); v < f.Min || v > f.Max {
			return between(zero, f.Max, "")
		}
		return ""
	}
	f.value = func(r Room) any { return *p(&r) }
	f.set = func(r *Room, v any) { *p(r) = v.(int) }
	f.encode = func(r Room) string {
		if v := *p(&r); v > 0 {
			return strconv.Itoa(v)
		}
		return ""
	}
	f.decode = func(r *Room, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		*p(r) = int(n)
	}
	f.decodeJSON = decodeAs[int]
	return f
}

func numberField(f Field, p func(*Room) *float64, zero, unit string) Field {
	f.Kind = Number
	f = access(f, p)
	f.check = func(r Room) string {
		if v := *p(&r); v < f.Min || v > f.Max || math.IsNaN(v) {
			return between(zero, f.Max, unit)
		}
		return ""
	}
	f.value = func(r Room) any { return *p(&r) }
	f.set = func(r *Room, v any) { *p(r) = v.(float64) }
	f.encode = func(r Room) string {
		if v := *p(&r); v > 0 {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return ""
	}
	f.decode = func(r *Room, v string) { *p(r), _ = strconv.ParseFloat(v, 64) }
	f.decodeJSON = decodeAs[float64]
	return f
}

// secondsField is a duration the API writes in seconds. check is its
// own when it has one; otherwise the value is 0 or within Min and Max
// seconds.
func secondsField(f Field, p func(*Room) *time.Duration, check func(Room) string) Field {
	f.Kind = Seconds
	f = access(f, p)
	f.check = check
	if check == nil {
		msg := "must be 0 (the default) or between " + num(f.Min) + " and " + num(f.Max)
		f.check = func(r Room) string {
			if d := *p(&r); d != 0 && (d.Seconds() < f.Min || d.Seconds() > f.Max) {
				return msg
			}
			return ""
		}
	}
	f.value = func(r Room) any { return p(&r).Seconds() }
	f.set = func(r *Room, v any) {
		switch v := v.(type) {
		case time.Duration:
			*p(r) = v
		case float64:
			// A value no duration can hold becomes one check refuses
			// with the field's message.
			*p(r) = -1
			if v >= 0 && v < 1e9 {
				*p(r) = time.Duration(v * float64(time.Second))
			}
		default:
			panic("settings: " + f.Name + " set from a " + strconv.Quote(string(f.Kind)))
		}
	}
	f.encode = func(r Room) string {
		if d := *p(&r); d > 0 {
			return strconv.FormatInt(d.Milliseconds(), 10)
		}
		return ""
	}
	f.decode = func(r *Room, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		*p(r) = time.Duration(n) * time.Millisecond
	}
	f.decodeJSON = decodeAs[float64]
	return f
}

// ErrTime is the message of a time the API cannot parse.
const ErrTime = "must be an RFC 3339 time or empty"

func timeField(f Field, p func(*Room) *time.Time) Field {
	f.Kind = Time
	f.equal = func(a, b Room) bool { return p(&a).Equal(*p(&b)) }
	f.copy = func(dst *Room, src Room) { *p(dst) = *p(&src) }
	f.check = func(r Room) string {
		if t := *p(&r); !t.IsZero() && (t.Year() < 2000 || t.Year() > 3000) {
			return "must be a time between the years 2000 and 3000"
		}
		return ""
	}
	f.value = func(r Room) any {
		if t := *p(&r); !t.IsZero() {
			return t.UTC().Format(time.RFC3339Nano)
		}
		return nil
	}
	f.set = func(r *Room, v any) { *p(r) = v.(time.Time) }
	f.encode = func(r Room) string {
		if t := *p(&r); !t.IsZero() {
			return strconv.FormatInt(t.UnixMilli(), 10)
		}
		return ""
	}
	f.decode = func(r *Room, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		*p(r) = time.UnixMilli(n)
	}
	f.decodeJSON = func(raw json.RawMessage) (any, error) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		if s == "" {
			return time.Time{}, nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, &FieldError{f.Name, ErrTime}
		}
		return t, nil
	}
	return f
}

// enumField is one of f.Options or "" (the default); asZero, when not
// "", is the option that means the default and is kept as "".
func enumField(f Field, p func(*Room) *string, asZero string) Field {
	f.Kind = Enum
	q := make([]string, len(f.Options))
	for i, o := range f.Options {
		q[i] = strconv.Quote(o)
	}
	msg := "must be " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
	f = textField(f, p, func(v string) string {
		for _, o := range f.Options {
			if v == o {
				return ""
			}
		}
		if v == "" {
			return ""
		}
		return msg
	}, nil)
	f.Kind = Enum
	encode := f.encode
	f.encode = func(r Room) string {
		if v := encode(r); v != asZero {
			return v
		}
		return ""
	}
	set := f.set
	f.set = func(r *Room, v any) {
		if v == asZero {
			v = ""
		}
		set(r, v)
	}
	return f
}

// textField is a string checked by check; clean, when not nil, is what is
// stored of a valid value.
func textField(f Field, p func(*Room) *string, check func(string) string, clean func(string) string) Field {
	f.Kind = Text
	f = access(f, p)
	f.check = func(r Room) string { return check(*p(&r)) }
	f.value = func(r Room) any { return *p(&r) }
	f.set = func(r *Room, v any) {
		s := v.(string)
		if clean != nil && check(s) == "" { // else Validate names the field
			s = clean(s)
		}
		*p(r) = s
	}
	f.encode = func(r Room) string { return *p(&r) }
	f.decode = func(r *Room, v string) { *p(r) = v }
	f.decodeJSON = decodeAs[string]
	return f
}

// num writes a bound without needless decimals.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
