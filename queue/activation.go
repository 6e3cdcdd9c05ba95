package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// activationScript notes the state of a room with activation busy.
var activationScript = loadScript("activation")

// Activation is the state of a room with activation busy: queueing while
// anyone waits in it, else passing visitors through (PassBusy), and since
// when (Redis time), as every instance agrees.
type Activation struct {
	Queueing bool
	Since    time.Time
	// Changed: the call that returned it saw the state change from the
	// one recorded before (First: it recorded the room's first state).
	Changed, First bool
}

// NoteActivation reads whether anyone waits in room and records the
// state, with the moment it began when it changed: one script, so of
// instances that notice the same change only one sees Changed.
func (q *Queue) NoteActivation(ctx context.Context, room string) (Activation, error) {
	if !wire.ValidRoom(room) {
		return Activation{}, wire.ErrInvalidRoom
	}
	v, err := q.r.Eval(ctx, activationScript.Script, roomKeys(room), prefix(room))
	if err != nil {
		return Activation{}, fmt.Errorf("queue: note activation: %w", err)
	}
	n, err := asInts(v, 3)
	if err != nil {
		return Activation{}, fmt.Errorf("queue: note activation: %w", err)
	}
	return Activation{Queueing: n[0] == 1, Since: time.UnixMilli(n[1]), Changed: n[2] == 1, First: n[2] == 2}, nil
}

// ActivationOf reads the state NoteActivation last recorded for room; ok
// is false when none is recorded.
func (q *Queue) ActivationOf(ctx context.Context, room string) (a Activation, ok bool, err error) {
	if !wire.ValidRoom(room) {
		return Activation{}, false, wire.ErrInvalidRoom
	}
	v, err := q.r.Do(ctx, "HMGET", prefix(room)+"activation", "state", "since")
	if err != nil {
		return Activation{}, false, fmt.Errorf("queue: activation: %w", err)
	}
	f, _ := v.([]any)
	if len(f) != 2 {
		return Activation{}, false, nil
	}
	state, _ := f[0].(string)
	var since int64
	if s, _ := f[1].(string); s != "" {
		if _, err := fmt.Sscan(s, &since); err != nil {
			return Activation{}, false, nil
		}
	}
	if state == "" {
		return Activation{}, false, nil
	}
	return Activation{Queueing: state == "queueing", Since: time.UnixMilli(since)}, true, nil
}
