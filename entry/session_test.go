package entry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSessionIsNoEntryToken signs an edge session with each algorithm and
// checks that it carries its own typ and audience, the credential's hash,
// and that Parse, the entry tokens' reader, refuses it.
func TestSessionIsNoEntryToken(t *testing.T) {
	for _, alg := range []string{EdDSA, ES256} {
		k, err := GenerateKey(alg, "k-"+alg)
		if err != nil {
			t.Fatal(err)
		}
		ks, err := NewKeySet(k.ID, k)
		if err != nil {
			t.Fatal(err)
		}
		nb := time.UnixMilli(1_800_000_000_123)
		raw, err := ks.SignSession(Session{Issuer: "https://wr.example", Room: "drop", Visitor: "v1", NotBefore: nb,
			ExpiresAt: nb.Add(90*time.Second + 800*time.Millisecond), Credential: "cred"})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(raw, ".")
		if len(parts) != 3 {
			t.Fatalf("%s: %d parts", alg, len(parts))
		}
		var h struct{ Alg, Kid, Typ string }
		var p map[string]any
		hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
		pb, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if json.Unmarshal(hb, &h) != nil || json.Unmarshal(pb, &p) != nil {
			t.Fatalf("%s: %s %s", alg, hb, pb)
		}
		if h.Typ != SessionType || h.Alg != alg || h.Kid != k.ID {
			t.Errorf("%s: header %+v", alg, h)
		}
		want := map[string]any{"aud": SessionAudience, "sub": "v1", "wr_room": "drop", "iss": "https://wr.example",
			"nbf": float64(1_800_000_000), "wr_nbf_ms": float64(1_800_000_000_123), "exp": float64(1_800_000_090),
			"wr_cred": CredentialHash("cred")}
		for key, v := range want {
			if p[key] != v {
				t.Errorf("%s: %s = %v, want %v", alg, key, p[key], v)
			}
		}
		if CredentialHash("cred") == CredentialHash("cred2") || len(CredentialHash("cred")) != 22 {
			t.Errorf("hash %q", CredentialHash("cred"))
		}
		if _, err := Parse(raw, ks.Key); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Parse took an edge session for an entry token: %v", alg, err)
		}
	}
}
