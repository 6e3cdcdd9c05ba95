package visit

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/branding"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// roomLook is a room's look on the wire: what the waiting page applies
// (GET /api/v1/rooms/{room}/branding, and the page's boot data).
type roomLook struct {
	Title      string `json:"title,omitempty"`
	Logo       string `json:"logo,omitempty"`
	Accent     string `json:"accent,omitempty"`
	Background string `json:"background,omitempty"`
	// Footer is HTML cleaned to the allow-list (branding.Footer), again
	// on the way out, whatever is stored.
	Footer string `json:"footer,omitempty"`
}

func roomBranding(c settings.Room) roomLook {
	b := roomLook{Title: c.BrandTitle, Logo: c.BrandLogo, Accent: c.BrandAccent, Background: c.BrandBackground}
	if c.BrandFooter != "" {
		b.Footer = branding.Footer(c.BrandFooter)
	}
	return b
}

// roomBrandingFor returns room's branding from the room cache, or read
// from Redis for a room the cache has not read yet.
func (a *API) roomBrandingFor(ctx context.Context, room string) (roomLook, error) {
	if cfg, ok := a.d.Rooms.Settings(room); ok {
		return roomBranding(cfg), nil
	}
	cfg, err := a.d.Queue.RoomConfig(ctx, room)
	if err != nil {
		return roomLook{}, err
	}
	return roomBranding(cfg), nil
}

// getBranding answers GET /api/v1/rooms/{room}/branding, for pages of the
// operator's own (Options.PageDir, or a shop's page with waitroom.js).
func (a *API) getBranding(c *fiber.Ctx) error {
	r, err := Room(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.redisCtx(c)
	defer cancel()
	b, err := a.roomBrandingFor(ctx, r)
	if err != nil {
		return a.StoreError(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.JSON(b)
}

// pageBranding is the branding of the page's ?room, or nil when it has
// none or cannot be read quickly: the page then shows the default look.
func (a *API) pageBranding(c *fiber.Ctx) *roomLook {
	r := c.Query("room", "demo")
	if !wire.ValidRoom(r) {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 500*time.Millisecond)
	defer cancel()
	b, err := a.roomBrandingFor(ctx, r)
	if err != nil || b == (roomLook{}) {
		return nil
	}
	return &b
}
