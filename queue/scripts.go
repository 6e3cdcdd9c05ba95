package queue

import (
	"embed"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// prelude is the shared start of every script, in order: the functions
// the scripts have in common.
var prelude = []string{"publish", "draw", "lotlog", "clock", "token", "settings", "random", "opening",
	"seats", "idle", "tickets", "priority", "done", "presence", "method"}

// loadScript joins the shared prelude and the named scripts, in order, into
// one script, keeping of the prelude's functions only those the named
// scripts reach (see prune).
func loadScript(names ...string) *Script {
	return newScript(strings.Join(names, "+"), keysLua+scriptText(names))
}

// scriptText is the pruned prelude and the named scripts, without a header.
func scriptText(names []string) string {
	return withPrelude(scriptBody(names...))
}

// scriptBody is the named scripts, in order.
func scriptBody(names ...string) string {
	var body []byte
	for _, name := range names {
		body = append(append(body, readScript(name)...), '\n')
	}
	return string(body)
}

// withPrelude is body after the prelude's functions that it reaches.
func withPrelude(body string) string {
	var pre []byte
	for _, name := range prelude {
		pre = append(append(pre, readScript(name)...), '\n')
	}
	return cfgReadLua(prune(string(pre), body) + body)
}

// loadNamedKeys is loadScript for a script on the hot path of every
// visitor (join, status, consume): its KEYS are only the keys it names,
// which Script.keys gives, and each K.name or V.name in its text becomes
// the KEYS[i] of that key, so a call neither passes the room's other keys
// nor builds the K and V tables. KEYS[1] is the queue, as for every room
// script. A script that picks a key by a computed name (K[name]) cannot
// be so loaded.
func loadNamedKeys(names ...string) *Script {
	return loadNamedKeysAs(strings.Join(names, "+"), names...)
}

// loadNamedKeysAs is loadNamedKeys for a script run under name (its
// calls' operation label), whatever its parts: the joins keep the names
// they had before joinroom.lua was split from join.lua.
func loadNamedKeysAs(name string, names ...string) *Script {
	src := scriptText(names)
	if computedKey.MatchString(src) {
		panic("queue: script " + name + " picks keys by computed names")
	}
	keyNames := []string{"q"}
	index := map[string]int{"K.q": 1}
	src = keyUse.ReplaceAllStringFunc(src, func(use string) string {
		i, ok := index[use]
		if !ok {
			name := use[2:]
			if use[0] == 'V' {
				name += ":"
			}
			keyNames = append(keyNames, name)
			i = len(keyNames)
			index[use] = i
		}
		return "KEYS[" + strconv.Itoa(i) + "]"
	})
	s := newScript(name, src)
	s.keyNames = keyNames
	return s
}

var (
	// keyUse is a script's use of a room's key (K.name) or a visitor's
	// (V.name).
	keyUse = regexp.MustCompile(`\b[KV]\.[a-z]+\b`)
	// computedKey is a use of K or V by a name computed when it runs.
	computedKey = regexp.MustCompile(`\b[KV]\[`)
)

// keys is the KEYS of a call of s about visitor ("" for none) in room: the
// keys of s.keyNames when loadNamedKeys made s, else visitorKeys (or
// roomKeys, without a visitor).
func (s *Script) keys(room, visitor string) []string {
	if s.keyNames == nil {
		if visitor == "" {
			return roomKeys(room)
		}
		return visitorKeys(room, visitor)
	}
	return keyList(room, visitor, s.keyNames)
}

// keyList is the keys of names in room, in order: the room's prefix and
// the name, then visitor after a name that ends in ':'.
func keyList(room, visitor string, names []string) []string {
	p := prefix(room)
	size := 0
	for _, name := range names {
		size += len(p) + len(name)
		if strings.HasSuffix(name, ":") {
			size += len(visitor)
		}
	}
	return packed(len(names), size, func(i int) (string, string, string) {
		if strings.HasSuffix(names[i], ":") {
			return p, names[i], visitor
		}
		return p, names[i], ""
	})
}

// packed is n strings in one buffer, sliced, so that they cost two
// allocations, not one each: the i-th is the three parts of parts(i), and
// size is their length together.
func packed(n, size int, parts func(i int) (string, string, string)) []string {
	var b strings.Builder
	b.Grow(size)
	ends := make([]int, 0, 64) // on the stack for up to 64
	for i := range n {
		x, y, z := parts(i)
		b.WriteString(x)
		b.WriteString(y)
		b.WriteString(z)
		ends = append(ends, b.Len())
	}
	all := b.String()
	out := make([]string, n)
	start := 0
	for i, end := range ends {
		out[i], start = all[start:end], end
	}
	return out
}

// readScript is the text of the named script.
func readScript(name string) []byte {
	b, err := scriptFS.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return b
}

var (
	joinScript      = loadNamedKeysAs("join", "joinroom", "join")
	joinInvScript   = loadNamedKeysAs("invite+join", "invite", "joinroom", "join") // the join with invite-only rooms' check
	statusScript    = loadNamedKeys("status")
	leaveScript     = loadScript("leave")
	consumeScript   = loadNamedKeys("consume")
	admitScript     = loadScript("admit")
	setcfgScript    = loadScript("setcfg")
	restoreScript   = loadScript("restore")
	roomstatsScript = loadScript("roomstats")
	retakeScript    = loadScript("retake")
	reviveScript    = loadScript("revive")

	seenScript          = loadScript("seen")
	presenceStatsScript = loadScript("presencestats")

	commitScript  = loadScript("commit")
	revealScript  = loadScript("reveal")
	lotteryScript = loadScript("lottery")

	tickRoomsScript = loadScript("tickrooms")
)

// roomKeyNames are the names (after prefix(room)) of the room's keys whose
// names are fixed: every room script that loadScript makes is given all of
// them in KEYS, in this order, so that each key a script touches is
// declared as Redis's scripting contract asks (a script of loadNamedKeys
// is given those it names). "q" comes first: KEYS[1] is the queue.
//
// The keys of one visitor (visitorKeyNames) follow them in the KEYS of a
// script about one visitor known before the call. Where the visitor is
// learnt inside the script (popped from the queue, read from a sorted set,
// one of a batch of any size, or in the shared functions of the prelude
// that serve both kinds of script) the script builds the visitor's keys
// from the room's prefix (ARGV[1]), as it does the key of an invite code
// (inv:, known only to the join that runs invite.lua). Every key built so
// carries the room's hash tag: it is in the room's cluster slot.
var roomKeyNames = []string{
	"q", "cfg", "stats", "seq", "pseq", "pmark", "active", "tick",
	"pre", "ppre", "back", "away", "awayt", "seen", "aseen", "closed", "owed",
	"done", "pdone", "donein", "retook",
	"draw", "drawc", "drawkey", "drawlist", "drawpool",
	"lotc", "lotl", "lotlog",
}

// visitorKeyNames are the names (after prefix(room), before the visitor)
// of one visitor's keys, in the order visitorKeys gives them.
var visitorKeyNames = []string{"t:", "spent:", "gone:", "left:", "dropped:"}

// keysLua starts every script that loadScript makes: K maps each name of
// roomKeyNames to its key in KEYS, and V each name of visitorKeyNames
// (without its colon) to the key that follows them, when the caller passed
// visitorKeys (a script whose KEYS are not a room's, such as tickrooms,
// reads neither). The tables are written out as constructors: Redis runs
// this on every call, and a constructor sizes each table once.
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
// their values from the HMGET's reply f, by name. Every field must be one that
// settings.HashFields declares: a script that reads another panics when
// it is built, so a test finds it.
func cfgReadLua(src string) string {
	if !strings.Contains(src, "CFG_NAMES)") {
		return src
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
			panic("queue: a script reads cfg." + f + ", which settings.HashFields does not declare")
		}
		names[i] = strconv.Quote(f)
		table[i] = f + " = f[" + strconv.Itoa(i+1) + "] or nil" // HMGET gives false for a missing field
	}
	src = strings.Replace(src, "CFG_NAMES)", strings.Join(names, ", ")+")", 1)
	return strings.Replace(src, "return CFG_TABLE", "return {"+strings.Join(table, ", ")+"}", 1)
}

