package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Channel is the pub/sub channel of room's events, wr:{room}:events. Its
// {room} hash tag puts it in the room's cluster slot. The scripts get it
// from here as an argument; nothing else builds it.
func Channel(room string) string { return "wr:{" + room + "}:events" }

// RoomOf returns the room of a channel made by Channel, or "".
func RoomOf(channel string) string {
	const pre, suf = "wr:{", "}:events"
	if len(channel) <= len(pre)+len(suf) || channel[:len(pre)] != pre || channel[len(channel)-len(suf):] != suf {
		return ""
	}
	return channel[len(pre) : len(channel)-len(suf)]
}

// EventType says what happened in a room.
type EventType string

// The events published on a room's channel.
const (
	// EventAdmit lists the visitors one tick admitted, with their
	// notBefore and expiresAt; every waiting visitor moves Count places on.
	EventAdmit EventType = "admit"
	// EventSoldOut says the room's seats are all held.
	EventSoldOut EventType = "sold_out"
	// EventConfig says the room's settings changed (pause, resume, seats
	// released, any edit): every visitor's state may have changed.
	EventConfig EventType = "config"
	// EventOpen says the pre-queue was drawn: its visitors have places now.
	EventOpen EventType = "open"
)

// Event is one message on a room channel.
type Event struct {
	Type     EventType
	Room     string
	Tick     int64
	Count    int64
	Admitted []Admission
	Text     string // EventMessage: the message
	Version  int64  // EventMessage: the settings version holding it
}

// Admission is one visitor let in by a tick.
type Admission struct {
	Visitor   string
	NotBefore time.Time
	ExpiresAt time.Time
}

// MaxEventBytes bounds an event; anything larger is not from the scripts.
const MaxEventBytes = 4 << 20

// maxCount bounds an event's count: more is not a tick's batch.
const maxCount = 1 << 30

// DecodeEvent parses a room event. Numbers may be written as integers,
// floats (Lua's cjson writes 1.7329876544e+12) or strings of either.
func DecodeEvent(payload []byte) (Event, error) {
	var raw struct {
		Type     EventType       `json:"type"`
		Room     string          `json:"room"`
		Tick     flexInt         `json:"tick"`
		Count    flexInt         `json:"count"`
		Admitted json.RawMessage `json:"admitted"`
		Text     string          `json:"text"`
		Version  flexInt         `json:"v"`
	}
	if len(payload) > MaxEventBytes {
		return Event{}, fmt.Errorf("event of %d bytes is too large", len(payload))
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return Event{}, err
	}
	if raw.Count < 0 || raw.Count > maxCount {
		return Event{}, fmt.Errorf("count %d out of range", raw.Count)
	}
	e := Event{Type: raw.Type, Room: raw.Room, Tick: int64(raw.Tick), Count: int64(raw.Count), Text: raw.Text, Version: int64(raw.Version)}
	if len(raw.Admitted) > 0 {
		adm, ok := scanAdmitted(raw.Admitted)
		if !ok {
			var entries []admitEntry
			if err := json.Unmarshal(raw.Admitted, &entries); err != nil {
				return Event{}, err
			}
			for _, a := range entries {
				adm = append(adm, Admission(a))
			}
		}
		e.Admitted = adm
	}
	return e, nil
}

// scanAdmitted reads the admitted list as the scripts write it, with no
// reflection: [["id",notBeforeMs,expiresAtMs],...] with no spaces, plain
// ASCII ids and positive integer times. It reports false for anything
// else, which the general decoder then reads (or refuses): a tick's event
// is decoded by every instance, and the general decoder's work per entry
// was most of what an event cost.
func scanAdmitted(b []byte) ([]Admission, bool) {
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	i := 1
	if b[i] == ']' {
		return nil, i+1 == len(b)
	}
	var out []Admission
	for {
		if i+1 >= len(b) || b[i] != '[' || b[i+1] != '"' {
			return nil, false
		}
		i += 2
		start := i
		for i < len(b) && b[i] != '"' {
			if c := b[i]; c < 0x20 || c >= 0x80 || c == '\\' {
				return nil, false
			}
			i++
		}
		if i >= len(b) {
			return nil, false
		}
		id := string(b[start:i])
		i++ // the closing quote
		var times [2]int64
		for k := range times {
			if i >= len(b) || b[i] != ',' {
				return nil, false
			}
			i++
			if i < len(b) && b[i] == '0' {
				return nil, false // 0, or a leading zero
			}
			n, digits := int64(0), 0
			for i < len(b) && b[i] >= '0' && b[i] <= '9' && digits < 18 {
				n = n*10 + int64(b[i]-'0')
				i++
				digits++
			}
			if digits == 0 || n <= 0 {
				return nil, false
			}
			times[k] = n
		}
		if i >= len(b) || b[i] != ']' {
			return nil, false
		}
		i++
		out = append(out, Admission{Visitor: id, NotBefore: time.UnixMilli(times[0]), ExpiresAt: time.UnixMilli(times[1])})
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return out, i+1 == len(b)
		default:
			return nil, false
		}
	}
}

// admitEntry is [visitorID, notBeforeUnixMs, expiresAtUnixMs].
type admitEntry Admission

func (e *admitEntry) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if len(raw) < 3 {
		return errors.New("admitted entry needs 3 elements")
	}
	var nb, exp flexInt
	if err := json.Unmarshal(raw[0], &e.Visitor); err != nil {
		return err
	}
	if err := nb.UnmarshalJSON(raw[1]); err != nil {
		return err
	}
	if err := exp.UnmarshalJSON(raw[2]); err != nil {
		return err
	}
	if nb <= 0 || exp <= 0 {
		return errors.New("admitted entry needs positive times")
	}
	e.NotBefore, e.ExpiresAt = time.UnixMilli(int64(nb)), time.UnixMilli(int64(exp))
	return nil
}

type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(b, `"`)
	if i, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*n = flexInt(i)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<62 {
		return errors.New("not an integer")
	}
	*n = flexInt(math.Round(f))
	return nil
}
