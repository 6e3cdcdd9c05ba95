package entry

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func testSet(t testing.TB, alg string) *KeySet {
	t.Helper()
	k, err := GenerateKey(alg, "k1")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := NewKeySet("k1", k)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func testClaims() Claims {
	nb := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	return Claims{Issuer: "https://queue.example", Room: "drop", Visitor: "vis-1", NotBefore: nb,
		ExpiresAt: nb.Add(15 * time.Minute).Truncate(time.Second), IdleExpiresAt: nb.Add(5 * time.Minute)}
}

func TestSignParse(t *testing.T) {
	for _, alg := range []string{EdDSA, ES256} {
		t.Run(alg, func(t *testing.T) {
			ks := testSet(t, alg)
			c := testClaims()
			tok, err := ks.Sign(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ks.Parse(tok)
			if err != nil {
				t.Fatal(err)
			}
			if got.Room != c.Room || got.Visitor != c.Visitor || got.Issuer != c.Issuer || !got.NotBefore.Equal(c.NotBefore) ||
				!got.ExpiresAt.Equal(c.ExpiresAt) || !got.IdleExpiresAt.Equal(c.IdleExpiresAt) || got.ID != AdmissionID("drop", "vis-1", c.NotBefore) {
				t.Fatalf("got %+v, want %+v", got, c)
			}
			if err := got.Check(time.Now(), c.Issuer, []string{"drop"}, 0); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				name   string
				now    time.Time
				iss    string
				rooms  []string
				leeway time.Duration
				want   error
			}{
				{"other room", time.Now(), "", []string{"other"}, 0, ErrWrongAudience},
				{"other issuer", time.Now(), "https://else", nil, 0, ErrWrongIssuer},
				{"before nbf", c.NotBefore.Add(-time.Millisecond), "", nil, 0, ErrNotYetValid},
				{"at exp", c.ExpiresAt, "", nil, 0, ErrExpired},
			} {
				if err := got.Check(tc.now, tc.iss, tc.rooms, tc.leeway); !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalid) {
					t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
				}
			}
			if err := got.Check(c.NotBefore.Add(-time.Second), "", nil, 2*time.Second); err != nil {
				t.Errorf("inside leeway: %v", err)
			}
		})
	}
}

// TestStockLibrary checks tokens with golang-jwt, which knows nothing of
// this package: signature, aud, iss, nbf and exp as any JWT library reads
// them, and the private claims as plain numbers.
func TestStockLibrary(t *testing.T) {
	for _, alg := range []string{EdDSA, ES256} {
		t.Run(alg, func(t *testing.T) {
			ks := testSet(t, alg)
			c := testClaims()
			tok, _ := ks.Sign(c)
			keyFunc := func(tk *jwt.Token) (any, error) {
				if k := ks.Key(tk.Header["kid"].(string)); k != nil {
					return k.Public, nil
				}
				return nil, errors.New("unknown kid")
			}
			p := jwt.NewParser(jwt.WithValidMethods([]string{alg}), jwt.WithAudience("drop"), jwt.WithIssuer(c.Issuer), jwt.WithExpirationRequired())
			var mc jwt.MapClaims
			parsed, err := p.ParseWithClaims(tok, &mc, keyFunc)
			if err != nil || !parsed.Valid {
				t.Fatalf("stock parse: %v", err)
			}
			if mc["sub"] != "vis-1" || mc["jti"] != c.ID && mc["jti"] != AdmissionID("drop", "vis-1", c.NotBefore) || int64(mc["wr_nbf_ms"].(float64)) != c.NotBefore.UnixMilli() {
				t.Fatalf("claims %v", mc)
			}
			if _, err := jwt.NewParser(jwt.WithValidMethods([]string{alg}), jwt.WithAudience("other")).Parse(tok, keyFunc); err == nil {
				t.Fatal("another room's verifier accepted the token")
			}
			if _, err := p.Parse(forge(t, tok, `"aud":"drop"`, `"aud":"dros"`), keyFunc); err == nil {
				t.Fatal("tampered token accepted")
			}
			// And the other way: a token golang-jwt signs with the same key
			// parses here.
			var method jwt.SigningMethod = jwt.SigningMethodEdDSA
			if alg == ES256 {
				method = jwt.SigningMethodES256
			}
			st := jwt.NewWithClaims(method, jwt.MapClaims{"aud": "drop", "sub": "v", "exp": time.Now().Add(time.Minute).Unix(), "nbf": time.Now().Unix()})
			st.Header["kid"] = "k1"
			raw, err := st.SignedString(ks.Active().Private)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ks.Parse(raw); err != nil {
				t.Fatalf("stock-signed token: %v", err)
			}
		})
	}
}

