package entry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestKeyFile(t *testing.T) {
	active, _ := GenerateKey(EdDSA, "2026-12")
	next, _ := GenerateKey(ES256, "2027-01")
	retired, _ := GenerateKey(EdDSA, "2026-06")
	retired.Private = nil // published until its last token expired
	ks, err := NewKeySet("2026-12", active, next, retired)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ks.MarshalKeyFile()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := LoadKeySet(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Fingerprint() != ks.Fingerprint() || back.Active().ID != "2026-12" || len(back.Keys()) != 3 {
		t.Fatalf("read back %s %s, want %s", back.Fingerprint(), back.Active().ID, ks.Fingerprint())
	}
	tok, _ := ks.Sign(testClaims())
	if _, err := back.Parse(tok); err != nil {
		t.Fatalf("token of the written set: %v", err)
	}
	if back.Key("2026-06").Private != nil || back.Key("2027-01").Private == nil {
		t.Fatal("private parts not kept as written")
	}
	// The published set has no private part.
	pub, _ := json.Marshal(ks.JWKS())
	if strings.Contains(string(pub), `"d"`) {
		t.Fatalf("jwks has a private part: %s", pub)
	}
	keys, err := ParseJWKS(pub)
	if err != nil || len(keys) != 3 {
		t.Fatalf("ParseJWKS: %v, %d keys", err, len(keys))
	}
	for _, k := range keys {
		if k.Private != nil || k.Thumbprint() != ks.Key(k.ID).Thumbprint() {
			t.Fatalf("key %s read back wrong", k.ID)
		}
	}
	// A new key changes the fingerprint.
	other, _ := NewKeySet("2026-12", active, next)
	if other.Fingerprint() == ks.Fingerprint() {
		t.Fatal("fingerprint ignores a key")
	}
}

func TestKeyFileErrors(t *testing.T) {
	k, _ := GenerateKey(EdDSA, "a")
	j, _ := json.Marshal(toJWK(k, true))
	pubOnly, _ := json.Marshal(toJWK(k, false))
	for name, doc := range map[string]string{
		"not json":        `{`,
		"active missing":  `{"active":"b","keys":[` + string(j) + `]}`,
		"active public":   `{"active":"a","keys":[` + string(pubOnly) + `]}`,
		"kid twice":       `{"active":"a","keys":[` + string(j) + `,` + string(j) + `]}`,
		"rsa":             `{"active":"a","keys":[{"kty":"RSA","kid":"a","n":"AQAB","e":"AQAB"}]}`,
		"bad x":           `{"active":"a","keys":[{"kty":"OKP","crv":"Ed25519","kid":"a","x":"AAAA"}]}`,
		"alg mismatch":    `{"active":"a","keys":[` + strings.Replace(string(j), `"alg":"EdDSA"`, `"alg":"ES256"`, 1) + `]}`,
		"point off curve": `{"active":"a","keys":[{"kty":"EC","crv":"P-256","kid":"a","x":"` + b64.EncodeToString(make([]byte, 32)) + `","y":"` + b64.EncodeToString(make([]byte, 32)) + `"}]}`,
		"no keys":         `{"active":"a","keys":[]}`,
		"quote in kid":    strings.Replace(`{"active":"a\"","keys":[`+string(j)+`]}`, `"kid":"a"`, `"kid":"a\""`, 1),
	} {
		if _, err := ParseKeySet([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDeriveKey(t *testing.T) {
	a, err := DeriveKey([]byte("test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DeriveKey([]byte("test-secret-0123456789abcdef"))
	c, _ := DeriveKey([]byte("another-secret-0123456789"))
	if a.ID != b.ID || a.Thumbprint() != b.Thumbprint() || a.Thumbprint() == c.Thumbprint() || !strings.HasPrefix(a.ID, "derived-") {
		t.Fatalf("derived keys: %s %s %s", a.ID, b.ID, c.ID)
	}
	if _, err := DeriveKey([]byte("short")); err == nil {
		t.Fatal("short secret accepted")
	}
}
