package visitorsig

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// TestTicketCredential: a credential carries the ticket it was signed
// with, the old format without one stays valid, and a changed or foreign
// one is refused.
func TestTicketCredential(t *testing.T) {
	s, _ := NewSigner(testSecret)
	other, _ := NewSigner([]byte("another-secret-of-16+bytes"))
	id, old := s.NewVisitor()
	tk := wire.Ticket{Room: "drop-1", Seq: 123456789, IssuedAt: time.UnixMilli(1_700_000_000_123)}
	cred := s.TicketCredential(id, tk)
	gotID, gotT, err := s.ParseCredential(cred)
	if err != nil || gotID != id || gotT != tk {
		t.Fatalf("round trip: %q %+v %v", gotID, gotT, err)
	}
	if v, err := s.ParseVisitor(cred); err != nil || v != id {
		t.Fatalf("ParseVisitor of a ticket credential: %q %v", v, err)
	}
	// The old format stays valid and carries no ticket.
	if v, tt, err := s.ParseCredential(old); err != nil || v != id || !tt.IsZero() {
		t.Fatalf("old credential: %q %+v %v", v, tt, err)
	}
	for _, c := range []string{
		strings.Replace(cred, "drop-1", "drop-2", 1),                      // another room
		strings.Replace(cred, "~"+strconv.FormatInt(tk.Seq, 36), "~1", 1), // an earlier place
		other.TicketCredential(id, tk),
		id + ".drop-1~1~1~1." + strings.Repeat("A", sigB64Len),
		id + ".bad room~1~1." + strings.Repeat("A", sigB64Len),
		strings.Repeat("a", 300),
	} {
		if _, _, err := s.ParseCredential(c); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("ParseCredential(%q) = %v", c, err)
		}
	}
}
