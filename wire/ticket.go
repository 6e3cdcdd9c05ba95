package wire

import "time"

// Ticket is a visitor's place in a room as its credential carries it: the
// sequence number that is its score in the queue, and when it was taken
// (Redis time). Signed with the visitor id, it lets a visitor whose place
// Redis lost take the very same place again; the hub keeps the ticket of
// each visitor it has a push connection of for that.
type Ticket struct {
	Room     string
	Seq      int64
	IssuedAt time.Time
	// Priority marks a ticket of the priority band (taken with a priority
	// code): its Seq counts in that band, ahead of every public ticket.
	Priority bool
}

// IsZero reports whether t carries no ticket.
func (t Ticket) IsZero() bool { return t.Seq == 0 }

// Newer reports whether t is a newer ticket than o: issued later, or a
// higher Seq of the same band (a rejoin after an admission takes a newer
// ticket).
func (t Ticket) Newer(o Ticket) bool {
	return t.IssuedAt.After(o.IssuedAt) || (t.Priority == o.Priority && t.Seq > o.Seq)
}

// Claim is what a visitor's connections hold that a Redis which lost its
// data may no longer know: the ticket their credential carries and the
// admission they were told of. The hub hands its Source one per visitor
// it asks about, so that a lost place or admission is given back before
// the visitor hears not_in_queue.
type Claim struct {
	Ticket Ticket
	// NotBefore and ExpiresAt are those of the entry token the visitor
	// was told of; zero when it was told of no admission.
	NotBefore, ExpiresAt time.Time
}

// IsZero reports whether c claims nothing.
func (c Claim) IsZero() bool { return c.Ticket.IsZero() && c.ExpiresAt.IsZero() }
