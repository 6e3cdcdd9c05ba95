package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// JoinAt joins only at the settings version given: at another it does
// nothing (no ticket, no invite use taken) and says so; at the stored one
// it joins as JoinInvite does.
func TestJoinAtSettingsVersion(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, nil)
		if err := q.SetRoomConfig(ctx, "drop", settings.Room{InviteOnly: true}); err != nil {
			t.Fatal(err)
		}
		cfg, err := q.RoomConfig(ctx, "drop")
		if err != nil || cfg.Version() == 0 {
			t.Fatalf("version %d: %v", cfg.Version(), err)
		}
		code := Invite{ID: "code1", Uses: 1, Expires: time.Now().Add(time.Hour)}
		for _, stale := range []int64{0, cfg.Version() - 1, cfg.Version() + 1} {
			if _, _, err := q.JoinAt(ctx, "drop", "v1", code, stale); !errors.Is(err, ErrSettingsChanged) {
				t.Fatalf("at version %d: %v", stale, err)
			}
		}
		if st, _ := q.Status(ctx, "drop", "v1"); st.Status == wire.StatusWaiting {
			t.Fatal("a join at a stale version took a place")
		}
		// The code's one use is still there.
		st, _, err := q.JoinAt(ctx, "drop", "v1", code, cfg.Version())
		if err != nil || st.Status != wire.StatusWaiting {
			t.Fatalf("join at the stored version: %+v %v", st, err)
		}
		if _, _, err := q.JoinAt(ctx, "drop", "v2", code, cfg.Version()); !errors.Is(err, ErrInviteUsed) {
			t.Fatalf("the code's second use: %v", err)
		}
		// A room with no settings is at version 0.
		if st, _, err := q.JoinAt(ctx, "open", "v1", Invite{}, 0); err != nil || st.Status != wire.StatusWaiting {
			t.Fatalf("open room: %+v %v", st, err)
		}
	})
}
