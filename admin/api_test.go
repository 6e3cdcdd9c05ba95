package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
)

// memStore is a Store in memory: settings per room and the audit trails.
type memStore struct {
	mu    sync.Mutex
	rooms map[string]settings.Room
	audit map[string][]string
}

func newMemStore() *memStore {
	return &memStore{rooms: map[string]settings.Room{}, audit: map[string][]string{}}
}

func (m *memStore) RoomConfig(_ context.Context, room string) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rooms[room], nil
}

func (m *memStore) UpdateRoomConfig(_ context.Context, room string, change func(*settings.Room) error) (settings.Room, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.rooms[room]
	if err := change(&c); err != nil {
		return settings.Room{}, err
	}
	if err := c.Validate(); err != nil {
		return settings.Room{}, err
	}
	m.rooms[room] = c
	return c, nil
}

func (m *memStore) RoomExists(_ context.Context, room string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.rooms[room]
	return ok, nil
}

func (m *memStore) AllRooms(ctx context.Context) ([]string, error) { return m.ConfiguredRooms(ctx) }

func (m *memStore) ConfiguredRooms(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for r := range m.rooms {
		out = append(out, r)
	}
	return out, nil
}

func (m *memStore) Stats(context.Context, string) (queue.RoomStats, error) {
	return queue.RoomStats{Waiting: 100}, nil
}

func (m *memStore) Presence(context.Context, string) (queue.PresenceStats, error) {
	return queue.PresenceStats{}, nil
}

func (m *memStore) ActivationOf(context.Context, string) (queue.Activation, bool, error) {
	return queue.Activation{}, false, nil
}

func (m *memStore) Session(context.Context, string, string) (time.Time, time.Time, bool, error) {
	return time.Time{}, time.Time{}, false, nil
}

func (m *memStore) AppendAudit(_ context.Context, room string, e []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.audit[room] = append([]string{string(e)}, m.audit[room]...)
	return nil
}

func (m *memStore) AppendAuditOf(ctx context.Context, room, trail string, e []byte) error {
	return m.AppendAudit(ctx, room+"/"+trail, e)
}

func (m *memStore) AuditOf(ctx context.Context, room, trail string) ([]string, error) {
	return m.Audit(ctx, room+"/"+trail)
}

func (m *memStore) AppendAdminAudit(ctx context.Context, e []byte) error {
	return m.AppendAudit(ctx, "", e)
}

func (m *memStore) Audit(_ context.Context, room string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.audit[room], nil
}

func (m *memStore) AdminAudit(ctx context.Context) ([]string, error) { return m.Audit(ctx, "") }

const (
	adminSecret = "admin-key-0123456789abcdef"
	opsSecret   = "ops-key-0123456789abcdef00"
	viewSecret  = "view-key-0123456789abcdef0"
)

// newTestAPI mounts the admin API on an app, over store, with the rooms
// file pinning room "pinned"'s batch.
func newTestAPI(t *testing.T, store Store) *fiber.App {
	t.Helper()
	return newTestAPIEvents(t, store, nil)
}

