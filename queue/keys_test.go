package queue

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/settings"
)

// TestScriptKeysAreDeclared: every room key a script names (K.name or
// K[name]) and every visitor key (V.name) is one that roomKeys or
// visitorKeys passes in KEYS, so no script reaches for a key it was not
// given.
func TestScriptKeysAreDeclared(t *testing.T) {
	entries, err := scriptFS.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	var visitor []string
	for _, name := range visitorKeyNames {
		visitor = append(visitor, name[:len(name)-1])
	}
	uses := regexp.MustCompile(`\b([KV])\.([a-z]+)`)
	for _, e := range entries {
		src, err := scriptFS.ReadFile("scripts/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(src), -1) {
			known := roomKeyNames
			if m[1] == "V" {
				known = visitor
			}
			if !slices.Contains(known, m[2]) {
				t.Errorf("%s uses %s.%s, which is not in KEYS", e.Name(), m[1], m[2])
			}
		}
	}
	if got := len(visitorKeys("r", "v")); got != len(roomKeyNames)+len(visitorKeyNames) {
		t.Errorf("visitorKeys gives %d keys, want %d", got, len(roomKeyNames)+len(visitorKeyNames))
	}
	if roomKeys("r")[0] != queueKey("r") {
		t.Errorf("KEYS[1] is %q, want the queue %q", roomKeys("r")[0], queueKey("r"))
	}
}

// TestScriptSettingsAreDeclared: every field of the room's settings hash
// a script reads (cfg.name of load_cfg's table, or HGET of K.cfg) is one
// the settings schema declares, so a script never reads a setting the Go
// side does not write.
func TestScriptSettingsAreDeclared(t *testing.T) {
	entries, err := scriptFS.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	known := settings.HashFields()
	uses := regexp.MustCompile(`\bcfg\.([A-Za-z]+)|K\.cfg, '([A-Za-z]+)'`)
	n := 0
	for _, e := range entries {
		src, err := scriptFS.ReadFile("scripts/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(src), -1) {
			n++
			if f := m[1] + m[2]; !slices.Contains(known, f) {
				t.Errorf("%s reads the setting %q, which the settings schema does not declare", e.Name(), f)
			}
		}
	}
	if n == 0 {
		t.Fatal("no script reads a setting: the pattern is out of date")
	}
	set := make([]string, len(known))
	for i, f := range known {
		set[i] = "[" + strconv.Quote(f) + "] = true"
	}
	if want := "local known = {" + strings.Join(set, ", ") + "}"; !strings.Contains(string(readScript("now")), want) {
		t.Errorf("load_cfg does not keep the settings' fields: want %s in now.lua as built", want)
	}
}
