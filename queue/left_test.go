package queue

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// TestLeftSetAsideUntilSeen: a visitor whose last push connection closed
// and who showed no sign of life since is not admitted when its turn
// comes, though within awayAfter: it is set aside with its ticket, and
// goes first as soon as it shows up (a poll here). One whose connection
// closed and who polled since is admitted in turn. The same under the
// lottery.
func TestLeftSetAsideUntilSeen(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(2, 20*time.Millisecond))
		const room = "left"
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, room, "a", "b", "c", "d", "e")
		if _, err := q.Left(ctx, room, []string{"a", "c"}); err != nil {
			t.Fatal(err)
		}
		mustStatus(t, q, room, "c") // c polls: it is there
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"b", "c"}) {
			t.Fatalf("first tick admitted %v, want [b c] (a's connection closed)", got)
		}
		if st := mustStatus(t, q, room, "a"); st.Status != wire.StatusWaiting || st.Position != 1 {
			t.Fatalf("a back: %+v, want waiting at 1", st)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"a", "d"}) {
			t.Fatalf("second tick admitted %v, want [a d]", got)
		}
		// A connection open again (Seen) counts as being there.
		if _, err := q.Left(ctx, room, []string{"e"}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Seen(ctx, room, []string{"e"}); err != nil {
			t.Fatal(err)
		}
		if got := admittedIDs(admitTaken(t, q, room)); !slices.Equal(got, []string{"e"}) {
			t.Fatalf("third tick admitted %v, want [e]", got)
		}

		// The lottery skips a closed one too.
		randomRoom(t, q, "lot", settings.Room{})
		joinAll(t, q, "lot", "x", "y", "z")
		if _, err := q.Left(ctx, "lot", []string{"y"}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 3 {
			got = append(got, admittedIDs(admitTaken(t, q, "lot"))...)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"x", "z"}) {
			t.Fatalf("lottery admitted %v, want x and z", got)
		}
		// With presence off, a closed connection changes nothing.
		if err := q.SetRoomConfig(ctx, "off", settings.Room{NoPresence: true}); err != nil {
			t.Fatal(err)
		}
		joinAll(t, q, "off", "p", "q")
		if _, err := q.Left(ctx, "off", []string{"p"}); err != nil {
			t.Fatal(err)
		}
		if got := admittedIDs(admitTaken(t, q, "off")); !slices.Equal(got, []string{"p", "q"}) {
			t.Fatalf("presence off admitted %v, want [p q]", got)
		}
	})
}
