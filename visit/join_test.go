package visit

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/queue"
)

// A join without a credential makes a visitor, hands its credential back
// in the body and a cookie, and a join with it keeps the same visitor.
func TestJoinNewAndAgain(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do("POST", "/api/v1/rooms/shop/join", "")
	cred := r.str("visitor")
	if r.Code != 200 || r.str("status") != "waiting" || cred == "" {
		t.Fatalf("join: %d %s", r.Code, r.Raw)
	}
	if sc := r.Header.Get("Set-Cookie"); !strings.Contains(sc, VisitorCookie+"=") || !strings.Contains(strings.ToLower(sc), "httponly") {
		t.Fatalf("cookie: %q", sc)
	}
	id, _, err := f.signer.ParseCredential(cred)
	if err != nil {
		t.Fatal(err)
	}
	if again := f.do("POST", "/api/v1/rooms/shop/join", "", "X-Visitor", cred); again.Code != 200 {
		t.Fatalf("join again: %d %s", again.Code, again.Raw)
	}
	if len(f.q.joins) != 2 || f.q.joins[0] != id || f.q.joins[1] != id {
		t.Fatalf("joins %v, want %s twice", f.q.joins, id)
	}
}

// The join's refusals, each with its code.
func TestJoinRefusals(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name, path, body, cred string
		code                   int
		want                   string
	}{
		{"bad room", "/api/v1/rooms/Not_A_Room/join", "", "", 400, "invalid_room"},
		{"not an object", "/api/v1/rooms/shop/join", "[1]", "", 400, "invalid_json"},
		{"forged credential", "/api/v1/rooms/shop/join", "", "forged.credential", 401, "invalid_visitor"},
	} {
		var h []string
		if tc.cred != "" {
			h = []string{"X-Visitor", tc.cred}
		}
		if r := f.do("POST", tc.path, tc.body, h...); r.Code != tc.code || r.errCode() != tc.want {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.Code, r.Raw, tc.code, tc.want)
		}
	}
	// A stale cookie is not a claim: the browser joins anew.
	if r := f.do("POST", "/api/v1/rooms/shop/join", "", "Cookie", VisitorCookie+"=stale.cookie"); r.Code != 200 {
		t.Errorf("stale cookie: %d %s", r.Code, r.Raw)
	}

	f.rooms.missing = true
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 404 || r.errCode() != "room_not_found" {
		t.Errorf("missing room: %d %s", r.Code, r.Raw)
	}
	f.rooms.missing, f.rooms.down = false, true
	r := f.do("POST", "/api/v1/rooms/shop/join", "")
	if r.Code != 503 || r.errCode() != "unavailable" || r.Header.Get("Retry-After") != "2" || f.metrics.storeErrors != 1 {
		t.Errorf("store down: %d %s %v, %d store errors counted", r.Code, r.Raw, r.Header, f.metrics.storeErrors)
	}
}

// solve finds a nonce for a challenge of n bits.
func solve(t *testing.T, ch string, n int) string {
	t.Helper()
	for i := range 1 << 24 {
		if nonce := strconv.Itoa(i); visitorsig.Solves(ch, nonce, n) {
			return nonce
		}
	}
	t.Fatal("no nonce found")
	return ""
}

