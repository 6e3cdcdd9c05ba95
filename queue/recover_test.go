package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"unsafe"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// settingsOf is a SettingsSource of fixed settings.
type settingsOf map[string]settings.Room

func (s settingsOf) RoomSettings(room string) (settings.Room, bool) { c, ok := s[room]; return c, ok }
func (s settingsOf) SettingsRooms() []string {
	var out []string
	for r := range s {
		out = append(out, r)
	}
	return out
}

// queueOrder returns room's queue as "visitor:score" in order.
func queueOrder(t *testing.T, r Redis, room string) []string {
	t.Helper()
	v, err := r.Do(context.Background(), "ZRANGE", queueKey(room), "0", "-1", "WITHSCORES")
	if err != nil {
		t.Fatal(err)
	}
	arr, _ := v.([]any)
	var flat []any
	for _, e := range arr {
		if pair, ok := e.([]any); ok { // RESP3: [member, score] pairs
			flat = append(flat, pair...)
		} else {
			flat = append(flat, e)
		}
	}
	arr = flat
	var out []string
	for i := 0; i+1 < len(arr); i += 2 {
		out = append(out, toString(arr[i])+":"+toString(arr[i+1]))
	}
	return out
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// TestRetakeAfterLoss: Redis loses everything. Visitors who come back
// with their tickets get exactly their places, late comers included, those
// let in before do not come back, new joiners go behind, the settings come
// back, and an instance that writes back again changes nothing.
func TestRetakeAfterLoss(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		opts := fixedBatch(3, 50*time.Millisecond)
		opts.Settings = settingsOf{"drop": {Seats: 40, FailMode: settings.FailClosed, Batch: 3}}
		var restoredTickets int
		opts.OnRestored = func(r Restored) { restoredTickets += r.Tickets }
		q := newQueue(t, r, opts)
		ids := make([]string, 10)
		tickets := make([]wire.Ticket, 10)
		for i := range ids {
			ids[i] = "v" + strconv.Itoa(i)
			_, tk, err := q.JoinTicket(ctx, "drop", ids[i])
			if err != nil || tk.Seq != int64(i+1) || tk.Room != "drop" {
				t.Fatalf("join %d: %+v %v", i, tk, err)
			}
			tickets[i] = tk
		}
		if res := admitTaken(t, q, "drop"); len(res.Admitted) != 3 {
			t.Fatalf("admitted %d", len(res.Admitted))
		}
		before := queueOrder(t, r, "drop")
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		// Four come back first (one let in before the loss among them).
		first := []int{0, 5, 6, 7}
		pick := func(idx []int) ([]string, []wire.Ticket) {
			var v []string
			var tk []wire.Ticket
			for _, i := range idx {
				v, tk = append(v, ids[i]), append(tk, tickets[i])
			}
			return v, tk
		}
		fv, ft := pick(first)
		res, err := q.Retake(ctx, "drop", fv, ft)
		if err != nil || res.Tickets != 3 || !res.Settings {
			t.Fatalf("retake: %+v %v", res, err)
		}
		if c, _ := q.RoomConfig(ctx, "drop"); c.Seats != 40 || c.FailMode != settings.FailClosed {
			t.Fatalf("settings not back: %+v", c)
		}
		// A new joiner goes behind every ticket given before the loss.
		if _, tk, _ := q.JoinTicket(ctx, "drop", "new"); tk.Seq <= 10 {
			t.Fatalf("new joiner got ticket %d", tk.Seq)
		}
		// Admission goes on; the late comers then still go first.
		if res := admitTaken(t, q, "drop"); len(res.Admitted) != 3 {
			t.Fatalf("admitted %d after the loss", len(res.Admitted))
		}
		lv, lt := pick([]int{1, 2, 3, 4, 8, 9})
		res, err = q.Retake(ctx, "drop", lv, lt)
		if err != nil || res.Tickets != 4 {
			t.Fatalf("late retake: %+v %v", res, err)
		}
		want := []string{"v3:4", "v4:5", "v8:9", "v9:10"}
		if got := queueOrder(t, r, "drop"); !slices.Equal(got[:4], want) || !strings.HasPrefix(got[4], "new:") {
			t.Fatalf("queue after the late comers %v, want %v then new (before the loss: %v)", got, want, before)
		}
		// Writing back again (another reconnect) keeps the late comers.
		if res, err := q.Retake(ctx, "drop", nil, nil); err != nil || res.Removed != 0 {
			t.Fatalf("write back: %+v %v", res, err)
		}
		if got := queueOrder(t, r, "drop"); len(got) != 5 {
			t.Fatalf("queue after a second write back %v", got)
		}
		if restoredTickets != 7 {
			t.Fatalf("counted %d tickets restored, want 7", restoredTickets)
		}
	})
}

