package entry

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// b64 is strict: a token has one spelling, so its text can key a cache.
var b64 = base64.RawURLEncoding.Strict()

// jwk is one JSON Web Key as this package reads and writes it.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	Kid string `json:"kid"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	D   string `json:"d,omitempty"`
}

func toJWK(k *Key, private bool) jwk {
	j := jwk{Kid: k.ID, Alg: k.Alg, Use: "sig"}
	switch pub := k.Public.(type) {
	case ed25519.PublicKey:
		j.Kty, j.Crv, j.X = "OKP", "Ed25519", b64.EncodeToString(pub)
		if priv, ok := k.Private.(ed25519.PrivateKey); ok && private {
			j.D = b64.EncodeToString(priv.Seed())
		}
	case *ecdsa.PublicKey:
		x, y := ecCoords(pub)
		j.Kty, j.Crv, j.X, j.Y = "EC", "P-256", b64.EncodeToString(x), b64.EncodeToString(y)
		if priv, ok := k.Private.(*ecdsa.PrivateKey); ok && private {
			d, err := priv.Bytes() // the fixed-length big-endian scalar JWK's d wants
			if err == nil {
				j.D = b64.EncodeToString(d)
			}
		}
	}
	return j
}

// key decodes j, with its private part when it has one.
func (j jwk) key() (*Key, error) {
	bad := func(what string) error { return fmt.Errorf("entry: key %q: %s", j.Kid, what) }
	x, err := b64.DecodeString(j.X)
	if err != nil {
		return nil, bad("x is not base64url")
	}
	k := &Key{ID: j.Kid}
	switch {
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		if len(x) != ed25519.PublicKeySize {
			return nil, bad("x is not an Ed25519 public key")
		}
		k.Alg, k.Public = EdDSA, ed25519.PublicKey(x)
		if j.D != "" {
			d, err := b64.DecodeString(j.D)
			if err != nil || len(d) != ed25519.SeedSize {
				return nil, bad("d is not an Ed25519 seed")
			}
			k.Private = ed25519.NewKeyFromSeed(d)
		}
	case j.Kty == "EC" && j.Crv == "P-256":
		y, err := b64.DecodeString(j.Y)
		if err != nil {
			return nil, bad("y is not base64url")
		}
		pub, err := ecPublic(x, y)
		if err != nil {
			return nil, bad(err.Error())
		}
		k.Alg, k.Public = ES256, pub
		if j.D != "" {
			d, err := b64.DecodeString(j.D)
			if err != nil || len(d) != 32 {
				return nil, bad("d is not a P-256 scalar")
			}
			priv, err := ecdsa.ParseRawPrivateKey(pub.Curve, d)
			if err != nil {
				return nil, bad(err.Error())
			}
			k.Private = priv
		}
	default:
		return nil, bad("only OKP Ed25519 and EC P-256 keys are supported")
	}
	if j.Alg != "" && j.Alg != k.Alg {
		return nil, bad("alg " + j.Alg + " does not fit the key type")
	}
	return k, k.check()
}

// JWKS is a public JSON Web Key Set (RFC 7517): what
// /.well-known/jwks.json serves.
type JWKS struct {
	Keys []jwk `json:"keys"`
}

// JWKS returns the public keys of ks.
func (ks *KeySet) JWKS() JWKS {
	out := JWKS{Keys: make([]jwk, 0, len(ks.keys))}
	for _, k := range ks.keys {
		out.Keys = append(out.Keys, toJWK(k, false))
	}
	return out
}

// ParseJWKS reads a public key set. Keys of a type this package does not
// verify (RSA, other curves, encryption keys) are skipped; a key it knows
// with bad parameters is an error.
func ParseJWKS(data []byte) ([]*Key, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("entry: jwks: %w", err)
	}
	var out []*Key
	for _, raw := range set.Keys {
		var j jwk
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("entry: jwks: %w", err)
		}
		if (j.Use != "" && j.Use != "sig") || !(j.Kty == "OKP" && j.Crv == "Ed25519" || j.Kty == "EC" && j.Crv == "P-256") {
			continue
		}
		j.D = "" // a published set's private part is never used
		k, err := j.key()
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// JWKSHandler serves the public keys of ks as application/jwk-set+json,
// cacheable for maxAge: a verifier that sees an unknown kid fetches again,
// so the age bounds how soon a new key is seen by caches that do not.
func JWKSHandler(ks *KeySet, maxAge time.Duration) http.Handler {
	body, err := json.Marshal(ks.JWKS())
	if err != nil {
		panic(err) // the set holds only strings
	}
	cc := "public, max-age=" + strconv.Itoa(int(maxAge.Seconds()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", cc)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write(body)
	})
}
