package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/entry"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

const testServiceKey = "service-key-0123456789"

// withServiceKeys gives the server a -service-keys file with
// testServiceKey.
func withServiceKeys(t *testing.T, more func(*config)) func(*config) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "service-keys.yaml")
	if err := os.WriteFile(path, []byte("shop: "+testServiceKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *config) {
		c.Entry.ServiceKeysFile = path
		if more != nil {
			more(c)
		}
	}
}

// consumeAs calls the consume endpoint with key (none when empty).
func consumeAs(v *visitor, key, body string) reply {
	v.tb.Helper()
	hdr := []string{"Content-Type", "application/json"}
	if key != "" {
		hdr = append(hdr, "Authorization", "Bearer "+key)
	}
	return v.do("POST", "/api/v1/tokens/consume", body, hdr...)
}

// admittedToken joins a visitor to room, admits it and waits for its
// notBefore.
func admittedToken(t *testing.T, ts *testServer, room string) (*visitor, string) {
	t.Helper()
	v := newVisitor(t, ts.URL)
	v.join(room)
	st := ts.admitUntil(t, v, room)
	nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
	waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
	return v, st.str("token")
}

// TestConsumeOnceAcrossInstances races 50 consumes of one token through 3
// instances sharing Redis: exactly one is the first use.
func TestConsumeOnceAcrossInstances(t *testing.T) {
	eachRedis(t, func(t *testing.T, srv *redistest.Server, client string) {
		mut := withServiceKeys(t, nil)
		fleet := []*testServer{startServer(t, srv, client, mut), startServer(t, srv, client, mut), startServer(t, srv, client, mut)}
		vis, tok := admittedToken(t, fleet[0], "drop")
		body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, vis.cred)
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 50}}
		defer hc.CloseIdleConnections()
		codes := make([]int, 50)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", fleet[i%3].URL+"/api/v1/tokens/consume", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testServiceKey)
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				codes[i] = resp.StatusCode
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, c := range codes {
			count[c]++
		}
		if count[200] != 1 || count[409] != 49 {
			t.Fatalf("answers %v, want one 200 and 49 409", count)
		}
	})
}

func TestConsume(t *testing.T) {
	eachServer(t, withServiceKeys(t, func(c *config) {
		c.Capacity.Batch, c.Capacity.Tick = 1, 2*time.Second
		c.TokenTTL = time.Second
		c.AdminKey = testAdminKey
	}), func(t *testing.T, ts *testServer) {
		v := newVisitor(t, ts.URL)
		v.join("drop")
		st := ts.admitUntil(t, v, "drop")
		tok := st.str("token")
		body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, v.cred)
		// The long tick puts notBefore ahead: 425 with the wait.
		if r := consumeAs(v, testServiceKey, body); r.Code != 425 || r.errCode() != "too_early" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("before notBefore: %d %s", r.Code, r.Raw)
		}
		nb, _ := time.Parse(time.RFC3339Nano, st.str("notBefore"))
		waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
		other := newVisitor(t, ts.URL)
		other.join("drop")
		for name, tc := range map[string]struct {
			key, body, code string
			status          int
		}{
			"no key":        {"", body, "invalid_service_key", 401},
			"admin key":     {testAdminKey, body, "invalid_service_key", 401},
			"wrong key":     {"service-key-9999999999", body, "invalid_service_key", 401},
			"not json":      {testServiceKey, `[1]`, "invalid_json", 400},
			"no token":      {testServiceKey, `{}`, "missing_field", 400},
			"wrong room":    {testServiceKey, fmt.Sprintf(`{"token":%q,"room":"other"}`, tok), "wrong_room", 403},
			"wrong visitor": {testServiceKey, fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, other.cred), "wrong_visitor", 403},
			"no visitor":    {testServiceKey, fmt.Sprintf(`{"token":%q}`, tok), "missing_visitor", 401},
		} {
			if r := consumeAs(v, tc.key, tc.body); r.Code != tc.status || r.errCode() != tc.code {
				t.Errorf("%s: %d %s, want %d %s", name, r.Code, r.Raw, tc.status, tc.code)
			}
		}
		r := consumeAs(v, testServiceKey, body)
		if r.Code != 200 || r.Body["consumed"] != true || r.str("room") != "drop" || r.str("visitor") == "" || r.str("jti") == "" {
			t.Fatalf("first use: %d %s", r.Code, r.Raw)
		}
		if r := consumeAs(v, testServiceKey, body); r.Code != 409 || r.errCode() != "token_used" {
			t.Fatalf("second use: %d %s", r.Code, r.Raw)
		}
		if r := v.status("drop"); r.str("status") != "not_in_queue" {
			t.Fatalf("status after consume: %s", r.Raw)
		}
		// The other visitor's token expires unused (idle 1 s): 410.
		ost := ts.admitUntil(t, other, "drop")
		exp, _ := time.Parse(time.RFC3339Nano, ost.str("expiresAt"))
		waitfor.Until(t, 10*time.Second, "expiry", func() bool { return time.Now().After(exp.Add(10 * time.Millisecond)) })
		if r := consumeAs(v, testServiceKey, fmt.Sprintf(`{"token":%q,"visitor":%q}`, ost.str("token"), other.cred)); r.Code != 410 || r.errCode() != "token_expired" {
			t.Fatalf("expired: %d %s", r.Code, r.Raw)
		}
	})
}

