package main

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.yaml.in/yaml/v3"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomcache"
)

// entryConfig is how entry tokens are signed and who may spend them.
type entryConfig struct {
	KeysFile        string // -signing-keys: the key file (entry.ParseKeySet); empty: derived from -secret
	Issuer          string // -issuer: the tokens' iss; empty: http://<-addr>
	ServiceKeysFile string // -service-keys: labelled keys of the protected services
}

// entryFlags defines the flags of entry tokens.
func entryFlags(fs *flag.FlagSet, c *entryConfig) {
	fs.StringVar(&c.KeysFile, "signing-keys", "", "entry token key file (JSON: active kid and JWKs with private parts; see docs/entry-tokens.md); empty: one Ed25519 key derived from -secret")
	fs.StringVar(&c.Issuer, "issuer", "", "iss of entry tokens, the URL protected services know this server by (empty: http://<addr>)")
	fs.StringVar(&c.ServiceKeysFile, "service-keys", "", "file of labelled service keys (YAML: label: key) that may spend entry tokens (POST /api/v1/tokens/consume)")
}

// entryTokens signs entry tokens as JWTs (queue.TokenSigner) and checks
// them.
type entryTokens struct {
	keys   *entry.KeySet
	issuer string
	ttl    time.Duration // defaults of a room's idle lifetime and cap
	max    time.Duration
	rooms  *roomcache.Cache // set before the server runs; a room's own lifetime and cap
	log    *slog.Logger
	jwks   []byte // the published keys, encoded once
}

// newEntryTokens loads -signing-keys, or derives the key from secret
// (generated when generated is true, so the key lives as long as the
// process).
func newEntryTokens(cfg config, secret []byte, generated bool, log *slog.Logger) (*entryTokens, error) {
	var ks *entry.KeySet
	if cfg.Entry.KeysFile != "" {
		var err error
		if ks, err = entry.LoadKeySet(cfg.Entry.KeysFile); err != nil {
			return nil, fmt.Errorf("-signing-keys %v", err)
		}
	} else {
		k, err := entry.DeriveKey(secret)
		if err != nil {
			return nil, err
		}
		if ks, err = entry.NewKeySet(k.ID, k); err != nil {
			return nil, err
		}
		if generated {
			log.Warn("entry tokens: signed with a key derived from the generated secret; it changes at every start (set -signing-keys or -secret)", "kid", k.ID)
		} else {
			log.Info("entry tokens: signed with a key derived from -secret; use -signing-keys to rotate keys", "kid", k.ID)
		}
	}
	body, err := json.Marshal(ks.JWKS())
	if err != nil {
		return nil, err
	}
	iss := cfg.Entry.Issuer
	if iss == "" {
		iss = "http://" + issuerHost(cfg.Addr)
		if cfg.Redis != "" {
			log.Warn("entry tokens: no -issuer; each instance names itself by its address in iss, so a service checking iss sees several issuers", "iss", iss)
		}
	}
	return &entryTokens{keys: ks, issuer: iss, ttl: cfg.TokenTTL, max: cfg.TokenMax, log: log, jwks: body}, nil
}

// issuerHost is addr as a host to name in a URL: an unspecified address
// is localhost.
func issuerHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// SignToken signs t as a JWT whose exp is the room's cap (as admit.lua
// sets it: notBefore + max(cap, idle lifetime)), whose wr_idle_exp_ms is
// t's expiry now and whose iat is its notBefore.
func (e *entryTokens) SignToken(t queue.Token) string {
	ttl, maxTTL := e.ttl, e.max
	if e.rooms != nil {
		if c, ok := e.rooms.RoomSettings(t.Room); ok {
			ttl, maxTTL = cmp.Or(c.TokenTTL, ttl), cmp.Or(c.TokenMax, maxTTL)
		}
	}
	tok, err := e.keys.Sign(entry.Claims{
		Issuer: e.issuer, Room: t.Room, Visitor: t.Visitor,
		NotBefore: t.NotBefore, ExpiresAt: t.NotBefore.Add(max(ttl, maxTTL)), IdleExpiresAt: t.ExpiresAt,
		// The admission's moment, not the copy's: every poll signs the
		// same EdDSA token until the idle expiry slides.
		IssuedAt: t.NotBefore,
	})
	if err != nil {
		e.log.Error("entry token not signed", "room", t.Room, "err", err)
	}
	return tok
}

