package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// parseRoomConfig reads the reply of HGETALL of a room's settings.
func parseRoomConfig(flat []any) settings.Room {
	pairs := make([]string, len(flat))
	for i, v := range flat {
		pairs[i], _ = v.(string)
	}
	return settings.FromHash(pairs)
}

// RoomConfig reads room's stored settings.
func (q *Queue) RoomConfig(ctx context.Context, room string) (settings.Room, error) {
	if !wire.ValidRoom(room) {
		return settings.Room{}, wire.ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "HGETALL", prefix(room)+"cfg")
	if err != nil {
		return settings.Room{}, fmt.Errorf("queue: room config: %w", err)
	}
	flat, _ := v.([]any)
	return parseRoomConfig(flat), nil
}

// SetRoomConfig replaces room's settings; every instance applies them from
// its next tick, and hubs are told to reconcile the room.
func (q *Queue) SetRoomConfig(ctx context.Context, room string, c settings.Room) error {
	_, err := q.writeRoomConfig(ctx, room, c, "")
	return err
}

// ErrConfigContention is returned by UpdateRoomConfig when other writers
// kept changing the settings under it.
var ErrConfigContention = errors.New("queue: room settings changed by others too often; retry")

// UpdateRoomConfig reads room's settings, applies change and writes the
// result only if nobody changed them in between; otherwise it reads them
// again and applies change to what is there now. So two operators changing
// different fields at once both keep their change.
func (q *Queue) UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error) {
	for range 20 {
		c, err := q.RoomConfig(ctx, room)
		if err != nil {
			return settings.Room{}, err
		}
		if err := change(&c); err != nil {
			return settings.Room{}, err
		}
		ok, err := q.writeRoomConfig(ctx, room, c, strconv.FormatInt(c.Version(), 10))
		if err != nil || ok {
			return c, err
		}
	}
	return settings.Room{}, ErrConfigContention
}

// writeRoomConfig writes c if the stored version is still version ("" =
// any); it reports whether it wrote.
func (q *Queue) writeRoomConfig(ctx context.Context, room string, c settings.Room, version string) (bool, error) {
	if !wire.ValidRoom(room) {
		return false, wire.ErrInvalidRoom
	}
	if err := c.Validate(); err != nil {
		return false, err
	}
	// The draw's commitment exists before anyone can join the pre-queue.
	if !c.OpensAt.IsZero() {
		if err := q.commitDraw(ctx, room); err != nil {
			return false, err
		}
	}
	// So is the lottery's, before any tick draws with it.
	if c.Method == settings.MethodRandom {
		if _, err := q.lottery(ctx, room, "commit"); err != nil {
			return false, err
		}
	}
	args := append([]string{prefix(room), room, q.channel(room), version}, c.Hash()...)
	v, err := q.r.Eval(ctx, setcfgScript.Script, roomKeys(room), args...)
	if err != nil {
		return false, fmt.Errorf("queue: set room config: %w", err)
	}
	if n, _ := asInt(v); n != 1 {
		return false, nil
	}
	// A resume (or any change) is admitted from the next tick here; the
	// other instances look at a paused room once a second (pausedEvery).
	q.settingsChanged(room)
	// A lottery that ended may show its seed; the next gets a new one.
	if c.Method != settings.MethodRandom {
		if _, err := q.lottery(ctx, room, "end"); err != nil {
			return true, err
		}
	}
	if _, err := q.r.Do(ctx, "SADD", configuredRoomsKey, room); err != nil {
		return true, fmt.Errorf("queue: set room config: %w", err)
	}
	// A room that opens later must be in the tick loop's set so that its
	// pre-queue is drawn at opening.
	if _, err := q.r.Do(ctx, "SADD", roomsKey, room); err != nil {
		return true, fmt.Errorf("queue: set room config: %w", err)
	}
	q.poke()
	return true, nil
}

// RoomStats is a snapshot of a room's counters.
type RoomStats struct {
	Waiting       int64
	PreQueue      int64
	ActiveTokens  int64
	AdmittedTotal int64
	SeatsHeld     int64
	Rate          float64 // measured admissions per second (smoothed)
	Priority      int64   // of Waiting and PreQueue, those in the priority band
}

// Stats reads room's counters in one round trip.
func (q *Queue) Stats(ctx context.Context, room string) (RoomStats, error) {
	if !wire.ValidRoom(room) {
		return RoomStats{}, wire.ErrInvalidRoom
	}
	v, err := q.r.Eval(ctx, roomstatsScript.Script, roomKeys(room), prefix(room))
	if err != nil {
		return RoomStats{}, fmt.Errorf("queue: room stats: %w", err)
	}
	return decodeRoomStats(v)
}

// RoomExists reports whether an operator created room (stored settings).
func (q *Queue) RoomExists(ctx context.Context, room string) (bool, error) {
	if !wire.ValidRoom(room) {
		return false, wire.ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "SISMEMBER", configuredRoomsKey, room)
	if err != nil {
		return false, fmt.Errorf("queue: room exists: %w", err)
	}
	n, err := asInt(v)
	return n == 1, err
}

// ConfiguredRooms lists the rooms an operator created.
func (q *Queue) ConfiguredRooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SMEMBERS", configuredRoomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}

// AllRooms lists rooms with waiting visitors or stored settings.
func (q *Queue) AllRooms(ctx context.Context) ([]string, error) {
	v, err := q.r.Do(ctx, "SUNION", roomsKey, configuredRoomsKey)
	if err != nil {
		return nil, fmt.Errorf("queue: rooms: %w", err)
	}
	return validRooms(v), nil
}
