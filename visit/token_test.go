package visit

import (
	"net/url"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/queue"
)

// admitted is a visitor with its credential and a signed entry token for
// room.
func (f *fixture) admitted(room string) (id, cred, tok string) {
	id, cred = f.signer.NewVisitor()
	tok = f.signer.SignToken(visitorsig.Token{Room: room, Visitor: id, NotBefore: time.Now().Add(-time.Second), ExpiresAt: time.Now().Add(time.Minute)})
	return id, cred, tok
}

// The protected prefix takes a token signed for its room, sent with the
// credential it was issued to, once; a request that fails on the
// protected side gives it back.
func TestRequireToken(t *testing.T) {
	f := newFixture(t, nil)
	id, cred, tok := f.admitted("shop")
	_, otherCred, _ := f.admitted("shop")
	_, _, otherRoom := f.admitted("other")
	for _, tc := range []struct {
		name    string
		headers []string
		code    int
		want    string
	}{
		{"no token", []string{"X-Visitor", cred}, 401, "missing_token"},
		{"forged token", []string{"Authorization", "Bearer forged", "X-Visitor", cred}, 401, "invalid_token"},
		{"other room", []string{"Authorization", "Bearer " + otherRoom, "X-Visitor", cred}, 403, "wrong_room"},
		{"no credential", []string{"Authorization", "Bearer " + tok}, 401, "missing_visitor"},
		{"other visitor", []string{"Authorization", "Bearer " + tok, "X-Visitor", otherCred}, 403, "wrong_visitor"},
	} {
		if r := f.do("POST", "/api/v1/rooms/shop/orders", "", tc.headers...); r.Code != tc.code || r.errCode() != tc.want {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Code, r.Raw, tc.code, tc.want)
		}
	}
	if f.q.consumes != 0 {
		t.Fatalf("%d store calls for refused tokens", f.q.consumes)
	}
	auth := []string{"Authorization", "Bearer " + tok, "X-Visitor", cred}
	if r := f.do("POST", "/api/v1/rooms/shop/orders?fail=1", "", auth...); r.Code != 503 || len(f.q.restored) != 1 {
		t.Fatalf("failed request: %d %s, %d restored", r.Code, r.Raw, len(f.q.restored))
	}
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 200 || r.str("visitor") != id {
		t.Fatalf("the token given back: %d %s", r.Code, r.Raw)
	}
	// Used here: refused without asking the store.
	before := f.q.consumes
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 401 || r.errCode() != "token_used" || f.q.consumes != before {
		t.Fatalf("used again: %d %s", r.Code, r.Raw)
	}
}

// The store's verdicts on a token come back with their codes.
func TestTokenVerdicts(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{queue.ErrTokenExpired, 401, "token_expired"},
		{queue.ErrTokenUnknown, 401, "token_used"},
		{&queue.TooEarlyError{Wait: 1500 * time.Millisecond}, 425, "too_early"},
	} {
		f := newFixture(t, nil)
		_, cred, tok := f.admitted("shop")
		f.q.consume = tc.err
		r := f.do("POST", "/api/v1/rooms/shop/orders", "", "Authorization", "Bearer "+tok, "X-Visitor", cred)
		if r.Code != tc.code || r.errCode() != tc.want {
			t.Errorf("%v: %d %s, want %d %s", tc.err, r.Code, r.Raw, tc.code, tc.want)
		}
		if tc.code == 425 && r.Header.Get("Retry-After") != "2" {
			t.Errorf("too early: Retry-After %q, want 2", r.Header.Get("Retry-After"))
		}
	}
}

// While the store is down a room fails open at its rate, once per token,
// or closed.
func TestFailOpen(t *testing.T) {
	f := newFixture(t, nil)
	f.q.consume = errStoreDown
	_, cred, tok := f.admitted("shop")
	auth := []string{"Authorization", "Bearer " + tok, "X-Visitor", cred}
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 200 || r.Header.Get("X-Waitroom-Fail-Open") != "1" {
		t.Fatalf("fail open: %d %s %v", r.Code, r.Raw, r.Header)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 401 || r.errCode() != "token_used" {
		t.Fatalf("the same token again: %d %s", r.Code, r.Raw)
	}
	_, cred, tok = f.admitted("shop")
	auth = []string{"Authorization", "Bearer " + tok, "X-Visitor", cred}
	f.rooms.limited = true
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 503 || r.errCode() != "fail_open_limited" {
		t.Fatalf("over the fail-open rate: %d %s", r.Code, r.Raw)
	}
	f.rooms.failClosed = true
	if r := f.do("POST", "/api/v1/rooms/shop/orders", "", auth...); r.Code != 503 || r.errCode() != "unavailable" {
		t.Fatalf("fail closed: %d %s", r.Code, r.Raw)
	}
	want := map[string]int{"admitted": 1, "limited": 1, "closed": 1}
	for k, n := range want {
		if f.metrics.failOpen[k] != n {
			t.Errorf("fail-open %s counted %d, want %d (%v)", k, f.metrics.failOpen[k], n, f.metrics.failOpen)
		}
	}
}

// verify and touch check a token without using it up, and say whether
// the visitor was checked too.
func TestVerifyAndTouch(t *testing.T) {
	f := newFixture(t, nil)
	id, cred, tok := f.admitted("shop")
	for _, tc := range []struct{ body, want string }{
		{`{}`, "missing_field"},
		{`[]`, "invalid_json"},
		{`{"token":"forged"}`, "invalid_token"},
	} {
		if r := f.do("POST", "/api/v1/tokens/verify", tc.body); r.errCode() != tc.want {
			t.Errorf("verify %s: %d %s, want %s", tc.body, r.Code, r.Raw, tc.want)
		}
	}
	if r := f.do("POST", "/api/v1/tokens/verify", `{"token":"`+tok+`"}`); r.Code != 401 || r.errCode() != "missing_visitor" {
		t.Fatalf("verify without the visitor: %d %s", r.Code, r.Raw)
	}
	_, otherCred, _ := f.admitted("shop")
	if r := f.do("POST", "/api/v1/tokens/verify", `{"token":"`+tok+`","visitor":"`+otherCred+`","allowMissingVisitor":true}`); r.Code != 403 || r.errCode() != "wrong_visitor" {
		t.Fatalf("verify with another visitor: %d %s", r.Code, r.Raw)
	}
	r := f.do("POST", "/api/v1/tokens/verify", `{"token":"`+tok+`","allowMissingVisitor":true}`)
	if r.Code != 200 || r.Body["valid"] != true || r.Body["visitorChecked"] != false || r.str("visitor") != id {
		t.Fatalf("verify, opted out: %d %s", r.Code, r.Raw)
	}
	r = f.do("POST", "/api/v1/tokens/verify", `{"token":"`+tok+`","visitor":"`+cred+`"}`)
	if r.Code != 200 || r.Body["visitorChecked"] != true {
		t.Fatalf("verify with the visitor: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/touch", "", "Cookie", TokenCookie+"="+url.QueryEscape(tok)+"; "+VisitorCookie+"="+url.QueryEscape(cred)); r.Code != 200 || r.Body["visitorChecked"] != true {
		t.Fatalf("touch: %d %s", r.Code, r.Raw)
	}
	f.q.consume = errStoreDown
	if r := f.do("POST", "/api/v1/tokens/verify", `{"token":"`+tok+`","visitor":"`+cred+`"}`); r.Code != 503 || r.errCode() != "unavailable" {
		t.Fatalf("verify with the store down: %d %s", r.Code, r.Raw)
	}
	if len(f.q.restored) != 0 {
		t.Fatal("verify gave a token back")
	}
}
