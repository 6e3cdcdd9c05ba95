package issuer

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/settings"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type rooms map[string]settings.Room

func (r rooms) RoomSettings(room string) (settings.Room, bool) { c, ok := r[room]; return c, ok }

func newIssuer(t *testing.T, secret string) *Issuer {
	t.Helper()
	legacy, err := visitorsig.NewSigner([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	i, err := New(Config{Addr: ":8080", TokenTTL: time.Minute, TokenMax: 5 * time.Minute}, []byte(secret), false, legacy, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// TestSignParse: a signed token reads back as the admission it was made
// from, its exp the room's own cap; the former format still reads; a token
// of another key set does not.
func TestSignParse(t *testing.T) {
	i := newIssuer(t, strings.Repeat("s", 32))
	if i.Issuer() != "http://localhost:8080" {
		t.Errorf("issuer %q", i.Issuer())
	}
	i.SetRooms(rooms{"drop": {TokenMax: 10 * time.Minute}})
	nb := time.Now().Truncate(time.Millisecond)
	tk := visitorsig.Token{Room: "drop", Visitor: "v1", NotBefore: nb, ExpiresAt: nb.Add(time.Minute)}
	raw := i.SignToken(tk)
	got, err := i.ParseToken(raw)
	if err != nil || got != tk {
		t.Fatalf("ParseToken = %+v, %v; want %+v", got, err, tk)
	}
	c, err := i.Keys().Parse(raw)
	if err != nil || c.ExpiresAt.Unix() != nb.Add(10*time.Minute).Unix() {
		t.Fatalf("exp %v, %v; want the room's cap, from %v", c.ExpiresAt, err, nb)
	}
	if again := i.SignToken(tk); again != raw {
		t.Error("the same admission signed twice differs")
	}
	legacy, _ := visitorsig.NewSigner([]byte(strings.Repeat("s", 32)))
	if got, err := i.ParseToken(legacy.SignToken(tk)); err != nil || got.Visitor != "v1" {
		t.Errorf("former format: %+v, %v", got, err)
	}
	other := newIssuer(t, strings.Repeat("o", 32))
	if _, err := i.ParseToken(other.SignToken(tk)); err == nil {
		t.Error("a token of another key set was read")
	}
}

// memStore is a Redis hash in memory, enough for the key lines.
type memStore struct {
	mu sync.Mutex
	h  map[string]string
}

func (m *memStore) Do(_ context.Context, args ...string) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch args[0] {
	case "HSET":
		m.h[args[2]] = args[3]
	case "HDEL":
		delete(m.h, args[2])
	case "TIME":
		now := time.Now()
		return []any{strconv.FormatInt(now.Unix(), 10), strconv.Itoa(now.Nanosecond() / 1000)}, nil
	case "HGETALL":
		var out []any
		for k, v := range m.h {
			out = append(out, k, v)
		}
		return out, nil
	}
	return nil, nil
}

// TestCheckKeys: a second instance with the same keys starts, one with
// other keys is refused with both fingerprints, and once the first has
// unpublished, the other starts.
func TestCheckKeys(t *testing.T) {
	ctx := context.Background()
	r := &memStore{h: map[string]string{}}
	a, b, c := newIssuer(t, strings.Repeat("s", 32)), newIssuer(t, strings.Repeat("s", 32)), newIssuer(t, strings.Repeat("o", 32))
	if err := a.Check(ctx, r, "a"); err != nil {
		t.Fatal(err)
	}
	if err := b.Check(ctx, r, "b"); err != nil {
		t.Fatalf("same keys refused: %v", err)
	}
	err := c.Check(ctx, r, "c")
	if err == nil || !strings.Contains(err.Error(), a.Keys().Fingerprint()) || !strings.Contains(err.Error(), c.Keys().Fingerprint()) {
		t.Fatalf("other keys: %v", err)
	}
	for _, id := range []string{"a", "b"} {
		if err := a.Unpublish(ctx, r, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Check(ctx, r, "c"); err != nil {
		t.Fatalf("alone: %v", err)
	}
	r.h["gone"] = "1 x y z=w" // a line of 1970: dropped at the next publish
	if err := c.Publish(ctx, r, "c"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.h["gone"]; ok {
		t.Error("a stale line was kept")
	}
}

// TestServiceKeys: labelled keys load and match in constant time; short,
// repeated, admin and badly labelled keys are refused.
func TestServiceKeys(t *testing.T) {
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "keys.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noAdmin := func([]byte) bool { return false }
	ks, err := LoadServiceKeys(write("shop: 0123456789abcdef0123\n"), noAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := ks.ServiceKey("0123456789abcdef0123"); !ok || l != "shop" {
		t.Errorf("ServiceKey = %q, %v", l, ok)
	}
	if _, ok := ks.ServiceKey("0123456789abcdef012"); ok {
		t.Error("a prefix matched")
	}
	if ks, err := LoadServiceKeys("", noAdmin); err != nil || len(ks) != 0 {
		t.Errorf("no file: %v, %v", ks, err)
	}
	for name, body := range map[string]string{
		"short":    "shop: short\n",
		"repeated": "a: 0123456789abcdef0123\nb: 0123456789abcdef0123\n",
		"label":    "'-bad': 0123456789abcdef0123\n",
		"empty":    "{}\n",
		"not yaml": "[1, 2\n",
	} {
		if _, err := LoadServiceKeys(write(body), noAdmin); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := LoadServiceKeys(write("shop: 0123456789abcdef0123\n"), func([]byte) bool { return true }); err == nil {
		t.Error("an admin key loaded as a service key")
	}
	_ = entry.EdDSA
}

// TestKeysAgreement: an instance that started while Redis had lost the key
// lines, with keys the running one refuses, stops signing once the running
// one wrote its line back, and does not sign again by itself, not even
// when the running one restarts (gone a moment, back as the newer one);
// the running one goes on.
func TestKeysAgreement(t *testing.T) {
	ctx := context.Background()
	r := &memStore{h: map[string]string{}}
	a, b := newIssuer(t, strings.Repeat("a", 32)), newIssuer(t, strings.Repeat("b", 32))
	tk := visitorsig.Token{Room: "drop", Visitor: "v1", NotBefore: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}
	if err := a.Check(ctx, r, "a"); err != nil {
		t.Fatal(err)
	}
	clear(r.h) // Redis lost the lines
	if err := b.Check(ctx, r, "b"); err != nil {
		t.Fatalf("b was refused with no line to compare: %v", err)
	}
	if b.Signing() != nil || b.SignToken(tk) == "" {
		t.Fatal("b does not sign before a's line is back")
	}
	publish := func(who *Issuer, id string) {
		t.Helper()
		if err := who.Publish(ctx, r, id); err != nil {
			t.Fatal(err)
		}
	}
	publish(a, "a")
	publish(b, "b")
	publish(a, "a")
	if err := a.Signing(); err != nil || a.SignToken(tk) == "" {
		t.Fatalf("a, which joined first, stopped signing: %v", err)
	}
	err := b.Signing()
	if err == nil || !strings.Contains(err.Error(), a.Keys().Fingerprint()) || !strings.Contains(err.Error(), b.Keys().Fingerprint()) {
		t.Fatalf("b: %v", err)
	}
	if tok := b.SignToken(tk); tok != "" {
		t.Fatal("b still signs")
	}
	if _, ok := r.h["a"]; !ok || len(r.h) != 1 {
		t.Fatalf("lines %v, want a's alone", r.h)
	}
	// a restarts: gone a moment, then back (a new instance, newer than b).
	if err := a.Unpublish(ctx, r, "a"); err != nil {
		t.Fatal(err)
	}
	publish(b, "b")
	again := newIssuer(t, strings.Repeat("a", 32))
	if err := again.Check(ctx, r, "a2"); err != nil {
		t.Fatalf("a back: %v", err)
	}
	publish(b, "b")
	publish(again, "a2")
	if b.Signing() == nil || b.SignToken(tk) != "" {
		t.Fatal("b signs again")
	}
	if again.Signing() != nil {
		t.Fatalf("a, back: %v", again.Signing())
	}
}

// TestKeyLineFormat: a line reads back as written, and a line of the
// release before (no since) reads as one that joined first.
func TestKeyLineFormat(t *testing.T) {
	i := newIssuer(t, strings.Repeat("s", 32))
	at, since := time.UnixMilli(1700000001000), time.UnixMilli(1700000000000)
	l, ok := decodeKeyLine(encodeKeyLine(at, since, i.Keys()))
	if !ok || !l.at.Equal(at) || !l.since.Equal(since) || l.active != i.Keys().Active().ID || l.fingerprint != i.Keys().Fingerprint() || len(l.keys) != 1 {
		t.Fatalf("%+v, %v", l, ok)
	}
	old, ok := decodeKeyLine("1700000001000 k1 fp k1=thumb")
	if !ok || !old.since.IsZero() || old.keys["k1"] != "thumb" {
		t.Fatalf("a line of the release before: %+v, %v", old, ok)
	}
}
