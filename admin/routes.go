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

	"GET /rooms/:room/report":               ReadOnly,
	"GET /rooms/:room/events/:event/report": ReadOnly,

	"POST /rooms":                           Admin,
	"POST /rooms/:room/invites":             Admin,
	"POST /visitors":                        Admin,
	"DELETE /rooms/:room/sessions/:visitor": Admin,
}

// RouteRole is the least role for a request to path (under /api/v1/admin)
// by method: the path is matched as the router matches it (any case, a
// trailing slash ignored), with the room and visitor segments as
// parameters. Anything it cannot place needs Admin.
func RouteRole(method, path string) Role {
	rest, ok := strings.CutPrefix(strings.ToLower(path), "/api/v1/admin")
	if !ok {
		return Admin
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
	if r, ok := Routes[method+" /"+strings.Join(segs, "/")]; ok {
		return r
	}
	return Admin
}
