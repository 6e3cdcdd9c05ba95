package visitorsig

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Proof of work on join. A room with powBits > 0 asks each new visitor to
// solve a challenge before it takes a place: find a nonce such that
// SHA-256(challenge + nonce) starts with powBits zero bits. The challenge is
// signed, names its room, strength and expiry, and carries a random id;
// nothing is stored when it is handed out. A solved challenge is good for
// one join: its id is recorded as used (SET NX, until the challenge
// expires) when it is spent.

// ChallengeTTL is how long a challenge may be solved and spent.
const ChallengeTTL = 2 * time.Minute

// maxNonceLen bounds the nonce a client sends (decimal digits).
const maxNonceLen = 20

// Proof of work errors, each a distinct refusal.
var (
	ErrPowInvalid  = errors.New("proof of work challenge is not one this deployment issued")
	ErrPowExpired  = errors.New("proof of work challenge expired")
	ErrPowRoom     = errors.New("proof of work challenge is for another room")
	ErrPowWeak     = errors.New("proof of work challenge is weaker than the room asks")
	ErrPowUnsolved = errors.New("proof of work nonce does not solve the challenge")
	ErrPowUsed     = errors.New("proof of work challenge was already used")
)

// Challenge is a proof of work challenge's content.
type Challenge struct {
	Room    string
	Bits    int
	Expires time.Time
	ID      string // random, unique per challenge
}

// NewChallenge issues a challenge for room at the given strength, valid
// for ChallengeTTL from now, as compact text
// ("p1.room.bits.expms.id.sig").
func (s *Signer) NewChallenge(room string, strength int, now time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	body := "p1." + room + "." + strconv.Itoa(strength) + "." +
		strconv.FormatInt(now.Add(ChallengeTTL).UnixMilli(), 36) + "." + b64.EncodeToString(b[:])
	return body + "." + s.sig("pow", body)
}

// ParseChallenge checks a challenge's signature and returns its content.
func (s *Signer) ParseChallenge(ch string) (Challenge, error) {
	if len(ch) > 256 {
		return Challenge{}, ErrPowInvalid
	}
	i := strings.LastIndexByte(ch, '.')
	if i < 0 || !s.verify("pow", ch[:i], ch[i+1:]) {
		return Challenge{}, ErrPowInvalid
	}
	parts := strings.Split(ch[:i], ".")
	if len(parts) != 5 || parts[0] != "p1" {
		return Challenge{}, ErrPowInvalid
	}
	n, err1 := strconv.Atoi(parts[2])
	exp, err2 := strconv.ParseInt(parts[3], 36, 64)
	if err1 != nil || err2 != nil {
		return Challenge{}, ErrPowInvalid
	}
	return Challenge{Room: parts[1], Bits: n, Expires: time.UnixMilli(exp), ID: parts[4]}, nil
}

// LeadingZeroBits counts the zero bits at the start of sum.
func LeadingZeroBits(sum []byte) int {
	n := 0
	for _, b := range sum {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// Solves reports whether nonce solves challenge ch at strength want:
// SHA-256 of the challenge text followed by the nonce starts with at least
// want zero bits.
func Solves(ch, nonce string, want int) bool {
	if len(nonce) == 0 || len(nonce) > maxNonceLen {
		return false
	}
	for i := 0; i < len(nonce); i++ {
		if nonce[i] < '0' || nonce[i] > '9' {
			return false
		}
	}
	h := sha256.New()
	h.Write([]byte(ch))
	h.Write([]byte(nonce))
	return LeadingZeroBits(h.Sum(nil)) >= want
}

// CheckProof checks that nonce solves a valid, unexpired challenge for room
// at least as strong as want. It does not record the use: SpendProof does.
func (s *Signer) CheckProof(ch, nonce, room string, want int, now time.Time) (Challenge, error) {
	c, err := s.ParseChallenge(ch)
	switch {
	case err != nil:
		return Challenge{}, err
	case c.Room != room:
		return Challenge{}, ErrPowRoom
	case !now.Before(c.Expires):
		return Challenge{}, ErrPowExpired
	case c.Bits < want:
		return Challenge{}, ErrPowWeak
	case !Solves(ch, nonce, c.Bits):
		return Challenge{}, ErrPowUnsolved
	}
	return c, nil
}
