package queue

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// TestDrawCommitReveal: a room that gets opensAt publishes a commitment
// and no seed; at opening the pre-queue is placed in DrawOrder of the seed
// and the ids; after, the seed matches the commitment and the revealed
// list recomputes the exact order of the queue.
func TestDrawCommitReveal(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "audited"
		q := newQueue(t, r, fixedBatch(10, 100*time.Millisecond))
		if _, err := q.Draw(ctx, room, 0, 10); !errors.Is(err, ErrNoDraw) {
			t.Fatalf("draw of a room without opensAt: %v, want ErrNoDraw", err)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{OpensAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		before, err := q.Draw(ctx, room, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(before.Commitment) != 64 || before.Opened || before.Seed != "" || len(before.IDs) != 0 || before.CommittedAt.IsZero() {
			t.Fatalf("before opening: %+v", before)
		}
		const n = 2600 // keyed and placed over several calls
		pre := fillPreQueue(t, r, room, "p", n)
		// Another settings change before opening keeps the commitment.
		if err := q.SetRoomConfig(ctx, room, settings.Room{Batch: 5, OpensAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if d, _ := q.Draw(ctx, room, 0, 10); d.Commitment != before.Commitment || d.Seed != "" {
			t.Fatalf("commitment changed before opening: %+v", d)
		}
		if err := q.SetRoomConfig(ctx, room, settings.Room{Batch: 5, OpensAt: time.Now().Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
		for step := 0; step == 0 || drawUnderWay(t, r, room); step++ {
			if step > 100 {
				t.Fatal("the draw does not end")
			}
			if _, err := q.Status(ctx, room, "nobody"); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, time.Now().Add(25*time.Millisecond))
		}
		var ids []string
		var d Draw
		for off := 0; ; off += 1000 {
			page, err := q.Draw(ctx, room, off, 1000)
			if err != nil {
				t.Fatal(err)
			}
			d = page
			if len(page.IDs) == 0 {
				break
			}
			ids = append(ids, page.IDs...)
		}
		if !d.Opened || d.Placing || d.Count != n || d.OpenedAt.IsZero() {
			t.Fatalf("after opening: %+v", d)
		}
		if Commitment(d.Seed) != before.Commitment {
			t.Fatalf("seed %q does not match the commitment %s", d.Seed, before.Commitment)
		}
		if !slices.Equal(ids, pre) {
			t.Fatalf("revealed %d ids, want the %d of the pre-queue, sorted", len(ids), n)
		}
		got := queued(t, r, room)
		if want := DrawOrder(d.Seed, ids); !slices.Equal(got, want) {
			t.Fatalf("the queue's order differs from the recomputed one (first %v, want %v)", got[:3], want[:3])
		}
		if slices.Equal(got, pre) {
			t.Fatal("the draw kept the pre-queue's order")
		}
		// A new opening gets a new seed.
		if err := q.SetRoomConfig(ctx, room, settings.Room{OpensAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if next, _ := q.Draw(ctx, room, 0, 10); next.Commitment == before.Commitment || next.Opened || next.Seed != "" {
			t.Fatalf("the next draw: %+v", next)
		}
	})
}

func TestDrawOrderIsAFunctionOfSeedAndIDs(t *testing.T) {
	ids := []string{"c", "a", "b", "d", "e"}
	one := DrawOrder("seed", ids)
	two := DrawOrder("seed", slices.Clone(slices.Sorted(slices.Values(ids))))
	if !slices.Equal(one, two) {
		t.Fatalf("order depends on the input order: %v %v", one, two)
	}
	if slices.Equal(DrawOrder("other", ids), one) && slices.Equal(DrawOrder("third", ids), one) {
		t.Fatal("the seed does not change the order")
	}
	// Fixed example, so the documented function cannot drift.
	if k := DrawKey("s", "v"); k != "21afabc4100b65d9a6e668c28b6fff81dd75d531" {
		t.Fatalf("DrawKey(s, v) = %s", k)
	}
	if c := Commitment("s"); c != "043a718774c572bd8a25adbeb1bfcd5c0256ae11cecf9f9c3f925d0e52beaf89" {
		t.Fatalf("Commitment(s) = %s", c)
	}
}
