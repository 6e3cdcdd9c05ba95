package queue

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// TestEndSessionFreesSlotAndSeat: under max-active 1 and one seat, ending
// the admitted visitor's session lets the next one in at the next tick;
// ending it again, or with another token's notBefore, frees nothing.
func TestEndSessionFreesSlotAndSeat(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 5, Tick: 50 * time.Millisecond}, TokenTTL: time.Minute})
		if err := q.SetRoomConfig(ctx, "gw", settings.Room{Strategy: "max-active", MaxActive: 1, Seats: 2}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "gw", 3, "v")
		a := admitOne(t, q, "gw")
		nb, exp, ok, err := q.Session(ctx, "gw", a.Visitor)
		if err != nil || !ok || !nb.Equal(a.NotBefore) || !exp.Equal(a.ExpiresAt) {
			t.Fatalf("session %v %v %v %v, want %v %v", nb, exp, ok, err, a.NotBefore, a.ExpiresAt)
		}
		for range 2 {
			if res := admitTaken(t, q, "gw"); len(res.Admitted) != 0 {
				t.Fatalf("%s admitted with the only slot held", res.Admitted[0].Visitor)
			}
		}
		if ended, err := q.EndSession(ctx, "gw", a.Visitor, a.NotBefore.Add(time.Millisecond), "k", time.Now()); err != nil || ended {
			t.Fatalf("another token's end: %v %v", ended, err)
		}
		if ended, err := q.EndSession(ctx, "gw", a.Visitor, a.NotBefore, "k", time.Now()); err != nil || !ended {
			t.Fatalf("end: %v %v", ended, err)
		}
		if _, _, ok, _ := q.Session(ctx, "gw", a.Visitor); ok {
			t.Fatal("the token record outlived its session")
		}
		if ended, err := q.EndSession(ctx, "gw", a.Visitor, a.NotBefore, "k", time.Now()); err != nil || ended {
			t.Fatalf("second end: %v %v", ended, err)
		}
		b := admitOne(t, q, "gw")
		if b.Visitor == a.Visitor {
			t.Fatal("a admitted again")
		}
		if _, err := q.EndSession(ctx, "gw", b.Visitor, b.NotBefore, "k", time.Now()); err != nil {
			t.Fatal(err)
		}
		// Two seats, both freed by ending: the third visitor still gets in.
		admitOne(t, q, "gw")
		st, err := q.Stats(ctx, "gw")
		if err != nil || st.SeatsHeld != 1 || st.ActiveTokens != 1 {
			t.Fatalf("stats %+v %v, want 1 seat and 1 live token", st, err)
		}
	})
}
