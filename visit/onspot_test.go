package visit

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

// TestJoinOnSpot: the gateway's join of an API client takes a place with
// a credential carrying the ticket, keeps it for the same credential,
// counts against the client address's join rate, and is refused in a room
// with a proof of work.
func TestJoinOnSpot(t *testing.T) {
	f := newFixture(t, &Options{JoinRate: 0.001, JoinBurst: 1})
	ctx := context.Background()
	client := netip.MustParseAddr("192.0.2.7")
	st, cred, err := f.api.JoinOnSpot(ctx, "shop", "", client)
	if err != nil || st.Status != "waiting" || cred == "" {
		t.Fatalf("first: %+v %q %v", st, cred, err)
	}
	id, tk, err := f.signer.ParseCredential(cred)
	if err != nil || tk.IsZero() {
		t.Fatalf("credential %q: ticket %+v, %v", cred, tk, err)
	}
	// The same credential: the same visitor, no new visitor counted.
	if _, again, err := f.api.JoinOnSpot(ctx, "shop", cred, client); err != nil || again != cred {
		t.Fatalf("again: %q %v", again, err)
	}
	if len(f.q.joins) != 2 || f.q.joins[1] != id {
		t.Fatalf("joins %v, want %s twice", f.q.joins, id)
	}
	// A new visitor from the same address is over its rate; another
	// address is not.
	if _, _, err := f.api.JoinOnSpot(ctx, "shop", "", client); !errors.Is(err, ErrJoinElsewhere) {
		t.Fatalf("over the join rate: %v, want ErrJoinElsewhere", err)
	}
	if _, _, err := f.api.JoinOnSpot(ctx, "shop", "", netip.MustParseAddr("192.0.2.8")); err != nil {
		t.Fatalf("another address: %v", err)
	}
	f.rooms.powBits = 8
	if _, _, err := f.api.JoinOnSpot(ctx, "shop", "", netip.MustParseAddr("192.0.2.9")); !errors.Is(err, ErrJoinElsewhere) {
		t.Fatalf("proof of work: %v, want ErrJoinElsewhere", err)
	}
}
