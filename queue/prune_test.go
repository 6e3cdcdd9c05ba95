package queue

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPruneKeepsWhatTheBodyReaches(t *testing.T) {
	prelude := `-- shared
local LIMIT = 3
local SPARE = 4 -- { a bracket in a comment
local flags = {on = false}
local STEP = 2
local LATE = 5
local STARTED = mark()
local WIDE = {
  1,
}
print(STEP)
local function leaf(x) return x + LIMIT end
local function used(x)
  if x then return leaf(x) end
  return 0
end
-- what never runs: goes with it
local function unused(x)
  return used(x)
end
-- a note of the file, above a blank line: kept

local function mentioned() return 1 end
local function toggles() flags.on = LATE end
`
	body := "-- calls mentioned() only in a comment\nreturn used(1)\n"
	got := prune(prelude, body)
	for _, want := range []string{"local LIMIT = 3", "local function leaf(", "local function used(", "  return 0\nend\n", "-- shared",
		"local STEP = 2", "local STARTED = mark()", "local WIDE = {\n  1,\n}\n", "print(STEP)", "a note of the file"} {
		if !strings.Contains(got, want) {
			t.Errorf("pruned prelude lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"unused", "mentioned", "SPARE", "flags", "toggles", "LATE", "never runs"} {
		if strings.Contains(got, gone) {
			t.Errorf("pruned prelude keeps %q:\n%s", gone, got)
		}
	}
}

// TestPrunedScriptsDefineWhatTheyCall: every prelude function a script
// calls is defined in it, before the script's own body.
func TestPrunedScriptsDefineWhatTheyCall(t *testing.T) {
	var all, locals []string
	for _, name := range prelude {
		for _, m := range regexp.MustCompile(`(?m)^local function ([a-z_]+)\(`).FindAllStringSubmatch(readScript(name), -1) {
			all = append(all, m[1])
		}
		for _, m := range regexp.MustCompile(`(?m)^local ([A-Za-z_][A-Za-z0-9_]*) = `).FindAllStringSubmatch(readScript(name), -1) {
			locals = append(locals, m[1])
		}
	}
	if len(locals) < 10 {
		t.Fatalf("the prelude's constants were not found: %v", locals)
	}
	for _, s := range []*luaScript{joinScript, joinInvScript, statusScript, consumeScript, admitScript, retakeScript, leaveScript} {
		code := luaComment.ReplaceAllString(s.Src, "")
		for _, fn := range all {
			if regexp.MustCompile(`\b`+fn+`\(`).MatchString(code) && !strings.Contains(code, "local function "+fn+"(") {
				t.Errorf("%s calls %s, which it does not define", s.Name, fn)
			}
		}
		for _, name := range locals {
			if regexp.MustCompile(`\b`+name+`\b`).MatchString(code) && !strings.Contains(code, "local "+name+" = ") {
				t.Errorf("%s uses %s, which it does not define", s.Name, name)
			}
		}
	}
}

// TestNamedKeys: a script of namedKeysMode (scriptgen_test.go) is given exactly the
// keys it uses and the queue, first, each in the room's slot, and names no key
// through K or V any more.
func TestNamedKeys(t *testing.T) {
	for _, s := range []*luaScript{joinScript, joinInvScript, statusScript, consumeScript} {
		keys := s.keys("r", "v")
		if keys[0] != queueKey("r") {
			t.Errorf("%s: KEYS[1] is %q, want the queue", s.Name, keys[0])
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix("r")) {
				t.Errorf("%s: key %q is not in the room's slot", s.Name, k)
			}
		}
		code := luaComment.ReplaceAllString(s.Src, "")
		if keyUse.MatchString(code) {
			t.Errorf("%s still names a key as %q", s.Name, keyUse.FindString(code))
		}
		used := map[int]bool{}
		for _, m := range regexp.MustCompile(`KEYS\[(\d+)\]`).FindAllStringSubmatch(code, -1) {
			i, _ := strconv.Atoi(m[1])
			used[i] = true
		}
		used[1] = true // the queue, given to every room script
		for i := 1; i <= len(keys); i++ {
			if !used[i] {
				t.Errorf("%s is given %s (KEYS[%d]) and never uses it", s.Name, keys[i-1], i)
			}
		}
		if len(used) != len(keys) {
			t.Errorf("%s uses %d KEYS, is given %d", s.Name, len(used), len(keys))
		}
	}
	if got := consumeScript.keys("r", "v"); !slices.Contains(got, prefix("r")+"t:v") {
		t.Errorf("consume's keys lack the visitor's token record: %v", got)
	}
}
