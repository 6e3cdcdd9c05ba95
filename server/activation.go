package main

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// renoteAfter is how long after a waiting visitor's reply noted a room's
// activation state out of turn another may do so.
const renoteAfter = time.Second

// activations keeps, for the visitors' replies, whether each room with
// activation busy is queueing or letting visitors straight through, and
// since when, as this instance last noted it (housekeeping notes every
// such room every 2 s).
type activations struct {
	// note records room's state in the store and returns it (the
	// server's noticeActivation, which also sets the series and sends the
	// webhook when the state changed); ok is false when it could not.
	note func(ctx context.Context, room string) (queue.Activation, bool)
	// busy reports whether room's settings in memory say activation busy.
	busy func(room string) bool

	mu      sync.Mutex
	known   map[string]wire.Activation
	noting  map[string]bool
	renoted map[string]time.Time // when a reply last noted the room out of turn
}

func newActivations(note func(ctx context.Context, room string) (queue.Activation, bool), busy func(room string) bool) *activations {
	return &activations{note: note, busy: busy, known: map[string]wire.Activation{},
		noting: map[string]bool{}, renoted: map[string]time.Time{}}
}

// set keeps a as room's state, noted now.
func (a *activations) set(room string, act queue.Activation) {
	a.mu.Lock()
	a.known[room] = wire.Activation{Queueing: act.Queueing, Since: act.Since}
	a.mu.Unlock()
}

// forget drops room's state (its activation is no longer busy).
func (a *activations) forget(room string) {
	a.mu.Lock()
	delete(a.known, room)
	delete(a.renoted, room)
	a.mu.Unlock()
}

// of is what a reply to a visitor of room says of the room's activation
// (the zero Activation: nothing). A waiting visitor is proof that the room
// queues: when the state noted last says otherwise (the room began
// queueing since, or was never noted), it is noted again at once, by one
// reply at a time per room and at most once per renoteAfter; the replies
// meanwhile say nothing rather than something untrue.
func (a *activations) of(ctx context.Context, room string, waiting bool) wire.Activation {
	if !a.busy(room) {
		return wire.Activation{}
	}
	a.mu.Lock()
	n, ok := a.known[room]
	if ok && (n.Queueing || !waiting) {
		a.mu.Unlock()
		return n
	}
	if !waiting || a.noting[room] || time.Since(a.renoted[room]) < renoteAfter {
		a.mu.Unlock()
		return wire.Activation{}
	}
	a.noting[room], a.renoted[room] = true, time.Now()
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.noting, room)
		a.mu.Unlock()
	}()
	act, ok := a.note(ctx, room)
	if !ok || !act.Queueing {
		return wire.Activation{}
	}
	return wire.Activation{Queueing: true, Since: act.Since}
}

// with is st with room's activation, as of tells it.
func (a *activations) with(ctx context.Context, room string, st wire.State) wire.State {
	if st.Status == wire.StatusClosed {
		return st
	}
	st.Activation = a.of(ctx, room, st.Status == wire.StatusWaiting)
	return st
}
