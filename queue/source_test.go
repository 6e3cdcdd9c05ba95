package queue

import (
	"context"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// TestStatesReclaim: after Redis lost everything, States gives back what
// each visitor's claim says it held: the admission of a visitor whose
// token is still good (its record written back), the place of a visitor
// with a ticket of the room; a ticket of another room, an admitted
// visitor's own ticket and no claim at all give nothing back.
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
		states, err := q.States(ctx, room, visitors, claims)
		if err != nil || len(states) != len(visitors) {
			t.Fatalf("states: %+v %v", states, err)
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
		states, err = q.States(ctx, room, []string{"b"}, nil)
		if err != nil || states[0].Status != wire.StatusNotInQueue {
			t.Fatalf("b without a claim: %+v %v", states, err)
		}
	})
}
