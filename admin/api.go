package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Store is the room store the admin API reads and changes (a
// *queue.Queue).
type Store interface {
	RoomConfig(ctx context.Context, room string) (settings.Room, error)
	UpdateRoomConfig(ctx context.Context, room string, change func(*settings.Room) error) (settings.Room, error)
	RoomExists(ctx context.Context, room string) (bool, error)
	AllRooms(ctx context.Context) ([]string, error)
	ConfiguredRooms(ctx context.Context) ([]string, error)
	Stats(ctx context.Context, room string) (queue.RoomStats, error)
	Presence(ctx context.Context, room string) (queue.PresenceStats, error)
	// ActivationOf is the state last noted of a room with activation busy
	// (queueing or passing visitors through, since when); ok is false
	// when none is.
	ActivationOf(ctx context.Context, room string) (a queue.Activation, ok bool, err error)
	Session(ctx context.Context, room, visitor string) (notBefore, expiresAt time.Time, ok bool, err error)
	AppendAudit(ctx context.Context, room string, entry []byte) error
	// AppendAuditOf and AuditOf are the room's trail named trail, apart
	// from its own (AppendAudit, Audit).
	AppendAuditOf(ctx context.Context, room, trail string, entry []byte) error
	AuditOf(ctx context.Context, room, trail string) ([]string, error)
	AppendAdminAudit(ctx context.Context, entry []byte) error
	Audit(ctx context.Context, room string) ([]string, error)
	AdminAudit(ctx context.Context) ([]string, error)
}

// Minter mints invite codes (an *invite.Minter).
type Minter interface {
	Mint(invite.Code) string
}

// Instance is what one server instance last reported, for a room's stats.
type Instance struct {
	At             time.Time // when it reported
	WS, SSE        int64     // its push connections
	LagP50, LagP99 time.Duration
	LagCount       uint64
}

// Options are the admin API's dependencies. Every function must be safe
// for concurrent use; all are required but Reports and Events.
type Options struct {
	Store   Store
	Invites Minter
	// Keys are the admin keys in force now (they change on a reload).
	Keys func() Keys
	// Pins returns what the rooms file sets for room and the file's path.
	Pins func(room string) (r roomsfile.Room, path string, ok bool)
	// Defaults are the instance's values of what a room leaves to it.
	Defaults Defaults
	// Instances lists what the instances last reported.
	Instances func(ctx context.Context) ([]Instance, error)
	// Credential signs a visitor credential for a visitor id.
	Credential func(visitor string) string
	// EndSession ends visitor's gateway session in room, the entry token
	// valid from notBefore to expiresAt.
	EndSession func(ctx context.Context, room, visitor string, notBefore, expiresAt time.Time) error
	// Autopilot, when set, is what a room's stats show of its autopilot
	// (nil: nothing to show).
	Autopilot func(ctx context.Context, room string, cfg settings.Room) (json.RawMessage, error)
	// ServiceKey returns the label of a service key (-service-keys),
	// which may call the ServiceRoutes and nothing else here; nil: none.
	ServiceKey func(key string) (label string, ok bool)
	// StoreError maps a failed Store call to the error the request answers
	// (and counts it).
	StoreError func(c *fiber.Ctx, err error) error
	Log        *slog.Logger
	// Webhooks gets an event for each room created, paused, resumed or
	// changed (from the audit trail) and serves the webhook routes. Nil:
	// no events, and no webhook routes.
	Webhooks Webhooks
	// Pages renders the waiting page for GET /admin/preview (nil: that
	// answers 404).
	Pages Pages
	// Events are the rooms' scheduled events; nil answers their routes
	// 503 events_unavailable and shows every room without events.
	Events Events
	// Reports reads room reports; nil: the report routes answer 404
	// reports_off.
	Reports Reports
}

// API is the admin API under /api/v1/admin.
type API struct {
	opts  Options
	store Store
	log   *slog.Logger
}

// New is the admin API with the dependencies in o.
func New(o Options) *API {
	return &API{opts: o, store: o.Store, log: o.Log}
}

// Mount registers the admin API under /admin of r, behind the admin keys.
func (a *API) Mount(r fiber.Router) {
	g := r.Group("/admin", a.auth)
	g.Get("/whoami", a.whoami)
	g.Get("/settings", a.describeSettings)
	g.Get("/audit", a.auditAll)
	g.Get("/rooms", a.listRooms)
	g.Get("/rooms/:room", a.getRoom)
	g.Put("/rooms/:room", a.putRoom)
	g.Post("/rooms/:room/pause", a.pause(true))
	g.Post("/rooms/:room/resume", a.pause(false))
	g.Get("/rooms/:room/stats", a.stats)
	g.Post("/visitors", a.mintVisitor)
	g.Delete("/rooms/:room/sessions/:visitor", a.endSession)
	g.Post("/rooms", a.createRoom)
	g.Post("/rooms/:room/preview", a.preview)
	g.Put("/rooms/:room/message", a.setMessage(false))
	g.Delete("/rooms/:room/message", a.setMessage(true))
	g.Get("/rooms/:room/audit", a.roomAudit)
	g.Post("/rooms/:room/invites", a.mintInvites)
	a.mountWebhooks(g)
	g.Get("/rooms/:room/events", a.listEvents)
	g.Post("/rooms/:room/events", a.createEvent)
	g.Get("/rooms/:room/events/:event", a.getEvent)
	g.Put("/rooms/:room/events/:event", a.putEvent)
	g.Delete("/rooms/:room/events/:event", a.deleteEvent)
	g.Get("/rooms/:room/report", a.roomReport)
	g.Get("/rooms/:room/events/:event/report", a.eventReport)
}

var (
	errAdminKey    = httperr.New(401, "invalid_admin_key", "a valid admin key is required (Authorization: Bearer <admin key>)")
	errInvalidJSON = httperr.ErrInvalidJSON
	errInvalidRoom = httperr.New(400, "invalid_room", "room names match ^[a-z0-9][a-z0-9-]{0,63}$")
)

// auth guards the admin API with the admin keys, compared in constant
// time; the key's label names who made a change in the audit trail, and
// its role must be at least the route's (Routes).
func (a *API) auth(c *fiber.Ctx) error {
	k, err := a.Key(c)
	if err != nil {
		return a.serviceAuth(c, err)
	}
	c.Locals(labelLocal, k.Label)
	c.Locals(roleLocal, k.Role)
	if err := needRole(c, RouteRole(c.Method(), c.Path())); err != nil {
		return err
	}
	return c.Next()
}

var errServiceScope = httperr.New(403, "service_key_scope", "a service key may only end gateway sessions here (DELETE /api/v1/admin/rooms/{room}/sessions/{visitor}); everything else needs an admin key")

// serviceAuth lets a request in with a service key when its route is one
// of the ServiceRoutes, labelled "service:<label>" in the audit trail;
// any other bearer gets notAdmin, the answer to a key that is no admin key.
func (a *API) serviceAuth(c *fiber.Ctx, notAdmin error) error {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok || a.opts.ServiceKey == nil {
		return notAdmin
	}
	l, ok := a.opts.ServiceKey(strings.TrimSpace(key))
	if !ok {
		return notAdmin
	}
	if !ServiceRoute(c.Method(), c.Path()) {
		return errServiceScope
	}
	c.Locals(labelLocal, "service:"+l)
	return c.Next()
}

// Key is the admin key the request's bearer token is, or the 401 error to
// answer.
func (a *API) Key(c *fiber.Ctx) (Key, error) {
	key, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !ok {
		return Key{}, errAdminKey
	}
	k, ok := a.opts.Keys().Match([]byte(strings.TrimSpace(key)))
	if !ok {
		return Key{}, errAdminKey
	}
	return k, nil
}

const (
	labelLocal = "adminLabel"
	roleLocal  = "adminRole"
)

// label is the label of the key the request was let in with.
func label(c *fiber.Ctx) string {
	if l, ok := c.Locals(labelLocal).(string); ok {
		return l
	}
	return "admin"
}

// roleOf is the role of the key the request was let in with.
func roleOf(c *fiber.Ctx) Role {
	if r, ok := c.Locals(roleLocal).(Role); ok {
		return r
	}
	return ReadOnly
}

// ctx bounds every Store call a request makes.
func (a *API) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), 2*time.Second)
}

