package queue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// prioCode is a priority code of uses joins, as the server passes it on
// after checking its signature.
func prioCode(id string, uses int) Invite {
	return Invite{ID: id, Uses: uses, Expires: time.Now().Add(time.Hour), Priority: true}
}

// positions returns the positions of vs in room (0 for any not waiting
// with a place).
func positions(t *testing.T, q *Queue, room string, vs ...string) []int64 {
	t.Helper()
	states, err := q.StatusMany(context.Background(), room, vs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(states))
	for i, s := range states {
		if s.Status == wire.StatusWaiting && !s.PreQueue() {
			out[i] = s.Position
		}
	}
	return out
}

// TestPriorityAhead: visitors with a priority code wait ahead of every
// public visitor, in the order they joined, are counted in every public
// position, and are admitted first; a refresh keeps the ticket and uses
// nothing; a used-up code is refused; a plain code gives no priority.
func TestPriorityAhead(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(3, 50*time.Millisecond))
		for i := range 4 {
			if _, err := q.Join(ctx, "drop", "pub"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		code := prioCode("code-a", 2)
		st, tk, err := q.JoinInvite(ctx, "drop", "vip1", code)
		if err != nil || st.Position != 1 || !tk.Priority || tk.Seq != 1 || tk.Room != "drop" {
			t.Fatalf("first priority join: %+v %+v %v", st, tk, err)
		}
		st, tk, err = q.JoinInvite(ctx, "drop", "vip2", code)
		if err != nil || st.Position != 2 || !tk.Priority || tk.Seq != 2 {
			t.Fatalf("second priority join: %+v %+v %v", st, tk, err)
		}
		if _, _, err := q.JoinInvite(ctx, "drop", "vip3", code); !errors.Is(err, ErrInviteUsed) {
			t.Fatalf("third join on a 2-use code: %v", err)
		}
		// A refresh with the code keeps the place and uses nothing.
		st, tk, err = q.JoinInvite(ctx, "drop", "vip1", code)
		if err != nil || st.Position != 1 || !tk.Priority || tk.Seq != 1 {
			t.Fatalf("refresh: %+v %+v %v", st, tk, err)
		}
		// A plain code in a public room is no priority: public band, no use.
		st, tk, err = q.JoinInvite(ctx, "drop", "plain", Invite{ID: "plain-code", Uses: 1, Expires: time.Now().Add(time.Hour)})
		if err != nil || st.Position != 7 || tk.Priority {
			t.Fatalf("plain code: %+v %+v %v", st, tk, err)
		}
		// Public visitors count the priority visitors who joined before
		// them; those who joined later go ahead without raising their
		// positions (which never rise).
		if got := positions(t, q, "drop", "vip1", "vip2", "pub0", "pub3", "plain"); !slices.Equal(got, []int64{1, 2, 1, 4, 7}) {
			t.Fatalf("positions %v", got)
		}
		// A public joiner after them is behind all, and a priority joiner
		// after that still goes ahead of every public visitor.
		if st, _ := q.Join(ctx, "drop", "pub-late"); st.Position != 8 {
			t.Fatalf("late public: %+v", st)
		}
		st, tk, err = q.JoinInvite(ctx, "drop", "vip4", prioCode("code-b", 1))
		if err != nil || st.Position != 3 || tk.Seq != 3 {
			t.Fatalf("late priority: %+v %+v %v", st, tk, err)
		}
		if res := admitTaken(t, q, "drop"); !slices.Equal(admittedIDs(res), []string{"vip1", "vip2", "vip4"}) {
			t.Fatalf("first batch %v", admittedIDs(res))
		}
		if res := admitTaken(t, q, "drop"); !slices.Equal(admittedIDs(res), []string{"pub0", "pub1", "pub2"}) {
			t.Fatalf("second batch %v", admittedIDs(res))
		}
		// An admitted priority visitor rejoining with the code is let be.
		if st, _, err := q.JoinInvite(ctx, "drop", "vip1", code); err != nil || st.Status != wire.StatusAdmitted {
			t.Fatalf("admitted priority visitor: %+v %v", st, err)
		}
	})
}

