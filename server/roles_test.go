package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/internal/redistest"
)

const (
	opsKey    = "operator-key-0123456789abcdef"
	viewerKey = "viewer-key-0123456789abcdef00"
)

// rolesServer runs with the admin key and an operator and a read-only key
// from -admin-keys, in both spellings of the file.
func rolesServer(t *testing.T) *testServer {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	writeFile(t, keys, "desk:\n  key: "+opsKey+"\n  role: operator\nwall: {key: "+viewerKey+", role: read-only}\n")
	return startServer(t, redistest.StartReal(t), "rueidis", func(c *config) { withAdmin(c); c.AdminKeysFile = keys })
}

// Every admin route is tried with each role: a role below the route's gets
// 403 forbidden naming the role needed, one at or above it gets through.
// Every registered admin route has a role of its own in admin.Routes.
func TestAdminRoles(t *testing.T) {
	ts := rolesServer(t)
	v := newVisitor(t, ts.URL)
	if r := v.admin("POST", "/rooms", `{"room":"drop"}`); r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Raw)
	}
	bodies := map[string]string{
		"POST /rooms":               `{"room":"new-%s"}`,
		"PUT /rooms/:room":          `{"batch":12}`,
		"PUT /rooms/:room/message":  `{"text":"Back soon."}`,
		"POST /rooms/:room/preview": `{"batch":12}`,
		"POST /visitors":            `{"id":"user-1"}`,
		"POST /rooms/:room/invites": `{"count":2}`,
	}
	keys := []struct {
		name string
		key  string
		role admin.Role
	}{{"admin", testAdminKey, admin.Admin}, {"operator", opsKey, admin.Operator}, {"read-only", viewerKey, admin.ReadOnly}}
	seen := map[string]bool{}
	for _, rt := range ts.app.GetRoutes(true) {
		rest, ok := strings.CutPrefix(rt.Path, "/api/v1/admin/")
		if !ok || rt.Method == fiber.MethodHead {
			continue
		}
		route := rt.Method + " /" + rest
		need, listed := admin.Routes[route]
		if !listed {
			t.Errorf("%s has no role in admin.Routes", route)
			continue
		}
		seen[route] = true
		path := strings.NewReplacer(":room", "drop", ":visitor", "nobody").Replace("/" + rest)
		for _, k := range keys {
			t.Run(route+"/"+k.name, func(t *testing.T) {
				body := bodies[route]
				if strings.Contains(body, "%s") {
					body = fmt.Sprintf(body, k.name)
				}
				r := v.do(rt.Method, "/api/v1/admin"+path, body, "Authorization", "Bearer "+k.key, "Content-Type", "application/json")
				need := need
				if route == "PUT /rooms/:room" && k.role >= need {
					need = admin.Admin // the body changes batch; paused and message alone need less
				}
				if k.role >= need {
					if r.Code == 403 || r.Code == 401 {
						t.Fatalf("%s refused: %d %s", k.name, r.Code, r.Raw)
					}
					return
				}
				if r.Code != 403 || r.errCode() != "forbidden" || !strings.Contains(r.Raw, "needs the "+need.String()+" role") {
					t.Fatalf("%s let in or refused wrongly: %d %s", k.name, r.Code, r.Raw)
				}
				if r := v.do(rt.Method, "/api/v1/admin"+path, body, "Authorization", "Bearer not-a-key-0123456789abcdef"); r.Code != 401 {
					t.Fatalf("no key: %d", r.Code)
				}
			})
		}
	}
	for route := range admin.Routes {
		if !seen[route] {
			t.Errorf("admin.Routes lists %s, which is not registered", route)
		}
	}
	// Another spelling of a route is placed as the router places it.
	if r := v.do("POST", "/api/v1/admin/Rooms/drop/Invites/", `{}`, "Authorization", "Bearer "+opsKey, "Content-Type", "application/json"); r.Code != 403 {
		t.Fatalf("operator minting through another spelling: %d %s", r.Code, r.Raw)
	}
	// An operator's settings change may touch only paused and message.
	as := func(key, method, path, body string) reply {
		return v.do(method, "/api/v1/admin"+path, body, "Authorization", "Bearer "+key, "Content-Type", "application/json")
	}
	if r := as(opsKey, "PUT", "/rooms/drop", `{"message":"Doors at nine.","paused":true}`); r.Code != 200 || r.str("message") != "Doors at nine." {
		t.Fatalf("operator message by PUT: %d %s", r.Code, r.Raw)
	}
	if r := as(opsKey, "PUT", "/rooms/drop", `{"message":"x","seats":3}`); r.Code != 403 || !strings.Contains(r.Raw, "needs the admin role") {
		t.Fatalf("operator seats: %d %s", r.Code, r.Raw)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+viewerKey)
	if resp, err := noKeepAlive.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("metrics with a read-only key: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for key, want := range map[string]string{testAdminKey: "admin", opsKey: "operator", viewerKey: "read-only"} {
		r := as(key, "GET", "/whoami", "")
		if r.Code != 200 || r.str("role") != want {
			t.Fatalf("whoami %s: %d %s", want, r.Code, r.Raw)
		}
	}
}

