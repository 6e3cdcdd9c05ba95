package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// newRedis connects client to srv, as the queue's tests do.
func newRedis(t *testing.T, srv *redistest.Server, client string) rediscall.Redis {
	t.Helper()
	if client == "go-redis" {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
		t.Cleanup(func() { _ = c.Close() })
		return redisconn.NewGoRedis(c)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{srv.Addr}, DisableCache: true,
		ForceSingleClient: true, AlwaysRESP2: srv.Kind == "mini",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return redisconn.NewRueidis(c)
}

// lotteryRun is a random room driven across three instances, and what the
// server did.
type lotteryRun struct {
	reveal   lotteryReveal
	admitted []int64 // tickets of the visitors Admit let in, every tick
	room     string
	qs       []*queue.Queue
}

// runLotteryRoom drives a random room over three queue instances on one
// Redis: visitors wait before the room turns random (the log's walk lists
// them), then between ticks some join, some leave, some are away when
// picked (set aside) and some of those come back (admitted first). At the
// end the room goes back to fifo, which reveals the seed.
func runLotteryRoom(t *testing.T, srv *redistest.Server, client string) lotteryRun {
	t.Helper()
	ctx := context.Background()
	const room = "lot"
	var rs []rediscall.Redis
	for _, c := range []string{client, "go-redis", "rueidis"} {
		rs = append(rs, newRedis(t, srv, c))
	}
	s, err := visitorsig.NewSigner([]byte("0123456789abcdef-test-secret"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []*queue.Queue
	for _, r := range rs {
		q, err := queue.New(r, s, &queue.Options{Capacity: queue.Capacity{Batch: 3, Tick: 10 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	ticket := map[string]int64{}
	join := func(q *queue.Queue, v string) {
		t.Helper()
		_, tk, err := q.JoinTicket(ctx, room, v)
		if err != nil {
			t.Fatal(err)
		}
		ticket[v] = tk.Seq
	}
	// away marks visitors last seen two minutes ago: away when picked.
	away := func(vs ...string) {
		t.Helper()
		at := strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixMilli(), 10)
		for _, v := range vs {
			if _, err := rs[0].Do(ctx, "ZADD", "wr:{"+room+"}:seen", at, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := qs[0].SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
		t.Fatal(err)
	}
	var early []string
	for i := range 15 {
		v := fmt.Sprintf("e%02d", i)
		join(qs[i%3], v)
		early = append(early, v)
	}
	awayVs := []string{early[2], early[7], early[11], early[12]}
	away(awayVs...)
	if err := qs[1].SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
		t.Fatal(err)
	}
	var out lotteryRun
	out.room, out.qs = room, qs
	left := map[string]bool{}
	// seenInLog reports whether the log so far has each of kinds.
	seenInLog := func(kinds ...string) bool {
		t.Helper()
		page, err := qs[0].ReadLotteryLog(ctx, room, 0, 10000)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, e := range page.Entries {
			have[e.Event+"/"+e.Why] = true
		}
		for _, k := range kinds {
			if !have[k] {
				return false
			}
		}
		return true
	}
	// At least 10 ticks, and on until the log holds a set-aside that came
	// back and was let in, and a leave: the seed is random, so which
	// visitors are picked when is not known in advance.
	for k := 0; k < 10 || !seenInLog("back/", "return/", "remove/leave"); k++ {
		if k == 60 {
			t.Fatal("60 ticks and still no come-back or leave in the log")
		}
		q := qs[k%3]
		var res queue.Result
		waitfor.Until(t, 5*time.Second, "a tick taken", func() bool {
			if res, err = q.Admit(ctx, room); err != nil {
				t.Fatal(err)
			}
			return res.Taken
		})
		for _, a := range res.Admitted {
			tk, ok := ticket[a.Visitor]
			if !ok {
				t.Fatalf("admitted %s, who never joined", a.Visitor)
			}
			out.admitted = append(out.admitted, tk)
		}
		// Between ticks: two join (one of them away every other tick), one
		// who waits and is there leaves, and every third tick those marked
		// away show up again (those set aside come back).
		a, b := fmt.Sprintf("n%02da", k), fmt.Sprintf("n%02db", k)
		join(qs[(k+1)%3], a)
		join(qs[(k+2)%3], b)
		if k%2 == 0 {
			away(b)
			awayVs = append(awayVs, b)
		}
		for _, v := range slices.Sorted(maps.Keys(ticket)) {
			if !slices.Contains(out.admitted, ticket[v]) && !left[v] && !slices.Contains(awayVs, v) {
				if _, err := qs[(k+2)%3].Leave(ctx, room, v); err != nil {
					t.Fatal(err)
				}
				left[v] = true
				break
			}
		}
		if k%3 == 2 {
			for _, v := range awayVs {
				if _, err := qs[k%3].Status(ctx, room, v); err != nil {
					t.Fatal(err)
				}
			}
			awayVs = nil
		}
	}
	if err := qs[2].SetRoomConfig(ctx, room, settings.Room{}); err != nil {
		t.Fatal(err)
	}
	l, err := qs[0].ReadLottery(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	out.reveal = lotteryReveal{Room: room, State: "revealed", Commitment: l.Commitment, Seed: l.Seed}
	for after := int64(0); ; {
		page, err := qs[1].ReadLotteryLog(ctx, room, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		out.reveal.First = page.First
		out.reveal.Entries = append(out.reveal.Entries, asEntries(t, page.Entries)...)
		if len(page.Entries) < 7 {
			break
		}
		after = page.Entries[len(page.Entries)-1].ID
	}
	return out
}

// asEntries passes the queue's entries through JSON, as the endpoint does.
func asEntries(t *testing.T, es []queue.LotteryEntry) []lotEntry {
	t.Helper()
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	var out []lotEntry
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// admittedByLog lists the tickets the log says were let in.
func admittedByLog(es []lotEntry) []int64 {
	var out []int64
	for _, e := range es {
		switch {
		case e.Event == "pop" && !*e.Away:
			out = append(out, *e.Ticket)
		case e.Event == "picks":
			for _, p := range e.Picks {
				if !p.Away {
					out = append(out, p.Ticket)
				}
			}
		case e.Event == "return":
			out = append(out, e.Tickets...)
		}
	}
	return out
}

// TestLotteryReplayAcrossInstances: the log of a random room ticked by
// three instances, with joins, leaves, away picks and come-backs between
// ticks, replays to exactly the server's picks; a tampered log does not.
func TestLotteryReplayAcrossInstances(t *testing.T) {
	for _, kind := range redistest.Kinds {
		for _, client := range []string{"rueidis", "go-redis"} {
			t.Run(kind+"/"+client, func(t *testing.T) {
				srv := redistest.Start(t, kind)
				run := runLotteryRoom(t, srv, client)
				r := run.reveal
				res, err := replayLottery(r)
				if err != nil {
					t.Fatalf("replay: %v", err)
				}
				got, want := admittedByLog(r.Entries), run.admitted
				slices.Sort(got)
				slices.Sort(want)
				if len(want) < 15 || !slices.Equal(got, want) {
					t.Fatalf("the log admits %v, the server admitted %v", got, want)
				}
				t.Logf("replay: %d entries, %d picks over %d ticks, %d admitted, %d set aside, %d earlier, %d waiting", res.Entries, res.Picks, res.Ticks, res.Admitted, res.SetAside, res.Earlier, res.Waiting)
				if res.SetAside == 0 || res.Picks < 20 {
					t.Fatalf("replay %+v: want picks and some set aside", res)
				}
				kinds := map[string]bool{}
				for _, e := range r.Entries {
					kinds[e.Event+"/"+e.Why] = true
				}
				for _, k := range []string{"start/", "snap/", "add/join", "remove/leave", "picks/", "back/", "return/", "end/"} {
					if !kinds[k] {
						t.Errorf("no %s entry in the log: %v", k, kinds)
					}
				}

				// A pick of another ticket than the one at its rank.
				swapped := cloneReveal(r)
				for i, e := range swapped.Entries {
					if e.Event == "picks" && e.Picks[0].N > 1 {
						ps := slices.Clone(e.Picks)
						ps[0].Ticket++
						swapped.Entries[i].Picks = ps
						break
					}
				}
				if _, err := replayLottery(swapped); err == nil || !strings.Contains(err.Error(), "picked, rank") {
					t.Errorf("swapped ticket: %v, want a mismatch", err)
				}
				// A join left out (and the ids made to follow on).
				removed := cloneReveal(r)
				for i, e := range removed.Entries {
					if e.Event == "add" && e.Why == "join" {
						removed.Entries = slices.Delete(removed.Entries, i, i+1)
						for j := i; j < len(removed.Entries); j++ {
							removed.Entries[j].ID--
						}
						break
					}
				}
				if _, err := replayLottery(removed); err == nil || errors.Is(err, errUnverifiable) {
					t.Errorf("a join left out: %v, want a mismatch", err)
				}
				// A wrong seed, a trimmed start, an unfinished log.
				bad := cloneReveal(r)
				bad.Seed = strings.Repeat("0", 64)
				if _, err := replayLottery(bad); err == nil || !strings.Contains(err.Error(), "does not match") {
					t.Errorf("wrong seed: %v", err)
				}
				trimmed := cloneReveal(r)
				trimmed.First, trimmed.Entries = 4, trimmed.Entries[3:]
				if _, err := replayLottery(trimmed); !errors.Is(err, errUnverifiable) || !strings.Contains(err.Error(), "trimmed") {
					t.Errorf("trimmed: %v, want unverifiable", err)
				}
				open := cloneReveal(r)
				open.Entries = open.Entries[:len(open.Entries)-1]
				if _, err := replayLottery(open); !errors.Is(err, errUnverifiable) {
					t.Errorf("no end: %v, want unverifiable", err)
				}
			})
		}
	}
}

func cloneReveal(r lotteryReveal) lotteryReveal {
	r.Entries = slices.Clone(r.Entries)
	return r
}

// TestDrawcheckLotteryOverHTTP: drawcheck -lottery reads the lottery and
// its log in pages over HTTP (answered as the server's endpoints answer,
// from the queue), replays it, saves it, and says what became of a
// visitor's ticket, offline too.
func TestDrawcheckLotteryOverHTTP(t *testing.T) {
	srv := redistest.StartMini(t)
	lr := runLotteryRoom(t, srv, "rueidis")
	q := lr.qs[0]
	mux := http.NewServeMux()
	mux.HandleFunc("/lottery", func(w http.ResponseWriter, r *http.Request) {
		l, err := q.ReadLottery(r.Context(), lr.room)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"room": lr.room, "state": "revealed", "commitment": l.Commitment, "seed": l.Seed})
	})
	busy := 2 // the first reads find the server busy, as a crowd of readers would
	mux.HandleFunc("/lottery/log", func(w http.ResponseWriter, r *http.Request) {
		if busy > 0 {
			busy--
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"lottery_log_busy","message":"busy"}}`))
			return
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		page, err := q.ReadLotteryLog(r.Context(), lr.room, after, 5) // pages smaller than asked
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out := map[string]any{"first": page.First, "entries": page.Entries}
		if page.More {
			out["next"] = page.Entries[4].ID
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	saved := filepath.Join(t.TempDir(), "lottery.json")
	var out bytes.Buffer
	picked := lr.admitted[0]
	if err := run([]string{"-lottery", "-url", ts.URL + "/lottery", "-save", saved, "-visitor", strconv.FormatInt(picked, 10)}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "agree with the seed") || !strings.Contains(out.String(), fmt.Sprintf("ticket %d: ", picked)) || !strings.Contains(out.String(), "admitted") {
		t.Fatalf("output:\n%s", out.String())
	}
	out.Reset()
	// Offline, and the visitor's own credential says which ticket it held.
	signer, _ := visitorsig.NewSigner([]byte("0123456789abcdef-test-secret"))
	cred := signer.TicketCredential("visitor-id", wire.Ticket{Room: lr.room, Seq: picked, IssuedAt: time.Now()})
	if err := run([]string{"-lottery", "-file", saved, "-visitor", cred}, &out); err != nil ||
		!strings.Contains(out.String(), "agree with the seed") || !strings.Contains(out.String(), fmt.Sprintf("ticket %d: picked", picked)) {
		t.Fatalf("offline: %v\n%s", err, out.String())
	}
}

// replayRoom ends room's lottery (back to fifo) and replays its log.
func replayRoom(t *testing.T, q *queue.Queue, room string) (lotteryReveal, replayed) {
	t.Helper()
	ctx := context.Background()
	if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
		t.Fatal(err)
	}
	l, err := q.ReadLottery(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	r := lotteryReveal{Room: room, Commitment: l.Commitment, Seed: l.Seed}
	for after := int64(0); ; {
		page, err := q.ReadLotteryLog(ctx, room, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		r.First = page.First
		r.Entries = append(r.Entries, asEntries(t, page.Entries)...)
		if len(page.Entries) < 1000 {
			break
		}
		after = page.Entries[len(page.Entries)-1].ID
	}
	res, err := replayLottery(r)
	if err != nil {
		t.Fatalf("replay of %s: %v", room, err)
	}
	return r, res
}

func count(es []lotEntry, event, why string) int {
	n := 0
	for _, e := range es {
		if e.Event == event && e.Why == why {
			n++
		}
	}
	return n
}

// newLotteryQueue is a queue on r admitting batch a tick.
func newLotteryQueue(t *testing.T, r rediscall.Redis, batch int, tick time.Duration) *queue.Queue {
	t.Helper()
	s, err := visitorsig.NewSigner([]byte("0123456789abcdef-test-secret"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(r, s, &queue.Options{Capacity: queue.Capacity{Batch: batch, Tick: tick}})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestLotteryReplayAfterASlicedWalk: a room that turns random with more
// waiting than one slice of the log's walk holds its draw until the walk
// is done, while joins (priority ones too, admitted in order before the
// draw) and leaves on both sides of the walk go on; the replay agrees. A
// pre-queue that opens into a random room is logged as it is placed.
func TestLotteryReplayAfterASlicedWalk(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t, kind)
			r := newRedis(t, srv, "rueidis")
			ctx := context.Background()
			q := newLotteryQueue(t, r, 4, 5*time.Millisecond)
			const room = "walk"
			if err := q.SetRoomConfig(ctx, room, settings.Room{Paused: true}); err != nil {
				t.Fatal(err)
			}
			const n = 4500 // over two slices of 2,000
			for i := 0; i < n; i += 500 {
				args := []string{"ZADD", "wr:{walk}:q"}
				for j := i; j < i+500; j++ {
					args = append(args, strconv.Itoa(j+1), fmt.Sprintf("w%05d", j))
				}
				if _, err := r.Do(ctx, args...); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Do(ctx, "SET", "wr:{walk}:seq", strconv.Itoa(n)); err != nil {
				t.Fatal(err)
			}
			// Uses for p0 and the ten joins the loop below can make
			// (k = 0, 4, …, 36): how many it makes depends on how fast it
			// runs against the ticks, never on the code it checks.
			prio := queue.Invite{ID: "vip", Uses: 11, Expires: time.Now().Add(time.Hour), Priority: true}
			if _, _, err := q.JoinInvite(ctx, room, "p0", prio); err != nil {
				t.Fatal(err)
			}
			if err := q.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
				t.Fatal(err)
			}
			drawn := 0
			deadline := time.Now().Add(20 * time.Second)
			for k := 0; drawn < 12; k++ {
				if time.Now().After(deadline) {
					t.Fatal("the lottery never drew")
				}
				res, err := q.Admit(ctx, room)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range res.Admitted {
					if strings.HasPrefix(a.Visitor, "w") || strings.HasPrefix(a.Visitor, "j") {
						drawn++
					}
				}
				if k < 40 && k%4 == 0 {
					for _, v := range []string{fmt.Sprintf("w%05d", k), fmt.Sprintf("w%05d", n-1-k)} {
						if _, err := q.Leave(ctx, room, v); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := q.Join(ctx, room, fmt.Sprintf("j%02d", k)); err != nil {
						t.Fatal(err)
					}
					if _, _, err := q.JoinInvite(ctx, room, fmt.Sprintf("p%02d", k+1), prio); err != nil {
						t.Fatal(err)
					}
				}
				// The pace of a load loop that changes the room between
				// ticks, not synchronisation: the count is checked above.
				time.Sleep(time.Millisecond)
			}
			log, res := replayRoom(t, q, room)
			if walks := count(log.Entries, "snap", ""); walks < 3 || count(log.Entries, "pop", "") == 0 || res.Picks < 12 {
				t.Fatalf("%d walk slices, %d priority pops, %d picks: want 3 slices, pops and picks", walks, count(log.Entries, "pop", ""), res.Picks)
			}
			var ids []string
			for _, e := range log.Entries {
				ids = append(ids, e.Event+e.Why)
			}
			t.Logf("replay: %d picks over %d ticks; log: %v", res.Picks, res.Ticks, ids)

			// A pre-queue opening into a random room.
			const open = "opening"
			if err := q.SetRoomConfig(ctx, open, settings.Room{Method: settings.MethodRandom, OpensAt: time.Now().Add(time.Hour)}); err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				if _, err := q.Join(ctx, open, fmt.Sprintf("o%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.SetRoomConfig(ctx, open, settings.Room{Method: settings.MethodRandom}); err != nil {
				t.Fatal(err)
			}
			got := 0
			waitfor.Until(t, time.Until(deadline), "the opened room drawing 6", func() bool {
				res, err := q.Admit(ctx, open)
				if err != nil {
					t.Fatal(err)
				}
				got += len(res.Admitted)
				return got >= 6
			})
			log, _ = replayRoom(t, q, open)
			if count(log.Entries, "add", "open") == 0 {
				t.Fatalf("no add/open entry: %+v", log.Entries)
			}
		})
	}
}

// TestLotteryReplayAfterAFailover: a failover that lost the last writes
// (the room's keys put back as they were a moment before: a replica's
// copy) loses joins and their log entries together; the visitors come
// back with their signed tickets (Retake), which the log records, and the
// replay agrees. Real Redis (DUMP and RESTORE of a stream), both clients.
func TestLotteryReplayAfterAFailover(t *testing.T) {
	for _, client := range []string{"rueidis", "go-redis"} {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			r := newRedis(t, srv, client)
			ctx := context.Background()
			q := newLotteryQueue(t, r, 2, 5*time.Millisecond)
			const room = "lost"
			if err := q.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
				t.Fatal(err)
			}
			tick := func() {
				t.Helper()
				waitfor.Until(t, 5*time.Second, "a tick taken", func() bool {
					res, err := q.Admit(ctx, room)
					if err != nil {
						t.Fatal(err)
					}
					return res.Taken
				})
			}
			for i := range 6 {
				if _, err := q.Join(ctx, room, fmt.Sprintf("v%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			tick()
			// The replica's copy of the room, then writes it never got.
			keys, err := r.Do(ctx, "KEYS", "wr:{"+room+"}:*")
			if err != nil {
				t.Fatal(err)
			}
			dumps := map[string]string{}
			for _, k := range keys.([]any) {
				d, err := r.Do(ctx, "DUMP", k.(string))
				if err != nil {
					t.Fatal(err)
				}
				dumps[k.(string)] = d.(string)
			}
			var lost []string
			var tickets []wire.Ticket
			for i := range 3 {
				v := fmt.Sprintf("w%d", i)
				_, tk, err := q.JoinTicket(ctx, room, v)
				if err != nil {
					t.Fatal(err)
				}
				lost, tickets = append(lost, v), append(tickets, tk)
			}
			// The failover: the room is as the replica had it.
			now, err := r.Do(ctx, "KEYS", "wr:{"+room+"}:*")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range now.([]any) {
				if _, err := r.Do(ctx, "DEL", k.(string)); err != nil {
					t.Fatal(err)
				}
			}
			for k, d := range dumps {
				if _, err := r.Do(ctx, "RESTORE", k, "0", d, "REPLACE"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := q.Retake(ctx, room, lost, tickets)
			if err != nil {
				t.Fatal(err)
			}
			if got.Tickets != 3 {
				t.Fatalf("retake: %+v, want 3 places back", got)
			}
			for range 3 {
				tick()
			}
			log, res := replayRoom(t, q, room)
			if n := count(log.Entries, "add", "restore"); n != len(lost) {
				t.Fatalf("%d restore entries, want %d", n, len(lost))
			}
			t.Logf("replay: %d picks over %d ticks, %d waiting at the end", res.Picks, res.Ticks, res.Waiting)
		})
	}
}

// TestLotteryReplayKnowsWhoWasSetAside: a visitor set aside under fifo
// before the room turned random is listed by the log's start, so its
// come-back and admission ahead of the draw are checked like any other;
// a come-back of a ticket never set aside fails.
func TestLotteryReplayKnowsWhoWasSetAside(t *testing.T) {
	for _, kind := range redistest.Kinds {
		t.Run(kind, func(t *testing.T) {
			srv := redistest.Start(t, kind)
			r := newRedis(t, srv, "rueidis")
			ctx := context.Background()
			q := newLotteryQueue(t, r, 2, 5*time.Millisecond)
			const room = "aside"
			tick := func() queue.Result {
				t.Helper()
				var res queue.Result
				waitfor.Until(t, 5*time.Second, "a tick taken", func() bool {
					var err error
					if res, err = q.Admit(ctx, room); err != nil {
						t.Fatal(err)
					}
					return res.Taken
				})
				return res
			}
			var a0 int64
			for i := range 6 {
				_, tk, err := q.JoinTicket(ctx, room, fmt.Sprintf("a%d", i))
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					a0 = tk.Seq
				}
			}
			at := strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixMilli(), 10)
			if _, err := r.Do(ctx, "ZADD", "wr:{"+room+"}:seen", at, "a0"); err != nil {
				t.Fatal(err)
			}
			if res := tick(); len(res.Admitted) != 2 || res.Admitted[0].Visitor == "a0" {
				t.Fatalf("fifo tick: %+v, want a0 set aside", res.Admitted)
			}
			if err := q.SetRoomConfig(ctx, room, settings.Room{Method: settings.MethodRandom}); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Join(ctx, room, "b0"); err != nil { // the log begins
				t.Fatal(err)
			}
			if _, err := q.Status(ctx, room, "a0"); err != nil { // a0 comes back
				t.Fatal(err)
			}
			if res := tick(); len(res.Admitted) == 0 || res.Admitted[0].Visitor != "a0" {
				t.Fatalf("after a0 came back: %+v, want a0 first", res.Admitted)
			}
			tick()
			log, res := replayRoom(t, q, room)
			if st := log.Entries[0]; st.Aside == nil || !slices.Equal(*st.Aside, []int64{a0}) || res.Earlier != 0 {
				t.Fatalf("start %+v, %d earlier: want a0's ticket %d set aside", st, res.Earlier, a0)
			}
			forged := cloneReveal(log)
			for i, e := range forged.Entries {
				if e.Event == "back" {
					forged.Entries[i].Tickets = []int64{999}
				}
			}
			if _, err := replayLottery(forged); err == nil || !strings.Contains(err.Error(), "never set aside") {
				t.Fatalf("a come-back of a ticket never set aside: %v", err)
			}
		})
	}
}
