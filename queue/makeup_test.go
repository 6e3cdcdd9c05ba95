package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// visitorRange names visitors prefix00 … prefix(n-1).
func visitorRange(prefix string, from, to int) []string {
	var vs []string
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Sprintf("%s%02d", prefix, i))
	}
	return vs
}

func presenceOf(t *testing.T, q *Queue, room string) PresenceStats {
	t.Helper()
	ps, err := q.Presence(context.Background(), room)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestPresenceMakesUpTakenBackTokens: under fixed, the token of a visitor
// last seen before its admission (it left before its turn and never heard
// of the token) and unseen for awayAfter is taken back, and a later tick
// admits one more than the batch to make it up: never one who is away, at
// most a quarter of the batch a tick, and not for a token taken back
// longer than awayAfter ago. A visitor seen after its admission keeps its
// token under fixed, however quiet (the protected site may check it
// later). One whose token was taken back goes first when it comes back.
func TestPresenceMakesUpTakenBackTokens(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "makeup"
		q := newQueue(t, r, fixedBatch(4, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, visitorRange("v", 0, 40)...)
		first := admitTaken(t, q, room)
		if got := admittedIDs(first); !slices.Equal(got, visitorRange("v", 0, 4)) {
			t.Fatalf("first tick admitted %v", got)
		}
		// v00 left before its turn: last seen two minutes ago.
		lastSeen(t, r, room, "aseen", 2*time.Minute, "v00")
		// v01 heard of its token (seen after its admission, 100 s ago) and
		// has been quiet for 90 s since, on a site that has not checked
		// the token yet.
		now := time.Now()
		nb1, exp1 := now.Add(-100*time.Second).UnixMilli(), now.Add(200*time.Second).UnixMilli()
		if _, err := r.Do(ctx, "SET", prefix(room)+"t:v01", fmt.Sprintf("%d:%d:%d", nb1, exp1, exp1), "PX", "300000"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Do(ctx, "ZADD", prefix(room)+"active", strconv.FormatInt(exp1, 10), "v01"); err != nil {
			t.Fatal(err)
		}
		lastSeen(t, r, room, "aseen", 90*time.Second, "v01")
		// v05 is away when its turn comes.
		lastSeen(t, r, room, "seen", 2*time.Minute, "v05")

		second := admitTaken(t, q, room)
		if got := admittedIDs(second); !slices.Equal(got, []string{"v04", "v06", "v07", "v08", "v09"}) {
			t.Fatalf("second tick admitted %v, want v04 v06 v07 v08 v09 (4 + 1 made up, v05 away)", got)
		}
		if ps := presenceOf(t, q, room); ps.ReclaimedTotal != 1 || ps.MadeUpTotal != 1 || ps.MadeUpPerMinute != 1 || ps.SkippedTotal != 1 {
			t.Fatalf("presence: %+v, want 1 taken back, 1 made up, 1 set aside", ps)
		}
		a0 := first.Admitted[0]
		waitUntil(t, a0.NotBefore)
		if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: "v00", NotBefore: a0.NotBefore, ExpiresAt: a0.ExpiresAt}, Check); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("v00's taken-back token: %v, want unknown", err)
		}
		if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: "v01", NotBefore: time.UnixMilli(nb1), ExpiresAt: time.UnixMilli(exp1)}, Check); err != nil {
			t.Fatalf("v01's token, heard of: %v, want valid", err)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, visitorRange("v", 10, 14)) {
			t.Fatalf("third tick admitted %v, want the batch of 4 (nothing owed)", got)
		}
		if st := mustStatus(t, q, room, "v00"); st.Status != wire.StatusWaiting || st.Position != 1 {
			t.Fatalf("v00 back: %+v, want waiting at 1", st)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"v00", "v14", "v15", "v16"}) {
			t.Fatalf("fourth tick admitted %v, want v00 first", got)
		}

		// Three taken back at once are made up one a tick (a quarter of 4).
		lastSeen(t, r, room, "aseen", 2*time.Minute, "v06", "v07", "v08")
		var sizes []int
		for range 4 {
			sizes = append(sizes, len(admitTaken(t, q, room).Admitted))
		}
		if !slices.Equal(sizes, []int{5, 5, 5, 4}) {
			t.Fatalf("ticks admitted %v, want [5 5 5 4]", sizes)
		}
		if ps := presenceOf(t, q, room); ps.ReclaimedTotal != 4 || ps.MadeUpTotal != 4 {
			t.Fatalf("presence: %+v, want 4 taken back and made up", ps)
		}

		// Taken back during a pause, and resumed after awayAfter: capacity
		// missed that long ago is not made up.
		if err := q.SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
			t.Fatal(err)
		}
		lastSeen(t, r, room, "aseen", 2*time.Minute, "v09")
		nb9 := second.Admitted[4].NotBefore.UnixMilli()
		if got := admittedIDs(admitTaken(t, q, room)); len(got) != 0 {
			t.Fatalf("paused tick admitted %v", got)
		}
		if ps := presenceOf(t, q, room); ps.ReclaimedTotal != 5 {
			t.Fatalf("presence: %+v, want v09's token taken back while paused", ps)
		}
		long := strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixMilli(), 10)
		if n, err := r.Do(ctx, "ZADD", prefix(room)+"owed", "XX", "CH", long, "v09:"+strconv.FormatInt(nb9, 10)); err != nil || !isOne(n) {
			t.Fatalf("ageing the owed admission: %v %v", n, err)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		if got := admittedIDs(admitTaken(t, q, room)); len(got) != 4 {
			t.Fatalf("after the pause admitted %v, want the batch of 4 only", got)
		}
		if ps := presenceOf(t, q, room); ps.MadeUpTotal != 4 {
			t.Fatalf("presence: %+v, want still 4 made up", ps)
		}
	})
}

