package queue

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/settings"
)

// The scripts Redis runs are files of lua/, one per script, which
// TestScriptsGenerated writes from the fragments of scripts/ and checks
// are up to date: each is the shared functions it calls (the prelude's,
// pruned) and its own fragments, in order, after a header that names its
// KEYS and ARGV. The queue embeds them and sends them as they are.

var update = flag.Bool("update", false, "rewrite the generated scripts in lua/")

// genCommand rewrites lua/.
const genCommand = "go test ./queue -run TestScriptsGenerated -update"

// prelude is the shared start of every script, in order: the functions
// the scripts have in common. A function may call those of the files
// before its own.
var prelude = []string{"publish", "draw", "lotlog", "clock", "token", "settings", "random", "opening",
	"seats", "idle", "tickets", "priority", "done", "presence", "method"}

// keyMode is how a script is given its keys.
type keyMode int

const (
	// roomKeysMode: every key of roomKeyNames (roomKeys), read through
	// the table K.
	roomKeysMode keyMode = iota
	// visitorKeysMode: visitorKeys, read through K and V.
	visitorKeysMode
	// namedKeysMode, for a script on the hot path of every visitor (join,
	// status, consume): only the keys its text names, the queue first,
	// each K.name or V.name written as its KEYS[i], so that a call neither
	// passes the room's other keys nor builds the K and V tables. A script
	// that picks a key by a computed name (K[name]) cannot be so made.
	namedKeysMode
	// batchKeysMode, for the join batch: the room's keys as namedKeysMode,
	// then each visitor's, whose K.name are KEYS[vo + j].
	batchKeysMode
	// ownKeysMode: keys of no room, given by the caller (scriptSpec.own).
	ownKeysMode
)

// scriptSpec is one script Redis runs.
type scriptSpec struct {
	name  string   // what it runs under (its calls' operation label); its file is lua/<name, '+' as '_'>.lua
	parts []string // its fragments, in order
	keys  keyMode
	own   []string // ownKeysMode: its KEYS, in order
	// each, for the join batch: fragments run per visitor as the body of
	// join_visitor(ARGV, vo), defined before the last part. Their ARGV
	// is the function's, not the script's.
	each []string
}

// scriptSpecs are the scripts Redis runs.
var scriptSpecs = []scriptSpec{
	{name: "join", parts: []string{"joinroom", "join"}, keys: namedKeysMode},
	{name: "invite+join", parts: []string{"invite", "joinroom", "join"}, keys: namedKeysMode},
	{name: "fresh+invite+join", parts: []string{"fresh", "invite", "joinroom", "join"}, keys: namedKeysMode},
	{name: "joinbatch", parts: []string{"fresh", "joinroom", "joinbatch"}, each: []string{"invite", "join"}, keys: batchKeysMode},
	{name: "status", parts: []string{"status"}, keys: namedKeysMode},
	{name: "consume", parts: []string{"consume"}, keys: namedKeysMode},
	{name: "leave", parts: []string{"leave"}, keys: visitorKeysMode},
	{name: "admit", parts: []string{"admit"}, keys: roomKeysMode},
	{name: "setcfg", parts: []string{"setcfg"}, keys: roomKeysMode},
	{name: "restore", parts: []string{"restore"}, keys: visitorKeysMode},
	{name: "roomstats", parts: []string{"roomstats"}, keys: roomKeysMode},
	{name: "retake", parts: []string{"retake"}, keys: roomKeysMode},
	{name: "revive", parts: []string{"revive"}, keys: visitorKeysMode},
	{name: "seen", parts: []string{"seen"}, keys: roomKeysMode},
	{name: "presencestats", parts: []string{"presencestats"}, keys: roomKeysMode},
	{name: "commit", parts: []string{"commit"}, keys: roomKeysMode},
	{name: "reveal", parts: []string{"reveal"}, keys: roomKeysMode},
	{name: "lottery", parts: []string{"lottery"}, keys: roomKeysMode},
	{name: "tickrooms", parts: []string{"tickrooms"}, keys: ownKeysMode, own: []string{roomsKey, aliveKey}},
	{name: "endsession", parts: []string{"endsession"}, keys: visitorKeysMode},
	{name: "busy", parts: []string{"busy"}, keys: visitorKeysMode},
	{name: "activation", parts: []string{"activation"}, keys: roomKeysMode},
}