// A room with proof of work answers a new visitor's join with a
// challenge; a solved one is taken once.
func TestJoinProofOfWork(t *testing.T) {
	f := newFixture(t, nil)
	f.rooms.powBits = 6
	r := f.do("POST", "/api/v1/rooms/shop/join", "")
	e, _ := r.Body["error"].(map[string]any)
	ch, _ := e["challenge"].(string)
	if r.Code != 428 || r.errCode() != "pow_required" || ch == "" || e["powBits"] != float64(6) {
		t.Fatalf("join without proof: %d %s", r.Code, r.Raw)
	}
	q := "?pow=" + url.QueryEscape(ch) + "&nonce=" + solve(t, ch, 6)
	if r := f.do("POST", "/api/v1/rooms/shop/join"+q, ""); r.Code != 200 {
		t.Fatalf("solved join: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/join"+q, ""); r.Code != 409 || r.errCode() != "pow_used" {
		t.Fatalf("the same solution again: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/other/join"+q, ""); r.Code != 400 || r.errCode() != "pow_wrong_room" {
		t.Fatalf("a solution for another room: %d %s", r.Code, r.Raw)
	}
	if r := f.do("GET", "/api/v1/rooms/shop/challenge", ""); r.Code != 200 || r.str("challenge") == "" {
		t.Fatalf("challenge: %d %s", r.Code, r.Raw)
	}
}

// A join whose room's settings changed under it reads them again and
// checks the gates again: a room that now asks for proof of work answers
// 428; one that keeps changing ends the join with settings_changing.
func TestJoinRegates(t *testing.T) {
	f := newFixture(t, nil)
	f.q.joinErrs = []error{queue.ErrSettingsChanged}
	f.rooms.onReload = func(r *fakeRooms) { r.powBits = 6 }
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 428 || r.errCode() != "pow_required" || f.rooms.reloads != 1 {
		t.Fatalf("settings now asking for proof: %d %s, %d reloads", r.Code, r.Raw, f.rooms.reloads)
	}

	f = newFixture(t, nil)
	f.q.joinErrs = []error{queue.ErrSettingsChanged, queue.ErrSettingsChanged, queue.ErrSettingsChanged}
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 503 || r.errCode() != "settings_changing" || f.rooms.reloads != joinTries {
		t.Fatalf("settings that keep changing: %d %s, %d reloads", r.Code, r.Raw, f.rooms.reloads)
	}
}

// Invite codes are checked before the store, and the store's refusals
// come back with their codes.
func TestJoinInvites(t *testing.T) {
	f := newFixture(t, nil)
	mint := func(c invite.Code) string { return f.invites.Mint(c) }
	week := time.Now().Add(7 * 24 * time.Hour)
	for _, tc := range []struct {
		name, code, want string
	}{
		{"forged", "inv_forged.code", "invalid_invite"},
		{"other room", mint(invite.Code{Room: "other", ID: invite.NewID(), Expires: week, Uses: 1}), "invite_wrong_room"},
		{"expired", mint(invite.Code{Room: "shop", ID: invite.NewID(), Expires: time.Now().Add(-time.Minute), Uses: 1}), "invite_expired"},
		{"other visitor", mint(invite.Code{Room: "shop", ID: invite.NewID(), Expires: week, Uses: 1, Visitor: "someone"}), "invite_wrong_visitor"},
	} {
		if r := f.do("POST", "/api/v1/rooms/shop/join", `{"invite":"`+tc.code+`"}`); r.Code != 403 || r.errCode() != tc.want {
			t.Errorf("%s: %d %s, want %s", tc.name, r.Code, r.Raw, tc.want)
		}
	}
	f.q.joinErrs = []error{queue.ErrInviteRequired, queue.ErrInviteUsed}
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 403 || r.errCode() != "invite_required" {
		t.Errorf("invite-only room: %d %s", r.Code, r.Raw)
	}
	good := mint(invite.Code{Room: "shop", ID: invite.NewID(), Expires: week, Uses: 1})
	if r := f.do("POST", "/api/v1/rooms/shop/join?invite="+url.QueryEscape(good), ""); r.Code != 409 || r.errCode() != "invite_used" {
		t.Errorf("used invite: %d %s", r.Code, r.Raw)
	}
}

// New visitors from one address are limited to the join rate; a visitor
// who holds a credential is not.
func TestJoinRate(t *testing.T) {
	f := newFixture(t, &Options{JoinRate: 0.001, JoinBurst: 1})
	first := f.do("POST", "/api/v1/rooms/shop/join", "")
	if first.Code != 200 {
		t.Fatalf("first join: %d %s", first.Code, first.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/join", ""); r.Code != 429 || r.errCode() != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second new visitor: %d %s", r.Code, r.Raw)
	}
	if r := f.do("POST", "/api/v1/rooms/shop/join", "", "X-Visitor", first.str("visitor")); r.Code != 200 {
		t.Fatalf("a known visitor: %d %s", r.Code, r.Raw)
	}
}
