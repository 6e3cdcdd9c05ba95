package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

const roomsV1 = `rooms:
  drop:
    batch: 30
    seats: 500
    message: "Doors open at nine."
  calm:
`

// The rooms file creates its rooms at start, pins what it sets against live
// changes, and is applied again on reload; a bad reload changes nothing.
func TestRoomsFile(t *testing.T) {
	dir := t.TempDir()
	rooms := filepath.Join(dir, "rooms.yaml")
	eachServer(t, func(c *config) {
		writeFile(t, rooms, roomsV1)
		withAdmin(c)
		c.RoomsFile = rooms
		c.OpenRooms = false
	}, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		r := v.admin("GET", "/rooms/drop", "")
		if r.num("batch") != 30 || r.num("seats") != 500 || r.str("message") != "Doors open at nine." {
			t.Fatalf("drop from the file: %s", r.Raw)
		}
		locks, _ := r.Body["fromFile"].(map[string]any)
		if len(locks) != 3 || !strings.Contains(fmt.Sprint(locks["batch"]), "rooms.yaml, line 3") {
			t.Fatalf("fromFile: %v", locks)
		}
		if r := v.join("calm"); r.str("status") != "waiting" {
			t.Fatalf("join a room the file declares: %s", r.Raw)
		}
		if r := v.do("POST", "/api/v1/rooms/other/join", ""); r.Code != 404 {
			t.Fatalf("a room nobody made: %d", r.Code)
		}
		// A set field refuses a live change; an unset one takes it.
		if r := v.admin("PUT", "/rooms/drop", `{"batch":5}`); r.Code != 409 || r.errCode() != "set_by_rooms_file" || !strings.Contains(r.Raw, "line 3") {
			t.Fatalf("live change of a pinned field: %d %s", r.Code, r.Raw)
		}
		if r := v.admin("PUT", "/rooms/drop/message", `{"text":"nope"}`); r.Code != 409 {
			t.Fatalf("message pinned by the file: %d %s", r.Code, r.Raw)
		}
		if r := v.admin("PUT", "/rooms/drop", `{"batch":30,"failMode":"closed"}`); r.Code != 200 || r.str("failMode") != "closed" {
			t.Fatalf("unpinned field: %d %s", r.Code, r.Raw)
		}
		if r := v.admin("POST", "/rooms/drop/pause", ""); r.Code != 200 {
			t.Fatalf("pause (not in the file): %d %s", r.Code, r.Raw)
		}
		// A bad file on reload is refused and the old settings stay.
		writeFile(t, rooms, "rooms:\n  drop:\n    batch: 7\n    seats: lots\n")
		err := ts.ops.Reload(context.Background())
		if err == nil || !strings.Contains(err.Error(), "rooms.yaml:4: rooms.drop.seats") {
			t.Fatalf("bad reload: %v", err)
		}
		if r := v.admin("GET", "/rooms/drop", ""); r.num("batch") != 30 || r.num("seats") != 500 {
			t.Fatalf("after a refused reload: %s", r.Raw)
		}
		if r := v.admin("PUT", "/rooms/drop", `{"batch":5}`); r.Code != 409 {
			t.Fatalf("the old file's pins went with a refused reload: %d", r.Code)
		}
		// A good reload applies the new values, pins and unpins.
		writeFile(t, rooms, "rooms:\n  drop:\n    batch: 12\n")
		if err := ts.ops.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		r = v.admin("GET", "/rooms/drop", "")
		if r.num("batch") != 12 || r.num("seats") != 500 || r.str("message") != "Doors open at nine." || r.Body["paused"] != true || r.str("failMode") != "closed" {
			t.Fatalf("after reload: %s", r.Raw)
		}
		if r := v.admin("PUT", "/rooms/drop", `{"seats":90}`); r.Code != 200 {
			t.Fatalf("seats no longer pinned: %d %s", r.Code, r.Raw)
		}
		a := v.admin("GET", "/rooms/drop/audit", "")
		entries, _ := a.Body["entries"].([]any)
		if len(entries) < 3 || !strings.Contains(a.Raw, `"who":"rooms-file"`) || !strings.Contains(a.Raw, `"who":"admin"`) {
			t.Fatalf("audit: %s", a.Raw)
		}
	})
}