// TestPresenceMakeUpKeepsLimits: under max-active, a token taken back
// frees its slot and is owed, but the make-up never admits past maxActive;
// with presence off nothing is taken back or made up.
func TestPresenceMakeUpKeepsLimits(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "makeup-max"
		q := newQueue(t, r, fixedBatch(4, 50*time.Millisecond))
		if err := q.SetRoomConfig(ctx, room, settings.Room{Strategy: settings.StrategyMaxActive, MaxActive: 3}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, visitorRange("m", 0, 20)...)
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, visitorRange("m", 0, 3)) {
			t.Fatalf("first tick admitted %v, want 3 (maxActive)", got)
		}
		lastSeen(t, r, room, "aseen", 2*time.Minute, "m00", "m01")
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"m03", "m04"}) {
			t.Fatalf("second tick admitted %v, want the 2 freed slots only", got)
		}
		st, err := q.Stats(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		if st.ActiveTokens != 3 {
			t.Fatalf("%d live tokens, want 3 (maxActive)", st.ActiveTokens)
		}
		if ps := presenceOf(t, q, room); ps.ReclaimedTotal != 2 || ps.MadeUpTotal != 0 {
			t.Fatalf("presence: %+v, want 2 taken back, none made up past maxActive", ps)
		}

		// Presence off: a quiet visitor's token stays, nothing is owed.
		const off = "makeup-off"
		if err := q.SetRoomConfig(ctx, off, settings.Room{NoPresence: true}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, off, visitorRange("o", 0, 12)...)
		admitTaken(t, q, off)
		lastSeen(t, r, off, "aseen", 2*time.Minute, "o00")
		for range 2 {
			if got := admittedIDs(admitTaken(t, q, off)); len(got) != 4 {
				t.Fatalf("presence off admitted %v, want the batch of 4", got)
			}
		}
		if ps := presenceOf(t, q, off); ps.ReclaimedTotal != 0 || ps.MadeUpTotal != 0 {
			t.Fatalf("presence off: %+v", ps)
		}
	})
}

func isOne(v any) bool {
	n, err := asInt(v)
	return err == nil && n == 1
}
