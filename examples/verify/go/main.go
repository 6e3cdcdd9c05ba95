// Command verify checks a waitroom entry token with golang-jwt, offline,
// against the server's JWKS, as a Go service that does not import this
// repository would.
//
//	go run . JWKS_URL ISSUER ROOM TOKEN
//
// It prints the claims and exits 0 for a token that is signed by a
// published key, for ROOM, from ISSUER and inside nbf..exp; it says why and
// exits 1 otherwise. Offline is not once: spend the token with
// POST /api/v1/tokens/consume (or use package entry's middleware).
package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

type jwk struct {
	Kty, Crv, Kid, X, Y string
}

// fetchKeys reads the JWKS at url into public keys by kid.
func fetchKeys(url string) (map[string]any, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks: %s", resp.Status)
	}
	var set struct{ Keys []jwk }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, err
	}
	keys := map[string]any{}
	b64 := base64.RawURLEncoding
	for _, k := range set.Keys {
		x, err := b64.DecodeString(k.X)
		if err != nil {
			return nil, err
		}
		switch {
		case k.Kty == "OKP" && k.Crv == "Ed25519" && len(x) == ed25519.PublicKeySize:
			keys[k.Kid] = ed25519.PublicKey(x)
		case k.Kty == "EC" && k.Crv == "P-256":
			y, err := b64.DecodeString(k.Y)
			if err != nil {
				return nil, err
			}
			pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", k.Kid, err)
			}
			keys[k.Kid] = pub
		}
	}
	return keys, nil
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: verify JWKS_URL ISSUER ROOM TOKEN")
		os.Exit(2)
	}
	jwksURL, issuer, room, token := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	keys, err := fetchKeys(jwksURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jwks:", err)
		os.Exit(2)
	}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"EdDSA", "ES256"}), jwt.WithIssuer(issuer),
		jwt.WithAudience(room), jwt.WithExpirationRequired())
	claims := jwt.MapClaims{}
	_, err = p.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if k, ok := keys[kid]; ok {
			return k, nil
		}
		return nil, errors.New("no published key has kid " + kid)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "refused:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(claims)
	fmt.Println(string(out))
}
