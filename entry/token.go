package entry

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxTokenSize bounds the tokens Parse reads; a waitroom token is about
// 400 bytes.
const MaxTokenSize = 4096

// Errors of Parse and Verify. Each wraps ErrInvalid, so a caller that does
// not care why can check that one.
var (
	ErrInvalid       = errors.New("invalid entry token")
	ErrTooLarge      = fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxTokenSize)
	ErrMalformed     = fmt.Errorf("%w: not a compact JWS", ErrInvalid)
	ErrAlgorithm     = fmt.Errorf("%w: algorithm not accepted", ErrInvalid)
	ErrUnknownKey    = fmt.Errorf("%w: unknown key id", ErrInvalid)
	ErrSignature     = fmt.Errorf("%w: bad signature", ErrInvalid)
	ErrExpired       = fmt.Errorf("%w: expired", ErrInvalid)
	ErrNotYetValid   = fmt.Errorf("%w: not valid yet", ErrInvalid)
	ErrWrongAudience = fmt.Errorf("%w: for another room", ErrInvalid)
	ErrWrongIssuer   = fmt.Errorf("%w: from another issuer", ErrInvalid)
)

// Claims is what an entry token says.
type Claims struct {
	Issuer  string // iss
	Room    string // aud
	Visitor string // sub: the visitor id, the id part of its credential
	ID      string // jti: the same for every copy of one admission's token

	NotBefore     time.Time // exact (wr_nbf_ms); nbf is its whole second, rounded down
	ExpiresAt     time.Time // exp: the absolute cap of the token's life
	IssuedAt      time.Time // iat
	IdleExpiresAt time.Time // wr_idle_exp_ms: the idle expiry when signed; it slides with use
}

// payload is the claims' JSON.
type payload struct {
	Iss    string   `json:"iss,omitempty"`
	Aud    audience `json:"aud"`
	Sub    string   `json:"sub"`
	Nbf    int64    `json:"nbf"`
	Exp    int64    `json:"exp"`
	Iat    int64    `json:"iat"`
	Jti    string   `json:"jti"`
	NbfMs  int64    `json:"wr_nbf_ms,omitempty"`
	IdleMs int64    `json:"wr_idle_exp_ms,omitempty"`
}

// audience reads aud as a string or an array of one string, and writes a
// string.
type audience string

func (a *audience) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = audience(s)
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil || len(l) != 1 {
		return errors.New("aud must be one string")
	}
	*a = audience(l[0])
	return nil
}

// AdmissionID is the jti of the admission of visitor to room at notBefore:
// every token signed for it carries the same one, so spending one copy is
// spending all.
func AdmissionID(room, visitor string, notBefore time.Time) string {
	h := sha256.Sum256([]byte(room + "\x00" + visitor + "\x00" + strconv.FormatInt(notBefore.UnixMilli(), 10)))
	return b64.EncodeToString(h[:16])
}

// Sign returns c as a compact JWS signed by the active key. An empty ID is
// filled with AdmissionID, a zero IssuedAt with now.
func (ks *KeySet) Sign(c Claims) (string, error) {
	k := ks.active
	if c.ID == "" {
		c.ID = AdmissionID(c.Room, c.Visitor, c.NotBefore)
	}
	if c.IssuedAt.IsZero() {
		c.IssuedAt = time.Now()
	}
	p := payload{Iss: c.Issuer, Aud: audience(c.Room), Sub: c.Visitor,
		Nbf: c.NotBefore.Unix(), Exp: c.ExpiresAt.Unix(), Iat: c.IssuedAt.Unix(), Jti: c.ID,
		NbfMs: c.NotBefore.UnixMilli()}
	if !c.IdleExpiresAt.IsZero() {
		p.IdleMs = c.IdleExpiresAt.UnixMilli()
	}
	body, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	head := `{"alg":"` + k.Alg + `","kid":"` + k.ID + `","typ":"JWT"}`
	signing := b64.EncodeToString([]byte(head)) + "." + b64.EncodeToString(body)
	sig, err := sign(k, []byte(signing))
	if err != nil {
		return "", err
	}
	return signing + "." + b64.EncodeToString(sig), nil
}