// TestPriorityUpgradeAndRooms: a priority code moves a public visitor into
// the priority band (one use; the public ticket is given up); it is the
// invitation in an invite-only room, where a plain code joins the public
// band; a closed room takes no use.
func TestPriorityUpgradeAndRooms(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(3, 50*time.Millisecond))
		for i := range 3 {
			if _, err := q.Join(ctx, "drop", "pub"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		st, tk, err := q.JoinInvite(ctx, "drop", "pub2", prioCode("up", 1))
		if err != nil || st.Position != 1 || !tk.Priority {
			t.Fatalf("upgrade: %+v %+v %v", st, tk, err)
		}
		if got := positions(t, q, "drop", "pub2", "pub0", "pub1"); !slices.Equal(got, []int64{1, 1, 2}) {
			t.Fatalf("after the upgrade %v", got)
		}
		// The public ticket it gave up is not taken back after a loss.
		if v, _ := r.Do(ctx, "GET", prefix("drop")+"left:pub2"); v != "3" {
			t.Fatalf("left marker %v", v)
		}

		if err := q.SetRoomConfig(ctx, "presale", settings.Room{InviteOnly: true}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := q.JoinInvite(ctx, "presale", "nobody", Invite{}); !errors.Is(err, ErrInviteRequired) {
			t.Fatalf("no code: %v", err)
		}
		st, tk, err = q.JoinInvite(ctx, "presale", "guest", Invite{ID: "inv", Uses: 5, Expires: time.Now().Add(time.Hour)})
		if err != nil || st.Position != 1 || tk.Priority {
			t.Fatalf("plain invite: %+v %+v %v", st, tk, err)
		}
		st, tk, err = q.JoinInvite(ctx, "presale", "member", prioCode("member-code", 1))
		if err != nil || st.Position != 1 || !tk.Priority {
			t.Fatalf("priority code in an invite-only room: %+v %+v %v", st, tk, err)
		}
		if got := positions(t, q, "presale", "member", "guest"); !slices.Equal(got, []int64{1, 1}) {
			t.Fatalf("presale positions %v", got)
		}

		if err := q.SetRoomConfig(ctx, "closed", settings.Room{Method: settings.MethodReject}); err != nil {
			t.Fatal(err)
		}
		one := prioCode("closed-code", 1)
		if st, _, err := q.JoinInvite(ctx, "closed", "x", one); err != nil || st.Status != wire.StatusClosed {
			t.Fatalf("closed room: %+v %v", st, err)
		}
		if err := q.SetRoomConfig(ctx, "closed", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		if st, tk, err := q.JoinInvite(ctx, "closed", "x", one); err != nil || !tk.Priority || st.Position != 1 {
			t.Fatalf("the code's use was taken by the closed room: %+v %v", st, err)
		}
	})
}

// TestPriorityPreQueue: before a scheduled opening priority visitors are
// held like everyone (admission takes nobody), then placed ahead of the
// draw, in the order they joined; a leave takes one out.
func TestPriorityPreQueue(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(10, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "drop", settings.Room{OpensAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		early := joinN(t, q, "drop", 5, "e")
		vips := []string{"vip-b", "vip-a", "vip-gone", "vip-c"}
		code := prioCode("pre", 10)
		for _, v := range vips {
			st, tk, err := q.JoinInvite(ctx, "drop", v, code)
			if err != nil || !st.PreQueue() || !tk.IsZero() {
				t.Fatalf("%s before opening: %+v %+v %v", v, st, tk, err)
			}
		}
		if s, _ := q.Status(ctx, "drop", "vip-a"); !s.PreQueue() {
			t.Fatalf("status before opening: %+v", s)
		}
		// A refresh without the code keeps the held priority place.
		if s, _ := q.Join(ctx, "drop", "vip-c"); !s.PreQueue() {
			t.Fatalf("refresh before opening: %+v", s)
		}
		if ok, err := q.Leave(ctx, "drop", "vip-gone"); err != nil || !ok {
			t.Fatalf("leave: %v %v", ok, err)
		}
		if res := admitTaken(t, q, "drop"); len(res.Admitted) != 0 {
			t.Fatalf("admitted before opening: %v", admittedIDs(res))
		}
		if st, _ := q.Stats(ctx, "drop"); st.PreQueue != 8 || st.Priority != 3 {
			t.Fatalf("pre-queue counted %d (priority %d), want 8 (3)", st.PreQueue, st.Priority)
		}
		if err := q.SetRoomConfig(ctx, "drop", settings.Room{}); err != nil {
			t.Fatal(err)
		}
		if got := positions(t, q, "drop", "vip-b", "vip-a", "vip-c"); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Fatalf("priority after opening %v, want join order 1 2 3", got)
		}
		seen := map[int64]bool{}
		for i, p := range positions(t, q, "drop", early...) {
			if p < 4 || p > 8 || seen[p] {
				t.Fatalf("%s drawn to %d", early[i], p)
			}
			seen[p] = true
		}
		if res := admitTaken(t, q, "drop"); !slices.Equal(admittedIDs(res)[:3], []string{"vip-b", "vip-a", "vip-c"}) || len(res.Admitted) != 8 {
			t.Fatalf("admitted %v", admittedIDs(res))
		}
	})
}

