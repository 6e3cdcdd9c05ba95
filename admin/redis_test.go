package admin

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
)

// redisAPI is the admin API over a real redis-server: the queue as its
// store and the schedule as its events (whose loop does not run), with the
// keys of newTestAPIEvents.
func redisAPI(t *testing.T) (*fiber.App, rediscall.Redis) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rc, err := redisconn.Open(context.Background(), redisconn.Options{URL: redistest.StartReal(t).URL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	signer, err := visitorsig.NewSigner([]byte("0123456789abcdef-test-secret"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(rc.Redis(), signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := Keys{NewKey("root", []byte(adminSecret), Admin), NewKey("desk", []byte(opsSecret), Operator), NewKey("wall", []byte(viewSecret), ReadOnly)}
	a := New(Options{
		Store:      q,
		Invites:    invite.NewMinter([]byte("secret-0123456789abcdef0123456789")),
		Keys:       func() Keys { return keys },
		Pins:       func(string) (roomsfile.Room, string, bool) { return roomsfile.Room{}, "", false },
		Defaults:   Defaults{Defaults: settings.Defaults{Batch: 14, TokenTTL: 5 * time.Minute, TokenMax: 15 * time.Minute, FailMode: settings.FailOpen}, Tick: 100 * time.Millisecond},
		Instances:  func(context.Context) ([]Instance, error) { return nil, nil },
		Credential: func(v string) string { return v + ".signed" },
		EndSession: func(context.Context, string, string, time.Time, time.Time) error { return nil },
		StoreError: func(_ *fiber.Ctx, err error) error { t.Errorf("store: %v", err); return httperr.ErrUnavailable },
		Log:        log,
		Events:     schedule.New(rc.Redis(), q, &schedule.Options{Logger: log}),
	})
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(log)})
	a.Mount(app.Group("/api/v1"))
	return app, rc.Redis()
}

// keys lists every key in r with, for a set, its members.
func dump(t *testing.T, r rediscall.Redis) []string {
	t.Helper()
	ctx := context.Background()
	v, err := r.Do(ctx, "KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range v.([]any) {
		key := k.(string)
		typ, _ := r.Do(ctx, "TYPE", key)
		if typ == "set" {
			m, _ := r.Do(ctx, "SMEMBERS", key)
			for _, x := range m.([]any) {
				key += " " + x.(string)
			}
		}
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

// Every call an operator may make on a room answers 404 room_not_found on
// a room nobody created, and leaves Redis as it was: no room, no settings,
// no event, no audit entry, no room in a list (200 such rooms had taken an
// idle instance from 23 to 1,586 Redis commands a second).
func TestOperatorOnUnknownRoomLeavesNoKeys(t *testing.T) {
	app, r := redisAPI(t)
	if c := call(t, app, adminSecret, "POST", "/rooms", `{"room":"known"}`); c.code != 201 {
		t.Fatalf("create: %+v", c)
	}
	before := dump(t, r)
	from := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	event := `{"name":"e","startsAt":"` + from + `","endsAt":"` + to + `","settings":{"message":"Soon."}}`
	calls := []struct{ method, path, body string }{
		{"PUT", "/rooms/ghost", `{"paused":false}`},
		{"PUT", "/rooms/ghost", `{"message":"Hello."}`},
		{"POST", "/rooms/ghost/pause", ""},
		{"POST", "/rooms/ghost/resume", ""},
		{"PUT", "/rooms/ghost/message", `{"text":"Hello."}`},
		{"DELETE", "/rooms/ghost/message", ""},
		{"POST", "/rooms/ghost/preview", `{"paused":true}`},
		{"POST", "/rooms/ghost/events", event},
		{"PUT", "/rooms/ghost/events/e", event},
		{"DELETE", "/rooms/ghost/events/e", ""},
	}
	for _, c := range calls {
		if a := call(t, app, opsSecret, c.method, c.path, c.body); a.code != 404 || a.errCode() != "room_not_found" {
			t.Errorf("%s %s: %d %+v", c.method, c.path, a.code, a.body)
		}
	}
	if after := dump(t, r); !slices.Equal(after, before) {
		t.Fatalf("keys before:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	// In a room that exists, the same calls go through.
	if a := call(t, app, opsSecret, "POST", "/rooms/known/pause", ""); a.code != 200 || a.body["paused"] != true {
		t.Fatalf("pause of a room that exists: %+v", a)
	}
	if a := call(t, app, opsSecret, "POST", "/rooms/known/events", event); a.code != 201 {
		t.Fatalf("event in a room that exists: %+v", a)
	}
}

// An operator's pauses and resumes, however many, do not push an admin's
// change out of the room's audit trail: what each role's keys did is kept
// in a trail of its own, and the room's audit shows them together, newest
// first.
func TestOperatorCannotFlushTheAudit(t *testing.T) {
	app, _ := redisAPI(t)
	if c := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop","batch":20}`); c.code != 201 {
		t.Fatalf("create: %+v", c)
	}
	if c := call(t, app, adminSecret, "PUT", "/rooms/drop", `{"seats":500}`); c.code != 200 {
		t.Fatalf("admin's change: %+v", c)
	}
	const calls = 130
	for i := range calls {
		path := "/rooms/drop/pause"
		if i%2 == 1 {
			path = "/rooms/drop/resume"
		}
		if c := call(t, app, opsSecret, "POST", path, ""); c.code != 200 {
			t.Fatalf("call %d: %+v", i, c)
		}
	}
	c := call(t, app, viewSecret, "GET", "/rooms/drop/audit", "")
	entries, _ := c.body["entries"].([]any)
	var ops, admins []map[string]any
	var last time.Time
	for i, x := range entries {
		e := x.(map[string]any)
		at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
		if err != nil || i > 0 && at.After(last) {
			t.Fatalf("entry %d not newest first: %v", i, e)
		}
		last = at
		switch e["who"] {
		case "desk":
			ops = append(ops, e)
		case "root":
			admins = append(admins, e)
		}
	}
	if len(admins) != 2 || admins[0]["action"] != "update" || admins[1]["action"] != "create" {
		t.Fatalf("the admin's entries: %v", admins)
	}
	if ch := admins[0]["changes"].([]any); len(ch) != 1 || ch[0].(map[string]any)["field"] != "seats" {
		t.Fatalf("the admin's change: %v", admins[0])
	}
	if len(ops) != queue.AuditKeep || ops[0]["action"] != "resume" {
		t.Fatalf("%d entries of the operator, newest %v", len(ops), ops[0])
	}
}

// Over the schedule in Redis: an operator's event may not close the queue
// at its end, and an admin's event is not the operator's to rewrite or
// delete; it is left as the admin wrote it.
func TestOperatorAndAnAdminsEvent(t *testing.T) {
	app, _ := redisAPI(t)
	if c := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop"}`); c.code != 201 {
		t.Fatalf("create: %+v", c)
	}
	from := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	ev := func(extra string) string {
		return `{"name":"launch","startsAt":"` + from + `","endsAt":"` + to + `"` + extra + `}`
	}
	if c := call(t, app, opsSecret, "POST", "/rooms/drop/events", ev(`,"atEnd":"close"`)); c.code != 403 || c.errCode() != "forbidden" {
		t.Fatalf("operator's closing event: %+v", c)
	}
	if c := call(t, app, adminSecret, "POST", "/rooms/drop/events", ev(`,"settings":{"batch":60},"atEnd":"close"`)); c.code != 201 || c.body["by"] != "admin" {
		t.Fatalf("admin's event: %+v", c)
	}
	for _, c := range []struct{ method, body string }{{"PUT", ev(`,"settings":{"message":"Mine."}`)}, {"DELETE", ""}} {
		if a := call(t, app, opsSecret, c.method, "/rooms/drop/events/launch", c.body); a.code != 403 || a.errCode() != "forbidden" {
			t.Fatalf("operator %s of the admin's event: %+v", c.method, a)
		}
	}
	c := call(t, app, viewSecret, "GET", "/rooms/drop/events/launch", "")
	if s, _ := c.body["settings"].(map[string]any); c.code != 200 || s["batch"] != 60.0 || c.body["atEnd"] != "close" || c.body["by"] != "admin" {
		t.Fatalf("the admin's event after the operator: %+v", c)
	}
}
