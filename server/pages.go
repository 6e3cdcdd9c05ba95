package main

import (
	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/static"
)

// staticFile serves one embedded file (the dashboard's page).
func staticFile(name, ctype string) fiber.Handler {
	b, err := static.Files.ReadFile(name)
	if err != nil {
		// A page that is not there yet answers 404, not a crash.
		return func(c *fiber.Ctx) error { return httperr.New(404, "not_found", "no such page") }
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Send(b)
	}
}
