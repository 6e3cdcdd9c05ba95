package hub

import (
	"context"
	"time"
)

// Visitor statuses, as sent in the status field of a state message.
const (
	StatusWaiting    = "waiting"
	StatusAdmitted   = "admitted"
	StatusExpired    = "expired"
	StatusNotInQueue = "not_in_queue"
	StatusSoldOut    = "sold_out"
)

// State is one visitor's state in a room, the content of a state message:
//
//	{"type":"state","room":"drop","status":"waiting","position":1234,"etaSeconds":9,"nextPollMs":0,"paused":false}
//
// Position and ETASeconds are sent only when Status is waiting; Token,
// NotBefore and ExpiresAt only when it is admitted.
type State struct {
	Status     string
	Position   int64
	ETASeconds int64
	Paused     bool
	Token      string
	NotBefore  time.Time
	ExpiresAt  time.Time
}

// Source is where the hub reads exact visitor state; the server implements it
// on top of the queue.
//
// All methods may be called concurrently. Admitted and ETA are called while
// the hub holds a room lock: they must be cheap and must not call back into
// the hub.
type Source interface {
	// States reads the exact current state of several visitors of a room in
	// one round trip; the result has one State per visitor, in order. The
	// hub calls it with at most Options.ReconcileBatch visitors.
	States(ctx context.Context, room string, visitors []string) ([]State, error)
	// Admitted builds the admitted state (signing the entry token) for an
	// entry of an admission event.
	Admitted(room, visitor string, notBefore, expiresAt time.Time) State
	// ETA returns the estimated wait in seconds for a position in room.
	ETA(room string, position int64) int64
}
