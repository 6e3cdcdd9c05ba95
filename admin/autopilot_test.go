package admin

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomsfile"
	"github.com/waitroom/waitroom/settings"
)

// TestAuditAutopilot: the autopilot's changes go to a trail of their own,
// with their reason, so that a change a second cannot push an admin's
// change out of the room's trail; the room's audit shows both, newest
// first.
func TestAuditAutopilot(t *testing.T) {
	store := newMemStore()
	a := New(Options{
		Store:    store,
		Keys:     func() Keys { return Keys{NewKey("root", []byte(adminSecret), Admin)} },
		Defaults: Defaults{Defaults: settings.Defaults{Batch: 14}, Tick: 100 * time.Millisecond},
		Pins:     func(string) (roomsfile.Room, string, bool) { return roomsfile.Room{}, "", false },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ctx := context.Background()
	a.Audit(ctx, "drop", "root", "update", settings.Room{}, settings.Room{Autopilot: true})
	for i := range queue.AuditKeep + 5 {
		before, after := settings.Room{Autopilot: true, Batch: 14 - i%2}, settings.Room{Autopilot: true, Batch: 13 + i%2}
		a.AuditAutopilot(ctx, "drop", "errors 5 % over 1 % limit: 140 → 98/s", before, after)
	}
	if own := store.audit["drop"]; len(own) != 1 || !strings.Contains(own[0], `"who":"root"`) {
		t.Errorf("the room's own trail %v, want the admin's change alone", own)
	}
	ap := store.audit["drop/autopilot"]
	if len(ap) != queue.AuditKeep+5 || !strings.Contains(ap[0], `"who":"autopilot","action":"autopilot"`) || !strings.Contains(ap[0], `"reason":"errors 5 % over 1 % limit: 140 → 98/s"`) {
		t.Errorf("the autopilot's trail: %d entries, newest %s", len(ap), ap[0])
	}
}
