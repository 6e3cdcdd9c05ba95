package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// seatsOpts: one visitor per tick is enough to see a seat go twice, and
// tokens expire after 1 s unused.
func seatsOpts() *Options {
	return &Options{Capacity: Capacity{Batch: 5, Tick: 50 * time.Millisecond}, TokenTTL: time.Second}
}

// admitOne runs ticks until one of them admits someone, and returns that
// admission.
func admitOne(t *testing.T, q *Queue, room string) wire.Admission {
	t.Helper()
	var res Result
	waitfor.Until(t, 5*time.Second, "somebody admitted", func() bool {
		res = admitTaken(t, q, room)
		return len(res.Admitted) > 0
	})
	if len(res.Admitted) != 1 {
		t.Fatalf("admitted %d at once with one seat", len(res.Admitted))
	}
	return res.Admitted[0]
}

// TestSeatFreedOnceAfterExpiryAndLeave: a token that expired unused frees
// its seat at the sweep; a later leave by the same visitor must not free it
// a second time.
func TestSeatFreedOnceAfterExpiryAndLeave(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, seatsOpts())
		if err := q.SetRoomConfig(ctx, "seat", settings.Room{Seats: 1}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "seat", 1, "a")
		a := admitOne(t, q, "seat")
		joinN(t, q, "seat", 4, "b")
		waitUntil(t, a.ExpiresAt)
		// The sweep frees a's seat and the same tick gives it to b000.
		if b := admitOne(t, q, "seat"); b.Visitor != "b000" {
			t.Fatalf("after a expired: %s admitted, want b000", b.Visitor)
		}
		if _, err := q.Leave(ctx, "seat", a.Visitor); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if res := admitTaken(t, q, "seat"); len(res.Admitted) != 0 {
				t.Fatalf("a's leave freed its seat again: %s admitted with b000 holding the only seat", res.Admitted[0].Visitor)
			}
		}
		st, err := q.Stats(ctx, "seat")
		if err != nil || st.SeatsHeld != 1 || st.ActiveTokens != 1 {
			t.Fatalf("stats %+v %v, want 1 seat held by 1 live token", st, err)
		}
	})
}

// TestSeatsSetAfterTokensWentOut: tokens issued while the room had no seat
// limit count against seats set later, and expiring frees only what they
// held.
func TestSeatsSetAfterTokensWentOut(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, seatsOpts())
		joinN(t, q, "late-seats", 3, "a")
		res := admitTaken(t, q, "late-seats")
		if len(res.Admitted) != 3 {
			t.Fatalf("no limit: admitted %d, want 3", len(res.Admitted))
		}
		if err := q.SetRoomConfig(ctx, "late-seats", settings.Room{Seats: 1}); err != nil {
			t.Fatal(err)
		}
		joinN(t, q, "late-seats", 6, "b")
		if res := admitTaken(t, q, "late-seats"); len(res.Admitted) != 0 {
			t.Fatalf("3 tokens out, 1 seat: admitted %d more", len(res.Admitted))
		}
		waitUntil(t, res.Admitted[2].ExpiresAt)
		admitOne(t, q, "late-seats")
		for range 3 {
			if res := admitTaken(t, q, "late-seats"); len(res.Admitted) != 0 {
				t.Fatalf("after the old tokens expired: %d more admitted with the only seat held", len(res.Admitted))
			}
		}
		st, err := q.Stats(ctx, "late-seats")
		if err != nil || st.SeatsHeld != 1 || st.ActiveTokens != 1 {
			t.Fatalf("stats %+v %v, want 1 seat held by 1 live token", st, err)
		}
	})
}

// seatCheck reads, in one atomic step, the live token records (the truth),
// the live entries of the active set, and the sold count.
var seatCheck = rediscall.NewScript("seatcheck", mustPrelude()+`
local p = ARGV[1]
local now = now_ms()
local live = 0
for _, k in ipairs(redis.call('KEYS', p .. 't:*')) do
  local nb, exp = read_token(k)
  if nb and now < exp then live = live + 1 end
end
return {live, redis.call('ZCOUNT', p .. 'active', '(' .. now, '+inf'),
  num(redis.call('HGET', p .. 'stats', 'sold'), 0)}
`)

// mustPrelude is the prelude's clock, token records and settings.
func mustPrelude() string {
	return readScript("clock") + readScript("token") + readScript("settings")
}

