// Package invite mints and checks invite codes: HMAC-signed, so a code
// carries everything needed to check it (room, expiry, how many joins it
// admits, an optional visitor it is for, and whether it is a priority
// code, whose joins go ahead of the public queue) and the server stores
// nothing until a code is used. Counting uses is the queue's job,
// atomically with the join.
package invite

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Code is what an invite code says.
type Code struct {
	Room    string
	ID      string // random; names the code's use count
	Expires time.Time
	Uses    int    // joins it admits, at least 1
	Visitor string // when set, only this visitor id may use it
	// Priority codes join ahead of every public ticket, in any room; in
	// an invite-only room they are the invitation too. A plain code
	// never gives priority.
	Priority bool
}

// Errors of Parse.
var (
	ErrMalformed = errors.New("invite: malformed code")
	ErrForged    = errors.New("invite: code not signed here")
)

const prefix = "inv1."

// kindPriority is the sixth payload field of a priority code.
const kindPriority = "p"

// Minter signs and checks codes with a key derived from the server's
// secret, so every instance with the same secret agrees and the key is
// never the one that signs tokens.
type Minter struct{ key []byte }

// NewMinter derives the code key from secret.
func NewMinter(secret []byte) *Minter {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom invite codes v1"))
	return &Minter{key: m.Sum(nil)}
}

// NewID returns a random code id.
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Mint returns the code for c.
func (m *Minter) Mint(c Code) string {
	f := []string{c.Room, c.ID, strconv.FormatInt(c.Expires.Unix(), 10), strconv.Itoa(c.Uses), c.Visitor}
	if c.Priority {
		// A sixth field: plain codes keep the format they were minted in.
		f = append(f, kindPriority)
	}
	payload := strings.Join(f, "|")
	p := base64.RawURLEncoding.EncodeToString([]byte(payload))
	return prefix + p + "." + base64.RawURLEncoding.EncodeToString(m.mac(p))
}

func (m *Minter) mac(p string) []byte {
	h := hmac.New(sha256.New, m.key)
	h.Write([]byte(p))
	return h.Sum(nil)[:18]
}

// Parse checks the signature (in constant time) and returns what the code
// says. Whether it is for this room, unexpired and unused is the caller's
// to check.
func (m *Minter) Parse(code string) (Code, error) {
	rest, ok := strings.CutPrefix(code, prefix)
	if !ok || len(code) > 512 {
		return Code{}, ErrMalformed
	}
	p, sig, ok := strings.Cut(rest, ".")
	if !ok {
		return Code{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Code{}, ErrMalformed
	}
	if !hmac.Equal(got, m.mac(p)) {
		return Code{}, ErrForged
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Code{}, ErrMalformed
	}
	f := strings.Split(string(raw), "|")
	prio := len(f) == 6 && f[5] == kindPriority
	if len(f) != 5 && !prio {
		return Code{}, ErrMalformed
	}
	exp, err1 := strconv.ParseInt(f[2], 10, 64)
	uses, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || uses < 1 || f[0] == "" || f[1] == "" {
		return Code{}, ErrMalformed
	}
	return Code{Room: f[0], ID: f[1], Expires: time.Unix(exp, 0), Uses: uses, Visitor: f[4], Priority: prio}, nil
}
