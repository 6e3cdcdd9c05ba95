package roomsfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/settings"
)

func TestExampleFile(t *testing.T) {
	f, err := Load("../examples/rooms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range f.Rooms() {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "drop,drop-2026,lecture-42,support" {
		t.Fatalf("rooms %v", names)
	}
	drop, ok := f.Room("drop-2026")
	want := settings.Room{
		Strategy: "fixed", Batch: 30, Seats: 5000, OpensAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
		TokenTTL: 300 * time.Second, TokenMax: 900 * time.Second, FailMode: "closed", JoinRate: 5, JoinBurst: 20,
		Message: "Doors open at 09:00 UTC. Your place is kept if you reload.",
	}
	if !ok || !sameConfig(drop.Config, want) {
		t.Fatalf("drop-2026: %+v", drop.Config)
	}
	if drop.Lines["batch"] != 17 || drop.Sets("paused") || drop.Sets("maxActive") {
		t.Fatalf("lines %v", drop.Lines)
	}
	if s, _ := f.Room("support"); len(s.Lines) != 0 {
		t.Fatalf("support sets %v", s.Lines)
	}
	if _, ok := f.Room("elsewhere"); ok {
		t.Fatal("undeclared room found")
	}
}

func sameConfig(a, b settings.Room) bool {
	var x, y settings.Room
	Room{Config: a, Lines: all()}.Apply(&x)
	Room{Config: b, Lines: all()}.Apply(&y)
	return len(Room{Config: x, Lines: all()}.Apply(&y)) == 0
}

func all() map[string]int {
	m := map[string]int{}
	for _, f := range Fields {
		m[f] = 1
	}
	return m
}

