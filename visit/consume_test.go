package visit

import (
	"fmt"
	"testing"
)

func TestConsumeServiceKey(t *testing.T) {
	f := newFixture(t, nil)
	_, _, tok := f.admitted("shop")
	body := fmt.Sprintf(`{"token":%q}`, tok)
	for name, hdr := range map[string][]string{
		"none":  nil,
		"wrong": {"Authorization", "Bearer service-key-9999999999"},
		"basic": {"Authorization", "Basic " + testServiceKey},
	} {
		if r := f.do("POST", "/api/v1/tokens/consume", body, hdr...); r.Code != 401 || r.errCode() != "invalid_service_key" {
			t.Errorf("%s: %d %s", name, r.Code, r.Raw)
		}
	}
	if f.q.consumes != 0 {
		t.Fatalf("%d store calls without a service key", f.q.consumes)
	}
}

// While the store is unreachable, consume follows the room's fail mode as
// the protected prefix does, and a token it spent stays spent here.
func TestConsumeFailOpen(t *testing.T) {
	f := newFixture(t, nil)
	f.q.consume = errStoreDown
	auth := []string{"Authorization", "Bearer " + testServiceKey}
	_, cred, tok := f.admitted("shop")
	body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, cred)
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 200 || r.Header.Get("X-Waitroom-Fail-Open") != "1" || r.Body["consumed"] != true {
		t.Fatalf("fail open: %d %s %v", r.Code, r.Raw, r.Header)
	}
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 409 || r.errCode() != "token_used" {
		t.Fatalf("the same token again: %d %s", r.Code, r.Raw)
	}
	_, cred, tok = f.admitted("shop")
	body = fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, cred)
	f.rooms.limited = true
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 503 || r.errCode() != "fail_open_limited" {
		t.Fatalf("over the fail-open rate: %d %s", r.Code, r.Raw)
	}
	f.rooms.failClosed = true
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 503 || r.errCode() != "unavailable" {
		t.Fatalf("fail closed: %d %s", r.Code, r.Raw)
	}
	f.q.consume = nil
	f.rooms.failClosed, f.rooms.limited = false, false
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 200 {
		t.Fatalf("store back: %d %s", r.Code, r.Raw)
	}
}

// A token is spent only with the credential of the visitor it was issued
// to, unless the service says it cannot forward one; another visitor's is
// refused either way.
func TestConsumeVisitor(t *testing.T) {
	f := newFixture(t, nil)
	auth := []string{"Authorization", "Bearer " + testServiceKey}
	id, cred, tok := f.admitted("shop")
	_, otherCred, _ := f.admitted("shop")
	for _, tc := range []struct {
		name, body, code string
		status           int
	}{
		{"no visitor", fmt.Sprintf(`{"token":%q}`, tok), "missing_visitor", 401},
		{"empty visitor", fmt.Sprintf(`{"token":%q,"visitor":""}`, tok), "missing_visitor", 401},
		{"other visitor", fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, otherCred), "wrong_visitor", 403},
		{"other visitor, opted out", fmt.Sprintf(`{"token":%q,"visitor":%q,"allowMissingVisitor":true}`, tok, otherCred), "wrong_visitor", 403},
		{"forged visitor", fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, id+".forged"), "invalid_visitor", 401},
	} {
		if r := f.do("POST", "/api/v1/tokens/consume", tc.body, auth...); r.Code != tc.status || r.errCode() != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Code, r.Raw, tc.status, tc.code)
		}
	}
	if f.q.consumes != 0 {
		t.Fatalf("%d store calls for refused visitors", f.q.consumes)
	}
	if r := f.do("POST", "/api/v1/tokens/consume", fmt.Sprintf(`{"token":%q,"visitor":%q}`, tok, cred), auth...); r.Code != 200 || r.str("visitor") != id {
		t.Fatalf("with its visitor: %d %s", r.Code, r.Raw)
	}
	_, _, tok = f.admitted("shop")
	if r := f.do("POST", "/api/v1/tokens/consume", fmt.Sprintf(`{"token":%q,"allowMissingVisitor":true}`, tok), auth...); r.Code != 200 {
		t.Fatalf("opted out: %d %s", r.Code, r.Raw)
	}
}
