package admin

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Pages renders the waiting page for a preview (a *visit.API). Safe for
// concurrent use.
type Pages interface {
	// Languages are the codes the page comes in, the fallback first.
	Languages() []string
	// PreviewPage is room's page as a visitor with language lang sees it
	// in state st, which the page shows without joining; it writes
	// nothing.
	PreviewPage(ctx context.Context, room, lang string, st wire.State) ([]byte, error)
}

// PreviewStates are the states GET /admin/preview renders, by name.
var PreviewStates = []string{"waiting", "paused", "prequeue", "soldout", "admitted", "closed"}

var (
	errPreviewState = httperr.New(400, "invalid_state", "state must be one of "+strings.Join(PreviewStates, ", "))
	errNoPreview    = httperr.New(404, "not_found", "this server has no waiting page to preview")
)

// MountPreview registers GET /admin/preview on app, beside the dashboard,
// behind the admin keys (PageRoutes says which role).
func (a *API) MountPreview(app fiber.Router) {
	app.Get("/admin/preview", a.pageAuth, a.pagePreview)
}

// pageAuth is auth for the routes of PageRoutes.
func (a *API) pageAuth(c *fiber.Ctx) error {
	k, err := a.Key(c)
	if err != nil {
		return err
	}
	c.Locals(labelLocal, k.Label)
	c.Locals(roleLocal, k.Role)
	method := c.Method()
	if method == fiber.MethodHead {
		method = fiber.MethodGet
	}
	need, ok := PageRoutes[method+" "+c.Route().Path]
	if !ok {
		need = Admin
	}
	if err := needRole(c, need); err != nil {
		return err
	}
	return c.Next()
}

// pagePreview is GET /admin/preview?room=R&state=S&lang=L: room's waiting
// page as a visitor sees it in state S (PreviewStates) in language L
// (default en), with the room's branding and message, from a made-up
// state. Nothing is written: no ticket, no queue entry, no audit entry.
func (a *API) pagePreview(c *fiber.Ctx) error {
	if a.opts.Pages == nil {
		return errNoPreview
	}
	room := c.Query("room")
	if !wire.ValidRoom(room) {
		return errInvalidRoom
	}
	state := c.Query("state", "waiting")
	if !slices.Contains(PreviewStates, state) {
		return errPreviewState
	}
	langs := a.opts.Pages.Languages()
	lang := c.Query("lang", langs[0])
	if !slices.Contains(langs, lang) {
		return httperr.New(400, "invalid_lang", "lang must be one of "+strings.Join(langs, ", "))
	}
	ctx, cancel := a.ctx(c)
	defer cancel()
	exists, err := a.store.RoomExists(ctx, room)
	if err != nil {
		return a.storeError(c, err)
	}
	if !exists {
		return httperr.New(404, "room_not_found", "no room "+room+": create it first")
	}
	cfg, err := a.store.RoomConfig(ctx, room)
	if err != nil {
		return a.storeError(c, err)
	}
	eff := cfg.Effective(a.opts.Defaults.Defaults)
	page, err := a.opts.Pages.PreviewPage(ctx, room, lang, previewState(state, eff, a.opts.Defaults.Tick, time.Now()))
	if err != nil {
		return a.storeError(c, err)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	// Opened on its own, the page runs as it would in the dashboard's
	// frame: its scripts, in an origin of its own.
	c.Set(fiber.HeaderContentSecurityPolicy, "sandbox allow-scripts")
	return c.Send(page)
}

// The made-up figures of a waiting preview: 420 ahead at 1.4 a second,
// the rate swinging by 0.3, which a visitor is told as "about 4–6
// minutes"; in a lottery, 1200 in the draw.
const (
	previewPosition = 420
	previewRate     = 1.4
	previewRateSD   = 0.3
	previewDraw     = 1200
)

// previewState is the state a visitor of a room with the settings eff
// (defaults filled in) would be sent in the named preview state at now,
// with the room's message. tick is the admission tick, for a lottery's
// range.
func previewState(name string, eff settings.Room, tick time.Duration, now time.Time) wire.State {
	st := wire.State{Status: wire.StatusWaiting, Message: eff.Message, NextPoll: 5 * time.Second}
	switch name {
	case "waiting", "paused":
		st.Paused = name == "paused"
		if eff.Method == settings.MethodRandom {
			st.InDraw = previewDraw
			st.ChancePerMinute = wire.DrawChance(previewDraw, previewRate)
			st.ETARange = queue.DrawWaitRange(previewDraw, previewRate, tick)
			break
		}
		st.Position = previewPosition
		st.ETASeconds = queue.ETAAt(previewPosition, previewRate)
		st.ETARange = wire.Range{Low: queue.ETAAt(previewPosition, previewRate+previewRateSD),
			High: queue.ETAAt(previewPosition, previewRate-previewRateSD)}
		st.Rate = previewRate
	case "prequeue":
		st.OpensAt = eff.OpensAt
		if !st.OpensAt.After(now) {
			st.OpensAt = now.Add(15 * time.Minute).Truncate(time.Minute)
		}
	case "soldout":
		st.Status = wire.StatusSoldOut
	case "admitted":
		ttl := eff.TokenTTL
		if ttl <= 0 {
			ttl = 5 * time.Minute
		}
		st = wire.State{Status: wire.StatusAdmitted, Token: "preview", NotBefore: now, ExpiresAt: now.Add(ttl), Message: eff.Message}
	case "closed":
		st = wire.State{Status: wire.StatusClosed, Message: eff.Message}
	}
	return st
}
