// Package static holds the waiting-room page, the JS client and the admin
// dashboard, embedded in the binary so the server needs no files beside it.
package static

import (
	"embed"
	"io/fs"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/internal/httperr"
)

// Files holds index.html (the waiting-room page), admin.html (the
// dashboard), waitroom.js (the client other sites can include), the
// pages' own scripts, style sheet and icon, and the page's translations
// (i18n-LANG.json, one per language), served under /assets/, and the
// OpenAPI document of the HTTP API (openapi.json).
//
//go:embed *.html *.js *.css *.svg i18n-*.json openapi.json
var Files embed.FS

// Languages lists the codes of the page's translations (i18n-CODE.json).
func Languages() ([]string, error) {
	names, err := fs.Glob(Files, "i18n-*.json")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "i18n-"), ".json"))
	}
	return out, nil
}

// Handler serves the embedded file name with content type ctype, not
// cached without a check (no-cache). A name not embedded answers 404
// not_found rather than failing the server's start.
func Handler(name, ctype string) fiber.Handler {
	b, err := Files.ReadFile(name)
	if err != nil {
		return func(c *fiber.Ctx) error { return httperr.New(404, "not_found", "no such page") }
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Send(b)
	}
}
