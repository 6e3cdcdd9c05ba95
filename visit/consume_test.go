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
	_, _, tok := f.admitted("shop")
	body := fmt.Sprintf(`{"token":%q}`, tok)
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 200 || r.Header.Get("X-Waitroom-Fail-Open") != "1" || r.Body["consumed"] != true {
		t.Fatalf("fail open: %d %s %v", r.Code, r.Raw, r.Header)
	}
	if r := f.do("POST", "/api/v1/tokens/consume", body, auth...); r.Code != 409 || r.errCode() != "token_used" {
		t.Fatalf("the same token again: %d %s", r.Code, r.Raw)
	}
	_, _, tok = f.admitted("shop")
	body = fmt.Sprintf(`{"token":%q}`, tok)
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
