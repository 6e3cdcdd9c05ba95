package queue

import (
	"os"
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
	entries, err := os.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	var visitor []string
	for _, name := range visitorKeyNames {
		visitor = append(visitor, name[:len(name)-1])
	}
	uses := regexp.MustCompile(`\b([KV])\.([a-z]+)`)
	for _, e := range entries {
		src, err := os.ReadFile("scripts/" + e.Name())
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
	entries, err := os.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	known := settings.HashFields()
	uses := regexp.MustCompile(`\bcfg\.([A-Za-z]+)|K\.cfg, '([A-Za-z]+)'`)
	n := 0
	for _, e := range entries {
		src, err := os.ReadFile("scripts/" + e.Name())
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
}

// TestScriptsReadTheSettingsTheyUse: each built script that reads the
// room's settings (load_cfg) asks, in its one HMGET, for every field its
// code reads as cfg.name and for the version, and for nothing else; a
// field it left out would read as unset.
func TestScriptsReadTheSettingsTheyUse(t *testing.T) {
	hmget := regexp.MustCompile(`local f = redis\.call\('HMGET', [^,]+, ([^)]*)\)`)
	n := 0
	for _, s := range []*luaScript{joinScript, joinInvScript, joinAtScript, joinBatchScript, statusScript,
		admitScript, leaveScript, consumeScript, retakeScript, setcfgScript, restoreScript, roomstatsScript,
		reviveScript, seenScript, presenceStatsScript, commitScript, revealScript, lotteryScript,
		tickRoomsScript, endSessionScript} {
		code := luaComment.ReplaceAllString(s.Src, "")
		if strings.Contains(code, "CFG_NAMES") || strings.Contains(code, "CFG_TABLE") {
			t.Errorf("%s: a settings placeholder is left in the built script", s.Name)
		}
		if !strings.Contains(s.Src, "local function load_cfg") {
			continue
		}
		n++
		m := hmget.FindStringSubmatch(s.Src)
		if m == nil {
			t.Errorf("%s: load_cfg reads no HMGET", s.Name)
			continue
		}
		var asked []string
		for _, q := range strings.Split(m[1], ", ") {
			f, err := strconv.Unquote(q)
			if err != nil {
				t.Fatalf("%s: field %s: %v", s.Name, q, err)
			}
			asked = append(asked, f)
		}
		want := []string{settings.VersionHash}
		for _, u := range cfgUse.FindAllStringSubmatch(code, -1) {
			if !slices.Contains(want, u[1]) {
				want = append(want, u[1])
			}
		}
		slices.Sort(asked)
		slices.Sort(want)
		if !slices.Equal(asked, want) {
			t.Errorf("%s: load_cfg asks for %v, its code reads %v", s.Name, asked, want)
		}
	}
	if n < 3 {
		t.Fatalf("only %d scripts read the settings: the list is out of date", n)
	}
}