// TestRetakeLostWrites: a failover loses the last writes. A join that did
// not reach the replica comes back from its ticket; an admission that did
// not is not repeated (its visitors leave the queue when an instance that
// saw it writes back).
func TestRetakeLostWrites(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(2, 50*time.Millisecond))
		var tickets []wire.Ticket
		for i := range 6 {
			_, tk, err := q.JoinTicket(ctx, "drop", "v"+strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, tk)
		}
		admitTaken(t, q, "drop")
		// The replica had the joins of v0..v4 only, and not the admission.
		p := prefix("drop")
		for _, cmd := range [][]string{
			{"ZADD", queueKey("drop"), "1", "v0", "2", "v1"},
			{"DEL", p + "t:v0", p + "t:v1"},
			{"HDEL", p + "stats", "head"},
			{"ZREM", queueKey("drop"), "v5"},
			{"SET", p + "seq", "5"},
		} {
			if _, err := r.Do(ctx, cmd...); err != nil {
				t.Fatal(err)
			}
		}
		res, err := q.Retake(ctx, "drop", []string{"v5", "v1"}, []wire.Ticket{tickets[5], tickets[1]})
		if err != nil || res.Removed != 2 || res.Tickets != 1 {
			t.Fatalf("retake: %+v %v", res, err)
		}
		want := []string{"v2:3", "v3:4", "v4:5", "v5:6"}
		if got := queueOrder(t, r, "drop"); !slices.Equal(got, want) {
			t.Fatalf("queue %v, want %v", got, want)
		}
		if _, tk, _ := q.JoinTicket(ctx, "drop", "new"); tk.Seq != 7 {
			t.Fatalf("new joiner got %d, want 7", tk.Seq)
		}
	})
}

// TestTokenRevive: a token whose record Redis lost still works by its
// signature, exactly once; a used or given-back one does not come back.
func TestTokenRevive(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, fixedBatch(3, 50*time.Millisecond))
		for _, v := range []string{"a", "b", "c"} {
			if _, err := q.Join(ctx, "drop", v); err != nil {
				t.Fatal(err)
			}
		}
		admitTaken(t, q, "drop")
		toks := map[string]visitorsig.Token{}
		for _, v := range []string{"a", "b", "c"} {
			st, err := q.Status(ctx, "drop", v)
			if err != nil || st.Status != wire.StatusAdmitted {
				t.Fatalf("%s: %+v %v", v, st, err)
			}
			toks[v] = visitorsig.Token{Room: "drop", Visitor: v, NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}
		}
		waitUntil(t, toks["c"].NotBefore)
		waitUntil(t, toks["a"].NotBefore)
		waitUntil(t, toks["b"].NotBefore)
		if _, err := q.Consume(ctx, toks["a"], Spend); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Leave(ctx, "drop", "b"); err != nil {
			t.Fatal(err)
		}
		// Lose only the token records, as a failover could.
		p := prefix("drop")
		if _, err := r.Do(ctx, "DEL", p+"t:a", p+"t:b", p+"t:c"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Consume(ctx, toks["a"], Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("used token after the loss: %v", err)
		}
		if _, err := q.Consume(ctx, toks["b"], Check); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("given-back token after the loss: %v", err)
		}
		if _, err := q.Consume(ctx, toks["c"], Check); err != nil {
			t.Fatalf("check of a lost token: %v", err)
		}
		if _, err := q.Consume(ctx, toks["c"], Spend); err != nil {
			t.Fatalf("first use of a lost token: %v", err)
		}
		if _, err := q.Consume(ctx, toks["c"], Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("second use of a lost token: %v", err)
		}
		if _, err := r.Do(ctx, "DEL", p+"t:c"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Consume(ctx, toks["c"], Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("a token is written back once only: %v", err)
		}
	})
}

// TestRetakeAfterLeave: a visitor who left the queue does not get the place
// back with the ticket it gave up.
func TestRetakeAfterLeave(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		q := newQueue(t, r, nil)
		_, tk, err := q.JoinTicket(ctx, "drop", "v")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Leave(ctx, "drop", "v"); err != nil {
			t.Fatal(err)
		}
		if res, err := q.Retake(ctx, "drop", []string{"v"}, []wire.Ticket{tk}); err != nil || res.Tickets != 0 {
			t.Fatalf("retake after leave: %+v %v", res, err)
		}
		// Nor once the left marker (a day) is gone.
		if _, err := r.Do(ctx, "DEL", prefix("drop")+"left:v"); err != nil {
			t.Fatal(err)
		}
		if res, err := q.Retake(ctx, "drop", []string{"v"}, []wire.Ticket{tk}); err != nil || res.Tickets != 0 {
			t.Fatalf("retake after leave, the marker gone: %+v %v", res, err)
		}
		if st, _ := q.Status(ctx, "drop", "v"); st.Status != wire.StatusNotInQueue {
			t.Fatalf("status after leave: %+v", st)
		}
	})
}

