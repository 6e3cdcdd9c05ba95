package visitorsig

import (
	"strconv"
	"testing"
	"time"
)

func TestLeadingZeroBits(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want int
	}{
		{[]byte{0x80}, 0}, {[]byte{0x01}, 7}, {[]byte{0, 0x40}, 9}, {[]byte{0, 0, 0x0f}, 20}, {[]byte{0, 0}, 16},
	} {
		if got := LeadingZeroBits(c.in); got != c.want {
			t.Errorf("LeadingZeroBits(%x) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestChallengeRoundTrip(t *testing.T) {
	s, _ := NewSigner([]byte("0123456789abcdef0123"))
	other, _ := NewSigner([]byte("another-secret-of-20b"))
	now := time.Now()
	ch := s.NewChallenge("drop", 12, now)
	c, err := s.ParseChallenge(ch)
	if err != nil || c.Room != "drop" || c.Bits != 12 || c.Expires.UnixMilli() != now.Add(ChallengeTTL).UnixMilli() || c.ID == "" {
		t.Fatalf("parse: %+v %v", c, err)
	}
	if ch2 := s.NewChallenge("drop", 12, now); ch2 == ch {
		t.Fatal("two challenges are the same")
	}
	if _, err := other.ParseChallenge(ch); err != ErrPowInvalid {
		t.Fatalf("another deployment's challenge: %v", err)
	}
	for _, nonce := range []string{"", "-1", "1e3", "123456789012345678901", "12 "} {
		if Solves(ch, nonce, 0) {
			t.Errorf("nonce %q accepted", nonce)
		}
	}
}

func FuzzParseChallenge(f *testing.F) {
	s, _ := NewSigner([]byte("0123456789abcdef0123"))
	f.Add(s.NewChallenge("drop", 18, time.Now()))
	f.Add("p1.drop.18.x.y.z")
	f.Add("")
	f.Fuzz(func(t *testing.T, ch string) {
		c, err := s.ParseChallenge(ch)
		if err == nil && (c.Room == "" && c.ID == "") {
			t.Fatalf("accepted %q as %+v", ch, c)
		}
	})
}

// BenchmarkSolve measures what one join costs a native client (a bot) at
// the default strength: b.N solutions of fresh challenges.
func BenchmarkSolve18(b *testing.B) {
	s, _ := NewSigner([]byte("0123456789abcdef0123"))
	var hashes int
	for b.Loop() {
		ch := s.NewChallenge("drop", 18, time.Now())
		for i := 0; ; i++ {
			hashes++
			if Solves(ch, strconv.Itoa(i), 18) {
				break
			}
		}
	}
	b.ReportMetric(float64(hashes)/float64(b.N), "hashes/join")
}