// TestSeatsRandomSequence drives one room with random joins, leaves,
// uses, give-backs and seat changes while three instances tick it
// concurrently, and checks after every step that the seats held are
// exactly the live tokens plus those used up, never negative, and never
// more than the seats (beyond what was already out when the limit was
// set or lowered, which may only go down).
func TestSeatsRandomSequence(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "random-seats"
		qs := threeInstances(t, srv, r, seatsOpts)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))

		seats := 2
		if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Seats: seats}); err != nil {
			t.Fatal(err)
		}
		bound := seats // what the count may reach: seats, or more while old tokens are out
		check := func(step int, what string) (live, sold int64) {
			t.Helper()
			v, err := r.Eval(ctx, seatCheck, []string{queueKey(room)}, prefix(room))
			if err != nil {
				t.Fatal(err)
			}
			n, err := asInts(v, 3)
			if err != nil {
				t.Fatal(err)
			}
			live, activeLive, sold := n[0], n[1], n[2]
			if live != activeLive || sold < 0 {
				t.Fatalf("step %d (%s): %d live tokens, %d counted live, %d sold", step, what, live, activeLive, sold)
			}
			st, err := qs[rng.IntN(3)].Stats(ctx, room)
			if err != nil {
				t.Fatal(err)
			}
			if st.SeatsHeld < 0 {
				t.Fatalf("step %d (%s): seats held %d", step, what, st.SeatsHeld)
			}
			if seats > 0 {
				if int(live+sold) > bound {
					t.Fatalf("step %d (%s): %d live + %d sold > %d seats (bound %d)", step, what, live, sold, seats, bound)
				}
				bound = max(seats, min(bound, int(live+sold)))
			}
			return live, sold
		}

		runCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, q := range qs {
			wg.Go(func() { _ = q.Run(runCtx) })
		}
		defer func() { stop(); wg.Wait() }()

		type spent struct {
			tok visitorsig.Token
			exp time.Time
		}
		var (
			visitors []string
			used     []spent
			ops      = map[string]int{}
		)
		// At least 4 s of steps, and on a slow machine more, until the
		// sequence has left and restored (bounded at 40 s).
		deadline, hardDeadline := time.Now().Add(4*time.Second), time.Now().Add(40*time.Second)
		enough := func() bool { return ops["leave"] > 0 && ops["restore"] > 0 && ops["spend"] >= 5 }
		for step := 0; time.Now().Before(deadline) || !enough() && time.Now().Before(hardDeadline); step++ {
			q := qs[rng.IntN(3)]
			var what string
			switch x := rng.IntN(100); {
			case x < 35:
				what = "join"
				v := fmt.Sprintf("v%04d", len(visitors))
				visitors = append(visitors, v)
				if _, err := q.Join(ctx, room, v); err != nil {
					t.Fatal(err)
				}
			case x < 55 && len(visitors) > 0:
				what = "leave"
				if _, err := q.Leave(ctx, room, visitors[rng.IntN(len(visitors))]); err != nil {
					t.Fatal(err)
				}
			case x < 75 && len(visitors) > 0:
				what = "spend"
				v := visitors[rng.IntN(len(visitors))]
				s, err := q.Status(ctx, room, v)
				if err != nil {
					t.Fatal(err)
				}
				if s.Status != wire.StatusAdmitted || time.Now().Before(s.NotBefore) {
					what = "status"
					break
				}
				tok := visitorsig.Token{Room: room, Visitor: v, NotBefore: s.NotBefore}
				if exp, err := q.Consume(ctx, tok, Spend); err == nil {
					used = append(used, spent{tok, exp})
				}
			case x < 85 && len(used) > 0:
				what = "restore"
				i := rng.IntN(len(used))
				if err := q.Restore(ctx, used[i].tok, used[i].exp); err != nil {
					t.Fatal(err)
				}
				used = append(used[:i], used[i+1:]...)
			case x < 90:
				what = "seats"
				// Pause while the count is read, so that nothing is
				// admitted between reading it and the new limit.
				if err := q.SetRoomConfig(ctx, room, settings.Room{Seats: seats, Paused: true}); err != nil {
					t.Fatal(err)
				}
				live, sold := check(step, "paused")
				seats = int(sold) + rng.IntN(4) // sometimes no room left; 0 when nothing was sold = no limit
				if seats > 0 {
					bound = max(seats, int(live+sold))
				}
				if err := q.SetRoomConfig(ctx, room, settings.Room{Seats: seats}); err != nil {
					t.Fatal(err)
				}
			default:
				what = "wait"
				waitUntil(t, time.Now().Add(50*time.Millisecond))
			}
			ops[what]++
			check(step, what)
		}
		st, _ := qs[0].Stats(ctx, room)
		t.Logf("ops %v; admitted %d, seats %d held %d", ops, st.AdmittedTotal, seats, st.SeatsHeld)
		if st.AdmittedTotal < 5 || ops["leave"] == 0 || ops["restore"] == 0 {
			t.Fatalf("the sequence exercised too little: ops %v, %d admitted", ops, st.AdmittedTotal)
		}
	})
}
