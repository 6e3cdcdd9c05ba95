package push

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/wire"
)

// A connect ticket stands in for the visitor credential on the URL of a
// WebSocket or an EventSource, which cannot send headers: the page mints
// one with a POST (credential in the cookie or X-Visitor) right before it
// connects, and the ticket is good for one connection, in one room, within
// TicketTTL. What lands in a proxy's access log is then useless a minute
// later, where the credential itself would hold the visitor's place for
// days.
const TicketTTL = time.Minute

// Nonces remembers which tickets were used, across instances.
type Nonces interface {
	// Claim marks the nonce of a ticket for room as used for ttl, and
	// reports false when it was used already.
	Claim(ctx context.Context, room, nonce string, ttl time.Duration) (bool, error)
}

// Tickets mints and redeems connect tickets. Safe for concurrent use.
type Tickets struct {
	key  []byte
	used Nonces
}

// NewTickets returns the tickets signed with a key derived from secret
// (so a ticket can never pass for a credential or a token), whose use is
// remembered by used.
func NewTickets(secret []byte, used Nonces) *Tickets {
	return &Tickets{key: ticketKey(secret), used: used}
}

var (
	errInvalidTicket = httperr.New(401, "invalid_ticket", "the connect ticket is malformed, forged or for another room")
	errTicketExpired = httperr.New(401, "ticket_expired", "the connect ticket has expired; mint a new one (POST …/ticket)")
	errTicketUsed    = httperr.New(401, "ticket_used", "the connect ticket was already used; mint a new one (POST …/ticket)")
)

// ticketKey derives the tickets' HMAC key from the signing secret, so a
// ticket can never pass for a credential or a token.
func ticketKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom connect ticket v1"))
	return m.Sum(nil)
}

// ticket layout before base64: expiry (Unix ms, 8 bytes), nonce (12), the
// visitor id, then a 16-byte tag over all of it and the room.
const (
	ticketHead = 8 + 12
	ticketTag  = 16
)

// Mint returns a ticket for visitor in room, good until exp.
func (t *Tickets) Mint(room, visitor string, exp time.Time) string {
	b := make([]byte, ticketHead, ticketHead+len(visitor)+ticketTag)
	binary.BigEndian.PutUint64(b, uint64(exp.UnixMilli()))
	_, _ = rand.Read(b[8:ticketHead])
	b = append(b, visitor...)
	b = append(b, t.mac(room, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (t *Tickets) mac(room string, body []byte) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(room))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:ticketTag]
}

// Redeem checks a ticket for room and uses it up; it returns the visitor
// it was minted for. A ticket that is malformed, forged, for another room,
// expired or used is refused with an *httperr.Error (invalid_ticket,
// ticket_expired, ticket_used); an error of the Nonces is returned wrapped,
// never as one. The nonce is remembered for as long as the ticket could
// still be valid.
func (t *Tickets) Redeem(ctx context.Context, room, raw string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) < ticketHead+1+ticketTag {
		return "", errInvalidTicket
	}
	body, tag := b[:len(b)-ticketTag], b[len(b)-ticketTag:]
	if !hmac.Equal(tag, t.mac(room, body)) {
		return "", errInvalidTicket
	}
	visitor := string(body[ticketHead:])
	if !wire.ValidVisitor(visitor) {
		return "", errInvalidTicket
	}
	left := time.Until(time.UnixMilli(int64(binary.BigEndian.Uint64(body))))
	if left <= 0 {
		return "", errTicketExpired
	}
	fresh, err := t.used.Claim(ctx, room, base64.RawURLEncoding.EncodeToString(body[8:ticketHead]), max(left, time.Millisecond))
	if err != nil {
		return "", fmt.Errorf("push: claim ticket: %w", err)
	}
	if !fresh {
		return "", errTicketUsed
	}
	return visitor, nil
}