func forge(t *testing.T, tok, old, new string) string {
	t.Helper()
	p := strings.Split(tok, ".")
	body, _ := b64.DecodeString(p[1])
	if !strings.Contains(string(body), old) {
		t.Fatalf("%s lacks %s", body, old)
	}
	p[1] = b64.EncodeToString([]byte(strings.Replace(string(body), old, new, 1)))
	return strings.Join(p, ".")
}

func TestBadTokens(t *testing.T) {
	ks := testSet(t, EdDSA)
	good, _ := ks.Sign(testClaims())
	p := strings.Split(good, ".")
	head := func(h string) string { return b64.EncodeToString([]byte(h)) }
	pub := ks.Active().Public.(ed25519.PublicKey)

	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"aud": "drop", "sub": "v", "exp": time.Now().Add(time.Minute).Unix()})
	hs.Header["kid"] = "k1"
	hsTok, _ := hs.SignedString([]byte(pub)) // the public key as an HMAC secret
	jwkJSON, _ := json.Marshal(toJWK(ks.Active(), false))
	hsJWK := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"aud": "drop", "sub": "v", "exp": time.Now().Add(time.Minute).Unix()})
	hsJWK.Header["kid"] = "k1"
	hsJWKTok, _ := hsJWK.SignedString(jwkJSON)

	other := testSet(t, EdDSA) // another key under the same kid
	otherTok, _ := other.Sign(testClaims())
	es := testSet(t, ES256)
	esTok, _ := es.Sign(testClaims()) // ES256 with kid k1, which is EdDSA here

	for _, tc := range []struct {
		name, tok string
		want      error
	}{
		{"empty", "", ErrMalformed},
		{"two parts", p[0] + "." + p[1], ErrMalformed},
		{"four parts", good + ".x", ErrMalformed},
		{"not base64", "!!." + p[1] + "." + p[2], ErrMalformed},
		{"header not json", head("nope") + "." + p[1] + "." + p[2], ErrMalformed},
		{"alg none", head(`{"alg":"none","kid":"k1"}`) + "." + p[1] + ".", ErrAlgorithm},
		{"alg none, no kid", head(`{"alg":"none"}`) + "." + p[1] + ".", ErrAlgorithm},
		{"HS256 with the public key as secret", hsTok, ErrAlgorithm},
		{"HS256 with the JWK as secret", hsJWKTok, ErrAlgorithm},
		{"unknown kid", head(`{"alg":"EdDSA","kid":"k9"}`) + "." + p[1] + "." + p[2], ErrUnknownKey},
		{"no kid", head(`{"alg":"EdDSA"}`) + "." + p[1] + "." + p[2], ErrUnknownKey},
		{"ES256 header on an EdDSA key", esTok, ErrAlgorithm},
		{"crit header", head(`{"alg":"EdDSA","kid":"k1","crit":["exp"]}`) + "." + p[1] + "." + p[2], ErrMalformed},
		{"tampered payload", forge(t, good, `"aud":"drop"`, `"aud":"dros"`), ErrSignature},
		{"other key, same kid", otherTok, ErrSignature},
		{"truncated signature", good[:len(good)-3], ErrInvalid},
		{"signature of another length", good[:len(good)-4], ErrInvalid},
		{"huge", good + strings.Repeat("A", MaxTokenSize), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ks.Parse(tc.tok); !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse = %v, want %v", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	ks := testSet(f, EdDSA)
	good, _ := ks.Sign(testClaims())
	f.Add(good)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := ks.Parse(tok)
		if err == nil && tok != good && (c.Room == "" || c.Visitor == "") {
			t.Fatalf("accepted %q as %+v", tok, c)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		}
	})
}

func BenchmarkSign(b *testing.B) {
	for _, alg := range []string{EdDSA, ES256} {
		b.Run(alg, func(b *testing.B) {
			ks := testSet(b, alg)
			c := testClaims()
			for b.Loop() {
				if _, err := ks.Sign(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range []string{EdDSA, ES256} {
		b.Run(alg, func(b *testing.B) {
			ks := testSet(b, alg)
			tok, _ := ks.Sign(testClaims())
			for b.Loop() {
				if _, err := ks.Parse(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
