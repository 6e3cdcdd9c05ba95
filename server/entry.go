package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/issuer"
	"github.com/waitroom/waitroom/internal/visitorsig"
)

// entryConfig is how entry tokens are signed and who may spend them.
type entryConfig struct {
	KeysFile        string // -signing-keys: the key file (entry.ParseKeySet); empty: derived from -secret
	Issuer          string // -issuer: the tokens' iss; empty: http://<-addr>
	ServiceKeysFile string // -service-keys: labelled keys of the protected services
}

// entryFlags defines the flags of entry tokens.
func entryFlags(fs *flag.FlagSet, c *entryConfig) {
	fs.StringVar(&c.KeysFile, "signing-keys", "", "entry token key file (JSON: active kid and JWKs with private parts; mode 0600 or stricter; waitroom keys generate writes one; see docs/entry-tokens.md); empty: one Ed25519 key derived from -secret")
	fs.StringVar(&c.Issuer, "issuer", "", "iss of entry tokens, the URL protected services know this server by (empty: http://<addr>)")
	fs.StringVar(&c.ServiceKeysFile, "service-keys", "", "file of labelled service keys (YAML: label: key; mode 0600 or stricter) that may spend entry tokens (POST /api/v1/tokens/consume) and end gateway sessions; reread on SIGHUP")
}

// newIssuer builds the entry tokens' issuer from the flags.
func newIssuer(cfg config, secret []byte, legacy *visitorsig.Signer, log *slog.Logger) (*issuer.Issuer, error) {
	return issuer.New(issuer.Config{
		KeysFile: cfg.Entry.KeysFile, Issuer: cfg.Entry.Issuer, Addr: cfg.Addr, Shared: cfg.Redis != "",
		TokenTTL: cfg.TokenTTL, TokenMax: cfg.TokenMax,
	}, secret, cfg.Secret == "", legacy, log)
}

// parseToken checks an entry token sent to this server.
func (s *server) parseToken(raw string) (visitorsig.Token, error) { return s.tokens.ParseToken(raw) }

// jwks serves the public keys of the entry tokens. They change only with a
// restart, and a verifier fetches again on a kid it does not know; the
// max-age bounds how long a cache that does not serves an old set
// (rotation waits longer than it before a new key signs).
func (s *server) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
	return c.Send(s.tokens.JWKS())
}

// startEntry loads the service keys and checks this instance's signing
// keys against the running instances'.
func (s *server) startEntry(ctx context.Context) error {
	// The admin keys in force when the file is read: a reload compares
	// with those the same reload read.
	s.serviceKeys = issuer.NewServices(s.cfg.Entry.ServiceKeysFile, func(k []byte) bool { _, ok := s.opsNow().Keys.Match(k); return ok })
	n, err := s.serviceKeys.Reload()
	if err != nil {
		return err
	}
	if n == 0 {
		s.log.Info("entry tokens: no -service-keys; /api/v1/tokens/consume refuses every call")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.tokens.Check(cctx, s.redis, s.id)
}

// unpublishEntryKeys drops this instance's line of entry keys at shutdown.
func (s *server) unpublishEntryKeys(ctx context.Context) {
	if err := s.tokens.Unpublish(ctx, s.redis, s.id); err != nil {
		s.log.Debug("entry keys: line not dropped", "err", err)
	}
}

// reloadServiceKeys reads -service-keys again (on SIGHUP): a key removed
// from the file stops working now. A file refused leaves the keys in
// force, loudly.
func (s *server) reloadServiceKeys() error {
	if s.cfg.Entry.ServiceKeysFile == "" {
		return nil
	}
	n, err := s.serviceKeys.Reload()
	if err != nil {
		s.log.Error("service keys reload refused: the keys in force stay", "err", err)
		return err
	}
	s.log.Info("reloaded the service keys", "serviceKeys", n)
	return nil
}