func (a *API) storeError(c *fiber.Ctx, err error) error { return a.opts.StoreError(c, err) }

// roomParam returns the validated :room parameter.
func roomParam(c *fiber.Ctx) (string, error) {
	r := c.Params("room")
	if !wire.ValidRoom(r) {
		return "", errInvalidRoom
	}
	return r, nil
}

// pins is what the rooms file sets for room.
func (a *API) pins(room string) (roomsfile.Room, bool) {
	r, _, ok := a.opts.Pins(room)
	return r, ok
}

// fileLocks maps each setting of room that the rooms file sets to the
// reason it cannot be changed live.
func (a *API) fileLocks(room string) map[string]string {
	fr, path, ok := a.opts.Pins(room)
	if !ok || len(fr.Lines) == 0 {
		return nil
	}
	out := make(map[string]string, len(fr.Lines))
	for f, line := range fr.Lines {
		out[f] = fmt.Sprintf("set by the rooms file (%s, line %d): change it there and reload (SIGHUP)", path, line)
	}
	return out
}

// View is room's stored settings as the API shows them: with the
// instance's defaults filled in and the rooms file's pins.
func (a *API) View(room string, stored settings.Room) View {
	v := Effective(room, stored, a.opts.Defaults)
	v.FromFile = a.fileLocks(room)
	return v
}
