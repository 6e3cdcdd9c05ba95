package queue

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// The hub reads exact state from a Queue: States, with Reclaim (see
// recoverer.go), Admitted, Estimate and DrawEstimate, is the hub's Source
// (and DrawSource).

// States reads the states of visitors of room as StatusMany does, and
// only reads: a visitor Redis no longer knows reads as not_in_queue even
// when its connections hold a claim. Giving it back what it held is the
// caller's explicit next step (Reclaim), never part of a read.
//
// On an error States asks again, backing off, until ctx ends: right after
// pub/sub is back the command connections may still be reconnecting, and
// a reconcile that failed then would leave the room's visitors unread
// (and, after a loss, without their places) until the next periodic one.
func (q *Queue) States(ctx context.Context, room string, visitors []string) (states []wire.State, err error) {
	err = retry(ctx, func() error {
		states, err = q.StatusMany(ctx, room, visitors)
		return err
	})
	return states, err
}

// retry calls f until it succeeds or ctx ends, backing off from 50 ms to
// a second between calls, and returns its last error.
func retry(ctx context.Context, f func() error) error {
	err := f()
	for wait := 50 * time.Millisecond; err != nil && ctx.Err() == nil; wait = min(2*wait, time.Second) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		err = f()
	}
	return err
}