func sign(k *Key, msg []byte) ([]byte, error) {
	switch priv := k.Private.(type) {
	case ed25519.PrivateKey:
		return ed25519.Sign(priv, msg), nil
	case *ecdsa.PrivateKey:
		h := sha256.Sum256(msg)
		r, s, err := ecdsa.Sign(rand.Reader, priv, h[:])
		if err != nil {
			return nil, err
		}
		out := make([]byte, 64) // JWS wants R || S, not ASN.1
		r.FillBytes(out[:32])
		s.FillBytes(out[32:])
		return out, nil
	}
	return nil, fmt.Errorf("entry: key %q cannot sign", k.ID)
}

func verifySig(pub crypto.PublicKey, msg, sig []byte) bool {
	switch pub := pub.(type) {
	case ed25519.PublicKey:
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(pub, msg, sig)
	case *ecdsa.PublicKey:
		if len(sig) != 64 {
			return false
		}
		h := sha256.Sum256(msg)
		return ecdsa.Verify(pub, h[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	}
	return false
}

// header is the protected header as read.
type header struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Typ  string          `json:"typ"`
	Crit json.RawMessage `json:"crit"`
}

// KeyFunc finds the key named kid, or returns nil.
type KeyFunc func(kid string) *Key

// Parse checks a token's form and signature with the key keyOf names and
// returns its claims. It checks neither time nor audience: Claims.Check
// does, and a waitroom server leaves time to its records.
func Parse(token string, keyOf KeyFunc) (Claims, error) {
	if len(token) > MaxTokenSize {
		return Claims{}, ErrTooLarge
	}
	h64, rest, ok1 := strings.Cut(token, ".")
	p64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return Claims{}, ErrMalformed
	}
	hb, err1 := b64.DecodeString(h64)
	sig, err2 := b64.DecodeString(s64)
	var h header
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &h) != nil {
		return Claims{}, ErrMalformed
	}
	if h.Alg != EdDSA && h.Alg != ES256 {
		return Claims{}, fmt.Errorf("%w: %q", ErrAlgorithm, h.Alg)
	}
	if h.Crit != nil || (h.Typ != "" && h.Typ != "JWT") {
		return Claims{}, fmt.Errorf("%w: unsupported header", ErrMalformed)
	}
	k := keyOf(h.Kid)
	if k == nil {
		return Claims{}, ErrUnknownKey
	}
	if k.Alg != h.Alg {
		return Claims{}, fmt.Errorf("%w: %s with a %s key", ErrAlgorithm, h.Alg, k.Alg)
	}
	if !verifySig(k.Public, []byte(token[:len(h64)+1+len(p64)]), sig) {
		return Claims{}, ErrSignature
	}
	pb, err := b64.DecodeString(p64)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	return decodeClaims(pb)
}

func decodeClaims(pb []byte) (Claims, error) {
	var p payload
	dec := json.NewDecoder(bytes.NewReader(pb))
	if err := dec.Decode(&p); err != nil || p.Sub == "" || p.Aud == "" || p.Exp == 0 {
		return Claims{}, fmt.Errorf("%w: claims", ErrMalformed)
	}
	c := Claims{Issuer: p.Iss, Room: string(p.Aud), Visitor: p.Sub, ID: p.Jti,
		NotBefore: time.Unix(p.Nbf, 0), ExpiresAt: time.Unix(p.Exp, 0), IssuedAt: time.Unix(p.Iat, 0)}
	if p.NbfMs != 0 {
		if p.NbfMs/1000 != p.Nbf {
			return Claims{}, fmt.Errorf("%w: wr_nbf_ms does not fit nbf", ErrMalformed)
		}
		c.NotBefore = time.UnixMilli(p.NbfMs)
	}
	if p.IdleMs != 0 {
		c.IdleExpiresAt = time.UnixMilli(p.IdleMs)
	}
	return c, nil
}

// Parse checks a token signed by one of the keys of ks (see Parse).
func (ks *KeySet) Parse(token string) (Claims, error) { return Parse(token, ks.Key) }

// Check tells whether c holds at now for a verifier that wants issuer (if
// not empty) and one of rooms (if any), allowing leeway of clock skew.
func (c Claims) Check(now time.Time, issuer string, rooms []string, leeway time.Duration) error {
	switch {
	case issuer != "" && c.Issuer != issuer:
		return ErrWrongIssuer
	case len(rooms) > 0 && !slices.Contains(rooms, c.Room):
		return ErrWrongAudience
	case now.Add(leeway).Before(c.NotBefore):
		return ErrNotYetValid
	case !now.Add(-leeway).Before(c.ExpiresAt):
		return ErrExpired
	}
	return nil
}
