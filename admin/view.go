package admin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/settings"
)

// View is a room's settings as the admin API shows them: each setting's
// effective value, the tick and admission rate they make, and which
// settings the rooms file sets.
type View struct {
	Room     string
	Settings settings.Room // with the instance's defaults filled in
	Tick     time.Duration
	TPS      float64 // admissions per second a fixed batch makes
	// FromFile maps each setting the rooms file sets to why it is
	// read-only here.
	FromFile map[string]string
}

// Defaults are an instance's values for what a room leaves to it.
type Defaults struct {
	settings.Defaults
	Tick time.Duration
}

// Effective is room's stored settings with d filled in (FromFile is the
// caller's to set).
func Effective(room string, stored settings.Room, d Defaults) View {
	eff := stored.Effective(d.Defaults)
	return View{Room: room, Settings: eff, Tick: d.Tick, TPS: float64(eff.Batch) / d.Tick.Seconds()}
}

// MarshalJSON writes v as one object: room, the settings by name (in the
// order of settings.Fields), tickMs, tps and, when the rooms file sets
// any, fromFile.
func (v View) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	put := func(k string, val any) error {
		enc, err := json.Marshal(val)
		if err != nil {
			return err
		}
		if b.Len() == 0 {
			b.WriteByte('{')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(k) + ":")
		b.Write(enc)
		return nil
	}
	if err := put("room", v.Room); err != nil {
		return nil, err
	}
	for _, f := range settings.Fields {
		if err := put(f.Name, f.Value(v.Settings)); err != nil {
			return nil, err
		}
	}
	_ = put("tickMs", v.Tick.Milliseconds())
	if err := put("tps", v.TPS); err != nil {
		return nil, err
	}
	if len(v.FromFile) > 0 {
		_ = put("fromFile", v.FromFile)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Values maps each setting's name to its effective value, as the API
// writes it.
func (v View) Values() map[string]any {
	out := make(map[string]any, len(settings.Fields))
	for _, f := range settings.Fields {
		out[f.Name] = f.Value(v.Settings)
	}
	return out
}

// FieldChange is one setting's effective value before and after.
type FieldChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// Changes lists the settings whose effective value differs between before
// and after, in the order of settings.Fields.
func Changes(before, after View) []FieldChange {
	a, b := before.Values(), after.Values()
	var out []FieldChange
	for _, f := range settings.Names() {
		if !reflect.DeepEqual(a[f], b[f]) {
			out = append(out, FieldChange{Field: f, From: a[f], To: b[f]})
		}
	}
	return out
}

// Entry is one admin action in the audit trail: who (the admin key's
// label, or "rooms-file"), what, when. A change of a room's settings
// lists its changes; the actions that hand out access say what they
// handed out, never the secret itself (no invite code, no credential).
type Entry struct {
	At  string `json:"at"`
	Who string `json:"who"`
	// create, update, pause, resume, mint-invites, mint-visitor,
	// end-session, set-webhooks, redeliver-webhook; event-create,
	// event-update, event-delete; and by "schedule", event-prequeue,
	// event-start, event-end.
	Action  string        `json:"action"`
	Changes []FieldChange `json:"changes"`
	// Reason says why the autopilot made a change (action autopilot).
	Reason string `json:"reason,omitempty"`
	// Event names the scheduled event of an event-… action.
	Event string `json:"event,omitempty"`
	// Visitor is the visitor id a credential was minted for, a session
	// ended of, or an invite code bound to.
	Visitor string   `json:"visitor,omitempty"`
	Invites *Invites `json:"invites,omitempty"`
	// Webhooks are the URLs a room's webhooks were set to (never their
	// secrets); Delivery is the id of a dead webhook delivery sent again.
	Webhooks []string `json:"webhooks,omitempty"`
	Delivery string   `json:"delivery,omitempty"`
}

// Invites is what a mint of invite codes made (not the codes).
type Invites struct {
	Count     int    `json:"count"`
	Uses      int    `json:"uses"`
	Priority  bool   `json:"priority"`
	ExpiresAt string `json:"expiresAt"`
}
