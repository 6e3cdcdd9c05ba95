package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/issuer"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestJWKS fetches the published keys over HTTP and checks a token the
// server issued with golang-jwt, reading the JWKS by hand: what a shop
// that knows nothing of this repository does.
func TestJWKS(t *testing.T) {
	ts := startServer(t, nil, "go-redis", nil)
	resp, err := http.Get(ts.URL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %v", resp.StatusCode, resp.Header)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil || len(set.Keys) != 1 || set.Keys[0]["d"] != "" || set.Keys[0]["crv"] != "Ed25519" {
		t.Fatalf("jwks body %s", raw)
	}
	x, _ := base64.RawURLEncoding.DecodeString(set.Keys[0]["x"])
	_, tok := admittedToken(t, ts, "drop")
	keyFunc := func(tk *jwt.Token) (any, error) {
		if tk.Header["kid"] != set.Keys[0]["kid"] {
			return nil, errors.New("unknown kid")
		}
		return ed25519.PublicKey(x), nil
	}
	p := jwt.NewParser(jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience("drop"), jwt.WithIssuer(ts.tokens.Issuer()), jwt.WithExpirationRequired())
	var c jwt.RegisteredClaims
	if _, err := p.ParseWithClaims(tok, &c, keyFunc); err != nil {
		t.Fatalf("stock library: %v", err)
	}
	if c.ID == "" || c.IssuedAt == nil || c.NotBefore == nil || c.Subject == "" || c.ExpiresAt.Sub(c.NotBefore.Time) < ts.cfg.TokenMax-time.Second {
		t.Fatalf("claims %+v: exp must be the cap (%v after nbf)", c, ts.cfg.TokenMax)
	}
	if _, err := jwt.NewParser(jwt.WithAudience("other")).Parse(tok, keyFunc); err == nil {
		t.Fatal("a verifier of another room accepted the token")
	}
}

