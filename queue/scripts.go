package queue

import (
	"embed"
	"strings"

	"github.com/waitroom/waitroom/wire"
)

//go:embed scripts/*.lua
var scriptFS embed.FS

// prelude is the shared start of every script, in order: the functions
// the scripts have in common.
var prelude = []string{"publish", "draw", "lotlog", "now", "presence", "method"}

// loadScript joins the shared prelude and the named scripts, in order, into
// one script.
func loadScript(names ...string) *Script {
	var src []byte
	for _, name := range append(append([]string(nil), prelude...), names...) {
		body, err := scriptFS.ReadFile("scripts/" + name + ".lua")
		if err != nil {
			panic(err)
		}
		src = append(append(src, body...), '\n')
	}
	return newScript(strings.Join(names, "+"), string(src))
}

var (
	joinScript      = loadScript("join")
	joinInvScript   = loadScript("invite", "join") // the join with invite-only rooms' check
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
