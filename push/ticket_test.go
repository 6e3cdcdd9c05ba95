package push

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/httperr"
)

// memNonces is Nonces in memory; fail makes Claim fail.
type memNonces struct {
	mu   sync.Mutex
	used map[string]time.Duration // room + nonce: the ttl claimed
	fail error
}

func (m *memNonces) Claim(_ context.Context, room, nonce string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return false, m.fail
	}
	k := room + "\x00" + nonce
	if _, ok := m.used[k]; ok {
		return false, nil
	}
	m.used[k] = ttl
	return true, nil
}

func TestTickets(t *testing.T) {
	used := &memNonces{used: map[string]time.Duration{}}
	tk := NewTickets([]byte("0123456789abcdef0123456789abcdef"), used)
	ctx := context.Background()
	const visitor = "v-abc123"
	exp := time.Now().Add(TicketTTL)
	good := tk.Mint("drop", visitor, exp)
	if got, err := tk.Redeem(ctx, "drop", good); err != nil || got != visitor {
		t.Fatalf("redeem: %q %v", got, err)
	}
	for _, ttl := range used.used {
		if ttl <= 0 || ttl > TicketTTL {
			t.Fatalf("nonce kept for %v, want up to the ticket's life", ttl)
		}
	}
	other := NewTickets([]byte("another secret, another instance"), used)
	for _, tc := range []struct {
		name, room, raw, code string
	}{
		{"used", "drop", good, "ticket_used"},
		{"other room", "other", tk.Mint("drop", visitor, exp), "invalid_ticket"},
		{"forged", "drop", good[:len(good)-2] + "AA", "invalid_ticket"},
		{"other key", "drop", other.Mint("drop", visitor, exp), "invalid_ticket"},
		{"garbage", "drop", "nope", "invalid_ticket"},
		{"not a visitor id", "drop", tk.Mint("drop", "no spaces allowed", exp), "invalid_ticket"},
		{"expired", "drop", tk.Mint("drop", visitor, time.Now().Add(-time.Second)), "ticket_expired"},
	} {
		_, err := tk.Redeem(ctx, tc.room, tc.raw)
		var he *httperr.Error
		if !errors.As(err, &he) || he.Code != tc.code || he.Status != 401 {
			t.Errorf("%s: %v, want 401 %s", tc.name, err, tc.code)
		}
	}

	down := errors.New("store down")
	used.fail = down
	_, err := tk.Redeem(ctx, "drop", tk.Mint("drop", visitor, exp))
	var he *httperr.Error
	if !errors.Is(err, down) || errors.As(err, &he) {
		t.Fatalf("store failure: %v, want the store's error, not a refusal", err)
	}
}
