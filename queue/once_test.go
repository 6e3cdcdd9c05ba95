package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// settingsBox is a SettingsSource whose settings the test changes as it
// changes the room's.
type settingsBox struct {
	mu sync.Mutex
	m  map[string]settings.Room
}

func (s *settingsBox) set(room string, c settings.Room) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[room] = c
}

func (s *settingsBox) RoomSettings(room string) (settings.Room, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[room]
	return c, ok
}

func (s *settingsBox) SettingsRooms() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for r := range s.m {
		out = append(out, r)
	}
	return out
}

// onceSeed is the seed of TestAdmittedOnce: WAITROOM_ONCE_SEED repeats a
// run, else a new one each time.
func onceSeed(t *testing.T) uint64 {
	if s := os.Getenv("WAITROOM_ONCE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("WAITROOM_ONCE_SEED: %v", err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// onceVisitor is what TestAdmittedOnce knows of one visitor: it joins
// once, and the ticket its credential carries is the only one it ever
// holds.
type onceVisitor struct {
	id       string
	ticket   wire.Ticket       // zero: joined without one (admitted at once, or closed)
	tok      *visitorsig.Token // the token it was admitted with, while it holds it
	admitted int
	gone     bool // gave its place or token back, or spent its token
}

// TestAdmittedOnce: a ticket is admitted at most once, under each
// method, whatever happens around it: polls that take a lost place back
// with the signed ticket (as the server's status does), orders that spend
// the token, give-backs, token records that lapse, and Redis losing
// everything (FLUSHALL, then the tick loop's restore). Random operations
// from a seed that is logged; each configuration runs a bounded number of
// them. A visitor that waited and was never admitted gets its place back
// after every loss.
func TestAdmittedOnce(t *testing.T) {
	seed := onceSeed(t)
	t.Logf("seed %d (WAITROOM_ONCE_SEED=%d runs it again)", seed, seed)
	for mi, method := range []string{settings.MethodFIFO, settings.MethodRandom, settings.MethodPassthrough, settings.MethodReject} {
		t.Run(method, func(t *testing.T) {
			n := 0
			each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
				n++
				rng := rand.New(rand.NewPCG(seed, uint64(mi*16+n)))
				runAdmittedOnce(t, r, method, rng)
			})
		})
	}
}

