package queue

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// lastSeen sets visitors' last sign of life to ago before now, as if they
// had left then (the scripts read only what is stored).
func lastSeen(t *testing.T, r Redis, room, set string, ago time.Duration, visitors ...string) {
	t.Helper()
	at := strconv.FormatInt(time.Now().Add(-ago).UnixMilli(), 10)
	for _, v := range visitors {
		if _, err := r.Do(context.Background(), "ZADD", prefix(room)+set, at, v); err != nil {
			t.Fatal(err)
		}
	}
}

func joinAll(t *testing.T, q *Queue, room string, visitors ...string) {
	t.Helper()
	for _, v := range visitors {
		if _, err := q.Join(context.Background(), room, v); err != nil {
			t.Fatal(err)
		}
	}
}

func admittedIDs(res Result) []string {
	var ids []string
	for _, a := range res.Admitted {
		ids = append(ids, a.Visitor)
	}
	return ids
}

func mustStatus(t *testing.T, q *Queue, room, v string) wire.State {
	t.Helper()
	st, err := q.Status(context.Background(), room, v)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestPresenceSkipsAwayAndBringsBack: visitors away when their turn comes
// are set aside with their ticket; one who comes back goes first in the
// next tick; one unseen for dropAfter loses the place (expired, reason
// away) and a later join takes a new ticket at the back.
func TestPresenceSkipsAwayAndBringsBack(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "presence"
		q := newQueue(t, r, fixedBatch(2, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "a", "b", "c", "d", "e", "f")
		lastSeen(t, r, room, "seen", 2*time.Minute, "b", "c")
		ps, err := q.Presence(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if !ps.On || ps.Away != 2 || ps.WaitingPresent != 4 {
			t.Fatalf("presence before the tick: %+v, want on, 2 away, 4 present", ps)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"a", "d"}) {
			t.Fatalf("first tick admitted %v, want [a d] (b and c away)", got)
		}
		if ps, _ = q.Presence(ctx, room); ps.Away != 2 || ps.SkippedTotal != 2 || ps.SkippedPerMinute != 2 {
			t.Fatalf("presence after the tick: %+v, want 2 away, 2 skipped", ps)
		}
		// e is now first in the queue; b comes back and goes before it.
		if st := mustStatus(t, q, room, "b"); st.Status != wire.StatusWaiting || st.Position != 1 {
			t.Fatalf("b back: %+v, want waiting at 1", st)
		}
		if st := mustStatus(t, q, room, "e"); st.Status != wire.StatusWaiting || st.Position != 2 {
			t.Fatalf("e: %+v, want waiting at 2 behind b", st)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"b", "e"}) {
			t.Fatalf("second tick admitted %v, want [b e]", got)
		}
		// c stays away past dropAfter: the place is gone.
		lastSeen(t, r, room, "seen", 11*time.Minute, "c")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"f"}) {
			t.Fatalf("third tick admitted %v, want [f]", got)
		}
		st := mustStatus(t, q, room, "c")
		if st.Status != wire.StatusExpired || st.Reason != wire.ReasonAway {
			t.Fatalf("c after dropAfter: %+v, want expired (away)", st)
		}
		if b := string(st.AppendJSON(nil)); b != `{"type":"state","room":"presence","status":"expired","paused":false,"reason":"away"}` {
			t.Fatalf("encoded: %s", b)
		}
		if ps, _ = q.Presence(ctx, room); ps.DroppedTotal != 1 || ps.Away != 0 {
			t.Fatalf("presence after the drop: %+v", ps)
		}
		if _, err := q.Join(ctx, room, "g"); err != nil {
			t.Fatal(err)
		}
		st, err = q.Join(ctx, room, "c")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != wire.StatusWaiting || st.Position != 2 {
			t.Fatalf("c joining again: %+v, want waiting at the back (2)", st)
		}
	})
}

