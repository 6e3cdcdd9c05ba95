package visit

import (
	"path"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
)

var assetTypes = map[string]string{
	".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
	".html": fiber.MIMETextHTMLCharsetUTF8, ".svg": "image/svg+xml", ".png": "image/png",
	".json": "application/json; charset=utf-8", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
	".gif": "image/gif", ".ico": "image/x-icon", ".woff2": "font/woff2",
}

// asset serves any other embedded file by name.
func (a *API) asset(c *fiber.Ctx) error {
	name := c.Params("name")
	ctype, ok := assetTypes[path.Ext(name)]
	if !ok || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return httperr.New(404, "not_found", "no such asset")
	}
	b, err := a.pageFile(name)
	if err != nil {
		return httperr.New(404, "not_found", "no such asset")
	}
	c.Set(fiber.HeaderContentType, ctype)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(b)
}
