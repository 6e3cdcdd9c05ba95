package main

import (
	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/admin"
)

// adminLabel is the label of the key the request was let in with.
func adminLabel(c *fiber.Ctx) string {
	if l, ok := c.Locals("adminLabel").(string); ok {
		return l
	}
	return "admin"
}

// adminRole is the role of the key the request was let in with.
func adminRole(c *fiber.Ctx) admin.Role {
	if r, ok := c.Locals("adminRole").(admin.Role); ok {
		return r
	}
	return admin.ReadOnly
}