// TestPresenceGivesBackUnusedTokens: under max-active, the token of an
// admitted visitor unseen for awayAfter is taken back and its slot goes to
// the next; when that visitor comes back it gets a fresh token ahead of
// the queue as soon as a slot frees.
func TestPresenceGivesBackUnusedTokens(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "reclaim"
		q := newQueue(t, r, fixedBatch(5, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "a", "b", "c")
		first := admitTaken(t, q, room)
		if got := admittedIDs(first); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("admitted %v, want [a]", got)
		}
		if got := admittedIDs(admitTaken(t, q, room)); len(got) != 0 {
			t.Fatalf("admitted %v with the one slot held", got)
		}
		lastSeen(t, r, room, "aseen", 2*time.Minute, "a")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("after a left: admitted %v, want [b]", got)
		}
		a := first.Admitted[0]
		old := visitorsig.Token{Room: room, Visitor: "a", NotBefore: a.NotBefore, ExpiresAt: a.ExpiresAt}
		waitUntil(t, a.NotBefore)
		if _, err := q.Consume(ctx, old, Check); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("taken-back token: %v, want unknown", err)
		}
		if ps, _ := q.Presence(ctx, room); ps.ReclaimedTotal != 1 || ps.ReclaimedPerMinute != 1 {
			t.Fatalf("presence: %+v, want 1 reclaimed", ps)
		}
		// a comes back: first in line, admitted when b's slot frees.
		if st := mustStatus(t, q, room, "a"); st.Status != wire.StatusWaiting || st.Position != 1 {
			t.Fatalf("a back: %+v, want waiting at 1", st)
		}
		sb := mustStatus(t, q, room, "b")
		waitUntil(t, sb.NotBefore)
		if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: "b", NotBefore: sb.NotBefore, ExpiresAt: sb.ExpiresAt}, Spend); err != nil {
			t.Fatal(err)
		}
		again := admitTaken(t, q, room)
		if got := admittedIDs(again); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("after b used its token: admitted %v, want [a] before c", got)
		}
		if again.Admitted[0].NotBefore.Equal(a.NotBefore) {
			t.Fatal("a got its old token back, want a fresh one")
		}
	})
}

// TestPresenceOff: with presence off every visitor is admitted in turn,
// and visitors set aside before it was turned off go first.
func TestPresenceOff(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "nopresence"
		q := newQueue(t, r, fixedBatch(2, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "v0", "v1", "v2", "v3", "v4")
		lastSeen(t, r, room, "seen", 2*time.Minute, "v0", "v1", "v2")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"v3", "v4"}) {
			t.Fatalf("admitted %v, want [v3 v4]", got)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{NoPresence: true}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 2 {
			got = append(got, admittedIDs(admitTaken(t, q, room))...)
		}
		if !slices.Equal(got, []string{"v0", "v1", "v2"}) {
			t.Fatalf("with presence off admitted %v, want [v0 v1 v2]", got)
		}
		if ps, _ := q.Presence(ctx, room); ps.On || ps.Away != 0 {
			t.Fatalf("presence: %+v", ps)
		}
	})
}

// TestSeenBringsBack: a hub's batch write is a sign of life like a poll,
// and tells how soon to write again.
func TestSeenBringsBack(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "seen"
		q := newQueue(t, r, fixedBatch(1, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{AwayAfter: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "v0", "v1", "v2")
		lastSeen(t, r, room, "seen", time.Minute, "v0", "v1")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"v2"}) {
			t.Fatalf("admitted %v, want [v2]", got)
		}
		every, err := q.Seen(ctx, room, []string{"v1", "v0"})
		if err != nil {
			t.Fatal(err)
		}
		if every != 10*time.Second {
			t.Fatalf("write again in %v, want 10s (awayAfter/3)", every)
		}
		var got []string
		for range 2 {
			got = append(got, admittedIDs(admitTaken(t, q, room))...)
		}
		if !slices.Equal(got, []string{"v0", "v1"}) {
			t.Fatalf("admitted %v, want [v0 v1] in ticket order", got)
		}
		if _, err := q.Seen(ctx, room, []string{"bad visitor"}); err == nil {
			t.Fatal("invalid visitor accepted")
		}
	})
}

func TestPresenceSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		c     settings.Room
		field string
	}{
		{settings.Room{AwayAfter: 14 * time.Second}, "awayAfterSeconds"},
		{settings.Room{AwayAfter: 2 * time.Hour}, "awayAfterSeconds"},
		{settings.Room{AwayAfter: 20 * time.Minute}, "awayAfterSeconds"},
		{settings.Room{AwayAfter: 30 * time.Second, DropAfter: 20 * time.Second}, "dropAfterSeconds"},
		{settings.Room{DropAfter: 25 * time.Hour}, "dropAfterSeconds"},
		{settings.Room{AwayAfter: 15 * time.Second, DropAfter: 15 * time.Second}, ""},
		{settings.Room{NoPresence: true}, ""},
	} {
		err := tc.c.Validate()
		var fe *settings.FieldError
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
			t.Errorf("%+v: %v, want field %q", tc.c, err, tc.field)
		}
	}
}