// TestConsumeBadTokens sends every kind of bad token: each is 401
// invalid_token, with a message saying what is wrong.
func TestConsumeBadTokens(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withServiceKeys(t, nil))
	holder, tok := admittedToken(t, ts, "drop")
	p := strings.Split(tok, ".")
	head := func(h string) string { return base64.RawURLEncoding.EncodeToString([]byte(h)) }
	kid := ts.tokens.Keys().Active().ID
	pub := ts.tokens.Keys().Active().Public.(ed25519.PublicKey)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"aud": "drop", "sub": "v", "iss": ts.tokens.Issuer(), "exp": time.Now().Add(time.Minute).Unix()})
	hs.Header["kid"] = kid
	hsTok, err := hs.SignedString([]byte(pub))
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := entry.GenerateKey(entry.EdDSA, "unpublished")
	strangerSet, _ := entry.NewKeySet("unpublished", stranger)
	tk, _ := ts.parseToken(tok)
	strangerTok, _ := strangerSet.Sign(entry.Claims{Issuer: ts.tokens.Issuer(), Room: "drop", Visitor: tk.Visitor, NotBefore: tk.NotBefore, ExpiresAt: tk.ExpiresAt})
	v := newVisitor(t, ts.URL)
	seen := map[string]string{}
	for name, bad := range map[string]string{
		"malformed":                           "abc.def",
		"unknown kid":                         head(`{"alg":"EdDSA","kid":"nope"}`) + "." + p[1] + "." + p[2],
		"unpublished key":                     strangerTok,
		"alg none":                            head(`{"alg":"none","kid":"`+kid+`"}`) + "." + p[1] + ".",
		"HS256 with the public key as secret": hsTok,
		"tampered":                            forgeClaim(t, tok, `"aud":"drop"`, `"aud":"dros"`),
		"huge":                                tok + strings.Repeat("A", entry.MaxTokenSize),
	} {
		r := consumeAs(v, testServiceKey, fmt.Sprintf(`{"token":%q}`, bad))
		e, _ := r.Body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if r.Code != 401 || r.errCode() != "invalid_token" || msg == "" {
			t.Errorf("%s: %d %s", name, r.Code, r.Raw)
		}
		seen[name] = msg
	}
	if seen["huge"] == seen["alg none"] || seen["alg none"] == seen["unknown kid"] || seen["tampered"] == seen["malformed"] {
		t.Errorf("messages do not tell the failures apart: %v", seen)
	}
	// The token itself is still good after all that.
	if r := consumeAs(v, testServiceKey, fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, holder.cred)); r.Code != 200 {
		t.Fatalf("good token: %d %s", r.Code, r.Raw)
	}
}

// A service key ends a visitor's gateway session (audited under its
// label) and may call nothing else of the admin API; a wrong key is
// refused as any other non-admin key.
func TestServiceKeyEndsSession(t *testing.T) {
	ts, session, _ := gatewayServer(t, redistest.StartReal(t), withServiceKeys(t, withAdmin))
	sess, err := ts.gw.Sessions().Parse(session)
	if err != nil {
		t.Fatal(err)
	}
	v := newVisitor(t, ts.URL)
	as := func(key, method, path string) reply {
		return v.do(method, "/api/v1/admin"+path, "", "Authorization", "Bearer "+key)
	}
	for _, path := range []string{"/rooms", "/rooms/gw", "/audit", "/whoami"} {
		if r := as(testServiceKey, "GET", path); r.Code != 403 || r.errCode() != "service_key_scope" {
			t.Fatalf("service key on GET %s: %d %s", path, r.Code, r.Raw)
		}
	}
	if r := as(testServiceKey, "POST", "/rooms/gw/pause"); r.Code != 403 || r.errCode() != "service_key_scope" {
		t.Fatalf("service key pauses: %d %s", r.Code, r.Raw)
	}
	if r := as("service-key-wrong-0000000", "DELETE", "/rooms/gw/sessions/"+sess.Visitor); r.Code != 401 || r.errCode() != "invalid_admin_key" {
		t.Fatalf("wrong key: %d %s", r.Code, r.Raw)
	}
	if r := as(testServiceKey, "DELETE", "/rooms/gw/sessions/"+sess.Visitor); r.Code != 204 {
		t.Fatalf("service end: %d %s", r.Code, r.Raw)
	}
	if r := as(testServiceKey, "DELETE", "/rooms/gw/sessions/"+sess.Visitor); r.Code != 404 || r.errCode() != "session_not_found" {
		t.Fatalf("second end: %d %s", r.Code, r.Raw)
	}
	resp, _ := checkReq(t, "GET", ts.URL+"/api/v1/check", map[string]string{"X-Forwarded-Host": "shop.example.com",
		"X-Forwarded-Uri": "/checkout/a", "Cookie": "wr_session_gw=" + session, "Accept": "text/html"})
	if resp.StatusCode != 302 {
		t.Fatalf("check after the service ended the session: %d", resp.StatusCode)
	}
	audit := v.admin("GET", "/rooms/gw/audit", "")
	if audit.Code != 200 || !strings.Contains(audit.Raw, `"who":"service:shop"`) || !strings.Contains(audit.Raw, `"end-session"`) {
		t.Fatalf("audit: %d %s", audit.Code, audit.Raw)
	}
}