// A bad rooms file stops the start with one line naming the field and its
// line.
func TestRoomsFileStopsStart(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    strategy: lottery\n")
	cfg, err := parseConfig([]string{"-rooms", rooms, "-addr", "127.0.0.1:0"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	_, err = newServer(context.Background(), cfg, nil, slog.New(slog.DiscardHandler))
	want := "-rooms " + rooms + ":3: rooms.drop.strategy: must be"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want %s…", err, want)
	}
}

// Labelled admin keys let in and name who changed what; the audit trail
// keeps the last 100.
func TestAdminKeysAndAudit(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.yaml")
	eachServer(t, func(c *config) {
		writeFile(t, keys, "alice: alice-key-0123456789abcdef\nbob: bob-key-0123456789abcdef00\n")
		withAdmin(c)
		c.AdminKeysFile = keys
	}, func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		as := func(key, method, path, body string) reply {
			return v.do(method, "/api/v1/admin"+path, body, "Authorization", "Bearer "+key, "Content-Type", "application/json")
		}
		if r := as("alice-key-0123456789abcdef", "POST", "/rooms", `{"room":"sale","batch":14}`); r.Code != 201 || r.num("batch") != 14 {
			t.Fatalf("create: %d %s", r.Code, r.Raw)
		}
		if r := as("bob-key-0123456789abcdef00", "POST", "/rooms", `{"room":"sale"}`); r.Code != 409 || r.errCode() != "room_exists" {
			t.Fatalf("create twice: %d %s", r.Code, r.Raw)
		}
		if r := as("bob-key-0123456789abcdef00", "PUT", "/rooms/sale", `{"batch":30}`); r.Code != 200 {
			t.Fatalf("bob: %d %s", r.Code, r.Raw)
		}
		if r := as("not-a-key-0123456789abcdef", "GET", "/rooms", ""); r.Code != 401 {
			t.Fatalf("unknown key: %d", r.Code)
		}
		a := v.admin("GET", "/rooms/sale/audit", "")
		entries, _ := a.Body["entries"].([]any)
		if len(entries) != 2 {
			t.Fatalf("audit: %s", a.Raw)
		}
		newest, _ := entries[0].(map[string]any)
		first, _ := entries[1].(map[string]any)
		if newest["who"] != "bob" || newest["action"] != "update" || !strings.Contains(fmt.Sprint(newest["changes"]), "field:batch from:14 to:30") {
			t.Fatalf("newest: %v", newest)
		}
		if first["who"] != "alice" || first["action"] != "create" {
			t.Fatalf("first: %v", first)
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(newest["at"])); err != nil {
			t.Fatalf("at: %v", newest["at"])
		}
		for i := range 105 {
			v.admin("PUT", "/rooms/sale", fmt.Sprintf(`{"seats":%d}`, i+1))
		}
		a = v.admin("GET", "/rooms/sale/audit", "")
		entries, _ = a.Body["entries"].([]any)
		if len(entries) != 100 || !strings.Contains(fmt.Sprint(entries[0]), "to:105") {
			t.Fatalf("kept %d, newest %v", len(entries), entries[0])
		}
		// The keys file is read again on reload; a removed key stops working.
		writeFile(t, keys, "bob: bob-key-0123456789abcdef00\n")
		if err := ts.ops.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r := as("alice-key-0123456789abcdef", "GET", "/rooms", ""); r.Code != 401 {
			t.Fatalf("removed key: %d", r.Code)
		}
		writeFile(t, keys, "carol: short\n")
		if err := ts.ops.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "keys.yaml:1") {
			t.Fatalf("bad keys file: %v", err)
		}
		if r := as("bob-key-0123456789abcdef00", "GET", "/rooms", ""); r.Code != 200 {
			t.Fatalf("kept key after a refused reload: %d", r.Code)
		}
	})
}