// cfgUse is a script's read of a settings field, cfg.name.
var cfgUse = regexp.MustCompile(`\bcfg\.([A-Za-z_][A-Za-z0-9_]*)`)

// roomKeys is the KEYS of room's scripts: its keys of roomKeyNames, in order.
func roomKeys(room string) []string { return keyList(room, "", roomKeyNames) }

// visitorKeys is the KEYS of a script about visitor in room: roomKeys, then
// the visitor's keys of visitorKeyNames, in order.
func visitorKeys(room, visitor string) []string {
	return keyList(room, visitor, roomAndVisitorKeyNames)
}

// roomAndVisitorKeyNames are the names of visitorKeys' keys.
var roomAndVisitorKeyNames = slices.Concat(roomKeyNames, visitorKeyNames)

// roomsKey is the set of rooms that have waiting visitors (its hash tag
// keeps it in one cluster slot with configuredRoomsKey); every instance's
// tick loop reads it, so admission goes on when the instance that took the
// joins is gone.
const roomsKey = "wr:{rooms}:waiting"

// aliveKey is there while Redis holds what the instances wrote: the tick
// loop writes it after it put back what it remembers, and a Redis that
// comes back without its data lacks it, which the next look at the rooms
// sees whether or not a call failed in between (a restart shorter than
// the time between two looks fails none). Same slot as roomsKey.
const aliveKey = "wr:{rooms}:alive"

// configuredRoomsKey lists rooms that have stored settings.
const configuredRoomsKey = "wr:{rooms}:configured"

// Keys of a room share the prefix "wr:{room}:"; the {room} hash tag keeps
// them in one cluster slot.
func prefix(room string) string   { return "wr:{" + room + "}:" }
func queueKey(room string) string { return prefix(room) + "q" }

// Replies of the join and status scripts for one visitor: a code and two
// numbers whose meaning depends on it.
const (
	replyNotInQueue int64 = 0
	replyWaiting    int64 = 1 // a = 0-based rank
	replyAdmitted   int64 = 2 // a = notBefore, b = expiresAt (Unix ms)
	replyExpired    int64 = 3
	replyPreQueue   int64 = 4 // a = opensAt (Unix ms)
	replyAway       int64 = 5 // the place was lost for being away (expired)
	replyClosed     int64 = 6 // join refused by the room's method (then the message)
)

// Replies of the consume script.
const (
	consumeOK       int64 = 1  // then expiresAt, cap
	consumeUnknown  int64 = -1 // no record for this notBefore: unknown or used
	consumeTooEarly int64 = -2 // then the wait in ms
	consumeExpired  int64 = -3
)

// channel is the channel argument of room's scripts: the room's channel,
// marked for SPUBLISH when the queue publishes sharded (see publish.lua).
func (q *Queue) channel(room string) string {
	if q.opts.Sharded {
		return "!" + wire.Channel(room)
	}
	return wire.Channel(room)
}
