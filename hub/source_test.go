package hub

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// TestStatesCarryClaims: every read of a visitor its store lost is
// followed by a write-back (Reclaim) that hands the Source what its
// connections hold: the newest ticket of its connections in that room
// (never one of another room) and, once it was told of an admission, that
// admission, so the Source can give it back.
func TestStatesCarryClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		synctest.Wait()
		src.set("r", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		src.set("r", "b", wire.State{Status: wire.StatusWaiting, Position: 4})
		// The store forgets both on every read: each read is followed by
		// the write-back of what the visitor's connections claim, if any.
		src.lose("r", "a")
		src.lose("r", "b")
		issued := time.UnixMilli(time.Now().UnixMilli())
		newer := wire.Ticket{Room: "r", Seq: 9, IssuedAt: issued}
		older := wire.Ticket{Room: "r", Seq: 5, IssuedAt: issued.Add(-time.Minute)}
		attach := func(visitor string, tk wire.Ticket) {
			t.Helper()
			if _, err := h.AttachPage(context.Background(), "r", visitor, newTransport("ws"), Page{Ticket: tk}); err != nil {
				t.Fatalf("attach %s: %v", visitor, err)
			}
		}
		same := func(what string, got, want wire.Claim) {
			t.Helper()
			if got.Ticket.Room != want.Ticket.Room || got.Ticket.Seq != want.Ticket.Seq || got.Ticket.Priority != want.Ticket.Priority ||
				!got.Ticket.IssuedAt.Equal(want.Ticket.IssuedAt) || !got.NotBefore.Equal(want.NotBefore) || !got.ExpiresAt.Equal(want.ExpiresAt) {
				t.Fatalf("%s: claim %+v, want %+v", what, got, want)
			}
		}

		attach("a", newer)
		same("attach", src.claim("r", "a"), wire.Claim{Ticket: newer})
		attach("a", older) // a second tab with an older credential
		same("second tab", src.claim("r", "a"), wire.Claim{Ticket: newer})
		attach("b", wire.Ticket{Room: "other", Seq: 3, IssuedAt: issued})
		same("another room's ticket", src.claim("r", "b"), wire.Claim{})

		// Admitted in the store: the read that tells the hub carries no
		// admission yet, the next one does.
		nb := time.UnixMilli(time.Now().UnixMilli())
		src.set("r", "a", src.Admitted("r", "a", nb, nb.Add(time.Minute)))
		b.receiver().Up()
		synctest.Wait()
		same("reconcile", src.claim("r", "a"), wire.Claim{Ticket: newer})
		b.receiver().Up()
		synctest.Wait()
		same("reconcile after the admission", src.claim("r", "a"), wire.Claim{Ticket: newer, NotBefore: nb, ExpiresAt: nb.Add(time.Minute)})
		if src.reads("r", "a") != 4 || src.reads("r", "b") != 3 {
			t.Fatalf("reads a %d, b %d: want 4 and 3", src.reads("r", "a"), src.reads("r", "b"))
		}
	})
}

// TestLostVisitorReclaimedAfterRead: a visitor the store forgot whose
// connection holds a ticket is never told not_in_queue, on attach or on a
// reconcile: the hub reads, then asks the Source to write back (Reclaim)
// only for the lost with a claim, and sends the state read again. A lost
// visitor that claims nothing is told not_in_queue, with no write-back.
func TestLostVisitorReclaimedAfterRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		synctest.Wait()
		src.set("r", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		src.set("r", "b", wire.State{Status: wire.StatusWaiting, Position: 4})
		src.lose("r", "a")
		src.lose("r", "b")
		tk := wire.Ticket{Room: "r", Seq: 9, IssuedAt: time.UnixMilli(time.Now().UnixMilli())}
		ta, tb := newTransport("ws"), newTransport("ws")
		if _, err := h.AttachPage(context.Background(), "r", "a", ta, Page{Ticket: tk}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.AttachPage(context.Background(), "r", "b", tb, Page{}); err != nil {
			t.Fatal(err)
		}
		b.receiver().Up()
		synctest.Wait()
		ms := ta.msgs(t)
		if len(ms) == 0 || len(withStatus(ms, wire.StatusNotInQueue)) > 0 || len(withStatus(ms, wire.StatusWaiting)) == 0 {
			t.Fatalf("a heard %+v: want waiting, never not_in_queue", ms)
		}
		if p := withStatus(ms, wire.StatusWaiting)[0].Position; p == nil || *p != 3 {
			t.Fatalf("a at %v, want 3", p)
		}
		if got := src.claim("r", "a"); got.Ticket.Seq != 9 {
			t.Fatalf("a's write-back came with %+v, want its ticket", got)
		}
		if len(withStatus(tb.msgs(t), wire.StatusNotInQueue)) == 0 {
			t.Fatalf("b heard %+v: want not_in_queue", tb.msgs(t))
		}
		if got := src.claim("r", "b"); !got.IsZero() {
			t.Fatalf("b, which claims nothing, was written back with %+v", got)
		}
	})
}
