package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// Three instances notice the same opening and the same sell-out on every
// refresh: each goes out once. A new opensAt, or more seats sold out
// again, is news.
func TestNoticeOnceAcrossInstances(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		rc := newReceiver(t, nil)
		var hs []*Hooks
		for range 3 {
			h := newHooks(t, newRedis(t, srv, client), []Endpoint{rc.endpoint(RoomOpened, RoomSoldOut)}, fast())
			run(t, h)
			hs = append(hs, h)
		}
		ctx := context.Background()
		now := time.Now()
		opens := now.Add(-time.Second)
		notice := func(st RoomState) {
			t.Helper()
			for range 3 {
				for _, h := range hs {
					if err := h.Notice(ctx, "drop", st, now); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		notice(RoomState{OpensAt: now.Add(time.Minute), Seats: 10, SeatsHeld: 3}) // nothing yet
		notice(RoomState{OpensAt: opens, Seats: 10, SeatsHeld: 10})
		notice(RoomState{OpensAt: opens, Seats: 20, SeatsHeld: 20})
		notice(RoomState{OpensAt: now.Add(-time.Hour), Seats: 20, SeatsHeld: 20}) // long ago: not news
		waitfor.Until(t, 10*time.Second, "three events", func() bool {
			seen, _ := rc.counts()
			return len(seen) == 3
		})
		outboxEmpty(t, hs[0].r)
		seen, bad := rc.counts()
		if len(seen) != 3 || len(bad) > 0 {
			t.Fatalf("seen %v, refused %v", seen, bad)
		}
		if got := rc.ofType(RoomOpened); len(got) != 1 {
			t.Fatalf("opened %d times", len(got))
		} else {
			var d struct{ OpensAt string }
			_ = json.Unmarshal(got[0].Data, &d)
			if d.OpensAt != opens.UTC().Format(time.RFC3339Nano) {
				t.Fatalf("opened data %s", got[0].Data)
			}
		}
		if got := rc.ofType(RoomSoldOut); len(got) != 2 {
			t.Fatalf("sold out %d times, want 2 (10 seats, then 20)", len(got))
		}
	})
}
