package hub

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Source is where the hub reads exact visitor state; the server implements it
// on top of the queue. Every state it returns is the one a status poll would
// get, so push and polling send the same object.
//
// All methods may be called concurrently. Admitted and Estimate are called
// while the hub holds a room lock: they must be cheap and must not call back
// into the hub.
type Source interface {
	// States reads the exact current state of several visitors of a room in
	// one round trip; the result has one State per visitor, in order. The
	// hub calls it with at most Options.ReconcileBatch visitors.
	States(ctx context.Context, room string, visitors []string) ([]wire.State, error)
	// Admitted builds the admitted state (signing the entry token) for an
	// entry of an admission event.
	Admitted(room, visitor string, notBefore, expiresAt time.Time) wire.State
	// Estimate returns what a poll at position in room would be told: the
	// ETA in seconds and when to ask next.
	Estimate(room string, position int64) (eta int64, nextPoll time.Duration)
}