// parse checks a token's signature and names (not its time: the queue's
// records decide that with the Redis clock). A token of the former HMAC
// format ("v1.…") is still read, for tokens issued before an upgrade.
func (e *entryTokens) parse(legacy *queue.Signer, raw string) (queue.Token, error) {
	if strings.HasPrefix(raw, "v1.") {
		return legacy.ParseToken(raw)
	}
	c, err := e.keys.Parse(raw)
	if err != nil {
		return queue.Token{}, err
	}
	// The keys, shared by every instance, are the authority here, not iss:
	// instances left to the default issuer name themselves differently.
	if !queue.ValidRoom(c.Room) || !queue.ValidVisitor(c.Visitor) {
		return queue.Token{}, fmt.Errorf("%w: room or visitor", entry.ErrInvalid)
	}
	exp := c.IdleExpiresAt
	if exp.IsZero() || exp.After(c.ExpiresAt) {
		exp = c.ExpiresAt
	}
	return queue.Token{Room: c.Room, Visitor: c.Visitor, NotBefore: c.NotBefore, ExpiresAt: exp}, nil
}

// parseToken checks an entry token sent to this server (see
// entryTokens.parse).
func (s *server) parseToken(raw string) (queue.Token, error) {
	return s.tokens.parse(s.signer, raw)
}

// jwks serves the public keys of the entry tokens. They change only with a
// restart, and a verifier fetches again on a kid it does not know; the
// max-age bounds how long a cache that does not serves an old set
// (rotation waits longer than it before a new key signs).
func (s *server) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	return c.Send(s.tokens.jwks)
}

// serviceLabelRE is what a service key's label may be (as an admin key's).
var serviceLabelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// serviceKey is one key of -service-keys.
type serviceKey struct {
	label string
	key   []byte
}

// loadServiceKeys reads the -service-keys file, a YAML mapping of label to
// key (at least 16 bytes, each key once). A key that is also an admin key
// is refused: the kinds are kept apart.
func loadServiceKeys(path string, adminKeys admin.Keys) ([]serviceKey, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-service-keys %v", err)
	}
	var m map[string]string
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("-service-keys %s: want a mapping of label to key: %s", path, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	var out []serviceKey
	seen := map[string]string{}
	for label, key := range m {
		switch _, isAdmin := adminKeys.Match([]byte(key)); {
		case !serviceLabelRE.MatchString(label):
			return nil, fmt.Errorf("-service-keys %s: label %q must match %s", path, label, serviceLabelRE)
		case len(key) < 16:
			return nil, fmt.Errorf("-service-keys %s: the key of %q must be at least 16 bytes", path, label)
		case seen[key] != "":
			return nil, fmt.Errorf("-service-keys %s: the key of %q is also the key of %q", path, label, seen[key])
		case isAdmin:
			return nil, fmt.Errorf("-service-keys %s: the key of %q is an admin key; give services keys of their own", path, label)
		}
		seen[key] = label
		out = append(out, serviceKey{label: label, key: []byte(key)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-service-keys %s: no keys", path)
	}
	return out, nil
}

// serviceKeySet is -service-keys as the visitor API sees them.
type serviceKeySet struct{ s *server }

// ServiceKey returns the label of key, compared in constant time with
// each service key.
func (a serviceKeySet) ServiceKey(key string) (string, bool) {
	b := []byte(key)
	label := ""
	for _, k := range a.s.serviceKeys {
		if subtle.ConstantTimeCompare(k.key, b) == 1 {
			label = k.label
		}
	}
	return label, label != ""
}

// entryParser reads entry tokens for the visitor API (entryTokens.parse).
type entryParser struct{ s *server }

func (a entryParser) ParseToken(raw string) (queue.Token, error) { return a.s.parseToken(raw) }

// startEntry loads the service keys and checks this instance's signing
// keys against the running instances'.
func (s *server) startEntry(ctx context.Context) error {
	keys, err := loadServiceKeys(s.cfg.Entry.ServiceKeysFile, s.ops.Now().Keys)
	if err != nil {
		return err
	}
	s.serviceKeys = keys
	if len(keys) == 0 {
		s.log.Info("entry tokens: no -service-keys; /api/v1/tokens/consume refuses every call")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.checkEntryKeys(cctx)
}