// newTestAPIEvents is newTestAPI with the scheduled events in events.
func newTestAPIEvents(t *testing.T, store Store, events Events) *fiber.App {
	t.Helper()
	pinned, err := roomsfile.Parse("rooms.yaml", []byte("rooms:\n  pinned:\n    batch: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	keys := Keys{NewKey("root", []byte(adminSecret), Admin), NewKey("desk", []byte(opsSecret), Operator), NewKey("wall", []byte(viewSecret), ReadOnly)}
	a := New(Options{
		Store:   store,
		Invites: invite.NewMinter([]byte("secret-0123456789abcdef0123456789")),
		Keys:    func() Keys { return keys },
		Pins: func(room string) (roomsfile.Room, string, bool) {
			r, ok := pinned.Room(room)
			return r, pinned.Path, ok
		},
		Defaults:   Defaults{Defaults: settings.Defaults{Batch: 14, TokenTTL: 5 * time.Minute, TokenMax: 15 * time.Minute, FailMode: settings.FailOpen}, Tick: 100 * time.Millisecond},
		Instances:  func(context.Context) ([]Instance, error) { return nil, nil },
		Credential: func(v string) string { return v + ".signed" },
		EndSession: func(context.Context, string, string, time.Time, time.Time) error { return nil },
		StoreError: func(_ *fiber.Ctx, err error) error { return httperr.ErrUnavailable },
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		Events:     events,
	})
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	a.Mount(app.Group("/api/v1"))
	return app
}

type answer struct {
	code int
	body map[string]any
}

func (a answer) errCode() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func call(t *testing.T, app *fiber.App, key, method, path, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, "/api/v1/admin"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out answer
	out.code = res.StatusCode
	raw, _ := io.ReadAll(res.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
	}
	return out
}

// The API over a store in memory: create, partial updates with the
// field's error, the operator's bounds, the rooms file's pins, the preview
// and the audit trail.
func TestAPIOverAStore(t *testing.T) {
	store := newMemStore()
	app := newTestAPI(t, store)
	if r := call(t, app, "nope-nope-nope-nope", "GET", "/rooms", ""); r.code != 401 || r.errCode() != "invalid_admin_key" {
		t.Fatalf("bad key: %+v", r)
	}
	if r := call(t, app, adminSecret, "POST", "/rooms", `{"room":"drop","batch":30}`); r.code != 201 || r.body["batch"] != 30.0 || r.body["tokenTtlSeconds"] != 300.0 {
		t.Fatalf("create: %+v", r)
	}
	if r := call(t, app, adminSecret, "PUT", "/rooms/drop", `{"seats":-1}`); r.code != 400 || r.errCode() != "invalid_field" {
		t.Fatalf("bad seats: %+v", r)
	}
	if r := call(t, app, adminSecret, "PUT", "/rooms/drop", `{"seats":9}`); r.code != 200 || r.body["batch"] != 30.0 || r.body["seats"] != 9.0 {
		t.Fatalf("partial update: %+v", r)
	}
	if r := call(t, app, opsSecret, "PUT", "/rooms/drop", `{"message":"hi","seats":3}`); r.code != 403 || r.errCode() != "forbidden" {
		t.Fatalf("operator changing seats: %+v", r)
	}
	if r := call(t, app, opsSecret, "PUT", "/rooms/drop", `{"message":"hi"}`); r.code != 200 || r.body["message"] != "hi" {
		t.Fatalf("operator's message: %+v", r)
	}
	if r := call(t, app, adminSecret, "PUT", "/rooms/pinned", `{"batch":6}`); r.code != 409 || r.errCode() != "set_by_rooms_file" {
		t.Fatalf("pinned batch: %+v", r)
	}
	r := call(t, app, adminSecret, "POST", "/rooms/drop/preview", `{"paused":true}`)
	if effects, _ := r.body["effects"].([]any); r.code != 200 || len(effects) != 1 || !strings.Contains(effects[0].(string), "the 100 waiting keep their places") {
		t.Fatalf("preview: %+v", r)
	}
	if store.rooms["drop"].Paused {
		t.Fatal("the preview paused the room")
	}
	r = call(t, app, adminSecret, "GET", "/rooms/drop/audit", "")
	entries, _ := r.body["entries"].([]any)
	if r.code != 200 || len(entries) != 3 {
		t.Fatalf("audit: %+v", r)
	}
	if newest := entries[0].(map[string]any); newest["who"] != "desk" || newest["action"] != "update" {
		t.Fatalf("newest entry: %+v", newest)
	}
}

// A store that fails answers what StoreError says.
func TestAPIStoreDown(t *testing.T) {
	app := newTestAPI(t, downStore{newMemStore()})
	if r := call(t, app, adminSecret, "GET", "/rooms/drop", ""); r.code != 503 {
		t.Fatalf("store down: %+v", r)
	}
}

type downStore struct{ *memStore }

func (downStore) RoomConfig(context.Context, string) (settings.Room, error) {
	return settings.Room{}, errors.New("down")
}
