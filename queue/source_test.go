package queue

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// TestStatesReclaim: after Redis lost everything, a read (States) followed
// by the write-back (Reclaim) gives back what each visitor's claim says it
// held: the admission of a visitor whose token is still good (its record
// written back), the place of a visitor with a ticket of the room; a
// ticket of another room, an admitted visitor's own ticket and no claim at
// all give nothing back.
func TestStatesReclaim(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "drop"
		q := newQueue(t, r, fixedBatch(1, 50*time.Millisecond))
		tickets := map[string]wire.Ticket{}
		for _, v := range []string{"a", "b", "c"} {
			_, tk, err := q.JoinTicket(ctx, room, v)
			if err != nil || tk.IsZero() {
				t.Fatalf("join %s: %+v %v", v, tk, err)
			}
			tickets[v] = tk
		}
		admitTaken(t, q, room) // a, the first of a batch of 1
		st, err := q.Status(ctx, room, "a")
		if err != nil || st.Status != wire.StatusAdmitted {
			t.Fatalf("a: %+v %v", st, err)
		}
		admitted := wire.Claim{Ticket: tickets["a"], NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}

		visitors := []string{"a", "a-ticket", "b", "c", "d"}
		claims := []wire.Claim{
			admitted,
			{Ticket: tickets["a"]}, // let in before the loss: not taken back
			{Ticket: tickets["b"]},
			{Ticket: wire.Ticket{Room: "other", Seq: tickets["c"].Seq, IssuedAt: tickets["c"].IssuedAt}},
			{},
		}
		states, err := q.States(ctx, room, visitors)
		if err != nil || len(states) != len(visitors) {
			t.Fatalf("states: %+v %v", states, err)
		}
		if err := q.Reclaim(ctx, room, visitors, claims, states); err != nil {
			t.Fatalf("reclaim: %v", err)
		}
		want := []wire.Status{wire.StatusAdmitted, wire.StatusNotInQueue, wire.StatusWaiting, wire.StatusNotInQueue, wire.StatusNotInQueue}
		for i, st := range states {
			if st.Status != want[i] {
				t.Fatalf("%s: %s, want %s", visitors[i], st.Status, want[i])
			}
		}
		if states[0].Token == "" || !states[0].ExpiresAt.Equal(admitted.ExpiresAt) {
			t.Fatalf("a's admission: %+v, want its token until %v", states[0], admitted.ExpiresAt)
		}
		if states[2].Position != 1 {
			t.Fatalf("b at %d, want 1", states[2].Position)
		}
		tok := visitorsig.Token{Room: room, Visitor: "a", NotBefore: admitted.NotBefore, ExpiresAt: admitted.ExpiresAt}
		if n, err := r.Do(ctx, "EXISTS", prefix(room)+"t:a"); err != nil || n != int64(1) {
			t.Fatalf("a's token record was not written back (EXISTS %v %v)", n, err)
		}
		waitUntil(t, tok.NotBefore)
		if _, err := q.Consume(ctx, tok, Spend); err != nil {
			t.Fatalf("a's token after the loss: %v", err)
		}

		// Without claims, nothing is given back.
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		states, err = q.States(ctx, room, []string{"b"})
		if err != nil || states[0].Status != wire.StatusNotInQueue {
			t.Fatalf("b without a claim: %+v %v", states, err)
		}
	})
}

// readsOnly is a Redis seam that notes every call made with a context
// marked by watch other than the status script or a reading command: what
// a read path must not do.
type readsOnly struct {
	Redis
	mu     sync.Mutex
	writes []string
}

type watchKey struct{}

func watch(ctx context.Context) context.Context { return context.WithValue(ctx, watchKey{}, true) }

func (r *readsOnly) note(ctx context.Context, what string) {
	if ctx.Value(watchKey{}) == nil {
		return
	}
	r.mu.Lock()
	r.writes = append(r.writes, what)
	r.mu.Unlock()
}

func (r *readsOnly) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if s != statusScript.Script {
		r.note(ctx, "script "+s.Name)
	}
	return r.Redis.Eval(ctx, s, keys, args...)
}

func (r *readsOnly) Do(ctx context.Context, args ...string) (any, error) {
	if len(args) > 0 {
		switch strings.ToUpper(args[0]) {
		case "GET", "MGET", "EXISTS", "HGET", "HGETALL", "SMEMBERS", "SISMEMBER", "ZSCORE":
		default:
			r.note(ctx, args[0])
		}
	}
	return r.Redis.Do(ctx, args...)
}

func (r *readsOnly) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// TestReadsWriteNothing: States and Status, the reads the hub and the
// poll make, only read, even for visitors Redis lost whose claims say what
// they held; those come back only through the explicit Reclaim.
func TestReadsWriteNothing(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, r Redis) {
		ctx := context.Background()
		const room = "ro"
		seam := &readsOnly{Redis: r}
		q := newQueue(t, seam, fixedBatch(1, 50*time.Millisecond))
		tickets := map[string]wire.Ticket{}
		for _, v := range []string{"a", "b"} {
			_, tk, err := q.JoinTicket(ctx, room, v)
			if err != nil || tk.IsZero() {
				t.Fatalf("join %s: %+v %v", v, tk, err)
			}
			tickets[v] = tk
		}
		admitTaken(t, q, room) // a
		st, err := q.Status(ctx, room, "a")
		if err != nil || st.Status != wire.StatusAdmitted {
			t.Fatalf("a: %+v %v", st, err)
		}
		visitors := []string{"a", "b"}
		claims := []wire.Claim{{Ticket: tickets["a"], NotBefore: st.NotBefore, ExpiresAt: st.ExpiresAt}, {Ticket: tickets["b"]}}
		if _, err := r.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}

		states, err := q.States(watch(ctx), room, visitors)
		if err != nil || len(states) != 2 {
			t.Fatalf("states: %+v %v", states, err)
		}
		if w := seam.taken(); len(w) > 0 {
			t.Fatalf("States wrote to Redis: %v", w)
		}
		for i, st := range states {
			if st.Status != wire.StatusNotInQueue {
				t.Fatalf("%s read as %s: want not_in_queue until the write-back", visitors[i], st.Status)
			}
		}
		if st, err := q.Status(watch(ctx), room, "b"); err != nil || st.Status != wire.StatusNotInQueue {
			t.Fatalf("b: %+v %v", st, err)
		}
		if w := seam.taken(); len(w) > 0 {
			t.Fatalf("Status wrote to Redis: %v", w)
		}

		if err := q.Reclaim(ctx, room, visitors, claims, states); err != nil {
			t.Fatal(err)
		}
		if states[0].Status != wire.StatusAdmitted || states[1].Status != wire.StatusWaiting || states[1].Position != 1 {
			t.Fatalf("after the write-back: %+v", states)
		}
		if st, err := q.Status(ctx, room, "b"); err != nil || st.Status != wire.StatusWaiting {
			t.Fatalf("b read again: %+v %v", st, err)
		}
	})
}
