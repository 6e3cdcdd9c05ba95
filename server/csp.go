package main

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// adminCSP is what the dashboard's own code needs: its script, styles and
// API on this origin, nothing inline, and no frame around it. Its page
// preview is a frame of the dashboard's (srcdoc) that inherits this policy:
// images on https are allowed for the logos and backgrounds of the rooms'
// branding, as the waiting page allows them.
const adminCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageCSP is what the built-in waiting page needs: its scripts and styles
// on this origin, the proof-of-work workers it starts from Blob URLs, its
// API and push on this origin ('self' covers ws: and wss: of it), and the
// branding's images, which operators host anywhere on https. The frame
// policy is appended.
const pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; " +
	"worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'"

// adminHeaders sets the dashboard's policy.
func adminHeaders(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentSecurityPolicy, adminCSP)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	return c.Next()
}

// pageHeaders sets the waiting page's policy: the whole one for the
// built-in page, only the frame policy for an operator's own (-page-dir),
// whose code this server does not know. ancestors is -frame-ancestors.
func pageHeaders(ancestors string, ownPage bool) fiber.Handler {
	frame := "frame-ancestors " + ancestors
	csp := pageCSP + "; " + frame
	if ownPage {
		csp = frame
	}
	// X-Frame-Options has no list form: it is sent for the two policies it
	// can say, for browsers that do not read frame-ancestors.
	xfo := map[string]string{"'none'": "DENY", "'self'": "SAMEORIGIN"}[ancestors]
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentSecurityPolicy, csp)
		if xfo != "" {
			c.Set(fiber.HeaderXFrameOptions, xfo)
		}
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		return c.Next()
	}
}

// validAncestors checks -frame-ancestors: 'none', 'self', or a list of
// origins (and 'self') separated by spaces.
func validAncestors(v string) bool {
	parts := strings.Fields(v)
	if len(parts) == 0 || strings.ContainsAny(v, ";,\r\n") {
		return false
	}
	if len(parts) == 1 && parts[0] == "'none'" {
		return true
	}
	for _, p := range parts {
		if p == "'self'" {
			continue
		}
		if !strings.HasPrefix(p, "https://") && !strings.HasPrefix(p, "http://") || strings.Contains(p, "'") {
			return false
		}
	}
	return true
}
