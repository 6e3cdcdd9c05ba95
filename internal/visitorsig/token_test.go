package visitorsig

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenSigning(t *testing.T) {
	s, _ := NewSigner(testSecret)
	other, _ := NewSigner([]byte("another-secret-of-16+bytes"))
	tok := Token{Room: "drop", Visitor: "abc_DEF-1", NotBefore: time.UnixMilli(1_700_000_000_123), ExpiresAt: time.UnixMilli(1_700_000_300_123)}
	signed := s.SignToken(tok)
	got, err := s.ParseToken(signed)
	if err != nil || got != tok {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	forged := strings.Replace(signed, "drop", "dros", 1)
	bad := map[string]string{
		"empty":        "",
		"truncated":    signed[:len(signed)-3],
		"forged room":  forged,
		"other secret": other.SignToken(tok),
		"no sig":       signed[:strings.LastIndexByte(signed, '.')],
		"garbage":      "v1.a.b.c.d.e",
		"huge":         strings.Repeat("a", 4096),
	}
	for name, tk := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := s.ParseToken(tk); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("ParseToken(%q) = %v", tk, err)
			}
		})
	}
}

func TestVisitorCredential(t *testing.T) {
	s, _ := NewSigner(testSecret)
	other, _ := NewSigner([]byte("another-secret-of-16+bytes"))
	id, cred := s.NewVisitor()
	if got, err := s.ParseVisitor(cred); err != nil || got != id {
		t.Fatalf("round trip: %q %v", got, err)
	}
	for _, c := range []string{"", id, id + ".", cred[:len(cred)-1], other.VisitorCredential(id), "a.b.c", "x." + cred[len(id)+1:]} {
		if _, err := s.ParseVisitor(c); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("ParseVisitor(%q) = %v", c, err)
		}
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}

func FuzzParseToken(f *testing.F) {
	s, _ := NewSigner(testSecret)
	f.Add(s.SignToken(Token{Room: "r", Visitor: "v", NotBefore: time.UnixMilli(1), ExpiresAt: time.UnixMilli(2)}))
	f.Add("v1.r.v.1.2.AAAAAAAAAAAAAAAAAAAAAA")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := s.ParseToken(tok)
		if err == nil && s.SignToken(got) != tok {
			t.Fatalf("accepted a token that does not re-sign to itself: %q", tok)
		}
	})
}

func FuzzParseVisitor(f *testing.F) {
	s, _ := NewSigner(testSecret)
	_, c := s.NewVisitor()
	f.Add(c)
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, cred string) {
		id, err := s.ParseVisitor(cred)
		if err == nil && s.VisitorCredential(id) != cred {
			t.Fatalf("accepted %q", cred)
		}
	})
}

var testSecret = []byte("0123456789abcdef-test-secret")
