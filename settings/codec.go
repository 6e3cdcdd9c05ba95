package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// VersionHash is the field of the room's Redis hash that counts its
// writes (see Room.Version).
const VersionHash = "v"

// Hash is r as the room's Redis hash stores it: field, value, … for the
// settings r sets (a setting at its zero value is not stored).
func (r Room) Hash() []string {
	var out []string
	for _, f := range Fields {
		if v := f.encode(r); v != "" {
			out = append(out, f.Hash, v)
		}
	}
	return out
}

var byHash = func() map[string]int {
	m := make(map[string]int, len(Fields))
	for i, f := range Fields {
		m[f.Hash] = i
	}
	return m
}()

// FromHash reads a room's Redis hash, given as field, value, …; it keeps
// the version (Room.Version) and ignores fields it does not know.
func FromHash(flat []string) Room {
	var r Room
	for i := 0; i+1 < len(flat); i += 2 {
		k, v := flat[i], flat[i+1]
		if k == VersionHash {
			r.version, _ = strconv.ParseInt(v, 10, 64)
			continue
		}
		if j, ok := byHash[k]; ok {
			Fields[j].decode(&r, v)
		}
	}
	return r
}

// HashFields are the fields of the room's Redis hash: each setting's, then
// VersionHash. The queue's scripts read these and no others.
func HashFields() []string {
	out := make([]string, 0, len(Fields)+1)
	for _, f := range Fields {
		out = append(out, f.Hash)
	}
	return append(out, VersionHash)
}

// Patch is a change of some of a room's settings: each setting it names
// takes its value, the others keep theirs. The zero Patch changes nothing.
type Patch struct {
	names []string
	vals  map[string]any
}

// With is p changing also the setting name to v, a value as Field.Set
// takes it. It panics on a name that is no setting.
func (p Patch) With(name string, v any) Patch {
	f, ok := Lookup(name)
	if !ok {
		panic("settings: no setting " + strconv.Quote(name))
	}
	out := Patch{names: append([]string(nil), p.names...), vals: make(map[string]any, len(p.vals)+1)}
	for k, v := range p.vals {
		out.vals[k] = v
	}
	if _, dup := out.vals[f.Name]; !dup {
		out.names = append(out.names, f.Name)
	}
	out.vals[f.Name] = v
	return out
}

// Names are the settings p changes, in the order they were given.
func (p Patch) Names() []string { return append([]string(nil), p.names...) }

// SteerOnly reports whether p changes only settings an operator may
// change (Field.Steer).
func (p Patch) SteerOnly() bool {
	for _, n := range p.names {
		if f, _ := Lookup(n); !f.Steer {
			return false
		}
	}
	return true
}

// Apply changes r's settings that p names. The result may be invalid:
// Validate it.
func (p Patch) Apply(r *Room) {
	for _, n := range p.names {
		f, _ := Lookup(n)
		f.set(r, p.vals[n])
	}
}

// ErrNotObject is what DecodePatch returns for a body that is not one
// JSON object.
var ErrNotObject = errors.New("settings: not a JSON object")

// DecodePatch reads a change from a JSON object whose keys are settings'
// names; a null value leaves the setting as it is. A key of also is not a
// setting: its value is decoded into also's pointer instead (such as the
// room's name beside its settings). The error is ErrNotObject, or a
// *FieldError naming the first key, in the body's order, that is not a
// setting, has a value of the wrong type, or a time that is not one.
func DecodePatch(body []byte, also map[string]any) (Patch, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || !json.Valid(body) {
		return Patch{}, ErrNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	_, _ = dec.Token() // {
	var p Patch
	for dec.More() {
		t, _ := dec.Token()
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Patch{}, ErrNotObject
		}
		if err := p.decodeKey(key, raw, also); err != nil {
			return Patch{}, err
		}
	}
	return p, nil
}

func (p *Patch) decodeKey(key string, raw json.RawMessage, also map[string]any) error {
	for k, dst := range also {
		if strings.EqualFold(k, key) {
			return typeError(k, json.Unmarshal(raw, dst))
		}
	}
	f, ok := Lookup(key)
	if !ok {
		return &FieldError{key, "is not a room setting"}
	}
	if string(raw) == "null" {
		return nil
	}
	v, err := f.decodeJSON(raw)
	if err != nil {
		return typeError(f.Name, err)
	}
	*p = p.With(f.Name, v)
	return nil
}

// typeError names field in err, a failure to decode its value.
func typeError(field string, err error) error {
	var te *json.UnmarshalTypeError
	var fe *FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return err
	case errors.As(err, &te):
		return &FieldError{field, "has the wrong type (" + te.Value + ")"}
	}
	return ErrNotObject
}
