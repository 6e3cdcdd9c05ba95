package entry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// jwksServer serves a key set that the test may replace, and counts
// fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	set     *KeySet
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, ks *KeySet) *jwksServer {
	t.Helper()
	js := &jwksServer{set: ks}
	js.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		js.fetches.Add(1)
		js.mu.Lock()
		h := JWKSHandler(js.set, time.Hour)
		js.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(js.Close)
	return js
}

func (js *jwksServer) publish(ks *KeySet) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.set = ks
}

// clock is a settable time for the verifier's rate limits.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestVerifierRotation(t *testing.T) {
	old, _ := GenerateKey(EdDSA, "old")
	next, _ := GenerateKey(ES256, "next")
	before, _ := NewKeySet("old", old)
	js := newJWKSServer(t, before)
	clk := &clock{now: time.Now()}
	v, err := NewVerifier(js.URL, &VerifierOptions{Rooms: []string{"drop"}, Issuer: "https://queue.example", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := testClaims()
	tokOld, _ := before.Sign(c)
	if _, err := v.Verify(ctx, tokOld); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(ctx, tokOld); err != nil || js.fetches.Load() != 1 {
		t.Fatalf("second verify: %v after %d fetches, want 1 (cached for max-age)", err, js.fetches.Load())
	}
	// Rotation, step 1: the next key is published, the old one signs.
	both, _ := NewKeySet("old", old, next)
	js.publish(both)
	// Step 2: the next key signs. The verifier has not seen it: an unknown
	// kid fetches again (once MinRefresh has passed since the last fetch).
	clk.add(11 * time.Second)
	signing, _ := NewKeySet("next", old, next)
	tokNext, _ := signing.Sign(c)
	if _, err := v.Verify(ctx, tokNext); err != nil || js.fetches.Load() != 2 {
		t.Fatalf("token of the new key: %v after %d fetches", err, js.fetches.Load())
	}
	if _, err := v.Verify(ctx, tokOld); err != nil {
		t.Fatalf("old key's token while it is still published: %v", err)
	}
	// Unknown kids do not drive fetches faster than MinRefresh.
	stranger := testSet(t, EdDSA)
	stranger.keys[0].ID, stranger.active.ID = "stranger", "stranger"
	tokStranger, _ := stranger.Sign(c)
	for range 5 {
		if _, err := v.Verify(ctx, tokStranger); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("unpublished key: %v", err)
		}
	}
	if n := js.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches for unknown kids within MinRefresh, want none", n-2)
	}
	clk.add(11 * time.Second)
	v.Verify(ctx, tokStranger)
	if n := js.fetches.Load(); n != 3 {
		t.Fatalf("%d fetches after MinRefresh, want one more", n-2)
	}
	// Step 3: the old key is retired: its tokens are refused after the
	// next fetch.
	after, _ := NewKeySet("next", next)
	js.publish(after)
	clk.add(2 * time.Hour)
	if _, err := v.Verify(ctx, tokOld); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("retired key's token: %v", err)
	}
}

func TestVerifierChecks(t *testing.T) {
	ks := testSet(t, EdDSA)
	v, err := NewVerifier("", &VerifierOptions{Keys: ks.Keys(), Rooms: []string{"drop"}, Issuer: "https://queue.example"})
	if err != nil {
		t.Fatal(err)
	}
	c := testClaims()
	other := c
	other.Room = "other"
	early := c
	early.NotBefore = time.Now().Add(time.Minute)
	expired := c
	expired.ExpiresAt = time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		c    Claims
		want error
	}{
		{"good", c, nil},
		{"other room", other, ErrWrongAudience},
		{"early", early, ErrNotYetValid},
		{"expired", expired, ErrExpired},
	} {
		tok, _ := ks.Sign(tc.c)
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := NewVerifier("file:///etc/keys", nil); err == nil {
		t.Error("a non-http jwks URL accepted")
	}
}

func TestVerifierUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	v, _ := NewVerifier(srv.URL, nil)
	tok, _ := testSet(t, EdDSA).Sign(testClaims())
	_, err := v.Verify(context.Background(), tok)
	if err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("Verify with no key set: %v, want a fetch error that is not ErrInvalid", err)
	}
	rec := httptest.NewRecorder()
	WriteError(rec, err)
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"unavailable"`) {
		t.Fatalf("written as %d %s", rec.Code, rec.Body)
	}
}

func TestMiddleware(t *testing.T) {
	ks := testSet(t, EdDSA)
	v, _ := NewVerifier("", &VerifierOptions{Keys: ks.Keys(), Rooms: []string{"drop"}})
	var spent sync.Map
	var calls atomic.Int32
	// A stand-in for the server's consume endpoint (the server package
	// tests the real one): the first use of a token wins, and a token
	// comes with its visitor's credential unless the caller opts out.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != ConsumePath || r.Header.Get("Authorization") != "Bearer svc-key-0123456789" {
			WriteError(w, &APIError{Status: 401, Code: "invalid_service_key", Message: "no"})
			return
		}
		var req struct {
			Token, Visitor      string
			AllowMissingVisitor bool
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Visitor == "" && !req.AllowMissingVisitor {
			WriteError(w, &APIError{Status: 401, Code: "missing_visitor", Message: "no visitor"})
			return
		}
		if _, dup := spent.LoadOrStore(req.Token, true); dup {
			WriteError(w, &APIError{Status: 409, Code: "token_used", Message: "used"})
			return
		}
		w.Write([]byte(`{"consumed":true,"room":"drop","visitor":"vis-1"}`))
	}))
	defer api.Close()
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := FromContext(r.Context())
		if !ok {
			t.Error("no claims in the context")
		}
		w.Write([]byte("hello " + c.Visitor))
	})
	consumer := NewConsumer(api.URL, "svc-key-0123456789", api.Client())
	h := v.Middleware(app, &MiddlewareOptions{Consumer: consumer})
	tok, _ := ks.Sign(testClaims())
	const cred = "vis-1.c2lnbmVk" // the visitor's credential: its id, then what the server signed
	call := func(h http.Handler, header, value, visitor string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/buy", nil)
		if header == "Cookie" {
			req.AddCookie(&http.Cookie{Name: TokenCookie, Value: value})
			if visitor != "" {
				req.AddCookie(&http.Cookie{Name: VisitorCookie, Value: visitor})
			}
		} else {
			if header != "" {
				req.Header.Set(header, value)
			}
			if visitor != "" {
				req.Header.Set("X-Visitor", visitor)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if r := call(h, "Authorization", "Bearer "+tok, ""); r.Code != 401 || !strings.Contains(r.Body.String(), `"missing_visitor"`) {
		t.Fatalf("no visitor: %d %s", r.Code, r.Body)
	}
	if r := call(h, "Authorization", "Bearer "+tok, "vis-2.c2lnbmVk"); r.Code != 403 || !strings.Contains(r.Body.String(), `"wrong_visitor"`) {
		t.Fatalf("another visitor: %d %s", r.Code, r.Body)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d consume calls for requests refused here", n)
	}
	if r := call(h, "Authorization", "Bearer "+tok, cred); r.Code != 200 || r.Body.String() != "hello vis-1" {
		t.Fatalf("first use: %d %s", r.Code, r.Body)
	}
	if r := call(h, "Cookie", tok, cred); r.Code != 409 || !strings.Contains(r.Body.String(), `"token_used"`) {
		t.Fatalf("second use: %d %s", r.Code, r.Body)
	}
	if r := call(h, "", "", cred); r.Code != 401 || !strings.Contains(r.Body.String(), `"missing_token"`) {
		t.Fatalf("no token: %d %s", r.Code, r.Body)
	}
	if r := call(h, "Authorization", "Bearer abc", cred); r.Code != 401 || !strings.Contains(r.Body.String(), `"invalid_token"`) {
		t.Fatalf("garbage: %d %s", r.Code, r.Body)
	}
	other := testClaims()
	other.Room = "other"
	otherTok, _ := ks.Sign(other)
	if r := call(h, "Authorization", "Bearer "+otherTok, cred); r.Code != 403 || !strings.Contains(r.Body.String(), `"wrong_room"`) {
		t.Fatalf("other room: %d %s", r.Code, r.Body)
	}
	// Opted out: a token alone passes, spent once; another visitor's
	// credential is still refused.
	loose := v.Middleware(app, &MiddlewareOptions{Consumer: consumer, AllowMissingVisitor: true})
	c3 := testClaims()
	c3.ID = "another-admission"
	tok3, _ := ks.Sign(c3)
	if r := call(loose, "Authorization", "Bearer "+tok3, "vis-2.c2lnbmVk"); r.Code != 403 || !strings.Contains(r.Body.String(), `"wrong_visitor"`) {
		t.Fatalf("opted out, another visitor: %d %s", r.Code, r.Body)
	}
	if r := call(loose, "Authorization", "Bearer "+tok3, ""); r.Code != 200 {
		t.Fatalf("opted out, no visitor: %d %s", r.Code, r.Body)
	}
	if r := call(loose, "Authorization", "Bearer "+tok3, ""); r.Code != 409 {
		t.Fatalf("opted out, again: %d %s", r.Code, r.Body)
	}
	// Offline only, the credential is required as well.
	offline := v.Middleware(app, nil)
	if r := call(offline, "Authorization", "Bearer "+tok, ""); r.Code != 401 || !strings.Contains(r.Body.String(), `"missing_visitor"`) {
		t.Fatalf("offline, no visitor: %d %s", r.Code, r.Body)
	}
	if r := call(offline, "Authorization", "Bearer "+tok, cred); r.Code != 200 {
		t.Fatalf("offline with the visitor: %d %s", r.Code, r.Body)
	}
	bad := v.Middleware(app, &MiddlewareOptions{Consumer: NewConsumer(api.URL, "wrong", api.Client())})
	tok2c := testClaims()
	tok2c.Visitor = "vis-2"
	tok2, _ := ks.Sign(tok2c)
	if r := call(bad, "Authorization", "Bearer "+tok2, "vis-2.c2lnbmVk"); r.Code != 401 || !strings.Contains(r.Body.String(), `"invalid_service_key"`) {
		t.Fatalf("wrong service key: %d %s", r.Code, r.Body)
	}
}
