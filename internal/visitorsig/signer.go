// Package visitorsig signs and checks, with the deployment's secret
// (HMAC-SHA256, 128 bits kept), what a visitor is handed and hands back: its
// credential (its id, and the ticket it holds in a room), the entry token of
// the default compact format, and a proof-of-work challenge. Nothing here
// touches Redis: the queue decides with its records whether a signed thing
// is still good.
package visitorsig

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// ErrInvalidToken is returned for a token or credential that is malformed,
// forged or signed with another secret.
var ErrInvalidToken = errors.New("invalid token")

var (
	b64        = base64.RawURLEncoding
	sigLen     = 16 // bytes of HMAC-SHA256 kept: 128 bits
	sigB64Len  = b64.EncodedLen(16)
	tokenParts = 5
)

// Signer signs and checks visitor credentials and entry tokens with one
// deployment secret. Safe for concurrent use.
type Signer struct {
	key []byte
	// macs holds *mac: every join signs or checks a credential two or
	// three times, and a fresh HMAC is most of what that allocates.
	macs sync.Pool
}

// mac is one HMAC state of the Signer's key, with room for what it signs.
type mac struct {
	h   hash.Hash
	in  []byte
	sum [sha256.Size]byte
	enc [22]byte // sigB64Len: b64 of sigLen bytes
}

// NewSigner returns a Signer for secret (at least 16 bytes).
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < 16 {
		return nil, errors.New("secret must be at least 16 bytes")
	}
	s := &Signer{key: append([]byte(nil), secret...)}
	s.macs.New = func() any { return &mac{h: hmac.New(sha256.New, s.key)} }
	return s, nil
}

// sigInto writes the signature of msg in domain, as text, into m.enc.
func (s *Signer) sigInto(m *mac, domain, msg string) []byte {
	m.h.Reset()
	m.in = append(append(append(m.in[:0], domain...), 0), msg...)
	m.h.Write(m.in)
	b64.Encode(m.enc[:], m.h.Sum(m.sum[:0])[:sigLen])
	return m.enc[:]
}

func (s *Signer) sig(domain, msg string) string {
	m := s.macs.Get().(*mac)
	defer s.macs.Put(m)
	return string(s.sigInto(m, domain, msg))
}

func (s *Signer) verify(domain, msg, sig string) bool {
	if len(sig) != sigB64Len {
		return false
	}
	m := s.macs.Get().(*mac)
	defer s.macs.Put(m)
	return hmac.Equal(s.sigInto(m, domain, msg), []byte(sig))
}

// NewVisitor issues a fresh random visitor id and its credential.
func (s *Signer) NewVisitor() (id, credential string) {
	id = s.NewVisitorID()
	return id, s.VisitorCredential(id)
}

// NewVisitorID is a fresh random visitor id, without a credential.
func (s *Signer) NewVisitorID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return b64.EncodeToString(b[:])
}

// VisitorCredential signs a visitor id ("id.sig"). A trusted backend uses it
// to give signed-in users one place across tabs and devices.
func (s *Signer) VisitorCredential(id string) string {
	return id + "." + s.sig("visitor", id)
}

// ParseVisitor returns the visitor id of a credential this deployment
// issued, with or without a ticket.
func (s *Signer) ParseVisitor(credential string) (string, error) {
	id, _, err := s.ParseCredential(credential)
	return id, err
}

// Token is an entry token's content.
type Token struct {
	Room      string
	Visitor   string
	NotBefore time.Time
	ExpiresAt time.Time
}

// SignToken encodes t as "v1.room.visitor.nbms.expms.sig" style compact text.
func (s *Signer) SignToken(t Token) string {
	body := "v1." + t.Room + "." + t.Visitor + "." +
		strconv.FormatInt(t.NotBefore.UnixMilli(), 36) + "." +
		strconv.FormatInt(t.ExpiresAt.UnixMilli(), 36)
	return body + "." + s.sig("token", body)
}

// ParseToken checks a token's signature and returns its content. It does not
// check time; the queue's records decide that with the Redis clock.
func (s *Signer) ParseToken(tok string) (Token, error) {
	if len(tok) > 512 {
		return Token{}, ErrInvalidToken
	}
	i := strings.LastIndexByte(tok, '.')
	if i < 0 {
		return Token{}, ErrInvalidToken
	}
	body, sig := tok[:i], tok[i+1:]
	p := strings.Split(body, ".")
	if len(p) != tokenParts || p[0] != "v1" || !s.verify("token", body, sig) {
		return Token{}, ErrInvalidToken
	}
	nb, err1 := strconv.ParseInt(p[3], 36, 64)
	exp, err2 := strconv.ParseInt(p[4], 36, 64)
	if err1 != nil || err2 != nil || !wire.ValidRoom(p[1]) || !wire.ValidVisitor(p[2]) || exp <= nb {
		return Token{}, ErrInvalidToken
	}
	return Token{Room: p[1], Visitor: p[2], NotBefore: time.UnixMilli(nb), ExpiresAt: time.UnixMilli(exp)}, nil
}