// Minting invite codes (priority ones too), a credential for a user id and
// ending a session are audited, without the secret minted.
func TestAuditOfAccessActions(t *testing.T) {
	ts, session, _ := gatewayServer(t, redistest.StartReal(t), withAdmin)
	v := newVisitor(t, ts.URL)
	r := v.admin("POST", "/rooms/gw/invites", `{"count":3,"uses":2,"priority":true}`)
	if r.Code != 201 {
		t.Fatalf("invites: %d %s", r.Code, r.Raw)
	}
	codes, _ := r.Body["codes"].([]any)
	cred := v.admin("POST", "/visitors", `{"id":"user-42"}`)
	if cred.Code != 200 {
		t.Fatalf("visitor: %d %s", cred.Code, cred.Raw)
	}
	sess, err := ts.gw.Sessions().Parse(session)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.admin("DELETE", "/rooms/gw/sessions/"+sess.Visitor, ""); r.Code != 204 {
		t.Fatalf("end session: %d %s", r.Code, r.Raw)
	}
	type entry struct {
		Who, Action, Visitor string
		Invites              *admin.Invites
	}
	read := func(path string) ([]entry, string) {
		a := v.admin("GET", path, "")
		var out struct{ Entries []entry }
		if err := json.Unmarshal([]byte(a.Raw), &out); err != nil {
			t.Fatalf("%s: %v %s", path, err, a.Raw)
		}
		return out.Entries, a.Raw
	}
	room, raw := read("/rooms/gw/audit")
	if len(room) < 2 || room[0].Action != "end-session" || room[0].Visitor != sess.Visitor || room[0].Who != "admin" {
		t.Fatalf("room audit: %s", raw)
	}
	if m := room[1]; m.Action != "mint-invites" || m.Invites == nil || *m.Invites != (admin.Invites{Count: 3, Uses: 2, Priority: true, ExpiresAt: m.Invites.ExpiresAt}) || m.Invites.ExpiresAt == "" {
		t.Fatalf("mint audit: %s", raw)
	}
	for _, c := range codes {
		if s := fmt.Sprint(c); strings.Contains(raw, s) || strings.Contains(raw, s[len(s)/2:]) {
			t.Fatalf("the audit holds a minted code: %s", raw)
		}
	}
	all, raw := read("/audit")
	if len(all) != 1 || all[0].Action != "mint-visitor" || all[0].Visitor != "user-42" || all[0].Who != "admin" {
		t.Fatalf("instance audit: %s", raw)
	}
	if c := cred.str("visitor"); c == "" || strings.Contains(raw, c) || strings.Contains(raw, c[strings.LastIndex(c, ".")+1:]) {
		t.Fatalf("the audit holds the credential %q: %s", c, raw)
	}
	if n, _ := ts.q.AdminAudit(context.Background()); len(n) != 1 {
		t.Fatalf("stored %d", len(n))
	}
}