func runAdmittedOnce(t *testing.T, r Redis, method string, rng *rand.Rand) {
	const (
		room     = "once"
		ops      = 3000
		budget   = 3 * time.Second
		minOps   = 600
		tickTime = 5 * time.Millisecond
	)
	ctx := context.Background()
	box := &settingsBox{m: map[string]settings.Room{}}
	opts := fixedBatch(3, tickTime)
	// Tokens live a second and their records go with them (no
	// retention), so that many lapse during the run.
	opts.TokenTTL, opts.TokenMax, opts.Retention = time.Second, time.Second, -1
	opts.Settings = box
	q := newQueue(t, r, opts)
	setMethod := func(m string) {
		t.Helper()
		c := settings.Room{Method: m, Message: "closed"}
		if err := q.SetRoomConfig(ctx, room, c); err != nil {
			t.Fatal(err)
		}
		box.set(room, c)
	}
	// passthrough and reject admit those who wait before the switch:
	// the run begins as fifo and switches at a quarter.
	start := method
	if method == settings.MethodPassthrough || method == settings.MethodReject {
		start = settings.MethodFIFO
	}
	setMethod(start)

	var vs []*onceVisitor
	byID := map[string]*onceVisitor{}
	counts := map[string]int{}
	// head is the last ticket admitted in ticket order (every method but
	// random), which is what the instance remembers for fifo: a visitor
	// that came back behind it after a loss and loses its place again in
	// a second loss before it is admitted is past what the head can tell.
	var head int64
	current := start
	admit := func(v *onceVisitor, nb, exp time.Time) {
		if current != settings.MethodRandom && v.ticket.Seq > head {
			head = v.ticket.Seq
		}
		v.admitted++
		v.tok = &visitorsig.Token{Room: room, Visitor: v.id, NotBefore: nb, ExpiresAt: exp}
		if v.admitted > 1 {
			t.Fatalf("%s (ticket %+v) admitted %d times", v.id, v.ticket, v.admitted)
		}
	}
	// poll is the server's status: a visitor Redis does not know that
	// carries a ticket takes its place back with it (server.retake).
	poll := func(v *onceVisitor) wire.State {
		t.Helper()
		st, err := q.Status(ctx, room, v.id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == wire.StatusNotInQueue && !v.ticket.IsZero() {
			res, err := q.Retake(ctx, room, []string{v.id}, []wire.Ticket{v.ticket})
			if err != nil {
				t.Fatal(err)
			}
			if res.Tickets > 0 {
				counts["retaken"]++
				if st, err = q.Status(ctx, room, v.id); err != nil {
					t.Fatal(err)
				}
			}
		}
		if st.Status == wire.StatusAdmitted && (v.tok == nil || !v.tok.NotBefore.Equal(st.NotBefore)) {
			t.Fatalf("%s polls admitted at %v, an admission no tick or join made (token %+v)", v.id, st.NotBefore, v.tok)
		}
		return st
	}
	pick := func(ok func(*onceVisitor) bool) *onceVisitor {
		if len(vs) == 0 {
			return nil
		}
		for range 8 {
			if v := vs[rng.IntN(len(vs))]; ok(v) {
				return v
			}
		}
		return nil
	}
	holding := func(v *onceVisitor) bool { return v.tok != nil && !v.gone }

	deadline := time.Now().Add(budget)
	done := 0
	for ; done < ops && (done < minOps || time.Now().Before(deadline)); done++ {
		if done == ops/4 && start != method {
			setMethod(method)
			current = method
		}
		switch x := rng.IntN(100); {
		case x < 20: // a new visitor joins
			v := &onceVisitor{id: fmt.Sprintf("v%05d", len(vs))}
			st, tk, err := q.JoinTicket(ctx, room, v.id)
			if err != nil {
				t.Fatal(err)
			}
			v.ticket = tk
			vs = append(vs, v)
			byID[v.id] = v
			counts["join"]++
			if st.Status == wire.StatusAdmitted {
				admit(v, st.NotBefore, st.ExpiresAt)
			}
		case x < 45: // a tick
			res, err := q.Admit(ctx, room)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range res.Admitted {
				v := byID[a.Visitor]
				if v == nil {
					t.Fatalf("admitted %s, who never joined", a.Visitor)
				}
				admit(v, a.NotBefore, a.ExpiresAt)
				counts["admitted"]++
			}
		case x < 70: // a poll
			if v := pick(func(*onceVisitor) bool { return true }); v != nil {
				poll(v)
				counts["poll"]++
			}
		case x < 80: // an order spends the token
			if v := pick(holding); v != nil {
				_, err := q.Consume(ctx, *v.tok, Spend)
				var early *TooEarlyError
				switch {
				case err == nil:
					v.gone = true
					counts["spent"]++
				case errors.As(err, &early), errors.Is(err, ErrTokenExpired), errors.Is(err, ErrTokenUnknown):
				default:
					t.Fatal(err)
				}
			}
		case x < 86: // a give-back: leave with the token
			if v := pick(holding); v != nil {
				if _, err := q.Leave(ctx, room, v.id); err != nil {
					t.Fatal(err)
				}
				v.gone = true
				counts["given back"]++
			}
		case x < 93: // a token's record lapses (expired and gone)
			if v := pick(holding); v != nil {
				if _, err := r.Do(ctx, "DEL", prefix(room)+"t:"+v.id); err != nil {
					t.Fatal(err)
				}
				counts["lapsed"]++
			}
		case x < 95: // Redis loses everything; the tick loop puts back
			if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
				t.Fatal(err)
			}
			q.recovery.markLost()
			q.configuredRooms(ctx)
			counts["restore"]++
			// Whoever waits ahead of the head and was never let in gets
			// its place back (checked for a sample: the others come back
			// when they poll).
			for range 16 {
				v := pick(func(v *onceVisitor) bool {
					return v.admitted == 0 && !v.ticket.IsZero() && !v.gone && v.ticket.Seq > head
				})
				if v == nil {
					continue
				}
				if st := poll(v); st.Status != wire.StatusWaiting {
					t.Fatalf("%s waited with ticket %d, never admitted; after a restore it is %s", v.id, v.ticket.Seq, st.Status)
				}
			}
		default: // time goes by
			waitUntil(t, time.Now().Add(tickTime))
		}
	}
	t.Logf("%d operations: %v", done, counts)
	for _, k := range []string{"join", "admitted", "poll", "restore"} {
		if counts[k] == 0 {
			t.Fatalf("no %s in %d operations: %v", k, done, counts)
		}
	}
	if method != settings.MethodReject && counts["spent"]+counts["given back"]+counts["lapsed"] == 0 {
		t.Fatalf("no token was spent, given back or lapsed: %v", counts)
	}
}
