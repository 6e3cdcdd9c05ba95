package settings

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the settings table in docs/rooms.md")

const (
	docsFile   = "../docs/rooms.md"
	tableStart = "<!-- settings table: generated from package settings (go test ./settings -run TestDocsTable -update) -->\n"
	tableEnd   = "<!-- end of the settings table -->\n"
)

// TestDocsTable: the settings table in docs/rooms.md is the one the
// schema makes, so the reference cannot drift from the code.
func TestDocsTable(t *testing.T) {
	raw, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no settings table between %q and %q", docsFile, tableStart, tableEnd)
	}
	want := Markdown()
	if got := doc[i+len(tableStart) : j]; got != want {
		if !*update {
			t.Fatalf("the settings table in %s is out of date; run go test ./settings -run TestDocsTable -update\ngot:\n%s\nwant:\n%s", docsFile, got, want)
		}
		doc = doc[:i+len(tableStart)] + want + doc[j:]
		if err := os.WriteFile(docsFile, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// full is a room with every setting away from its zero value.
func full() Room {
	return Room{
		Paused: true, Strategy: StrategyMaxActive, Batch: 30, MaxActive: 50, Seats: 500,
		OpensAt: time.UnixMilli(1796115600123), TokenTTL: 300 * time.Second, TokenMax: 900 * time.Second,
		FailMode: FailClosed, JoinRate: 2.5, JoinBurst: 7, PowBits: 12, Message: "Back soon.", InviteOnly: true,
		NoPresence: true, AwayAfter: 90 * time.Second, DropAfter: 20 * time.Minute, Method: MethodRandom, Activation: ActivationBusy,
		BrandTitle: "Drop", BrandLogo: "/logo.png", BrandAccent: "#c2185b", BrandBackground: "#fff8e1",
		BrandFooter: "<b>hi</b>", Autopilot: true,
		LatencyTarget: 400, MaxErrorRate: 0.05, MinRate: 10, MaxRate: 300,
	}
}

// TestAutopilotLimits: zero means each default, and a minRate over the
// maxRate in force is refused, defaults included.
func TestAutopilotLimits(t *testing.T) {
	want := AutopilotLimits{LatencyTarget: 500 * time.Millisecond, MaxErrorRate: 0.01, MinRate: 1, MaxRate: 1000}
	if got := (Room{}).EffectiveAutopilot(); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if got := full().EffectiveAutopilot(); got != (AutopilotLimits{400 * time.Millisecond, 0.05, 10, 300}) {
		t.Errorf("set %+v", got)
	}
	for _, r := range []Room{{MinRate: 20, MaxRate: 10}, {MinRate: 2000}} {
		var fe *FieldError
		if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "maxRate" {
			t.Errorf("%+v: %v, want maxRate refused", r.EffectiveAutopilot(), err)
		}
	}
	var fe *FieldError
	if err := (Room{MaxErrorRate: 1.5}).Validate(); !errors.As(err, &fe) || fe.Field != "maxErrorRate" {
		t.Errorf("maxErrorRate 1.5: %v, want refused", err)
	}
}

// TestHashRoundTrip: a room written to its hash reads back the same, and
// every setting is stored under its own field.
func TestHashRoundTrip(t *testing.T) {
	r := full()
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	h := r.Hash()
	if len(h) != 2*len(Fields) {
		t.Fatalf("the hash of a room with every setting has %d fields, want %d: %v", len(h)/2, len(Fields), h)
	}
	back := FromHash(append(h, VersionHash, "7"))
	if back.Version() != 7 {
		t.Errorf("version %d, want 7", back.Version())
	}
	for _, f := range Fields {
		if !f.Equal(r, back) {
			t.Errorf("%s: %v read back as %v", f.Name, f.Value(r), f.Value(back))
		}
	}
	if got := (Room{}).Hash(); len(got) != 0 {
		t.Errorf("the zero room stores %v, want nothing", got)
	}
	if got := (Room{Method: MethodFIFO}).Hash(); len(got) != 0 {
		t.Errorf("method fifo (the default) stores %v, want nothing", got)
	}
	seen := map[string]bool{}
	for _, name := range HashFields() {
		if seen[name] {
			t.Errorf("hash field %q is used twice", name)
		}
		seen[name] = true
	}
}

// TestEveryFieldCopies: Copy and Equal see each setting and no other.
func TestEveryFieldCopies(t *testing.T) {
	src := full()
	for _, f := range Fields {
		var dst Room
		f.Copy(&dst, src)
		if !f.Equal(dst, src) {
			t.Errorf("%s: not copied", f.Name)
		}
		if len(dst.Hash()) != 2 {
			t.Errorf("%s: Copy set %v, want one setting", f.Name, dst.Hash())
		}
	}
}

func TestDecodePatch(t *testing.T) {
	var name *string
	p, err := DecodePatch([]byte(`{"room":"drop","batch":30,"presence":false,"opensAt":"2026-12-01T09:00:00Z","tokenTtlSeconds":1e12,"message":null,"Seats":5}`), map[string]any{"room": &name})
	if err != nil {
		t.Fatal(err)
	}
	if name == nil || *name != "drop" {
		t.Errorf("room %v, want drop", name)
	}
	if got, want := p.Names(), []string{"batch", "presence", "opensAt", "tokenTtlSeconds", "seats"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
	r := Room{Message: "kept"}
	p.Apply(&r)
	if r.Batch != 30 || !r.NoPresence || r.OpensAt.IsZero() || r.Message != "kept" || r.Seats != 5 {
		t.Errorf("applied: %+v", r)
	}
	var fe *FieldError
	if err := r.Validate(); !errors.As(err, &fe) || fe.Field != "tokenTtlSeconds" {
		t.Errorf("a lifetime no duration holds: %v, want tokenTtlSeconds refused", err)
	}
	if p.SteerOnly() || !(Patch{}).With("paused", true).With("message", "x").SteerOnly() {
		t.Error("SteerOnly is wrong")
	}
	for body, want := range map[string]string{
		`{"batch":"x"}`:          "batch: has the wrong type (string)",
		`{"batch":1.5}`:          "batch: has the wrong type (number 1.5)",
		`{"nope":1,"batch":"x"}`: "nope: is not a room setting",
		`{"opensAt":"soon"}`:     "opensAt: " + ErrTime,
		`{"room":5}`:             "room: has the wrong type (number)",
	} {
		_, err := DecodePatch([]byte(body), map[string]any{"room": &name})
		if !errors.As(err, &fe) || err.Error() != want {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
	for _, body := range []string{``, `[]`, `{"batch":1`, `{"batch":1} {}`, `"x"`} {
		if _, err := DecodePatch([]byte(body), nil); !errors.Is(err, ErrNotObject) {
			t.Errorf("%q: %v, want ErrNotObject", body, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		r     Room
		field string
	}{
		{Room{Batch: -1}, "batch"},
		{Room{Strategy: "nope"}, "strategy"},
		{Room{Strategy: StrategyMaxActive}, "maxActive"},
		{Room{TokenTTL: 600 * time.Second, TokenMax: 300 * time.Second}, "tokenMaxSeconds"},
		{Room{JoinBurst: 3}, "joinBurst"},
		{Room{PowBits: MaxPowBits + 1}, "powBits"},
		{Room{AwayAfter: time.Second}, "awayAfterSeconds"},
		{Room{AwayAfter: 20 * time.Minute}, "awayAfterSeconds"},
		{Room{AwayAfter: 20 * time.Minute, DropAfter: 10 * time.Minute}, "dropAfterSeconds"},
		{Room{OpensAt: time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)}, "opensAt"},
		{Room{Message: "<b>"}, "message"},
		{Room{BrandAccent: "red"}, "brandAccent"},
		{Room{Method: "lottery"}, "method"},
	} {
		var fe *FieldError
		if err := c.r.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: %v, want %s refused", c.r, err, c.field)
		}
	}
	if err := (Room{}).Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// TestForm: the dashboard's description names every setting once, with
// what its kind needs.
func TestForm(t *testing.T) {
	form := Form()
	if len(form) != len(Fields) {
		t.Fatalf("%d settings described, want %d", len(form), len(Fields))
	}
	b, err := json.Marshal(form)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range form {
		if f.Name != Fields[i].Name || f.Label == "" || f.Hint == "" {
			t.Errorf("%+v is incomplete", f)
		}
		if (f.Kind == "select" || f.Kind == "bool") && len(f.Options) < 2 {
			t.Errorf("%s has no options", f.Name)
		}
	}
	if !strings.Contains(string(b), `"name":"message","label":"Message to everyone waiting","kind":"text","hint":`) {
		t.Errorf("unexpected JSON: %s", b)
	}
}
