package invite

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMintParse(t *testing.T) {
	m := NewMinter([]byte("secret-0123456789abcdef"))
	c := Code{Room: "drop", ID: NewID(), Expires: time.Unix(1900000000, 0), Uses: 3, Visitor: "user-42"}
	s := m.Mint(c)
	got, err := m.Parse(s)
	if err != nil || got.Room != c.Room || got.ID != c.ID || !got.Expires.Equal(c.Expires) || got.Uses != 3 || got.Visitor != "user-42" {
		t.Fatalf("%+v %v", got, err)
	}
	// Another secret's code, a changed payload or signature: forged.
	other := NewMinter([]byte("another-secret-0123456789"))
	if _, err := other.Parse(s); !errors.Is(err, ErrForged) {
		t.Fatalf("other secret: %v", err)
	}
	p, sig, _ := strings.Cut(strings.TrimPrefix(s, prefix), ".")
	forged := m.Mint(Code{Room: "drop", ID: c.ID, Expires: c.Expires, Uses: 99})
	fp, _, _ := strings.Cut(strings.TrimPrefix(forged, prefix), ".")
	for name, bad := range map[string]string{
		"more uses, old signature": prefix + fp + "." + sig,
		"flipped signature":        prefix + p + "." + flip(sig[:1]) + sig[1:],
	} {
		if _, err := m.Parse(bad); !errors.Is(err, ErrForged) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, bad := range []string{"", "inv1.", "inv1.abc", "inv2." + p + "." + sig, s + "x", strings.Repeat("a", 600)} {
		if _, err := m.Parse(bad); err == nil {
			t.Fatalf("%q parsed", bad)
		}
	}
	if a, b := NewID(), NewID(); a == b || len(a) != 16 {
		t.Fatalf("ids %q %q", a, b)
	}
}

func TestPriorityKind(t *testing.T) {
	m := NewMinter([]byte("secret-0123456789abcdef"))
	exp := time.Unix(1900000000, 0)
	plain := m.Mint(Code{Room: "drop", ID: NewID(), Expires: exp, Uses: 2})
	prio := m.Mint(Code{Room: "drop", ID: NewID(), Expires: exp, Uses: 2, Priority: true})
	if c, err := m.Parse(plain); err != nil || c.Priority {
		t.Fatalf("plain: %+v %v", c, err)
	}
	c, err := m.Parse(prio)
	if err != nil || !c.Priority || c.Uses != 2 || c.Room != "drop" {
		t.Fatalf("priority: %+v %v", c, err)
	}
	// The kind is under the signature: a plain code's payload with the
	// priority field added does not verify.
	p, sig, _ := strings.Cut(strings.TrimPrefix(plain, prefix), ".")
	raw, _ := base64.RawURLEncoding.DecodeString(p)
	grown := base64.RawURLEncoding.EncodeToString(append(raw, "|p"...))
	if _, err := m.Parse(prefix + grown + "." + sig); !errors.Is(err, ErrForged) {
		t.Fatalf("plain code made priority: %v", err)
	}
	// A sixth field other than the priority kind is no code.
	odd := base64.RawURLEncoding.EncodeToString(append(raw, "|x"...))
	if _, err := m.Parse(prefix + odd + "." + base64.RawURLEncoding.EncodeToString(m.mac(odd))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown kind: %v", err)
	}
}

// flip returns a base64url character other than c.
func flip(c string) string {
	if c == "A" {
		return "B"
	}
	return "A"
}

func FuzzParse(f *testing.F) {
	m := NewMinter([]byte("secret-0123456789abcdef"))
	f.Add(m.Mint(Code{Room: "drop", ID: "abc", Expires: time.Unix(1, 0), Uses: 1}))
	f.Add(m.Mint(Code{Room: "drop", ID: "abc", Expires: time.Unix(1, 0), Uses: 2, Visitor: "v", Priority: true}))
	f.Add("inv1.x.y")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := m.Parse(s)
		if err == nil && (c.Uses < 1 || c.Room == "" || m.Mint(c) != s) {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}