// TestRememberCopiesTheRoom: a caller's room string may alias a buffer it
// reuses (fiber's params do); what the queue remembers of the room must
// not move with it.
func TestRememberCopiesTheRoom(t *testing.T) {
	q := newQueue(t, nil, nil)
	buf := []byte("drop")
	aliased := unsafe.String(&buf[0], len(buf))
	q.remember(aliased).noteHead(0, 7, 1)
	copy(buf, "xxxx")
	if ms := q.remember("drop").snapshot(); ms.phead != 7 {
		t.Fatalf("remembered %+v for drop after the caller's buffer changed", ms)
	}
}

// TestRestoreEveryInstanceWritesBack: Redis loses everything and one
// instance puts back first, writing the alive marker again; the other,
// which admitted a lottery's picks, still sees the loss (the marker's
// value changed) and writes back what it remembers, so a ticket it let in
// is not taken back through the first, while one never admitted is.
func TestRestoreEveryInstanceWritesBack(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "lot"
		opts := fixedBatch(10, 250*time.Millisecond) // the tick bounds tickOnce's calls: 5 ms failed them under -race
		opts.Settings = settingsOf{room: {Method: settings.MethodRandom, Batch: 10}}
		a, b := newQueue(t, r, opts), newQueue(t, r, opts)
		if err := a.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom, Batch: 10}); err != nil {
			t.Fatal(err)
		}
		b.tickOnce(ctx) // b writes the marker; nobody waits yet
		tickets := joinAndAdmit(t, a, room, "x", "y", "z")
		a.tickOnce(ctx)
		_, w, err := a.JoinTicket(ctx, room, "w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		b.tickOnce(ctx) // puts back first: it knows of no admission
		a.tickOnce(ctx) // sees the marker changed
		res, err := b.Retake(ctx, room, []string{"x", "y", "z", "w"}, append(tickets, w))
		if err != nil || res.Tickets != 1 {
			t.Fatalf("retake through the other instance: %+v %v, want only w back", res, err)
		}
		if got := queueOrder(t, r, room); len(got) != 1 || !strings.HasPrefix(got[0], "w:") {
			t.Fatalf("queue %v, want w only", got)
		}
	})
}

// failingRetake is a Redis whose next retake script call fails.
type failingRetake struct {
	Redis
	fail atomic.Bool
}

func (f *failingRetake) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s == retakeScript.Script && f.fail.CompareAndSwap(true, false) {
		return nil, errors.New("injected failure")
	}
	return f.Redis.Eval(ctx, s, keys, args...)
}

// TestRestoreWriteBackRetried: the instance that let visitors in fails to
// write back after a loss; its next tick tries again, so a visitor it let
// in is not given a place through another instance.
func TestRestoreWriteBackRetried(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "lot"
		opts := fixedBatch(10, 250*time.Millisecond)
		opts.Settings = settingsOf{room: {Method: settings.MethodRandom, Batch: 10}}
		fa := &failingRetake{Redis: r}
		a, b := newQueue(t, fa, opts), newQueue(t, r, opts)
		if err := a.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom, Batch: 10}); err != nil {
			t.Fatal(err)
		}
		b.tickOnce(ctx)
		tickets := joinAndAdmit(t, a, room, "x", "y", "z")
		a.tickOnce(ctx)
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		b.tickOnce(ctx) // puts back first: it knows of no admission
		fa.fail.Store(true)
		a.tickOnce(ctx) // sees the loss; its write back fails
		if fa.fail.Load() {
			t.Fatal("a did not try to write back")
		}
		a.tickOnce(ctx) // tries again
		res, err := b.Retake(ctx, room, []string{"x", "y", "z"}, tickets)
		if err != nil || res.Tickets != 0 {
			t.Fatalf("retake through the other instance: %+v %v, want nobody back", res, err)
		}
	})
}

