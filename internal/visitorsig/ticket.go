package visitorsig

import (
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// priorityMark is the credential's fourth ticket field for a ticket of the
// priority band.
const priorityMark = "p"

// TicketCredential signs a visitor id together with its ticket:
// "id.room~seq~issuedAt.sig" (numbers in base 36), with "~p" after
// issuedAt for a ticket of the priority band. A credential without a
// ticket ("id.sig", VisitorCredential) is the same format with no ticket
// part, and stays valid.
func (s *Signer) TicketCredential(id string, t wire.Ticket) string {
	if t.IsZero() || !wire.ValidRoom(t.Room) {
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
func (s *Signer) ParseCredential(credential string) (string, wire.Ticket, error) {
	if len(credential) > 256 {
		return "", wire.Ticket{}, ErrInvalidToken
	}
	i := strings.LastIndexByte(credential, '.')
	if i < 0 {
		return "", wire.Ticket{}, ErrInvalidToken
	}
	body, sig := credential[:i], credential[i+1:]
	id, rest, hasTicket := strings.Cut(body, ".")
	if !wire.ValidVisitor(id) || !s.verify("visitor", body, sig) {
		return "", wire.Ticket{}, ErrInvalidToken
	}
	if !hasTicket {
		return id, wire.Ticket{}, nil
	}
	p := strings.Split(rest, "~")
	prio := len(p) == 4 && p[3] == priorityMark
	if (len(p) != 3 && !prio) || !wire.ValidRoom(p[0]) {
		return "", wire.Ticket{}, ErrInvalidToken
	}
	seq, err1 := strconv.ParseInt(p[1], 36, 64)
	iat, err2 := strconv.ParseInt(p[2], 36, 64)
	if err1 != nil || err2 != nil || seq <= 0 || iat <= 0 {
		return "", wire.Ticket{}, ErrInvalidToken
	}
	return id, wire.Ticket{Room: p[0], Seq: seq, IssuedAt: time.UnixMilli(iat), Priority: prio}, nil
}