func TestJSONReadsTheSame(t *testing.T) {
	f, err := Parse("rooms.json", []byte(`{
  "rooms": {
    "drop": {"batch": 30, "paused": true, "opensAt": "2026-12-01T09:00:00Z", "joinRate": 2.5, "message": "hi"}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Room("drop")
	if r.Config.Batch != 30 || !r.Config.Paused || r.Config.JoinRate != 2.5 || r.Config.Message != "hi" || r.Config.OpensAt.IsZero() || r.Lines["paused"] != 3 {
		t.Fatalf("%+v %v", r.Config, r.Lines)
	}
}

func TestApplyOnlyTheFieldsSet(t *testing.T) {
	f, err := Parse("r.yaml", []byte("rooms:\n  drop:\n    batch: 30\n    message: \"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Room("drop")
	live := settings.Room{Batch: 14, Seats: 100, Paused: true, Message: "old"}
	changed := r.Apply(&live)
	if strings.Join(changed, ",") != "batch,message" || live.Batch != 30 || live.Seats != 100 || !live.Paused || live.Message != "" {
		t.Fatalf("changed %v, live %+v", changed, live)
	}
	if changed := r.Apply(&live); len(changed) != 0 {
		t.Fatalf("second apply changed %v", changed)
	}
}

// Every bad file is one error naming the field and its line.
func TestErrorsNameFieldAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown setting", "rooms:\n  drop:\n    batch: 3\n    bach: 4\n", "r.yaml:4: rooms.drop.bach: is not a room setting"},
		{"wrong type", "rooms:\n  drop:\n    batch: lots\n", `r.yaml:3: rooms.drop.batch: must be a whole number, not "lots"`},
		{"out of range", "rooms:\n  drop:\n\n    batch: 200000\n", "r.yaml:4: rooms.drop.batch: must be between 0 (default) and 100000"},
		{"needs another field", "rooms:\n  drop:\n    strategy: max-active\n", "r.yaml:2: rooms.drop.maxActive: is required with strategy max-active"},
		{"bad room name", "rooms:\n  Drop_1:\n    batch: 3\n", "r.yaml:2: rooms.Drop_1: is not a valid room name"},
		{"duplicate room", "rooms:\n  drop:\n  drop:\n", "r.yaml:3: rooms.drop: is declared twice"},
		{"html message", "rooms:\n  drop:\n    message: \"<b>hi</b>\"\n", "r.yaml:3: rooms.drop.message: must be plain text"},
		{"bad time", "rooms:\n  drop:\n    opensAt: tomorrow\n", "r.yaml:3: rooms.drop.opensAt: must be an RFC 3339 time"},
		{"unknown top key", "room:\n  drop:\n", "r.yaml:1: room: is not a known key"},
		{"ttl", "rooms:\n  drop:\n    tokenTtlSeconds: 0.5\n", "r.yaml:3: rooms.drop.tokenTtlSeconds: must be 0 (the default) or between 1 and 86400"},
		{"syntax", "rooms:\n  drop: [\n", "r.yaml: yaml: line 2"},
		{"list value", "rooms:\n  drop:\n    batch: [1]\n", "r.yaml:3: rooms.drop.batch: must be a single value"},
		{"unquoted colour", "rooms:\n  drop:\n    brandAccent: #c2185b\n", "r.yaml:3: rooms.drop.brandAccent: has no value: in YAML a # starts a comment"},
		{"bad colour", "rooms:\n  drop:\n    brandAccent: \"pink\"\n", "r.yaml:3: rooms.drop.brandAccent: must be a colour"},
		{"bad logo", "rooms:\n  drop:\n    brandLogo: javascript:alert(1)\n", "r.yaml:3: rooms.drop.brandLogo: must be an http or https URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("r.yaml", []byte(tc.src))
			var fe *Error
			if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v\nwant prefix %s", err, tc.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Fatal("empty file accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("rooms:\n  drop:\n    batch: 3\n"))
	f.Add([]byte(`{"rooms":{"a":{"message":"x","opensAt":""}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("f", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, r := range file.Rooms() {
			if err := r.Config.Validate(); err != nil {
				t.Fatalf("room %s accepted with %v", r.Name, err)
			}
		}
	})
}

// Values are kept as the settings store them, so a pinned value read back
// from Redis equals the file's: "fifo" is the default method (stored as
// none), times and durations are whole milliseconds.
func TestStoredForm(t *testing.T) {
	f, err := Parse("r.yaml", []byte("rooms:\n  a:\n    method: fifo\n    presence: false\n    awayAfterSeconds: 90.0004\n    dropAfterSeconds: 900\n    opensAt: 2030-01-01T09:00:00.123456789Z\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Room("a")
	c := r.Config
	if c.Method != "" || !c.NoPresence || c.AwayAfter != 90*time.Second || c.DropAfter != 900*time.Second || c.OpensAt.Nanosecond() != 123000000 {
		t.Fatalf("%+v", c)
	}
	if _, err := Parse("r.yaml", []byte("rooms:\n  a:\n    method: lottery\n")); err == nil || !strings.Contains(err.Error(), "r.yaml:3: rooms.a.method") {
		t.Fatalf("bad method: %v", err)
	}
}

// The branding settings read as set; the footer is stored cleaned to the
// allow-list, as the admin API stores it.
func TestBranding(t *testing.T) {
	src := "rooms:\n  drop:\n    brandTitle: Acme Drop\n    brandLogo: https://cdn.example/logo.svg\n    brandAccent: \"#c2185b\"\n" +
		"    brandBackground: \"#fff8e1\"\n    brandFooter: '<p onclick=\"x()\">© Acme <script>alert(1)</script><a href=\"https://acme.example\">Shop</a></p>'\n"
	f, err := Parse("r.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := f.Room("drop")
	c := r.Config
	if c.BrandTitle != "Acme Drop" || c.BrandLogo != "https://cdn.example/logo.svg" || c.BrandAccent != "#c2185b" || c.BrandBackground != "#fff8e1" {
		t.Fatalf("read %+v", c)
	}
	if want := `<p>© Acme <a href="https://acme.example">Shop</a></p>`; c.BrandFooter != want {
		t.Fatalf("footer %q, want %q", c.BrandFooter, want)
	}
	var live settings.Room
	if changed := r.Apply(&live); len(changed) != 5 || live.BrandFooter != c.BrandFooter {
		t.Fatalf("apply: %v %+v", changed, live)
	}
}