// TestScriptsGenerated: every file of lua/ is what the generator writes
// now from the fragments, and there is one for each script and no other;
// with -update it rewrites them.
func TestScriptsGenerated(t *testing.T) {
	want := map[string]string{}
	for _, s := range scriptSpecs {
		src, err := generateScript(s)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want[scriptFile(s.name)] = src
	}
	have, err := filepath.Glob(filepath.Join("lua", "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for _, f := range have {
			if _, ok := want[filepath.Base(f)]; !ok {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
		}
		for f, src := range want {
			if err := os.WriteFile(filepath.Join("lua", f), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, f := range have {
		if _, ok := want[filepath.Base(f)]; !ok {
			t.Errorf("%s is no script the generator writes; run %s", f, genCommand)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(want)) {
		b, err := os.ReadFile(filepath.Join("lua", f))
		if err != nil {
			t.Errorf("lua/%s: %v; run %s", f, err, genCommand)
			continue
		}
		if string(b) != want[f] {
			t.Errorf("lua/%s is out of date with scripts/; run %s", f, genCommand)
		}
	}
}

// TestGeneratedScriptsLoaded: the queue runs every generated script
// under its name, as the file says, with the keys its header names.
func TestGeneratedScriptsLoaded(t *testing.T) {
	loaded := map[string]*luaScript{}
	for _, s := range []*luaScript{joinScript, joinInvScript, joinAtScript, joinBatchScript, statusScript,
		admitScript, leaveScript, consumeScript, retakeScript, setcfgScript, restoreScript, roomstatsScript,
		reviveScript, seenScript, presenceStatsScript, commitScript, revealScript, lotteryScript,
		tickRoomsScript, endSessionScript, busyScript, activationScript} {
		loaded[s.Name] = s
	}
	for _, spec := range scriptSpecs {
		s := loaded[spec.name]
		if s == nil {
			t.Errorf("%s: the queue does not load it", spec.name)
			continue
		}
		b, err := os.ReadFile(filepath.Join("lua", scriptFile(spec.name)))
		if err != nil {
			t.Fatal(err)
		}
		if s.Src != string(b) {
			t.Errorf("%s: the queue runs another text than lua/%s", spec.name, scriptFile(spec.name))
		}
		var want []string
		switch spec.keys {
		case roomKeysMode:
			want = roomKeyNames
		case visitorKeysMode:
			want = roomAndVisitorKeyNames
		case ownKeysMode:
			want = nil
		default:
			want = s.keyNames // checked by TestNamedKeys
		}
		if !slices.Equal(s.keyNames, want) {
			t.Errorf("%s: keys %v, want %v", spec.name, s.keyNames, want)
		}
		if spec.keys == batchKeysMode && len(s.visitorNames) == 0 {
			t.Errorf("%s: no keys of each visitor", spec.name)
		}
	}
	if len(loaded) != len(scriptSpecs) {
		t.Errorf("the queue loads %d scripts, the generator writes %d", len(loaded), len(scriptSpecs))
	}
}

// TestGeneratedScriptsNameTheirArgs: a script whose fragments use an ARGV
// entry that no fragment names cannot be generated, nor one whose
// fragments name an entry twice differently.
func TestGeneratedScriptsNameTheirArgs(t *testing.T) {
	for _, tc := range []struct{ name, text, err string }{
		{"undocumented", "-- ARGV[1] = prefix: the prefix\nlocal a = ARGV[1] .. ARGV[2]\n", "ARGV[2]"},
		{"variadic", "-- ARGV[1] = prefix: the prefix\nfor i = 2, #ARGV do end\n", "ARGV[n..]"},
		{"named", "-- ARGV[1] = prefix: the prefix\n-- ARGV[2..] = rest: the rest\nlocal a = ARGV[1]\nfor i = 2, #ARGV do end\n", ""},
	} {
		_, err := argvDocs([]string{tc.text})
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want one that says %q", tc.name, err, tc.err)
		}
	}
	if _, err := argvDocs([]string{"-- ARGV[2] = visitor: one\n", "-- ARGV[2] = code: two\n"}); err == nil {
		t.Error("two names of ARGV[2] were taken")
	}
}

// scriptFile is the file of lua/ that holds the script run as name.
func scriptFile(name string) string { return strings.ReplaceAll(name, "+", "_") + ".lua" }

// readScript is the text of the named fragment of scripts/.
func readScript(name string) string {
	b, err := os.ReadFile(filepath.Join("scripts", name+".lua"))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// generateScript is the text of lua/ for s: its header, then what Redis
// runs.
func generateScript(s scriptSpec) (string, error) {
	var top []string // the fragments whose ARGV are the script's
	var body strings.Builder
	for i, name := range s.parts {
		if i == len(s.parts)-1 && len(s.each) > 0 {
			body.WriteString("local function join_visitor(ARGV, vo)\n")
			for _, e := range s.each {
				body.WriteString(argvDoc.ReplaceAllString(readScript(e), "") + "\n")
			}
			body.WriteString("end\n")
		}
		text := readScript(name)
		top = append(top, text)
		body.WriteString(argvDoc.ReplaceAllString(text, "") + "\n")
	}
	args, err := argvDocs(top)
	if err != nil {
		return "", err
	}
	src, kept, err := withPrelude(body.String())
	if err != nil {
		return "", err
	}
	var keys, eachKeys []string // KEYS as written in the header: the key after KEYS[i] =
	key := func(name string) string {
		if strings.HasSuffix(name, ":") {
			return "wr:{room}:" + name + "<visitor>"
		}
		return "wr:{room}:" + name
	}
	if computedKey.MatchString(src) && (s.keys == namedKeysMode || s.keys == batchKeysMode) {
		return "", fmt.Errorf("it picks keys by computed names")
	}
	switch s.keys {
	case roomKeysMode, visitorKeysMode:
		src = keysLua + src
		names := roomKeyNames
		if s.keys == visitorKeysMode {
			names = roomAndVisitorKeyNames
		}
		for _, n := range names {
			keys = append(keys, key(n))
		}
	case ownKeysMode:
		if keyUse.MatchString(luaComment.ReplaceAllString(src, "")) {
			return "", fmt.Errorf("it names a room's key but is given keys of no room")
		}
		keys = s.own
	case namedKeysMode:
		names := []string{"q"}
		index := map[string]int{"K.q": 1}
		src = keyUse.ReplaceAllStringFunc(src, func(use string) string {
			i, ok := index[use]
			if !ok {
				name := use[2:]
				if use[0] == 'V' {
					name += ":"
				}
				names = append(names, name)
				i = len(names)
				index[use] = i
			}
			return "KEYS[" + strconv.Itoa(i) + "]"
		})
		for _, n := range names {
			keys = append(keys, key(n))
		}
	case batchKeysMode:
		var roomNames, visitorNames []string
		index := map[string]string{}
		for _, use := range keyUse.FindAllString(src, -1) {
			if _, ok := index[use]; ok || use[0] != 'K' || use == "K.q" {
				continue
			}
			roomNames = append(roomNames, use[2:])
			index[use] = ""
		}
		roomNames = append([]string{"q"}, roomNames...)
		for i, name := range roomNames {
			index["K."+name] = "KEYS[" + strconv.Itoa(i+1) + "]"
		}
		for _, use := range keyUse.FindAllString(src, -1) {
			if _, ok := index[use]; ok {
				continue
			}
			visitorNames = append(visitorNames, use[2:]+":")
			index[use] = "KEYS[vo + " + strconv.Itoa(len(visitorNames)) + "]"
		}
		src = keyUse.ReplaceAllStringFunc(src, func(use string) string { return index[use] })
		src = fmt.Sprintf("local NK, NV = %d, %d\n", len(roomNames), len(visitorNames)) + src
		for _, n := range roomNames {
			keys = append(keys, key(n))
		}
		for _, n := range visitorNames {
			eachKeys = append(eachKeys, key(n))
		}
	}
	src = blankLines.ReplaceAllString(src, "\n\n")

	var h strings.Builder
	var from []string
	for i, name := range s.parts {
		if i == len(s.parts)-1 && len(s.each) > 0 {
			var each []string
			for _, e := range s.each {
				each = append(each, "scripts/"+e+".lua")
			}
			from = append(from, joinWords(each)+" as the body of join_visitor (run for each visitor)")
		}
		from = append(from, "scripts/"+name+".lua")
	}
	intro := s.name + ": what Redis runs, byte for byte (EVALSHA sends the SHA-1 of this file). Generated from " + joinWords(from)
	if len(kept) > 0 {
		var ks []string
		for _, k := range kept {
			ks = append(ks, "scripts/"+k+".lua")
		}
		they := "they call"
		if len(from) == 1 {
			they = "it calls"
		}
		intro += ", after the functions " + they + " of the prelude: those of " + joinWords(ks)
	}
	writeWrapped(&h, intro+", by")
	h.WriteString("--   " + genCommand + "\n-- Edit those files, not this one.\n")
	h.WriteString("--\n")
	for i, k := range keys {
		fmt.Fprintf(&h, "-- KEYS[%d] = %s\n", i+1, k)
	}
	if len(eachKeys) > 0 {
		writeWrapped(&h, fmt.Sprintf("Then NV = %d keys of each visitor of ARGV[%d..], in order: visitor i's "+
			"are KEYS[vo + 1 .. vo + NV], vo = NK + (i - 1) * NV, NK = %d.", len(eachKeys), variadicFrom(args), len(keys)))
		for j, k := range eachKeys {
			fmt.Fprintf(&h, "-- KEYS[vo + %d] = %s\n", j+1, k)
		}
	}
	if len(args) > 0 {
		h.WriteString("--\n")
	}
	for _, a := range args {
		h.WriteString(a.line + "\n")
	}
	return h.String() + "\n" + src, nil
}

// variadicFrom is the first ARGV index of the entries any number of
// which follow, 0 when none.
func variadicFrom(args []argDoc) int {
	for _, a := range args {
		if a.tail {
			return a.i
		}
	}
	return 0
}

// joinWords is words as a list in a sentence: "a, b and c".
func joinWords(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// writeWrapped writes text as comment lines of at most about 78 characters.
func writeWrapped(b *strings.Builder, text string) {
	line := "--"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 78 && line != "--" {
			b.WriteString(line + "\n")
			line = "--"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}

// argDoc is a fragment's line that names an ARGV entry: "-- ARGV[i] =
// name: words", or "-- ARGV[i..] = name: words" for the entries, any
// number of them, from i on.
type argDoc struct {
	i          int
	tail       bool
	name, line string
}

var (
	// argvDoc is a fragment's line that names an ARGV entry (argDoc).
	argvDoc = regexp.MustCompile(`(?m)^-- ARGV\[(\d+)(\.\.)?\] = ([A-Za-z]+): .*\n`)
	// argvDocLike is a line that starts as argvDoc does.
	argvDocLike = regexp.MustCompile(`(?m)^-- ARGV\[.*\n`)
	// argvIndex is a use of one ARGV entry by its number.
	argvIndex = regexp.MustCompile(`\bARGV\[(\d+)\]`)
	// argvAny is any use of ARGV.
	argvAny = regexp.MustCompile(`\bARGV\b`)
	// blankLines is more than one blank line.
	blankLines = regexp.MustCompile(`\n{3,}`)
)

// argvDocs is the ARGV entries that texts, a script's fragments, name, by
// index: an error when their code uses an entry none names, or two name
// one differently.
func argvDocs(texts []string) ([]argDoc, error) {
	byIndex := map[int]argDoc{}
	for _, text := range texts {
		if n := len(argvDocLike.FindAllString(text, -1)); n != len(argvDoc.FindAllString(text, -1)) {
			return nil, fmt.Errorf("a line names an ARGV entry other than as \"-- ARGV[i] = name: what\": %q", argvDocLike.FindAllString(text, -1))
		}
		for _, m := range argvDoc.FindAllStringSubmatch(text, -1) {
			i, _ := strconv.Atoi(m[1])
			d := argDoc{i: i, tail: m[2] != "", name: m[3], line: strings.TrimSuffix(m[0], "\n")}
			if old, ok := byIndex[i]; ok {
				if old.name != d.name || old.tail != d.tail {
					return nil, fmt.Errorf("ARGV[%d] is named both %q and %q", i, old.name, d.name)
				}
				continue
			}
			byIndex[i] = d
		}
	}
	var docs []argDoc
	for _, d := range byIndex {
		docs = append(docs, d)
	}
	sort.Slice(docs, func(a, b int) bool { return docs[a].i < docs[b].i })
	tail := 0
	for _, d := range docs {
		if d.tail {
			if tail != 0 {
				return nil, fmt.Errorf("two ARGV[n..] entries")
			}
			tail = d.i
		} else if tail != 0 {
			return nil, fmt.Errorf("ARGV[%d] is named after ARGV[%d..]", d.i, tail)
		}
	}
	for _, text := range texts {
		code := luaComment.ReplaceAllString(text, "")
		for _, m := range argvIndex.FindAllStringSubmatch(code, -1) {
			i, _ := strconv.Atoi(m[1])
			if _, ok := byIndex[i]; !ok && (tail == 0 || i < tail) {
				return nil, fmt.Errorf("ARGV[%d] is used and named by no line \"-- ARGV[%d] = name: what\"", i, i)
			}
		}
		if tail == 0 && len(argvAny.FindAllString(code, -1)) > len(argvIndex.FindAllString(code, -1)) {
			return nil, fmt.Errorf("ARGV is used past its named entries and no line \"-- ARGV[n..] = name: what\" names them")
		}
	}
	return docs, nil
}

// withPrelude is body after the prelude's functions that it reaches, with
// the settings fields it reads written in (cfgReadLua), and the prelude's
// files that gave some of them.
func withPrelude(body string) (string, []string, error) {
	var pre strings.Builder
	for _, name := range prelude {
		text := readScript(name)
		if argvAny.MatchString(luaComment.ReplaceAllString(text, "")) {
			return "", nil, fmt.Errorf("scripts/%s.lua, of the prelude, reads ARGV", name)
		}
		pre.WriteString(text + "\n")
	}
	pruned := prune(pre.String(), body)
	var kept []string
	for _, name := range prelude {
		for _, m := range preludeDef.FindAllStringSubmatch(readScript(name), -1) {
			if regexp.MustCompile(`(?m)^local (function )?` + m[2] + `\b`).MatchString(pruned) {
				kept = append(kept, name)
				break
			}
		}
	}
	// Again with only the files that gave something, so that the others'
	// opening comments are left out too.
	pre.Reset()
	for _, name := range kept {
		pre.WriteString(readScript(name) + "\n")
	}
	src, err := cfgReadLua(prune(pre.String(), body) + body)
	return src, kept, err
}

// preludeDef is a function or value a prelude file defines.
var preludeDef = regexp.MustCompile(`(?m)^local (function )?([A-Za-z_][A-Za-z0-9_]*)`)

var (
	// keyUse is a script's use of a room's key (K.name) or a visitor's
	// (V.name).
	keyUse = regexp.MustCompile(`\b[KV]\.[a-z]+\b`)
	// computedKey is a use of K or V by a name computed when it runs.
	computedKey = regexp.MustCompile(`\b[KV]\[`)
)

// keysLua starts every script of roomKeysMode and visitorKeysMode: K maps
// each name of roomKeyNames to its key in KEYS, and V each name of
// visitorKeyNames (without its colon) to the key that follows them, when
// the caller passed visitorKeys. The tables are written out as
// constructors: Redis runs this on every call, and a constructor sizes
// each table once.
var keysLua = func() string {
	var b strings.Builder
	b.WriteString("local K = {")
	for i, name := range roomKeyNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name + " = KEYS[" + strconv.Itoa(i+1) + "]")
	}
	b.WriteString("}\nlocal V = {")
	for i, name := range visitorKeyNames {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimSuffix(name, ":") + " = KEYS[" + strconv.Itoa(len(roomKeyNames)+i+1) + "]")
	}
	b.WriteString("}\n")
	return b.String()
}()

// cfgReadLua writes into src, a whole script, the settings fields its
// load_cfg reads: CFG_NAMES becomes the version's field first (load_cfg
// tells a room nobody configured by its absence), then the fields its
// code reads as cfg.name, quoted, and CFG_TABLE the table constructor of
// their values from the HMGET's reply f, by name. Every field must be one
// that settings.HashFields declares: a script that reads another is an
// error, so the generator stops.
func cfgReadLua(src string) (string, error) {
	if !strings.Contains(src, "CFG_NAMES)") {
		return src, nil
	}
	fields := []string{settings.VersionHash}
	for _, m := range cfgUse.FindAllStringSubmatch(luaComment.ReplaceAllString(src, ""), -1) {
		if !slices.Contains(fields, m[1]) {
			fields = append(fields, m[1])
		}
	}
	known := settings.HashFields()
	names := make([]string, len(fields))
	table := make([]string, len(fields))
	for i, f := range fields {
		if !slices.Contains(known, f) {
			return "", fmt.Errorf("it reads cfg.%s, which settings.HashFields does not declare", f)
		}
		names[i] = strconv.Quote(f)
		table[i] = f + " = f[" + strconv.Itoa(i+1) + "] or nil" // HMGET gives false for a missing field
	}
	src = strings.Replace(src, "CFG_NAMES)", strings.Join(names, ", ")+")", 1)
	return strings.Replace(src, "return CFG_TABLE", "return {"+strings.Join(table, ", ")+"}", 1), nil
}

// cfgUse is a script's read of a settings field, cfg.name.
var cfgUse = regexp.MustCompile(`\bcfg\.([A-Za-z_][A-Za-z0-9_]*)`)

// prune returns the prelude without the functions that body does not
// reach, directly or through other functions of the prelude. Redis runs a
// script's whole chunk on every call, so each function defined is a
// closure made (and collected) per call: a few hundred nanoseconds of the
// room's one Redis core each, for nothing when the script never calls it.
//
// The prelude's files keep to one layout, which this relies on: a function
// starts with "local function name(" at the start of a line and ends on
// that line when it ends with " end", else at the next line that is
// exactly "end" (the functions' bodies are indented). A one-line
// "local NAME = value" (a constant, or a table the functions share) that
// calls nothing is pruned the same way: a table constructed on every call is an allocation
// for nothing where no function kept uses it. Everything else at the top
// level (comments, statements, a value over several lines) is kept as it
// is, and what it names is kept too, except the comment lines right above
// a function or such a value (no blank line between), which go with it.
// A name that only appears in a string keeps its function: pruning errs
// on keeping (names in comments are not looked at).
func prune(prelude, body string) string {
	type fn struct {
		name, text string
		keep       bool
	}
	var parts []*fn // name "" is text kept as it is
	lines := strings.SplitAfter(prelude, "\n")
	work := []string{body} // text whose names are kept
	comment := ""          // the comment lines above the line at hand
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "--") {
			comment += lines[i]
			continue
		}
		name, ok := strings.CutPrefix(lines[i], "local function ")
		if !ok {
			if m := luaLocal.FindStringSubmatch(lines[i]); m != nil && plainValue(m[2]) {
				parts = append(parts, &fn{name: m[1], text: comment + lines[i]})
				comment = ""
				continue
			}
			parts = append(parts, &fn{text: comment + lines[i], keep: true})
			work = append(work, lines[i])
			comment = ""
			continue
		}
		name, _, _ = strings.Cut(name, "(")
		start := i
		if !strings.HasSuffix(strings.TrimRight(lines[i], "\n"), " end") {
			for i < len(lines)-1 && strings.TrimRight(lines[i], "\n") != "end" {
				i++
			}
		}
		parts = append(parts, &fn{name: name, text: comment + strings.Join(lines[start:i+1], "")})
		comment = ""
	}
	if comment != "" {
		parts = append(parts, &fn{text: comment, keep: true})
	}
	// Mark from the body and the statements kept, then from each part
	// newly kept, until nothing more is reached.
	for len(work) > 0 {
		used := map[string]bool{}
		for _, id := range luaIdent.FindAllString(luaComment.ReplaceAllString(work[0], ""), -1) {
			used[id] = true
		}
		work = work[1:]
		for _, p := range parts {
			if p.name != "" && !p.keep && used[p.name] {
				p.keep = true
				work = append(work, p.text)
			}
		}
	}
	var b strings.Builder
	for _, p := range parts {
		if p.keep {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// plainValue reports whether value, with its comment cut, calls nothing
// (a call may do something even when its result is unused) and closes
// every bracket it opens (one that does not goes on to the next lines).
func plainValue(value string) bool {
	depth := 0
	for _, c := range luaComment.ReplaceAllString(value, "") {
		switch c {
		case '(':
			return false
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return depth == 0
}

var (
	luaIdent = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	// luaLocal is a top-level "local NAME = value" of one name.
	luaLocal = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*) = ([^\n]*)\n?$`)
	// luaComment is a comment to the end of the line; the scripts put no
	// "--" inside a string.
	luaComment = regexp.MustCompile(`--[^\n]*`)
)

// TestHeaderKeys: the queue gives a script the keys its header names, in
// order, the visitor's after their name, and each visitor's of a batch
// apart; a header whose KEYS are out of order stops it.
func TestHeaderKeys(t *testing.T) {
	src := "-- x: a script\n--\n-- KEYS[1] = wr:{room}:q\n-- KEYS[2] = wr:{room}:t:<visitor>\n" +
		"-- KEYS[vo + 1] = wr:{room}:dropped:<visitor>\n-- ARGV[1] = prefix: p\n\n-- KEYS[3] = wr:{room}:not-header\nreturn 1\n"
	names, each := headerKeys("x", src)
	if !slices.Equal(names, []string{"q", "t:"}) || !slices.Equal(each, []string{"dropped:"}) {
		t.Fatalf("keys %v, each visitor's %v", names, each)
	}
	if got := keyList("r", "v", names); !slices.Equal(got, []string{"wr:{r}:q", "wr:{r}:t:v"}) {
		t.Errorf("a call's keys %v", got)
	}
	for _, bad := range []string{"-- KEYS[2] = wr:{room}:q\n", "-- KEYS[1] = wr:{room}:t:\n"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("header %q was taken", bad)
				}
			}()
			headerKeys("bad", bad)
		}()
	}
}
