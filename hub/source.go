package hub

import (
	"context"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Source is where the hub reads exact visitor state; the queue implements
// it. Every state it returns is the one a status poll would get, so push
// and polling send the same object.
//
// All methods may be called concurrently. Admitted and Estimate are called
// while the hub holds a room lock: they must be cheap and must not call back
// into the hub.
type Source interface {
	// States reads the exact current state of several visitors of a room in
	// one round trip; the result has one State per visitor, in order. The
	// hub calls it with at most Options.ReconcileBatch visitors. It only
	// reads: a visitor its store lost reads as not_in_queue.
	States(ctx context.Context, room string, visitors []string) ([]wire.State, error)
	// Reclaim is the write-back the hub asks for after a read, for the
	// visitors it read as not_in_queue whose connections hold a claim
	// (claims has one entry per visitor, see wire.Claim): the Source gives
	// each what its claim says it held, if its store lost it, and puts the
	// state read again in states, which has one entry per visitor.
	Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error
	// Admitted builds the admitted state (signing the entry token) for an
	// entry of an admission event.
	Admitted(room, visitor string, notBefore, expiresAt time.Time) wire.State
	// Estimate returns what a poll at position in room would be told: the
	// ETA in seconds, the admission rate it assumes (wire.RoundRate; 0 when
	// there is no ETA) and when to ask next.
	Estimate(room string, position int64) (eta int64, rate float64, nextPoll time.Duration)
}

// DrawSource is implemented by a Source whose rooms may admit by lottery:
// a waiting visitor there is in a draw, not at a place, and what it is told
// (the draw's size and its chance) is the room's, not its own.
// DrawEstimate returns what a poll in room's draw would be told now: the
// size, the chance per minute and when to ask next; ok is false when the
// Source knows of no draw there. Called while the hub holds a room lock:
// it must be cheap and must not call back into the hub.
type DrawSource interface {
	DrawEstimate(room string) (size int64, chance float64, nextPoll time.Duration, ok bool)
}

// RangeSource is implemented by a Source that tells waiting visitors the
// span their wait likely falls in (wire.Range) beside the ETA: ETARange at
// a position, DrawRange in a lottery of size. A zero Range is none, and
// goes out as none. Called while the hub holds a room lock: they must be
// cheap and must not call back into the hub.
type RangeSource interface {
	ETARange(room string, position int64) wire.Range
	DrawRange(room string, size int64) wire.Range
}

// keptTicket is a wire.Ticket as a visitor entry keeps it: without the
// room (the entry's own) and with the issue time in Unix ms, as the
// credential carries it: 24 bytes in each entry of a big room instead of
// 56.
type keptTicket struct {
	seq, issuedAt int64
	priority      bool
}

func keepTicket(t wire.Ticket) keptTicket {
	return keptTicket{seq: t.Seq, issuedAt: t.IssuedAt.UnixMilli(), priority: t.Priority}
}

// in is the ticket k stands for in room (zero when k is).
func (k keptTicket) in(room string) wire.Ticket {
	if k.seq == 0 {
		return wire.Ticket{}
	}
	return wire.Ticket{Room: room, Seq: k.seq, IssuedAt: time.UnixMilli(k.issuedAt), Priority: k.priority}
}

// claim is what v's connections in room hold, for Source.Reclaim: nothing
// without a ticket, else the ticket and the admission v was told of, if
// any. Needs the room's lock.
func (v *visitor) claim(room string) wire.Claim {
	if v.ticket.seq == 0 {
		return wire.Claim{}
	}
	c := wire.Claim{Ticket: v.ticket.in(room)}
	if v.st.Status == wire.StatusAdmitted {
		c.NotBefore, c.ExpiresAt = v.st.NotBefore, v.st.ExpiresAt
	}
	return c
}