// joinAndAdmit joins visitors to room through q and has q admit them all,
// returning their tickets.
func joinAndAdmit(t *testing.T, q *Queue, room string, visitors ...string) []wire.Ticket {
	t.Helper()
	ctx := context.Background()
	var tickets []wire.Ticket
	for _, v := range visitors {
		_, tk, err := q.JoinTicket(ctx, room, v)
		if err != nil {
			t.Fatal(err)
		}
		tickets = append(tickets, tk)
	}
	n := 0
	waitfor.Until(t, 5*time.Second, "admitting every visitor", func() bool {
		res, err := q.Admit(ctx, room)
		if err != nil {
			t.Fatal(err)
		}
		n += len(res.Admitted)
		return n >= len(visitors)
	})
	return tickets
}

// TestSpentStaysSpent: a used token's record is gone, and revive.lua
// writes back records Redis lost; a check, a touch or a use after the
// token's idle expiry must not take it for a lost one and let it be used
// again (nor count its seat sold twice).
func TestSpentStaysSpent(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		opts := fixedBatch(2, 50*time.Millisecond)
		opts.TokenTTL = time.Second
		opts.TokenMax = 10 * time.Second
		q := newQueue(t, r, opts)
		for _, v := range []string{"a", "b"} {
			if _, err := q.Join(ctx, "drop", v); err != nil {
				t.Fatal(err)
			}
		}
		admitTaken(t, q, "drop")
		toks := map[string]visitorsig.Token{}
		for _, v := range []string{"a", "b"} {
			st, err := q.Status(ctx, "drop", v)
			if err != nil || st.Status != wire.StatusAdmitted {
				t.Fatalf("%s: %+v %v", v, st, err)
			}
			toks[v] = visitorsig.Token{Room: "drop", Visitor: v, NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}
		}
		waitUntil(t, toks["a"].NotBefore)
		waitUntil(t, toks["b"].NotBefore)
		// b holds no max-active slot when it uses its token (the use then
		// sells no seat): its token must stay used all the same.
		p := prefix("drop")
		if _, err := r.Do(ctx, "ZREM", p+"active", "b"); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"a", "b"} {
			if _, err := q.Consume(ctx, toks[v], Spend); err != nil {
				t.Fatalf("%s: first use: %v", v, err)
			}
		}
		// Past the idle expiry the signed token is still within its cap,
		// where a lost record would be written back.
		waitUntil(t, toks["a"].ExpiresAt.Add(100*time.Millisecond))
		for _, v := range []string{"a", "b"} {
			for _, use := range []Use{Check, Touch, Spend, Spend} {
				if _, err := q.Consume(ctx, toks[v], use); !errors.Is(err, ErrTokenUnknown) {
					t.Fatalf("%s: use %d after the idle expiry of a used token: %v, want ErrTokenUnknown", v, use, err)
				}
			}
		}
		sold, err := r.Do(ctx, "HGET", p+"stats", "sold")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := strconv.Atoi(fmt.Sprint(sold)); err != nil || n != 1 {
			t.Fatalf("sold = %v after one use that held a slot, want 1", sold)
		}
	})
}

// reviveFirst is a Redis that, before it runs a revive, lets another
// call run first (once): another instance writing the same record back.
type reviveFirst struct {
	Redis
	first func()
}

func (r *reviveFirst) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s == reviveScript.Script && r.first != nil {
		f := r.first
		r.first = nil
		f()
	}
	return r.Redis.Eval(ctx, s, keys, args...)
}

// TestTokenRevivedBeside: a use of a token whose record Redis lost, made
// while another instance writes that record back (a push connection's
// check of the admission it was told of), still spends it: the record is
// there by the time the use looks again, and it is not refused as used.
func TestTokenRevivedBeside(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		other := newQueue(t, r, fixedBatch(3, 50*time.Millisecond))
		if _, err := other.Join(ctx, "drop", "a"); err != nil {
			t.Fatal(err)
		}
		admitTaken(t, other, "drop")
		st, err := other.Status(ctx, "drop", "a")
		if err != nil || st.Status != wire.StatusAdmitted {
			t.Fatalf("a: %+v %v", st, err)
		}
		tok := visitorsig.Token{Room: "drop", Visitor: "a", NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}
		waitUntil(t, tok.NotBefore)
		if _, err := r.Do(ctx, "DEL", prefix("drop")+"t:a"); err != nil {
			t.Fatal(err)
		}
		beside := &reviveFirst{Redis: r, first: func() {
			if _, err := other.Consume(ctx, tok, Check); err != nil {
				t.Errorf("the other instance's check: %v", err)
			}
		}}
		q := newQueue(t, beside, fixedBatch(3, 50*time.Millisecond))
		if _, err := q.Consume(ctx, tok, Spend); err != nil {
			t.Fatalf("the use beside the write-back: %v, want it spent", err)
		}
		if _, err := other.Consume(ctx, tok, Spend); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("a second use: %v, want it refused", err)
		}
	})
}
