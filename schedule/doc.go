// Package schedule runs a room's scheduled events: each event overrides
// some of the room's settings from its start (or the start of its
// pre-queue) to its end, after which the room returns to the settings it
// had before, exactly.
//
// Events are kept in Redis, beside the room's other keys. Every instance
// runs the same loop (Schedule.Run): each tick it reads the events of the
// rooms that have any, and for every transition that is due (pre-queue,
// start, end) it claims the transition with SET NX on a key naming the
// room, the event, the transition and its time. The one instance whose
// claim wins applies it; the others see the claim and move on. So there
// is no leader, every transition happens within a tick of its time, and
// exactly once. Applying writes the room's settings through the same
// store path the admin API uses, so the scripts, the room caches and the
// hubs see an event's settings as they see any change.
package schedule
