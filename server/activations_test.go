package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/wire"
)

// TestActivationsOf: what a visitor's reply says of its room's activation.
// Rooms that are not busy say nothing; the state noted last is told as it
// is, but never passing to a waiting visitor: that reply notes the room
// again, one at a time per room and at most once per renoteAfter, and
// says nothing while it cannot.
func TestActivationsOf(t *testing.T) {
	ctx := context.Background()
	since := time.UnixMilli(1_000_000)
	var (
		a      *activations
		notes  atomic.Int32
		answer = queue.Activation{Queueing: true, Since: since.Add(time.Second)}
		hold   chan struct{}
	)
	a = newActivations(func(ctx context.Context, room string) (queue.Activation, bool) {
		notes.Add(1)
		if hold != nil {
			<-hold
		}
		a.set(room, answer)
		return answer, true
	}, func(room string) bool { return room != "plain" })

	if got := a.of(ctx, "plain", true); !got.IsZero() || notes.Load() != 0 {
		t.Fatalf("a room with activation always: %+v, %d notes", got, notes.Load())
	}
	if got := a.of(ctx, "shop", false); !got.IsZero() || notes.Load() != 0 {
		t.Fatalf("never noted, not waiting: %+v, %d notes", got, notes.Load())
	}
	a.set("shop", queue.Activation{Since: since})
	if got := a.of(ctx, "shop", false); got != (wire.Activation{Since: since}) {
		t.Fatalf("passing, not waiting: %+v", got)
	}

	// A waiting visitor in a room noted passing: noted again, once, while
	// a second reply meanwhile says nothing.
	hold = make(chan struct{})
	done := make(chan wire.Activation)
	go func() { done <- a.of(ctx, "shop", true) }()
	waitfor.Until(t, 5*time.Second, "the first reply noting", func() bool { return notes.Load() == 1 })
	if got := a.of(ctx, "shop", true); !got.IsZero() || notes.Load() != 1 {
		t.Fatalf("a second reply during the note: %+v, %d notes", got, notes.Load())
	}
	close(hold)
	if got := <-done; got != (wire.Activation{Queueing: true, Since: answer.Since}) {
		t.Fatalf("the reply that noted: %+v", got)
	}
	if got := a.of(ctx, "shop", true); got != (wire.Activation{Queueing: true, Since: answer.Since}) || notes.Load() != 1 {
		t.Fatalf("after the note: %+v, %d notes", got, notes.Load())
	}

	// A note that finds nobody waiting (the visitor left meanwhile) is
	// not made again within renoteAfter.
	hold = nil
	answer = queue.Activation{Since: since.Add(2 * time.Second)}
	a.set("other", queue.Activation{Since: since})
	if got := a.of(ctx, "other", true); !got.IsZero() || notes.Load() != 2 {
		t.Fatalf("a note that found passing: %+v, %d notes", got, notes.Load())
	}
	if got := a.of(ctx, "other", true); !got.IsZero() || notes.Load() != 2 {
		t.Fatalf("again at once: %+v, %d notes, want no note", got, notes.Load())
	}
	a.forget("other")
	if got := a.of(ctx, "other", false); !got.IsZero() {
		t.Fatalf("forgotten: %+v", got)
	}
}
