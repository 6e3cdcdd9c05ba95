// Package issuer signs the entry tokens this server hands out and reads
// those sent back to it. A token is a JWT of package entry, signed with
// the deployment's key set, its exp the room's cap; tokens of the former
// HMAC format ("v1.…") are still read, for those issued before an
// upgrade. The instances sharing one Redis must sign with keys each other
// accepts: Check and Publish keep a line per instance in Redis and refuse
// a key set the running instances would not accept (keys.go).
package issuer

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Config says how tokens are signed.
type Config struct {
	// KeysFile is the key file (entry.LoadKeySet); empty derives one
	// Ed25519 key from the secret.
	KeysFile string
	// Issuer is the tokens' iss; empty is http://<Addr>.
	Issuer string
	// Addr is the address the server listens on, for the default issuer.
	Addr string
	// Shared is whether other instances may share the Redis (a warning
	// when Issuer is empty, since each instance then names itself).
	Shared bool
	// TokenTTL and TokenMax are the deployment's idle lifetime and cap of
	// a token, where a room sets none.
	TokenTTL, TokenMax time.Duration
}

// Rooms gives a room's own token lifetimes.
type Rooms interface {
	RoomSettings(room string) (settings.Room, bool)
}

// Issuer signs entry tokens (queue.TokenSigner) and parses them.
type Issuer struct {
	keys   *entry.KeySet
	issuer string
	ttl    time.Duration
	max    time.Duration
	rooms  Rooms
	legacy *visitorsig.Signer
	log    *slog.Logger
	jwks   []byte // the published keys, encoded once

	since   atomic.Int64           // when this instance joined the key lines, Unix ms of Redis time (Check)
	refused atomic.Pointer[string] // why this instance must not sign; nil while it may (Publish)
}

// New loads cfg.KeysFile, or derives the key from secret (generated says
// the secret was made up at this start, so the key lives as long as the
// process). legacy reads tokens of the former format.
func New(cfg Config, secret []byte, generated bool, legacy *visitorsig.Signer, log *slog.Logger) (*Issuer, error) {
	ks, err := keySet(cfg.KeysFile, secret, generated, log)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(ks.JWKS())
	if err != nil {
		return nil, err
	}
	iss := cfg.Issuer
	if iss == "" {
		iss = "http://" + hostOf(cfg.Addr)
		if cfg.Shared {
			log.Warn("entry tokens: no -issuer; each instance names itself by its address in iss, so a service checking iss sees several issuers", "iss", iss)
		}
	}
	return &Issuer{keys: ks, issuer: iss, ttl: cfg.TokenTTL, max: cfg.TokenMax, legacy: legacy, log: log, jwks: body}, nil
}

func keySet(path string, secret []byte, generated bool, log *slog.Logger) (*entry.KeySet, error) {
	if path != "" {
		data, err := ReadKeyFile(path)
		if err != nil {
			return nil, fmt.Errorf("-signing-keys %v", err)
		}
		ks, err := entry.ParseKeySet(data)
		if err != nil {
			return nil, fmt.Errorf("-signing-keys %s: %v", path, err)
		}
		return ks, nil
	}
	k, err := entry.DeriveKey(secret)
	if err != nil {
		return nil, err
	}
	ks, err := entry.NewKeySet(k.ID, k)
	if err != nil {
		return nil, err
	}
	if generated {
		log.Warn("entry tokens: signed with a key derived from the generated secret; it changes at every start (set -signing-keys or -secret)", "kid", k.ID)
	} else {
		log.Info("entry tokens: signed with a key derived from -secret; use -signing-keys to rotate keys", "kid", k.ID)
	}
	return ks, nil
}

// hostOf is addr as a host to name in a URL: an unspecified address is
// localhost.
func hostOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

// SetRooms gives the rooms' own lifetimes; until then the deployment's
// apply. Call it before the server runs.
func (i *Issuer) SetRooms(r Rooms) { i.rooms = r }

// Keys is the key set tokens are signed with.
func (i *Issuer) Keys() *entry.KeySet { return i.keys }

// Issuer is the tokens' iss.
func (i *Issuer) Issuer() string { return i.issuer }

// JWKS is the public key set, encoded.
func (i *Issuer) JWKS() []byte { return i.jwks }

// SignEdgeSession signs the edge session of visitor in room (the entry
// of notBefore), valid until until, bound to the visitor's credential
// (entry.Session), with the key and iss of the entry tokens.
func (i *Issuer) SignEdgeSession(room, visitor string, notBefore, until time.Time, credential string) (string, error) {
	return i.keys.SignSession(entry.Session{Issuer: i.issuer, Room: room, Visitor: visitor,
		NotBefore: notBefore, ExpiresAt: until, Credential: credential})
}

// SignToken signs t as a JWT whose exp is the room's cap (as admit.lua
// sets it: notBefore + max(cap, idle lifetime)), whose wr_idle_exp_ms is
// t's expiry now and whose iat is its notBefore. It returns "" (a state
// without a token; the visitor's next poll, at a ready instance, gets one)
// while this instance must not sign (Signing).
func (i *Issuer) SignToken(t visitorsig.Token) string {
	if i.refused.Load() != nil {
		return ""
	}
	ttl, maxTTL := i.ttl, i.max
	if i.rooms != nil {
		if c, ok := i.rooms.RoomSettings(t.Room); ok {
			ttl, maxTTL = cmp.Or(c.TokenTTL, ttl), cmp.Or(c.TokenMax, maxTTL)
		}
	}
	tok, err := i.keys.Sign(entry.Claims{
		Issuer: i.issuer, Room: t.Room, Visitor: t.Visitor,
		NotBefore: t.NotBefore, ExpiresAt: t.NotBefore.Add(max(ttl, maxTTL)), IdleExpiresAt: t.ExpiresAt,
		// The admission's moment, not the copy's: every poll signs the
		// same EdDSA token until the idle expiry slides.
		IssuedAt: t.NotBefore,
	})
	if err != nil {
		i.log.Error("entry token not signed", "room", t.Room, "err", err)
	}
	return tok
}

// ParseToken checks a token's signature and names (not its time: the
// queue's records decide that with the Redis clock).
func (i *Issuer) ParseToken(raw string) (visitorsig.Token, error) {
	if strings.HasPrefix(raw, "v1.") && i.legacy != nil {
		return i.legacy.ParseToken(raw)
	}
	c, err := i.keys.Parse(raw)
	if err != nil {
		return visitorsig.Token{}, err
	}
	// The keys, shared by every instance, are the authority here, not iss:
	// instances left to the default issuer name themselves differently.
	if !wire.ValidRoom(c.Room) || !wire.ValidVisitor(c.Visitor) {
		return visitorsig.Token{}, fmt.Errorf("%w: room or visitor", entry.ErrInvalid)
	}
	exp := c.IdleExpiresAt
	if exp.IsZero() || exp.After(c.ExpiresAt) {
		exp = c.ExpiresAt
	}
	return visitorsig.Token{Room: c.Room, Visitor: c.Visitor, NotBefore: c.NotBefore, ExpiresAt: exp}, nil
}
