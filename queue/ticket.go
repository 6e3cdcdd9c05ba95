package queue

import (
	"strconv"
	"strings"
	"time"
)

// Ticket is a visitor's place in a room as the credential carries it: the
// sequence number that is its score in the queue, and when it was taken
// (Redis time). Signed with the visitor id, it lets a visitor whose place
// Redis lost take the very same place again (see Retake).
type Ticket struct {
	Room     string
	Seq      int64
	IssuedAt time.Time
	// Priority marks a ticket of the priority band (taken with a priority
	// code): its Seq counts in that band, ahead of every public ticket.
	Priority bool
}

// priorityMark is the credential's fourth ticket field for a ticket of the
// priority band.
const priorityMark = "p"

// IsZero reports whether t carries no ticket.
func (t Ticket) IsZero() bool { return t.Seq == 0 }

// TicketCredential signs a visitor id together with its ticket:
// "id.room~seq~issuedAt.sig" (numbers in base 36), with "~p" after
// issuedAt for a ticket of the priority band. A credential without a
// ticket ("id.sig", VisitorCredential) is the same format with no ticket
// part, and stays valid.
func (s *Signer) TicketCredential(id string, t Ticket) string {
	if t.IsZero() || !ValidRoom(t.Room) {
		return s.VisitorCredential(id)
	}
	body := id + "." + t.Room + "~" + strconv.FormatInt(t.Seq, 36) + "~" + strconv.FormatInt(t.IssuedAt.UnixMilli(), 36)
	if t.Priority {
		body += "~" + priorityMark
	}
	return body + "." + s.sig("visitor", body)
}

// ParseCredential returns the visitor id of a credential this deployment
// issued, and the ticket it carries (zero when it carries none).
func (s *Signer) ParseCredential(credential string) (string, Ticket, error) {
	if len(credential) > 256 {
		return "", Ticket{}, ErrInvalidToken
	}
	i := strings.LastIndexByte(credential, '.')
	if i < 0 {
		return "", Ticket{}, ErrInvalidToken
	}
	body, sig := credential[:i], credential[i+1:]
	id, rest, hasTicket := strings.Cut(body, ".")
	if !ValidVisitor(id) || !s.verify("visitor", body, sig) {
		return "", Ticket{}, ErrInvalidToken
	}
	if !hasTicket {
		return id, Ticket{}, nil
	}
	p := strings.Split(rest, "~")
	prio := len(p) == 4 && p[3] == priorityMark
	if (len(p) != 3 && !prio) || !ValidRoom(p[0]) {
		return "", Ticket{}, ErrInvalidToken
	}
	seq, err1 := strconv.ParseInt(p[1], 36, 64)
	iat, err2 := strconv.ParseInt(p[2], 36, 64)
	if err1 != nil || err2 != nil || seq <= 0 || iat <= 0 {
		return "", Ticket{}, ErrInvalidToken
	}
	return id, Ticket{Room: p[0], Seq: seq, IssuedAt: time.UnixMilli(iat), Priority: prio}, nil
}
