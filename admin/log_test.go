package admin

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
)

// TestActionsLogged: pause, resume, a change of batch and the message are
// each one info line naming the key's label (never the key), the room and
// what changed.
func TestActionsLogged(t *testing.T) {
	var log bytes.Buffer
	keys := Keys{NewKey("root", []byte(adminSecret), Admin), NewKey("desk", []byte(opsSecret), Operator)}
	a := New(Options{
		Store:      newMemStore(),
		Keys:       func() Keys { return keys },
		Pins:       func(string) (roomsfile.Room, string, bool) { return roomsfile.Room{}, "", false },
		Defaults:   Defaults{Defaults: settings.Defaults{Batch: 14, TokenTTL: 5 * time.Minute, TokenMax: 15 * time.Minute, FailMode: settings.FailOpen}, Tick: 100 * time.Millisecond},
		Instances:  func(context.Context) ([]Instance, error) { return nil, nil },
		StoreError: func(_ *fiber.Ctx, err error) error { return httperr.ErrUnavailable },
		Log:        slog.New(slog.NewTextHandler(&log, nil)),
	})
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler))})
	a.Mount(app.Group("/api/v1"))

	for _, c := range []struct{ key, method, path, body string }{
		{adminSecret, "POST", "/rooms", `{"room":"drop","batch":30}`},
		{opsSecret, "POST", "/rooms/drop/pause", ""},
		{adminSecret, "PUT", "/rooms/drop", `{"batch":40}`},
		{opsSecret, "PUT", "/rooms/drop/message", `{"text":"back at 10"}`},
		{opsSecret, "POST", "/rooms/drop/resume", ""},
	} {
		if r := call(t, app, c.key, c.method, c.path, c.body); r.code >= 300 {
			t.Fatalf("%s %s: %+v", c.method, c.path, r)
		}
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		if strings.Contains(l, `msg="admin action"`) {
			got = append(got, l)
		}
	}
	want := []string{
		`level=INFO msg="admin action" action=create who=root room=drop changes=`,
		`level=INFO msg="admin action" action=pause who=desk room=drop changes="paused: false → true"`,
		`level=INFO msg="admin action" action=update who=root room=drop changes="batch: 30 → 40"`,
		`level=INFO msg="admin action" action=update who=desk room=drop changes="message: \"\" → \"back at 10\""`,
		`level=INFO msg="admin action" action=resume who=desk room=drop changes="paused: true → false"`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d admin lines, want %d:\n%s", len(got), len(want), log.String())
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("line %d:\n%s\nwant it to hold\n%s", i, got[i], w)
		}
	}
	if strings.Contains(log.String(), adminSecret) || strings.Contains(log.String(), opsSecret) {
		t.Errorf("a key in the log:\n%s", log.String())
	}
}
