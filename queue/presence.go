package queue

import (
	"context"
	"fmt"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
	"time"
)

// Presence defaults and bounds of a room: see package settings.
const (
	DefaultAwayAfter = settings.DefaultAwayAfter
	DefaultDropAfter = settings.DefaultDropAfter
	MinAwayAfter     = settings.MinAwayAfter
)

// Seen records that visitors of room are there now (their push connection
// is open). A hub calls it for its connected visitors in batches; polls
// and joins record the same inside their own scripts. Any of them set
// aside as away is admitted first in the next tick. It returns how soon
// the same visitors need writing again: a third of the room's awayAfter
// (also when presence is off, so a change is noticed).
func (q *Queue) Seen(ctx context.Context, room string, visitors []string) (time.Duration, error) {
	return q.seen(ctx, room, "open", visitors)
}

// Left records that the last push connection of each of visitors closed
// just now: a sign of life, but one after which nobody knows they are
// there. Until another comes (a poll, a join, a connection), a turn that
// comes is not given to them: they are set aside with their ticket and go
// first when they show up, as visitors away do (presence.lua's closed).
// It returns what Seen does.
func (q *Queue) Left(ctx context.Context, room string, visitors []string) (time.Duration, error) {
	return q.seen(ctx, room, "closed", visitors)
}

func (q *Queue) seen(ctx context.Context, room, mode string, visitors []string) (time.Duration, error) {
	if !wire.ValidRoom(room) {
		return 0, wire.ErrInvalidRoom
	}
	args := make([]string, 0, len(visitors)+2)
	args = append(args, prefix(room), mode)
	for _, v := range visitors {
		if !wire.ValidVisitor(v) {
			return 0, visitorsig.ErrInvalidToken
		}
		args = append(args, v)
	}
	v, err := q.r.Eval(ctx, seenScript.Script, roomKeys(room), args...)
	if err != nil {
		return 0, fmt.Errorf("queue: seen: %w", err)
	}
	ms, err := asInt(v)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond / 3, nil
}

// PresenceStats says who of a room is there.
type PresenceStats struct {
	On                 bool
	WaitingPresent     int64 // waiting (queue and back) and seen within awayAfter
	Away               int64 // waiting but unseen for awayAfter, or set aside
	Back               int64 // came back after being set aside: admitted next
	ReclaimedPerMinute int64 // unused tokens taken back early (presence.lua)
	SkippedPerMinute   int64 // visitors set aside when their turn came
	DroppedPerMinute   int64 // places lost after dropAfter
	MadeUpPerMinute    int64 // admissions added to make up tokens taken back
	ReclaimedTotal     int64
	SkippedTotal       int64
	DroppedTotal       int64
	MadeUpTotal        int64
}

// presenceStatsLimit bounds how many unseen visitors one stats read looks
// at; past it, Away is a lower bound.
const presenceStatsLimit = 20000

// Presence reads room's presence counters in one round trip.
func (q *Queue) Presence(ctx context.Context, room string) (PresenceStats, error) {
	if !wire.ValidRoom(room) {
		return PresenceStats{}, wire.ErrInvalidRoom
	}
	v, err := q.r.Eval(ctx, presenceStatsScript.Script, roomKeys(room), prefix(room), fmt.Sprint(presenceStatsLimit))
	if err != nil {
		return PresenceStats{}, fmt.Errorf("queue: presence stats: %w", err)
	}
	return decodePresenceStats(v)
}