// TestPresenceSlotClockStartsAtLastSeen: a visitor last seen shortly
// before its turn is admitted (it is not away yet), and its unused token's
// slot comes back awayAfter after it was last seen, not after admission.
func TestPresenceSlotClockStartsAtLastSeen(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "lastseen"
		q := newQueue(t, r, fixedBatch(5, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 1, AwayAfter: MinAwayAfter}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "a", "b")
		lastSeen(t, r, room, "seen", MinAwayAfter-2*time.Second, "a")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("admitted %v, want [a] (seen within awayAfter)", got)
		}
		// Well before a whole awayAfter from admission, b gets a's slot.
		waitfor.Until(t, 10*time.Second, "a's slot given back to b", func() bool {
			return slices.Equal(admittedIDs(admitTaken(t, q, room)), []string{"b"})
		})
	})
}

// TestPresenceKeepsUsedTokens: a token once used (a gateway session that
// slides it) keeps its slot however long its visitor is quiet; only unused
// tokens are taken back.
func TestPresenceKeepsUsedTokens(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "used"
		q := newQueue(t, r, fixedBatch(5, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 1}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "a", "b")
		a := admitOne(t, q, room)
		waitUntil(t, a.NotBefore)
		if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: "a", NotBefore: a.NotBefore, ExpiresAt: a.ExpiresAt}, Touch); err != nil {
			t.Fatal(err)
		}
		if v, err := r.Do(ctx, "ZSCORE", prefix(room)+"aseen", "a"); err != nil || v != nil {
			t.Fatalf("a used token is still watched as unused: %v %v", v, err)
		}
		lastSeen(t, r, room, "seen", 5*time.Minute, "a")
		for range 3 {
			if got := admittedIDs(admitTaken(t, q, room)); len(got) != 0 {
				t.Fatalf("admitted %v while a's used token holds the slot", got)
			}
		}
		if ps, _ := q.Presence(ctx, room); ps.ReclaimedTotal != 0 {
			t.Fatalf("a used token was taken back: %+v", ps)
		}
	})
}

// TestDroppedStaysDropped: a visitor dropped for being away does not get
// its place back with its signed ticket, neither once the dropped marker
// (which lives the token retention, shortened here) has expired nor after
// Redis lost everything; it joins again at the back, behind those who
// stayed.
func TestDroppedStaysDropped(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "drop"
		opts := fixedBatch(1, 5*time.Millisecond)
		opts.Retention = 50 * time.Millisecond
		opts.Settings = settingsOf{room: {Paused: true}}
		q := newQueue(t, r, opts)
		if err := q.SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		var tickets []wire.Ticket
		for _, v := range []string{"a", "b", "c"} {
			_, tk, err := q.JoinTicket(ctx, room, v)
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, tk)
		}
		lastSeen(t, r, room, "seen", 20*time.Minute, "a")
		admitTaken(t, q, room)
		if st := mustStatus(t, q, room, "a"); st.Status != wire.StatusExpired {
			t.Fatalf("a after the drop: %+v, want expired", st)
		}
		marker := prefix(room) + "dropped:a"
		if v, err := r.Do(ctx, "PTTL", marker); err != nil {
			t.Fatal(err)
		} else if ms, _ := asInt(v); ms <= 0 || ms > 50 {
			t.Fatalf("the dropped marker lives %d ms, want the retention (50 ms)", ms)
		}
		if srv.Kind == "mini" {
			// miniredis expires keys only when told to: the marker goes
			// as its expiry would take it.
			if _, err := r.Do(ctx, "DEL", marker); err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 5*time.Second, "the dropped marker expired", func() bool {
			v, err := r.Do(ctx, "EXISTS", marker)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := asInt(v)
			return n == 0
		})
		if res, err := q.Retake(ctx, room, []string{"a"}, tickets[:1]); err != nil || res.Tickets != 0 {
			t.Fatalf("retake of a dropped ticket once its marker expired: %+v %v", res, err)
		}
		if st := mustStatus(t, q, room, "a"); st.Status != wire.StatusNotInQueue {
			t.Fatalf("a after its marker expired: %+v, want not_in_queue", st)
		}
		// Redis loses everything: b and c come back, a does not.
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		q.recovery.markLost()
		q.configuredRooms(ctx)
		res, err := q.Retake(ctx, room, []string{"a", "b", "c"}, tickets)
		if err != nil || res.Tickets != 2 {
			t.Fatalf("retake after the loss: %+v %v, want b and c back", res, err)
		}
		st, tk, err := q.JoinTicket(ctx, room, "a")
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != wire.StatusWaiting || tk.Seq <= tickets[2].Seq || st.Position != 3 {
			t.Fatalf("a joins again: %+v ticket %d, want at the back (3rd)", st, tk.Seq)
		}
	})
}