// TestMiddlewareAgainstServer puts entry's middleware in front of a shop
// handler, verifying with the server's JWKS and spending through its
// consume endpoint.
func TestMiddlewareAgainstServer(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withServiceKeys(t, nil))
	v, err := entry.NewVerifier(ts.URL+"/.well-known/jwks.json", &entry.VerifierOptions{Issuer: ts.tokens.Issuer(), Rooms: []string{"drop"}})
	if err != nil {
		t.Fatal(err)
	}
	shop := httptest.NewServer(v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := entry.FromContext(r.Context())
		fmt.Fprintf(w, "sold to %s", c.Visitor)
	}), &entry.MiddlewareOptions{Consumer: entry.NewConsumer(ts.URL, testServiceKey, nil)}))
	defer shop.Close()
	vis, tok := admittedToken(t, ts, "drop")
	buy := func(cred string) (int, string) {
		req, _ := http.NewRequest("POST", shop.URL+"/buy", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if cred != "" {
			req.Header.Set("X-Visitor", cred)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The token alone, or with a credential that names its visitor but
	// was not signed by the server: refused, and not spent.
	if code, body := buy(""); code != 401 || !strings.Contains(body, `"missing_visitor"`) {
		t.Fatalf("no visitor: %d %s", code, body)
	}
	forged := entry.CredentialVisitor(vis.cred) + ".forged"
	if code, body := buy(forged); code != 401 || !strings.Contains(body, `"invalid_visitor"`) {
		t.Fatalf("forged visitor: %d %s", code, body)
	}
	if code, body := buy(vis.cred); code != 200 || !strings.HasPrefix(body, "sold to ") {
		t.Fatalf("first: %d %s", code, body)
	}
	if code, body := buy(vis.cred); code != 409 || !strings.Contains(body, `"token_used"`) {
		t.Fatalf("replay: %d %s", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

// keyFile writes a key file of keys with active signing.
func keyFile(t *testing.T, active string, keys ...*entry.Key) string {
	t.Helper()
	ks, err := entry.NewKeySet(active, keys...)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ks.MarshalKeyFile()
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKeyRotation walks the rotation of docs/entry-tokens.md on instances
// sharing Redis: one started out of step is refused with both fingerprints
// named.
func TestKeyRotation(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t, kind)
			k1, _ := entry.GenerateKey(entry.EdDSA, "k1")
			k2, _ := entry.GenerateKey(entry.ES256, "k2")
			k1again, _ := entry.GenerateKey(entry.EdDSA, "k1")
			withKeys := func(path string) func(*config) { return func(c *config) { c.Entry.KeysFile = path } }
			start := func(path string) error {
				cfg, err := parseConfig([]string{"-addr", "127.0.0.1:0", "-secret", testSecret, "-redis", srv.URL(), "-signing-keys", path}, func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				s, err := newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
				if err == nil {
					s.unpublishEntryKeys(context.Background())
					s.redis.Close()
				}
				return err
			}
			a := startServer(t, srv, "rueidis", withKeys(keyFile(t, "k1", k1)))
			// Step 1: k2 is published everywhere before it signs.
			b := startServer(t, srv, "rueidis", withKeys(keyFile(t, "k1", k1, k2)))
			// Step 2 before step 1 is done (a lacks k2): refused.
			err := start(keyFile(t, "k2", k1, k2))
			if err == nil || !strings.Contains(err.Error(), `"k2"`) || !strings.Contains(err.Error(), a.tokens.Keys().Fingerprint()) {
				t.Fatalf("active key unknown to a running instance: %v", err)
			}
			// Another key under a known kid: refused.
			if err := start(keyFile(t, "k1", k1again)); err == nil || !strings.Contains(err.Error(), "another key") {
				t.Fatalf("same kid, other key: %v", err)
			}
			a.stop()
			a.done <- <-a.done // waited for here, read again by the cleanup
			// With a gone, k2 may sign.
			c := startServer(t, srv, "go-redis", withKeys(keyFile(t, "k2", k1, k2)))
			v := newVisitor(t, c.URL)
			v.join("drop")
			tok := c.admitUntil(t, v, "drop").str("token")
			if _, err := b.parseToken(tok); err != nil {
				t.Fatalf("b refuses c's token: %v", err)
			}
			// Step 3 while b still signs with k1: refused.
			if err := start(keyFile(t, "k2", k2)); err == nil {
				t.Fatal("an instance without the key b signs with started")
			}
		})
	}
}

// TestKeysAgreeAfterRedisLoss: Redis loses the key lines while a signs
// with k1, and b starts with k2, which a refuses (the start check had no
// line to compare). Within a few housekeeping rounds a has written its
// line back and b has stopped signing: b is not ready and its admitted
// visitors get no token, while a goes on. Only k1 signs.
func TestKeysAgreeAfterRedisLoss(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.Start(t, kind)
			k1, _ := entry.GenerateKey(entry.EdDSA, "k1")
			k2, _ := entry.GenerateKey(entry.EdDSA, "k2")
			withKeys := func(path string) func(*config) { return func(c *config) { c.Entry.KeysFile = path } }
			a := startServer(t, srv, "rueidis", withKeys(keyFile(t, "k1", k1)))
			// Once a's housekeeping has rewritten its line, the next
			// round is 2 s away: b starts well before it.
			line := func() any { v, _ := a.redis.Do(ctx, "HGET", issuer.KeysKey, a.id); return v }
			first := line()
			waitfor.Until(t, 10*time.Second, "a's first housekeeping round", func() bool { return line() != first })
			if _, err := a.redis.Do(ctx, "DEL", issuer.KeysKey); err != nil {
				t.Fatal(err)
			}
			b := startServer(t, srv, "go-redis", withKeys(keyFile(t, "k2", k2)))
			waitfor.Until(t, 20*time.Second, "b stops signing", func() bool { return b.tokens.Signing() != nil })
			if err := a.tokens.Signing(); err != nil {
				t.Fatalf("a, which joined first, stopped signing: %v", err)
			}
			ready := func(ts *testServer) reply { return newVisitor(t, ts.URL).do("GET", "/readyz", "") }
			if r := ready(b); r.Code != 503 || r.errCode() != "entry_keys_differ" {
				t.Fatalf("b ready: %d %s", r.Code, r.Raw)
			}
			if r := ready(a); r.Code != 200 {
				t.Fatalf("a not ready: %d %s", r.Code, r.Raw)
			}
			// Only a's line is published.
			v, err := a.redis.Do(ctx, "HGETALL", issuer.KeysKey)
			if flat, _ := v.([]any); err != nil || len(flat) != 2 || flat[0] != a.id {
				t.Fatalf("key lines %v, %v; want a's (%s) alone", v, err, a.id)
			}
			for _, tc := range []struct {
				ts    *testServer
				token bool
			}{{a, true}, {b, false}} {
				vis := newVisitor(t, tc.ts.URL)
				vis.join("drop")
				st := tc.ts.admitUntil(t, vis, "drop")
				tok := st.str("token")
				if (tok != "") != tc.token {
					t.Fatalf("token %q from %s", tok, tc.ts.id)
				}
				if tok == "" {
					continue
				}
				if c, err := entry.Parse(tok, func(kid string) *entry.Key {
					if kid == "k1" {
						return k1
					}
					return nil
				}); err != nil || c.Visitor == "" {
					t.Fatalf("a's token is not k1's: %v", err)
				}
			}
		})
	}
}
