package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/invite"
)

func mintOne(t *testing.T, v *visitor, room, body string) string {
	t.Helper()
	r := v.admin("POST", "/rooms/"+room+"/invites", body)
	codes, _ := r.Body["codes"].([]any)
	if r.Code != 201 || len(codes) == 0 {
		t.Fatalf("mint: %d %s", r.Code, r.Raw)
	}
	s, _ := codes[0].(string)
	return s
}

func joinWith(v *visitor, room, code string) reply {
	v.tb.Helper()
	r := v.do("POST", "/api/v1/rooms/"+room+"/join?invite="+code, "")
	if r.Code == 200 {
		v.cred = r.str("visitor")
	}
	return r
}

// Invite-only rooms take a new visitor only with a valid, unused code of
// that room; forged, expired, reused and cross-room codes are refused, and
// a visitor who holds a place keeps it without one.
func TestInviteCodes(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		for _, room := range []string{"presale", "other"} {
			if r := op.admin("POST", "/rooms", `{"room":"`+room+`","inviteOnly":true,"paused":true}`); r.Code != 201 || r.Body["inviteOnly"] != true {
				t.Fatalf("create %s: %d %s", room, r.Code, r.Raw)
			}
		}
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/presale/join", ""); r.Code != 403 || r.errCode() != "invite_required" {
			t.Fatalf("no code: %d %s", r.Code, r.Raw)
		}
		code := mintOne(t, op, "presale", `{"uses":2}`)
		a, b, c := newVisitor(t, ts.URL), newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		if r := joinWith(a, "presale", code); r.Code != 200 || r.str("status") != "waiting" {
			t.Fatalf("first use: %d %s", r.Code, r.Raw)
		}
		// A refresh (no code, or the same code again) keeps the place and
		// uses nothing.
		if r := a.join("presale"); r.num("position") != 1 {
			t.Fatalf("refresh: %s", r.Raw)
		}
		if r := joinWith(a, "presale", code); r.num("position") != 1 {
			t.Fatalf("refresh with the code: %s", r.Raw)
		}
		if r := joinWith(b, "presale", code); r.Code != 200 || r.num("position") != 2 {
			t.Fatalf("second use: %d %s", r.Code, r.Raw)
		}
		if r := joinWith(c, "presale", code); r.Code != 409 || r.errCode() != "invite_used" {
			t.Fatalf("reused past its uses: %d %s", r.Code, r.Raw)
		}
		// The body works as well as the query.
		body := mintOne(t, op, "presale", `{}`)
		if r := c.do("POST", "/api/v1/rooms/presale/join", `{"invite":"`+body+`"}`); r.Code != 200 {
			t.Fatalf("code in the body: %d %s", r.Code, r.Raw)
		}

		other := mintOne(t, op, "other", `{}`)
		forged := ts.invites.Mint(invite.Code{Room: "presale", ID: "x", Expires: time.Now().Add(time.Hour), Uses: 100})
		forged = forged[:len(forged)-3] + "AAA"
		alien := invite.NewMinter([]byte("some-other-secret-0123456789")).Mint(invite.Code{Room: "presale", ID: "y", Expires: time.Now().Add(time.Hour), Uses: 1})
		expired := ts.invites.Mint(invite.Code{Room: "presale", ID: invite.NewID(), Expires: time.Now().Add(-time.Second), Uses: 1})
		forUser := mintOne(t, op, "presale", `{"visitor":"user-42"}`)
		for name, tc := range map[string]struct{ code, want string }{
			"cross-room":    {other, "invite_wrong_room"},
			"forged":        {forged, "invalid_invite"},
			"other secret":  {alien, "invalid_invite"},
			"garbage":       {"hello", "invalid_invite"},
			"expired":       {expired, "invite_expired"},
			"other visitor": {forUser, "invite_wrong_visitor"},
		} {
			if r := joinWith(newVisitor(t, ts.URL), "presale", tc.code); r.Code != 403 || r.errCode() != tc.want {
				t.Fatalf("%s: %d %s", name, r.Code, r.Raw)
			}
		}
		// A code for one visitor admits that visitor.
		u := newVisitor(t, ts.URL)
		u.cred = ts.signer.VisitorCredential("user-42")
		if r := u.do("POST", "/api/v1/rooms/presale/join?invite="+forUser, "", "X-Visitor", u.cred); r.Code != 200 {
			t.Fatalf("the code's own visitor: %d %s", r.Code, r.Raw)
		}
		// A room that is not invite-only ignores codes.
		op.admin("PUT", "/rooms/other", `{"inviteOnly":false}`)
		if r := newVisitor(t, ts.URL).do("POST", "/api/v1/rooms/other/join", ""); r.Code != 200 {
			t.Fatalf("open again: %d %s", r.Code, r.Raw)
		}
		// A batch: n distinct codes of the room.
		r := op.admin("POST", "/rooms/presale/invites", `{"count":50,"uses":1,"expiresInSeconds":3600}`)
		codes, _ := r.Body["codes"].([]any)
		seen := map[string]bool{}
		for _, c := range codes {
			seen[c.(string)] = true
		}
		if r.Code != 201 || len(seen) != 50 {
			t.Fatalf("batch: %d, %d distinct", r.Code, len(seen))
		}
		for body, field := range map[string]string{
			`{"count":0}`: "count", `{"count":10001}`: "count", `{"uses":0}`: "uses",
			`{"expiresAt":"2001-01-01T00:00:00Z"}`: "expiresAt", `{"visitor":"a b"}`: "visitor",
			`{"count":2,"visitor":"u"}`: "visitor", `{"colour":1}`: "colour",
		} {
			if r := op.admin("POST", "/rooms/presale/invites", body); r.Code != 400 || !strings.Contains(r.Raw, `"field":"`+field+`"`) {
				t.Fatalf("%s: %d %s", body, r.Code, r.Raw)
			}
		}
	})
}

// However many visitors race for a code of n uses, exactly n join.
func TestInviteUsesAtomic(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false; c.JoinRate = 0 }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		op.admin("POST", "/rooms", `{"room":"presale","inviteOnly":true,"paused":true}`)
		code := mintOne(t, op, "presale", `{"uses":5}`)
		var mu sync.Mutex
		codes := map[int]int{}
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				r := joinWith(newVisitor(t, ts.URL), "presale", code)
				mu.Lock()
				codes[r.Code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if codes[200] != 5 || codes[409] != 35 {
			t.Fatalf("answers %v, want 5 joins and 35 invite_used", codes)
		}
		if st := op.admin("GET", "/rooms/presale/stats", ""); st.num("waiting") != 5 {
			t.Fatalf("waiting: %s", st.Raw)
		}
	})
}
