package main

import (
	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/static"
)

// staticFile serves one embedded file.
func staticFile(name, ctype string) fiber.Handler {
	b, err := static.Files.ReadFile(name)
	if err != nil {
		panic("static: missing " + name)
	}
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, ctype)
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Send(b)
	}
}
