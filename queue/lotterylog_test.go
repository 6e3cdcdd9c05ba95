package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
)

// TestLotteryLogOnlyInRandomRooms: a fifo room writes no lottery log; a
// random room's log starts with the seed's commitment, pages by entry id,
// names tickets and never visitors, and its picks are the tickets the
// ticks admitted; leaving random ends the log, which is then kept for a
// while and grows no more.
func TestLotteryLogOnlyInRandomRooms(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(2, 5*time.Millisecond))
		exists := func(room string) int64 {
			t.Helper()
			v, err := r.Do(ctx, "EXISTS", prefix(room)+"lotlog", prefix(room)+"lotl")
			if err != nil {
				t.Fatal(err)
			}
			n, _ := asInt(v)
			return n
		}
		// fifo: joins, statuses, ticks, a leave, an away visitor.
		vs := joinN(t, q, "plain", 6, "f")
		lastSeen(t, r, "plain", "seen", 2*time.Minute, vs[0])
		admitTaken(t, q, "plain")
		mustStatus(t, q, "plain", vs[0])
		if _, err := q.Leave(ctx, "plain", vs[5]); err != nil {
			t.Fatal(err)
		}
		admitTaken(t, q, "plain")
		if n := exists("plain"); n != 0 {
			t.Fatalf("a fifo room wrote %d lottery log keys", n)
		}

		const room = "lot"
		randomRoom(t, q, room, settings.Room{})
		tickets := map[string]int64{}
		for i := range 8 {
			v := fmt.Sprintf("visitor-%d", i)
			_, tk, err := q.JoinTicket(ctx, room, v)
			if err != nil {
				t.Fatal(err)
			}
			tickets[v] = tk.Seq
		}
		var admitted []int64
		for range 3 {
			for _, a := range admitTaken(t, q, room).Admitted {
				admitted = append(admitted, tickets[a.Visitor])
			}
		}
		lot, err := q.ReadLottery(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		page, err := q.ReadLotteryLog(ctx, room, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		es := page.Entries
		if page.First != 1 || len(es) < 10 || es[0].Event != LogStart || es[0].Commitment == nil || *es[0].Commitment != lot.Commitment {
			t.Fatalf("log %+v, want a start with the commitment %s", page, lot.Commitment)
		}
		var picked []int64
		for i, e := range es {
			if e.ID != int64(i+1) {
				t.Fatalf("entry %d has id %d", i+1, e.ID)
			}
			if e.Event == LogPicks {
				for j, p := range e.Picks {
					if p.I != int64(j) || p.Rank < 0 || p.Rank >= p.N {
						t.Fatalf("pick %+v: out of order or range", p)
					}
					if !p.Away {
						picked = append(picked, p.Ticket)
					}
				}
			}
		}
		slices.Sort(picked)
		slices.Sort(admitted)
		if len(admitted) != 6 || !slices.Equal(picked, admitted) {
			t.Fatalf("the log picked %v, the ticks admitted %v", picked, admitted)
		}
		b, _ := json.Marshal(es)
		if strings.Contains(string(b), "visitor-") {
			t.Fatalf("the log names visitors: %s", b)
		}
		mid, err := q.ReadLotteryLog(ctx, room, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(mid.Entries) != 3 || mid.Entries[0].ID != 3 || mid.Entries[2].ID != 5 {
			t.Fatalf("page after 2, limit 3: %+v", mid.Entries)
		}

		// A log the cap trimmed says where it now begins.
		if _, err := r.Do(ctx, "XTRIM", prefix(room)+"lotlog", "MAXLEN", "4"); err != nil {
			t.Fatal(err)
		}
		if tr, err := q.ReadLotteryLog(ctx, room, 0, 1000); err != nil || tr.First != int64(len(es)-3) || len(tr.Entries) != 4 {
			t.Fatalf("trimmed to 4 of %d: %+v %v", len(es), tr, err)
		}

		// Back to fifo: an end entry, nothing more after it.
		if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, room, 2, "late")
		admitTaken(t, q, room)
		end, err := q.ReadLotteryLog(ctx, room, int64(len(es)), 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(end.Entries) != 1 || end.Entries[0].Event != LogEnd {
			t.Fatalf("after the lottery: %+v, want only its end", end.Entries)
		}
		ttl, err := r.Do(ctx, "PTTL", prefix(room)+"lotlog")
		if err != nil {
			t.Fatal(err)
		}
		if ms, _ := asInt(ttl); ms <= 0 || ms > 7*24*3600*1000 {
			t.Fatalf("the ended log's ttl: %d ms, want up to a week", ms)
		}
		// A new lottery starts a new log.
		randomRoom(t, q, room, settings.Room{})
		admitTaken(t, q, room)
		again, err := q.ReadLotteryLog(ctx, room, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		lot2, _ := q.ReadLottery(ctx, room)
		if again.First != 1 || again.Entries[0].Event != LogStart || *again.Entries[0].Commitment != lot2.Commitment || lot2.Commitment == lot.Commitment {
			t.Fatalf("a new lottery's log: %+v", again)
		}
	})
}

// TestLotteryLogCapDocumented: the cap the scripts use is LotteryLogMax.
func TestLotteryLogCapDocumented(t *testing.T) {
	src := readScript("lotlog")
	if want := fmt.Sprintf("local LOT_MAX = %d ", LotteryLogMax); !strings.Contains(src, want) {
		t.Fatalf("lotlog.lua does not say %q", want)
	}
}

// TestLotteryLogPageBounded: a log of big entries (a snap lists 2,000
// tickets) is served in pages bounded in bytes, whatever the limit asks,
// and the pages read on one after another give every entry once, in
// order.
func TestLotteryLogPageBounded(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "big"
		q := newQueue(t, r, nil)
		ts := make([]string, 2000)
		for i := range ts {
			ts[i] = fmt.Sprint(10_000_000 + i)
		}
		list := strings.Join(ts, ",")
		const n = 300 // about 5 MB
		key := prefix(room) + "lotlog"
		for i := 1; i <= n; i++ {
			if _, err := r.Do(ctx, "XADD", key, fmt.Sprintf("%d-0", i), "e", "snap", "after", "", "upto", "", "tickets", list); err != nil {
				t.Fatal(err)
			}
		}
		var after int64
		seen := 0
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("too many pages")
			}
			page, err := q.ReadLotteryLog(ctx, room, after, 10000)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(page.Entries)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 2<<20 {
				t.Fatalf("a page of %d entries is %d bytes of JSON", len(page.Entries), len(b))
			}
			for _, e := range page.Entries {
				if e.ID != after+1 || len(e.Tickets) != len(ts) {
					t.Fatalf("entry %d (%d tickets) after %d", e.ID, len(e.Tickets), after)
				}
				after = e.ID
				seen++
			}
			if page.First != 1 {
				t.Fatalf("first %d", page.First)
			}
			if !page.More {
				break
			}
			if len(page.Entries) == 0 {
				t.Fatal("an empty page says more follows")
			}
		}
		if seen != n {
			t.Fatalf("read %d entries of %d", seen, n)
		}
	})
}