// TestPriorityRetake: after Redis lost the queue, priority tickets come
// back into the priority band at their places (an admitted one does not
// come back), public ones behind them, and both counters go past every
// ticket given.
func TestPriorityRetake(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(1, 50*time.Millisecond))
		var vs []string
		var tks []wire.Ticket
		join := func(v string, inv Invite) {
			t.Helper()
			_, tk, err := q.JoinInvite(ctx, "drop", v, inv)
			if err != nil || tk.IsZero() {
				t.Fatalf("join %s: %+v %v", v, tk, err)
			}
			vs, tks = append(vs, v), append(tks, tk)
		}
		join("pub1", Invite{})
		join("pub2", Invite{})
		code := prioCode("c", 3)
		join("vip1", code)
		join("vip2", code)
		join("vip3", code)
		if res := admitTaken(t, q, "drop"); !slices.Equal(admittedIDs(res), []string{"vip1"}) {
			t.Fatalf("admitted %v", admittedIDs(res))
		}
		// The credential carries the band.
		s, _ := visitorsig.NewSigner(testSecret)
		id, back, err := s.ParseCredential(s.TicketCredential("vip2", tks[3]))
		if err != nil || id != "vip2" || back != tks[3] {
			t.Fatalf("credential: %q %+v %v", id, back, err)
		}
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		res, err := q.Retake(ctx, "drop", vs, tks)
		if err != nil || res.Tickets != 4 {
			t.Fatalf("retake: %+v %v", res, err)
		}
		if got := positions(t, q, "drop", "vip2", "vip3", "pub1", "pub2"); !slices.Equal(got, []int64{1, 2, 3, 4}) {
			t.Fatalf("after the loss %v", got)
		}
		_, tk, _ := q.JoinInvite(ctx, "drop", "vip4", prioCode("d", 1))
		if !tk.Priority || tk.Seq != 4 {
			t.Fatalf("new priority ticket %+v, want 4", tk)
		}
		_, tk, _ = q.JoinTicket(ctx, "drop", "pub3")
		if tk.Priority || tk.Seq != 3 {
			t.Fatalf("new public ticket %+v, want 3", tk)
		}
		// The priority visitors taken back count for every public visitor;
		// one who joined after pub1 does not raise its position.
		if got := positions(t, q, "drop", "vip4", "pub1", "pub3"); !slices.Equal(got, []int64{3, 3, 6}) {
			t.Fatalf("new joiners %v", got)
		}
		// Another write back (a reconnect) keeps everyone.
		if res, err := q.Retake(ctx, "drop", nil, nil); err != nil || res.Removed != 0 {
			t.Fatalf("write back: %+v %v", res, err)
		}
		if res := admitTaken(t, q, "drop"); !slices.Equal(admittedIDs(res), []string{"vip2"}) {
			t.Fatalf("admitted after the loss %v", admittedIDs(res))
		}
	})
}

