package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/issuer"
)

// keys runs "waitroom keys" with args and returns its exit code and output.
func keys(args ...string) (int, string) {
	var out bytes.Buffer
	code := keysCommand(args, &out, &out)
	return code, out.String()
}

// loadKeys reads a key file as -signing-keys does.
func loadKeys(t *testing.T, path string) *entry.KeySet {
	t.Helper()
	data, err := issuer.ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := entry.ParseKeySet(data)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// signedBy signs a token with ks and says which key signed it.
func signedBy(t *testing.T, ks *entry.KeySet) (string, string) {
	t.Helper()
	nb := time.Now().Add(-time.Second)
	tok, err := ks.Sign(entry.Claims{Issuer: "http://queue", Room: "drop", Visitor: "v1", NotBefore: nb, ExpiresAt: nb.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	var h struct{ Kid string }
	if err == nil {
		err = json.Unmarshal(raw, &h)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tok, h.Kid
}

// TestKeysGenerate: the file written is 0600, loads as -signing-keys (a
// server starts with it), and is never overwritten.
func TestKeysGenerate(t *testing.T) {
	for _, alg := range []string{entry.EdDSA, entry.ES256} {
		path := filepath.Join(t.TempDir(), "signing-keys.json")
		if code, out := keys("generate", "-alg", alg, "-kid", "first", "-out", path); code != 0 {
			t.Fatalf("%s: %d %s", alg, code, out)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v", alg, st.Mode(), err)
		}
		ks := loadKeys(t, path)
		if ks.Active().ID != "first" || ks.Active().Alg != alg || len(ks.Keys()) != 1 {
			t.Fatalf("%s: active %q %s of %d keys", alg, ks.Active().ID, ks.Active().Alg, len(ks.Keys()))
		}
		if code, out := keys("generate", "-out", path); code != 1 || !strings.Contains(out, "exists") {
			t.Fatalf("%s: over an existing file: %d %s", alg, code, out)
		}
		if again := loadKeys(t, path); again.Fingerprint() != ks.Fingerprint() {
			t.Fatalf("%s: the existing file changed", alg)
		}
	}
	path := filepath.Join(t.TempDir(), "signing-keys.json")
	if code, out := keys("generate", "-out", path); code != 0 {
		t.Fatalf("defaults: %d %s", code, out)
	}
	ts := startServer(t, nil, "rueidis", func(c *config) { c.Entry.KeysFile = path })
	if got, want := ts.tokens.Keys().Fingerprint(), loadKeys(t, path).Fingerprint(); got != want || ts.tokens.Keys().Active().Alg != entry.EdDSA {
		t.Fatalf("the server signs with %s (%s), the file holds %s", got, ts.tokens.Keys().Active().Alg, want)
	}
}

// TestKeysRotate: a rotated file signs with the new key and still
// verifies the tokens of the old one; -stage publishes the new key
// without it signing, and activate makes it sign.
func TestKeysRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signing-keys.json")
	if code, out := keys("generate", "-kid", "old", "-out", path); code != 0 {
		t.Fatalf("generate: %d %s", code, out)
	}
	oldTok, kid := signedBy(t, loadKeys(t, path))
	if kid != "old" {
		t.Fatalf("signed by %q", kid)
	}
	if code, out := keys("rotate", "-in", path, "-alg", "ES256", "-kid", "new"); code != 0 || !strings.Contains(out, `"new"`) {
		t.Fatalf("rotate: %d %s", code, out)
	}
	ks := loadKeys(t, path)
	if _, kid := signedBy(t, ks); kid != "new" || ks.Active().Alg != entry.ES256 {
		t.Fatalf("after rotate, signed by %q (%s)", kid, ks.Active().Alg)
	}
	if c, err := ks.Parse(oldTok); err != nil || c.Visitor != "v1" {
		t.Fatalf("the old key's token after rotate: %v", err)
	}
	if old := ks.Key("old"); old == nil || old.Private == nil {
		t.Fatal("the old key lost its private part")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after rotate %v", st.Mode())
	}

	// Staged: published, not signing, until activated.
	if code, out := keys("rotate", "-in", path, "-stage"); code != 0 {
		t.Fatalf("rotate -stage: %d %s", code, out)
	}
	ks = loadKeys(t, path)
	keysNow := ks.Keys()
	staged := keysNow[len(keysNow)-1]
	if _, kid := signedBy(t, ks); kid != "new" || len(keysNow) != 3 || staged.Alg != entry.ES256 {
		t.Fatalf("after -stage: signed by %q, %d keys, the new one %s", kid, len(keysNow), staged.Alg)
	}
	if code, out := keys("activate", "-in", path, "-kid", staged.ID); code != 0 {
		t.Fatalf("activate: %d %s", code, out)
	}
	ks = loadKeys(t, path)
	if _, kid := signedBy(t, ks); kid != staged.ID {
		t.Fatalf("after activate: signed by %q, want %q", kid, staged.ID)
	}
	if _, err := ks.Parse(oldTok); err != nil {
		t.Fatalf("the first key's token after activate: %v", err)
	}
	if names := strings.Join(dirNames(t, filepath.Dir(path)), " "); names != "signing-keys.json" {
		t.Fatalf("left in the directory: %s", names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestKeysRefused: bad commands and flags are usage errors (2); a file
// that is not only its owner's, or a key it lacks, is refused (1) and the
// file is left as it was.
func TestKeysRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signing-keys.json")
	if code, out := keys("generate", "-out", path); code != 0 {
		t.Fatalf("generate: %d %s", code, out)
	}
	before, _ := os.ReadFile(path)
	for _, args := range [][]string{
		{},
		{"nope"},
		{"generate"},
		{"generate", "-out", path + "2", "-alg", "RS256"},
		{"generate", "-out", path + "2", "-in", path},
		{"rotate"},
		{"rotate", "-in", path, "extra"},
		{"activate", "-in", path},
	} {
		if code, out := keys(args...); code != 2 || !strings.Contains(out, "usage:") {
			t.Errorf("%q: %d %s", args, code, out)
		}
	}
	if code, out := keys("activate", "-in", path, "-kid", "unknown"); code != 1 || !strings.Contains(out, `"unknown"`) {
		t.Errorf("activate an unknown key: %d %s", code, out)
	}
	os.Chmod(path, 0o644)
	if code, out := keys("rotate", "-in", path); code != 1 || !strings.Contains(out, "chmod 600") {
		t.Errorf("rotate a 0644 file: %d %s", code, out)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a refused command changed the file")
	}
	if _, err := os.Stat(path + "2"); err == nil {
		t.Error("a refused generate wrote a file")
	}
}
