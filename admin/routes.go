package admin

import (
	"net/http"
	"strings"
)

// Routes is the least role that may call each admin route (method and
// path under /api/v1/admin, as registered); a route not listed needs
// Admin. An operator's PUT of a room's settings may change only the
// settings settings.Field.Steer marks.
var Routes = map[string]Role{
	"GET /whoami":                 ReadOnly,
	"GET /settings":               ReadOnly,
	"GET /audit":                  ReadOnly,
	"GET /rooms":                  ReadOnly,
	"GET /rooms/:room":            ReadOnly,
	"GET /rooms/:room/stats":      ReadOnly,
	"GET /rooms/:room/audit":      ReadOnly,
	"POST /rooms/:room/pause":     Operator,
	"POST /rooms/:room/resume":    Operator,
	"PUT /rooms/:room/message":    Operator,
	"DELETE /rooms/:room/message": Operator,
	"POST /rooms/:room/preview":   Operator,
	"PUT /rooms/:room":            Operator,

	// Scheduled events: an event that overrides settings other than an
	// operator's needs the admin role too (checked with the body).
	"GET /rooms/:room/events":               ReadOnly,
	"GET /rooms/:room/events/:event":        ReadOnly,
	"POST /rooms/:room/events":              Operator,
	"PUT /rooms/:room/events/:event":        Operator,
	"DELETE /rooms/:room/events/:event":     Operator,
	"GET /rooms/:room/report":               ReadOnly,
	"GET /rooms/:room/events/:event/report": ReadOnly,

	"POST /rooms":                           Admin,
	"POST /rooms/:room/invites":             Admin,
	"POST /visitors":                        Admin,
	"DELETE /rooms/:room/sessions/:visitor": Admin,
	// Webhook URLs may carry credentials of their own: admins only.
	"GET /rooms/:room/webhooks":         Admin,
	"PUT /rooms/:room/webhooks":         Admin,
	"GET /webhooks/dead":                Admin,
	"POST /webhooks/dead/:id/redeliver": Admin,
}

// What a call may do beyond what its route says, in the words of the role
// table in docs/admin.md: each needs the role Acts gives it, whichever
// route it goes through. Whatever a role may not do directly it may not
// do through an event either.
const (
	// ActCreateRoom: a key below it gets 404 room_not_found from any call
	// on a room nobody created, which would otherwise create the room.
	ActCreateRoom     = "create a room, also by a pause, resume, message, settings change or event on a room nobody created"
	ActChangeSettings = "change a setting other than paused and message"
	ActEventSettings  = "schedule an event whose settings change a setting other than paused and message"
	ActEventShuffle   = "schedule an event with a shuffled pre-queue (it sets opensAt)"
	ActEventClose     = "schedule an event with atEnd: close (it takes everyone waiting out of the queue)"
	ActOthersEvent    = "change or delete an event an admin or the rooms file wrote, or one an operator could not write"
)

// Acts is the least role for each act.
var Acts = map[string]Role{
	ActCreateRoom:     Admin,
	ActChangeSettings: Admin,
	ActEventSettings:  Admin,
	ActEventShuffle:   Admin,
	ActEventClose:     Admin,
	ActOthersEvent:    Admin,
}

// ServiceRoutes are the routes a service key (-service-keys) may call,
// with no admin role: a protected service ends the gateway session of a
// visitor it is done with.
var ServiceRoutes = map[string]bool{
	"DELETE /rooms/:room/sessions/:visitor": true,
}

// ServiceRoute says whether a service key may call path by method,
// matched as RouteRole matches.
func ServiceRoute(method, path string) bool {
	return ServiceRoutes[routeKey(method, path)]
}

// PageRoutes is the least role for each route of the dashboard's own
// beside the API (method and path as registered by MountPreview). A
// preview only shows what a visitor would see: any key may.
var PageRoutes = map[string]Role{
	"GET /admin/preview": ReadOnly,
}

// RouteRole is the least role for a request to path (under /api/v1/admin)
// by method: the path is matched as the router matches it (any case, a
// trailing slash ignored), with the room and visitor segments as
// parameters. Anything it cannot place needs Admin.
func RouteRole(method, path string) Role {
	if r, ok := Routes[routeKey(method, path)]; ok {
		return r
	}
	return Admin
}

// routeKey is the Routes key of a request to path by method, or "" for a
// path outside /api/v1/admin.
func routeKey(method, path string) string {
	rest, ok := strings.CutPrefix(strings.ToLower(path), "/api/v1/admin")
	if !ok {
		return ""
	}
	rest = strings.TrimSuffix(rest, "/")
	segs := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(segs) >= 2 && segs[0] == "rooms" {
		segs[1] = ":room"
	}
	if len(segs) >= 4 && segs[2] == "sessions" {
		segs[3] = ":visitor"
	}
	if len(segs) >= 4 && segs[2] == "events" {
		segs[3] = ":event"
	}
	if method == http.MethodHead {
		method = http.MethodGet
	}
	return method + " /" + strings.Join(segs, "/")
}
