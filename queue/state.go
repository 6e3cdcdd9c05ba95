package queue

import (
	"strconv"
	"time"
)

// Status is where a visitor stands in a room.
type Status string

// The statuses of the HTTP contract.
const (
	StatusWaiting    Status = "waiting"
	StatusAdmitted   Status = "admitted"
	StatusExpired    Status = "expired"
	StatusNotInQueue Status = "not_in_queue"
	StatusSoldOut    Status = "sold_out"
)

// State is the one message every transport sends: the body of join and
// status, and every pushed message.
type State struct {
	Room       string
	Status     Status
	Position   int64 // 1-based, waiting only
	ETASeconds int64
	NextPoll   time.Duration
	Paused     bool
	Token      string // admitted only
	NotBefore  time.Time
	ExpiresAt  time.Time
	OpensAt    time.Time // in the pre-queue of a room that has not opened yet
}

// AppendJSON appends the state's JSON encoding to b.
func (s State) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":"state","room":`...)
	b = strconv.AppendQuote(b, s.Room)
	b = append(b, `,"status":"`...)
	b = append(b, s.Status...)
	b = append(b, '"')
	if s.Status == StatusWaiting && !s.OpensAt.IsZero() {
		b = append(b, `,"opensAt":"`...)
		b = s.OpensAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	} else if s.Status == StatusWaiting {
		b = append(b, `,"position":`...)
		b = strconv.AppendInt(b, s.Position, 10)
		b = append(b, `,"etaSeconds":`...)
		b = strconv.AppendInt(b, s.ETASeconds, 10)
	}
	if s.NextPoll > 0 {
		b = append(b, `,"nextPollMs":`...)
		b = strconv.AppendInt(b, s.NextPoll.Milliseconds(), 10)
	}
	b = append(b, `,"paused":`...)
	b = strconv.AppendBool(b, s.Paused)
	if s.Status == StatusAdmitted {
		b = append(b, `,"token":`...)
		b = strconv.AppendQuote(b, s.Token)
		b = append(b, `,"notBefore":"`...)
		b = s.NotBefore.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","expiresAt":"`...)
		b = s.ExpiresAt.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler.
func (s State) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }
