package admin

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/webhook"
)

// sentHooks records what the admin API emits.
type sentHooks struct{ types []string }

func (s *sentHooks) Emit(_ context.Context, room, t string, data any) error {
	if m, ok := data.(map[string]any); !ok || m["audit"] == nil {
		return nil // not counted: every audit event carries its entry
	}
	s.types = append(s.types, room+" "+t)
	return nil
}
func (s *sentHooks) RoomEndpoints(context.Context, string) ([]webhook.Endpoint, error) {
	return nil, nil
}
func (s *sentHooks) SetRoomEndpoints(context.Context, string, []webhook.Endpoint) error { return nil }
func (s *sentHooks) Dead(context.Context, int) ([]webhook.Dead, error)                  { return nil, nil }
func (s *sentHooks) Redeliver(context.Context, string) error                            { return nil }

func TestAuditEvents(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		want []string
	}{
		{Entry{Action: "create"}, []string{"r room.created"}},
		{Entry{Action: "pause", Changes: []FieldChange{{Field: "paused", From: false, To: true}}}, []string{"r room.paused"}},
		{Entry{Action: "resume", Changes: []FieldChange{{Field: "paused", From: true, To: false}}}, []string{"r room.resumed"}},
		{Entry{Action: "update", Changes: []FieldChange{{Field: "batch", From: 1, To: 2}}}, []string{"r settings.changed"}},
		{Entry{Action: "update", Changes: []FieldChange{{Field: "batch"}, {Field: "paused", From: false, To: true}}}, []string{"r settings.changed", "r room.paused"}},
		{Entry{Action: "update", Changes: []FieldChange{{Field: "paused", From: true, To: false}}}, []string{"r settings.changed", "r room.resumed"}},
		{Entry{Action: "mint-invites"}, nil},
		{Entry{Action: "set-webhooks"}, nil},
	} {
		s := &sentHooks{}
		a := New(Options{Webhooks: s, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		a.emitAudit(context.Background(), "r", tc.e)
		if !slices.Equal(s.types, tc.want) {
			t.Errorf("%s %v: sent %v, want %v", tc.e.Action, tc.e.Changes, s.types, tc.want)
		}
	}
	New(Options{}).emitAudit(context.Background(), "r", Entry{Action: "create"}) // no webhooks: nothing, no panic
}

func TestWebhookRoutesNeedAdmin(t *testing.T) {
	for _, p := range []string{"GET /api/v1/admin/rooms/x/webhooks", "PUT /api/v1/admin/rooms/x/webhooks", "GET /api/v1/admin/webhooks/dead", "POST /api/v1/admin/webhooks/dead/msg_1.0/redeliver"} {
		m, path, _ := strings.Cut(p, " ")
		if r := RouteRole(m, path); r != Admin {
			t.Errorf("%s needs %v, want admin", p, r)
		}
	}
}

// TestAuditWebhookURLsRedactedOnRead: a set-webhooks entry written before
// the trail stored URLs cut to scheme and host still holds the whole URL,
// credentials in its query included; the trail cuts it as it is read, for
// every key that reads it, and leaves other entries as they were.
func TestAuditWebhookURLsRedactedOnRead(t *testing.T) {
	old := `{"at":"2026-12-01T10:00:00Z","who":"ops","action":"set-webhooks","webhooks":["https://hooks.example.com/in?token=s3cret","https://user:pw@other.example.com/"]}`
	other := `{"at":"2026-12-01T10:01:00Z","who":"ops","action":"pause","changes":[{"field":"paused","from":false,"to":true}]}`
	got := auditJSON([]string{old, other, "not json"})
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	if s := string(got[0]); strings.Contains(s, "s3cret") || strings.Contains(s, "pw@") || strings.Contains(s, "token") ||
		!strings.Contains(s, `"https://hooks.example.com/…"`) || !strings.Contains(s, `"https://other.example.com/"`) {
		t.Fatalf("old entry read as %s", s)
	}
	if string(got[1]) != other {
		t.Fatalf("another entry changed: %s", got[1])
	}
}
