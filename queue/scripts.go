package queue

import (
	"embed"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/wire"
)

// The scripts Redis runs, one file of lua/ each, as they are: TestScriptsGenerated
// writes them from the fragments of scripts/ (go test ./queue -run
// TestScriptsGenerated -update) and fails when one is out of date.
//
//go:embed lua/*.lua
var luaFS embed.FS

// loadScript is the script run as name, from its file of lua/ (the name
// with '_' for '+'), given the keys its header names (headerKeys).
func loadScript(name string) *luaScript {
	src, err := luaFS.ReadFile("lua/" + strings.ReplaceAll(name, "+", "_") + ".lua")
	if err != nil {
		panic(err)
	}
	scriptNames = append(scriptNames, name)
	s := &luaScript{Script: rediscall.NewScript(name, string(src))}
	s.keyNames, s.visitorNames = headerKeys(name, string(src))
	return s
}

// headerKeys reads the KEYS of a generated script from its header: the
// names (after the room's prefix) of "KEYS[i] = wr:{room}:name", a name
// that ends in ':' followed by the visitor, and those of "KEYS[vo + j] =
// …", the keys of each visitor of a batch. A script whose KEYS are not a
// room's (tickrooms) has none: its caller passes them.
func headerKeys(script, src string) (names, each []string) {
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "--") {
			break
		}
		m := headerKey.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			continue
		}
		list := &names
		if m[1] != "" {
			list = &each
		}
		if m[2] != strconv.Itoa(len(*list)+1) || strings.HasSuffix(m[3], ":") != (m[4] != "") {
			panic("queue: the header of script " + script + " has " + line)
		}
		*list = append(*list, m[3])
	}
	return names, each
}

// headerKey is a line of a generated script's header that names a key of
// the room: KEYS[i] or, for each visitor of a batch, KEYS[vo + j].
var headerKey = regexp.MustCompile(`^-- KEYS\[(vo \+ )?(\d+)\] = wr:\{room\}:([a-z]+:?)(<visitor>)?$`)

// keys is the KEYS of a call of s about visitor ("" for none) in room:
// the keys its header names.
func (s *luaScript) keys(room, visitor string) []string {
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

var (
	joinScript      = loadScript("join")
	joinInvScript   = loadScript("invite+join") // the join with invite-only rooms' check
	statusScript    = loadScript("status")
	leaveScript     = loadScript("leave")
	consumeScript   = loadScript("consume")
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
// names are fixed: most room scripts are given all of them in KEYS, in
// this order, so that each key a script touches is declared as Redis's
// scripting contract asks (those on the hot path of every visitor, join,
// status and consume, are given the keys they name: see the header of
// each file of lua/). "q" comes first: KEYS[1] is the queue.
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