// The preview says what a change will do before it is made.
func TestPreview(t *testing.T) {
	srv := redistest.StartReal(t)
	ts := startServer(t, srv, "rueidis", withAdmin)
	v := newVisitor(t, ts.URL)
	if r := v.admin("POST", "/rooms", `{"room":"drop","batch":14}`); r.Code != 201 {
		t.Fatalf("create: %s", r.Raw)
	}
	for i := range 3360 {
		if _, err := ts.q.Join(context.Background(), "drop", fmt.Sprintf("v%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	r := v.admin("POST", "/rooms/drop/preview", `{"batch":30}`)
	want := "14 per 100 ms → 30 per 100 ms: about 300 admitted/s; ETA for the last in line 24 s → 12 s"
	if r.Code != 200 || !strings.Contains(r.Raw, want) {
		t.Fatalf("preview: %d %s\nwant %s", r.Code, r.Raw, want)
	}
	if r := v.admin("GET", "/rooms/drop", ""); r.num("batch") != 14 {
		t.Fatalf("the preview changed the room: %s", r.Raw)
	}
	for body, want := range map[string]string{
		`{"paused":true}`:                          "admissions stop; the 3360 waiting keep their places",
		`{"message":"Back soon."}`:                 `everyone waiting (3360) sees at once: \"Back soon.\"`,
		`{"seats":100}`:                            "sold out after 100 more admissions",
		`{"failMode":"closed"}`:                    "admits nobody",
		`{"tokenTtlSeconds":600}`:                  "5 min → 10 min idle",
		`{"strategy":"max-active","maxActive":50}`: "at most 50 hold an entry token at once",
	} {
		if r := v.admin("POST", "/rooms/drop/preview", body); r.Code != 200 || !strings.Contains(r.Raw, want) {
			t.Fatalf("%s: %d %s\nwant %s", body, r.Code, r.Raw, want)
		}
	}
	if r := v.admin("POST", "/rooms/drop/preview", `{"batch":-1}`); r.Code != 400 || r.errCode() != "invalid_field" {
		t.Fatalf("bad preview: %d %s", r.Code, r.Raw)
	}
}

// SIGHUP reloads the rooms file.
func TestRoomsFileReloadOnSIGHUP(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: 30\n")
	ts := startServer(t, nil, "rueidis", func(c *config) { withAdmin(c); c.RoomsFile = rooms })
	v := newVisitor(t, ts.URL)
	if r := v.admin("GET", "/rooms/drop", ""); r.num("batch") != 30 {
		t.Fatalf("at start: %s", r.Raw)
	}
	writeFile(t, rooms, "rooms:\n  drop:\n    batch: 9\n")
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "reload on SIGHUP", func() bool { return v.admin("GET", "/rooms/drop", "").num("batch") == 9 })
}

// A pinned default (method fifo) does not lock the other settings, and the
// file's presence settings are pinned like the rest.
func TestRoomsFileMethodAndPresence(t *testing.T) {
	rooms := filepath.Join(t.TempDir(), "rooms.yaml")
	writeFile(t, rooms, "rooms:\n  drop:\n    method: fifo\n    presence: true\n    awayAfterSeconds: 90\n    dropAfterSeconds: 900\n")
	ts := startServer(t, redistest.StartReal(t), "go-redis", func(c *config) { withAdmin(c); c.RoomsFile = rooms })
	v := newVisitor(t, ts.URL)
	if r := v.admin("PUT", "/rooms/drop", `{"batch":5}`); r.Code != 200 {
		t.Fatalf("an unpinned change: %d %s", r.Code, r.Raw)
	}
	r := v.admin("GET", "/rooms/drop", "")
	if r.str("method") != "fifo" || r.Body["presence"] != true || r.num("awayAfterSeconds") != 90 || r.num("dropAfterSeconds") != 900 {
		t.Fatalf("settings: %s", r.Raw)
	}
	for _, body := range []string{`{"method":"reject"}`, `{"presence":false}`, `{"awayAfterSeconds":120}`} {
		if r := v.admin("PUT", "/rooms/drop", body); r.Code != 409 || r.errCode() != "set_by_rooms_file" {
			t.Fatalf("%s: %d %s", body, r.Code, r.Raw)
		}
	}
	if r := v.admin("POST", "/rooms/drop/preview", `{"batch":6}`); r.Code != 200 {
		t.Fatalf("preview: %d %s", r.Code, r.Raw)
	}
}
