package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
)

// A connect ticket stands in for the visitor credential on the URL of a
// WebSocket or an EventSource, which cannot send headers: the page mints
// one with a POST (credential in the cookie or X-Visitor) right before it
// connects, and the ticket is good for one connection, in one room, within
// ticketTTL. What lands in a proxy's access log is then useless a minute
// later, where the credential itself would hold the visitor's place for
// days.
const ticketTTL = time.Minute

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

func (s *server) signTicket(room, visitor string, exp time.Time) string {
	b := make([]byte, ticketHead, ticketHead+len(visitor)+ticketTag)
	binary.BigEndian.PutUint64(b, uint64(exp.UnixMilli()))
	_, _ = rand.Read(b[8:ticketHead])
	b = append(b, visitor...)
	b = append(b, s.ticketMAC(room, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *server) ticketMAC(room string, body []byte) []byte {
	m := hmac.New(sha256.New, s.ticketKey)
	m.Write([]byte(room))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:ticketTag]
}

// ticket mints a connect ticket for the request's visitor.
func (s *server) ticket(c *fiber.Ctx) error {
	r, id, err := s.roomVisitor(c)
	if err != nil {
		return err
	}
	exp := time.Now().Add(ticketTTL)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"ticket": s.signTicket(r, id, exp), "expiresInMs": ticketTTL.Milliseconds()})
}

// redeemTicket checks a ticket for room and uses it up; it returns the
// visitor it was minted for. Redis remembers a used nonce for as long as
// the ticket could still be valid.
func (s *server) redeemTicket(c *fiber.Ctx, room, raw string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(b) < ticketHead+1+ticketTag {
		return "", errInvalidTicket
	}
	body, tag := b[:len(b)-ticketTag], b[len(b)-ticketTag:]
	if !hmac.Equal(tag, s.ticketMAC(room, body)) {
		return "", errInvalidTicket
	}
	visitor := string(body[ticketHead:])
	if !queue.ValidVisitor(visitor) {
		return "", errInvalidTicket
	}
	left := time.Until(time.UnixMilli(int64(binary.BigEndian.Uint64(body))))
	if left <= 0 {
		return "", errTicketExpired
	}
	ctx, cancel := s.redisCtx(c)
	defer cancel()
	key := "wr:{" + room + "}:ct:" + base64.RawURLEncoding.EncodeToString(body[8:ticketHead])
	v, err := s.redis.q.Do(ctx, "SET", key, "1", "NX", "PX", strconv.FormatInt(max(left.Milliseconds(), 1), 10))
	if err != nil {
		return "", s.storeError(c, err)
	}
	if v == nil {
		return "", errTicketUsed
	}
	return visitor, nil
}