// TestPriorityNeverRaisesPositions: while priority visitors keep joining
// ahead and being admitted, no public visitor's position ever rises, on a
// poll or a refresh, and every public visitor is admitted only after the
// priority visitors who were waiting.
func TestPriorityNeverRaisesPositions(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(1, 50*time.Millisecond))
		pubs := joinN(t, q, "drop", 6, "pub")
		last := positions(t, q, "drop", pubs...)
		code := prioCode("many", 100)
		prioWaiting := 0
		for round := range 6 {
			for i := range 2 {
				if _, _, err := q.JoinInvite(ctx, "drop", "vip"+strconv.Itoa(round)+"-"+strconv.Itoa(i), code); err != nil {
					t.Fatal(err)
				}
				prioWaiting++
			}
			if round%2 == 1 {
				// A public joiner between rounds is counted behind them.
				pubs = append(pubs, "pub-r"+strconv.Itoa(round))
				if st, _ := q.Join(ctx, "drop", pubs[len(pubs)-1]); st.Status != wire.StatusWaiting {
					t.Fatalf("join: %+v", st)
				}
				last = append(last, 1<<30)
			}
			check := func(when string) {
				t.Helper()
				now := positions(t, q, "drop", pubs...)
				for i, p := range now {
					st, _ := q.Join(ctx, "drop", pubs[i])
					if p == 0 || st.Position != p || p > last[i] {
						t.Fatalf("round %d, %s: %s at %d (refresh %d), was %d", round, when, pubs[i], p, st.Position, last[i])
					}
				}
				last = now
			}
			check("after the joins")
			res := admitTaken(t, q, "drop")
			for _, a := range res.Admitted {
				if strings.HasPrefix(a.Visitor, "pub") && prioWaiting > 0 {
					t.Fatalf("round %d: %s admitted with %d priority visitors waiting", round, a.Visitor, prioWaiting)
				}
				if strings.HasPrefix(a.Visitor, "vip") {
					prioWaiting--
				}
			}
			check("after admission")
		}
		if prioWaiting != 6 {
			t.Fatalf("%d priority visitors waiting, want 6", prioWaiting)
		}
	})
}

// TestPriorityBeforeLottery: in a random room the priority band is admitted
// before the lottery draws anyone, in join order; the rest of the batch is
// drawn among the public visitors.
func TestPriorityBeforeLottery(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(2, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, "drop", settings.Room{Method: settings.MethodRandom}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "drop", 20, "pub")
		code := prioCode("lot", 3)
		for _, v := range []string{"vip-b", "vip-a", "vip-c"} {
			if _, tk, err := q.JoinInvite(ctx, "drop", v, code); err != nil || !tk.Priority {
				t.Fatalf("%s: %+v %v", v, tk, err)
			}
		}
		if got := admittedIDs(admitTaken(t, q, "drop")); !slices.Equal(got, []string{"vip-b", "vip-a"}) {
			t.Fatalf("first tick %v", got)
		}
		got := admittedIDs(admitTaken(t, q, "drop"))
		if len(got) != 2 || got[0] != "vip-c" || !strings.HasPrefix(got[1], "pub") {
			t.Fatalf("second tick %v: want vip-c, then one drawn", got)
		}
		if got := admittedIDs(admitTaken(t, q, "drop")); len(got) != 2 || !strings.HasPrefix(got[0], "pub") {
			t.Fatalf("third tick %v", got)
		}
	})
}
