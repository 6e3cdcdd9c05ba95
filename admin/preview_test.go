package admin

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// fakePages renders a page that is the state it was given, and records
// each call.
type fakePages struct {
	mu    sync.Mutex
	calls []string // room/lang
	last  wire.State
}

func (p *fakePages) Languages() []string { return []string{"en", "de", "fr"} }

func (p *fakePages) PreviewPage(_ context.Context, room, lang string, st wire.State) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, room+"/"+lang)
	st.Room = room
	p.last = st
	return append([]byte("<html>"), st.AppendJSON(nil)...), nil
}

const viewerSecret = "viewer-key-0123456789abcdef"

func newPreviewApp(t *testing.T, store Store, pages Pages) *fiber.App {
	t.Helper()
	keys := Keys{NewKey("root", []byte(adminSecret), Admin), NewKey("wall", []byte(viewerSecret), ReadOnly)}
	a := New(Options{
		Store:      store,
		Keys:       func() Keys { return keys },
		Defaults:   Defaults{Defaults: settings.Defaults{Batch: 14, TokenTTL: 2 * time.Minute}, Tick: 100 * time.Millisecond},
		StoreError: func(_ *fiber.Ctx, err error) error { return httperr.ErrUnavailable },
		Log:        slog.New(slog.DiscardHandler),
		Pages:      pages,
	})
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler))})
	a.MountPreview(app)
	return app
}

// get calls GET path on app with key (none when ""), and returns the
// status, the error code of a JSON answer and the body.
func get(t *testing.T, app *fiber.App, key, path string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
	}
	return res.StatusCode, e.Error.Code, string(raw)
}

// TestPagePreview: GET /admin/preview renders the room's page with a
// made-up state for any key, refuses bad input with stable codes, and
// touches nothing but reads of the room's settings.
func TestPagePreview(t *testing.T) {
	store := newMemStore()
	store.rooms["drop"] = settings.Room{Message: "Doors at ten"}
	store.rooms["lot"] = settings.Room{Method: settings.MethodRandom}
	pages := &fakePages{}
	app := newPreviewApp(t, store, pages)

	for _, c := range []struct {
		name, key, path string
		status          int
		code            string
	}{
		{"no key", "", "/admin/preview?room=drop", 401, "invalid_admin_key"},
		{"bad key", "nope-nope-nope-nope", "/admin/preview?room=drop", 401, "invalid_admin_key"},
		{"no room", viewerSecret, "/admin/preview", 400, "invalid_room"},
		{"bad room", viewerSecret, "/admin/preview?room=Drop!", 400, "invalid_room"},
		{"unknown room", viewerSecret, "/admin/preview?room=nope", 404, "room_not_found"},
		{"bad state", viewerSecret, "/admin/preview?room=drop&state=asleep", 400, "invalid_state"},
		{"bad lang", viewerSecret, "/admin/preview?room=drop&lang=xx", 400, "invalid_lang"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if status, code, body := get(t, app, c.key, c.path); status != c.status || code != c.code {
				t.Fatalf("%d %s (%s), want %d %s", status, code, body, c.status, c.code)
			}
		})
	}
	if len(pages.calls) != 0 {
		t.Fatalf("bad requests rendered pages: %v", pages.calls)
	}

	for _, state := range PreviewStates {
		status, _, body := get(t, app, viewerSecret, "/admin/preview?room=drop&lang=de&state="+state)
		if status != 200 || !strings.HasPrefix(body, "<html>") {
			t.Fatalf("%s: %d %s", state, status, body)
		}
		if !strings.Contains(body, `"message":"Doors at ten"`) {
			t.Errorf("%s: the room's message is not shown: %s", state, body)
		}
	}
	if got := pages.calls[len(pages.calls)-1]; got != "drop/de" {
		t.Fatalf("rendered %s, want drop/de", got)
	}
	if status, _, body := get(t, app, viewerSecret, "/admin/preview?room=lot"); status != 200 || !strings.Contains(body, `"inDraw":1200`) {
		t.Fatalf("a lottery room's waiting preview: %d %s", status, body)
	}
	if len(store.audit) != 0 {
		t.Fatalf("a preview wrote to the audit trail: %v", store.audit)
	}
	noPages := newPreviewApp(t, store, nil)
	if status, code, _ := get(t, noPages, adminSecret, "/admin/preview?room=drop"); status != 404 || code != "not_found" {
		t.Fatalf("without pages: %d %s", status, code)
	}
}

// TestPreviewState: each preview state is what a visitor in it is sent.
func TestPreviewState(t *testing.T) {
	now := time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)
	eff := settings.Room{Message: "hi", TokenTTL: 2 * time.Minute}
	tick := 100 * time.Millisecond

	w := previewState("waiting", eff, tick, now)
	if w.Status != wire.StatusWaiting || w.Position != 420 || w.ETASeconds != 300 || w.Paused || w.Message != "hi" {
		t.Fatalf("waiting: %+v", w)
	}
	if w.ETARange.Low >= w.ETASeconds || w.ETARange.High <= w.ETASeconds || w.ETARange.Low/60 == w.ETARange.High/60 {
		t.Fatalf("waiting: the range %+v does not make a range of minutes around %d s", w.ETARange, w.ETASeconds)
	}
	if p := previewState("paused", eff, tick, now); !p.Paused || p.Position != 420 {
		t.Fatalf("paused: %+v", p)
	}
	lot := eff
	lot.Method = settings.MethodRandom
	if d := previewState("waiting", lot, tick, now); d.InDraw != 1200 || d.Position != 0 || d.ETARange.IsZero() || d.ChancePerMinute <= 0 {
		t.Fatalf("waiting in a lottery: %+v", d)
	}
	if pq := previewState("prequeue", eff, tick, now); !pq.PreQueue() || !pq.OpensAt.After(now) {
		t.Fatalf("prequeue without an opening: %+v", pq)
	}
	opening := eff
	opening.OpensAt = now.Add(time.Hour)
	if pq := previewState("prequeue", opening, tick, now); !pq.OpensAt.Equal(opening.OpensAt) {
		t.Fatalf("prequeue: %+v, want the room's opening", pq)
	}
	if s := previewState("soldout", eff, tick, now); s.Status != wire.StatusSoldOut {
		t.Fatalf("soldout: %+v", s)
	}
	if a := previewState("admitted", eff, tick, now); a.Status != wire.StatusAdmitted || !a.ExpiresAt.Equal(now.Add(2*time.Minute)) || a.Token == "" {
		t.Fatalf("admitted: %+v", a)
	}
	if c := previewState("closed", eff, tick, now); c.Status != wire.StatusClosed || c.Message != "hi" {
		t.Fatalf("closed: %+v", c)
	}
}
