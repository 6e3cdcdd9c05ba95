package entry

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Algorithms a Key signs with.
const (
	EdDSA = "EdDSA" // Ed25519
	ES256 = "ES256" // ECDSA P-256 with SHA-256
)

// Key is one signing key: its id (the JWS kid), its algorithm, its public
// key, and its private key when it may sign (nil for a key that is only
// published, such as a retired one whose tokens have not all expired).
type Key struct {
	ID      string
	Alg     string
	Public  crypto.PublicKey // ed25519.PublicKey or *ecdsa.PublicKey
	Private crypto.Signer    // ed25519.PrivateKey or *ecdsa.PrivateKey; nil: verify only
}

// GenerateKey returns a new key of alg (EdDSA or ES256) named kid; an empty
// kid is replaced by the key's thumbprint.
func GenerateKey(alg, kid string) (*Key, error) {
	var k *Key
	switch alg {
	case EdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		k = &Key{Alg: EdDSA, Public: pub, Private: priv}
	case ES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		k = &Key{Alg: ES256, Public: &priv.PublicKey, Private: priv}
	default:
		return nil, fmt.Errorf("entry: algorithm %q is not EdDSA or ES256", alg)
	}
	k.ID = kid
	if k.ID == "" {
		k.ID = k.Thumbprint()[:16]
	}
	return k, nil
}

// DeriveKey returns the Ed25519 key derived from secret (HKDF-SHA256 with a
// label of its own, so the key reveals nothing of the secret and matches on
// every instance given the same secret). Its id is "derived-" and the start
// of its thumbprint.
func DeriveKey(secret []byte) (*Key, error) {
	if len(secret) < 16 {
		return nil, errors.New("entry: secret must be at least 16 bytes")
	}
	seed, err := hkdf.Key(sha256.New, secret, nil, "waitroom entry token key v1", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	k := &Key{Alg: EdDSA, Public: priv.Public(), Private: priv}
	k.ID = "derived-" + k.Thumbprint()[:12]
	return k, nil
}

// Thumbprint is the key's RFC 7638 JWK thumbprint (SHA-256, base64url): the
// same for the same public key wherever it is computed.
func (k *Key) Thumbprint() string {
	var s string
	switch pub := k.Public.(type) {
	case ed25519.PublicKey:
		s = `{"crv":"Ed25519","kty":"OKP","x":"` + b64.EncodeToString(pub) + `"}`
	case *ecdsa.PublicKey:
		x, y := ecCoords(pub)
		s = `{"crv":"P-256","kty":"EC","x":"` + b64.EncodeToString(x) + `","y":"` + b64.EncodeToString(y) + `"}`
	}
	sum := sha256.Sum256([]byte(s))
	return b64.EncodeToString(sum[:])
}

// ecCoords returns the 32-byte X and Y of a P-256 public key.
func ecCoords(pub *ecdsa.PublicKey) (x, y []byte) {
	b, err := pub.Bytes() // 0x04 || X || Y
	if err != nil || len(b) != 65 {
		return nil, nil
	}
	return b[1:33], b[33:65]
}

// ecPublic builds a P-256 public key from its coordinates, refusing points
// that are not on the curve.
func ecPublic(x, y []byte) (*ecdsa.PublicKey, error) {
	if len(x) != 32 || len(y) != 32 {
		return nil, errors.New("entry: P-256 coordinates must be 32 bytes")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, fmt.Errorf("entry: not a P-256 point: %w", err)
	}
	return pub, nil
}

// KeySet is the keys of a deployment: every key is published, and the
// active one signs. Safe for concurrent use once built; do not change it
// after.
type KeySet struct {
	keys   []*Key
	active *Key
}

// NewKeySet returns the set of keys, with the key named active signing.
// Key ids must be unique, and the active key must have its private part.
func NewKeySet(active string, keys ...*Key) (*KeySet, error) {
	ks := &KeySet{}
	for _, k := range keys {
		if k.ID == "" || len(k.ID) > 64 || strings.ContainsAny(k.ID, "\"\\") {
			return nil, fmt.Errorf("entry: key id %q must be 1 to 64 characters without quotes", k.ID)
		}
		if ks.Key(k.ID) != nil {
			return nil, fmt.Errorf("entry: key id %q appears twice", k.ID)
		}
		if err := k.check(); err != nil {
			return nil, err
		}
		ks.keys = append(ks.keys, k)
		if k.ID == active {
			ks.active = k
		}
	}
	switch {
	case ks.active == nil:
		return nil, fmt.Errorf("entry: the active key %q is not in the set", active)
	case ks.active.Private == nil:
		return nil, fmt.Errorf("entry: the active key %q has no private part", active)
	}
	return ks, nil
}

// check tells whether the key's parts fit its algorithm.
func (k *Key) check() error {
	switch k.Alg {
	case EdDSA:
		pub, ok := k.Public.(ed25519.PublicKey)
		if !ok || len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("entry: key %q: EdDSA needs an Ed25519 public key", k.ID)
		}
		if k.Private != nil {
			if priv, ok := k.Private.(ed25519.PrivateKey); !ok || !pub.Equal(priv.Public()) {
				return fmt.Errorf("entry: key %q: private part does not match the public key", k.ID)
			}
		}
	case ES256:
		pub, ok := k.Public.(*ecdsa.PublicKey)
		if !ok || pub.Curve != elliptic.P256() {
			return fmt.Errorf("entry: key %q: ES256 needs a P-256 public key", k.ID)
		}
		if k.Private != nil {
			if priv, ok := k.Private.(*ecdsa.PrivateKey); !ok || !pub.Equal(priv.Public()) {
				return fmt.Errorf("entry: key %q: private part does not match the public key", k.ID)
			}
		}
	default:
		return fmt.Errorf("entry: key %q: algorithm %q is not EdDSA or ES256", k.ID, k.Alg)
	}
	return nil
}

// Active returns the key that signs.
func (ks *KeySet) Active() *Key { return ks.active }

// Keys returns the published keys, the active one among them.
func (ks *KeySet) Keys() []*Key { return slices.Clone(ks.keys) }

// Key returns the key named kid, or nil.
func (ks *KeySet) Key(kid string) *Key {
	for _, k := range ks.keys {
		if k.ID == kid {
			return k
		}
	}
	return nil
}

// Fingerprint identifies the published keys as a whole: the SHA-256 of
// their ids and thumbprints, sorted. Two sets publish the same keys
// exactly when their fingerprints are equal.
func (ks *KeySet) Fingerprint() string {
	parts := make([]string, 0, len(ks.keys))
	for _, k := range ks.keys {
		parts = append(parts, k.ID+"="+k.Thumbprint())
	}
	slices.Sort(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return b64.EncodeToString(sum[:12])
}

// keyFile is the key file's shape: a JWK set whose keys may carry their
// private part ("d"), and the id of the one that signs.
type keyFile struct {
	Active string `json:"active"`
	Keys   []jwk  `json:"keys"`
}

// ParseKeySet reads a key file:
//
//	{"active": "2026-12",
//	 "keys": [
//	   {"kid": "2026-12", "kty": "OKP", "crv": "Ed25519", "x": "…", "d": "…"},
//	   {"kid": "2026-06", "kty": "EC", "crv": "P-256", "x": "…", "y": "…"}]}
//
// Each key is a JWK (RFC 7517, 8037): with "d" it may sign, without it is
// only published. The key named by active signs.
func ParseKeySet(data []byte) (*KeySet, error) {
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("entry: key file: %w", err)
	}
	keys := make([]*Key, 0, len(f.Keys))
	for _, j := range f.Keys {
		k, err := j.key()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return NewKeySet(f.Active, keys...)
}

// LoadKeySet reads the key file at path (see ParseKeySet).
func LoadKeySet(path string) (*KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ks, err := ParseKeySet(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

// MarshalKeyFile encodes ks as a key file, private parts included: what
// ParseKeySet reads back.
func (ks *KeySet) MarshalKeyFile() ([]byte, error) {
	f := keyFile{Active: ks.active.ID}
	for _, k := range ks.keys {
		f.Keys = append(f.Keys, toJWK(k, true))
	}
	return json.MarshalIndent(f, "", "  ")
}
