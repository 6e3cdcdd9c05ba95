package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/invite"
)

// idOf is the visitor id of v's credential.
func idOf(v *visitor) string { return strings.SplitN(v.cred, ".", 2)[0] }

// pollNow is a status poll that Redis answers (not this instance's memory
// of the last one).
func pollNow(ts *testServer, v *visitor, room string) reply {
	v.tb.Helper()
	ts.visit.Polls().Forget(room, idOf(v))
	return v.status(room)
}

// Priority codes: a join with one goes ahead of every public visitor, in
// any room; the credential carries the band, so a Redis that lost the
// queue puts the visitor back ahead; forged, expired, reused, cross-room
// and other visitors' codes are refused like invite codes; a plain code
// gives no priority, and a priority code is an invitation too.
func TestPriorityCodes(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false; c.JoinRate = 0 }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		for _, body := range []string{`{"room":"drop","batch":1}`, `{"room":"other"}`, `{"room":"presale","inviteOnly":true}`} {
			if r := op.admin("POST", "/rooms", body); r.Code != 201 {
				t.Fatalf("create %s: %d %s", body, r.Code, r.Raw)
			}
		}
		r := op.admin("POST", "/rooms/drop/invites", `{"priority":true,"uses":2}`)
		codes, _ := r.Body["codes"].([]any)
		if r.Code != 201 || r.Body["priority"] != true || len(codes) != 1 {
			t.Fatalf("mint: %d %s", r.Code, r.Raw)
		}
		code := codes[0].(string)
		if c, err := ts.invites.Parse(code); err != nil || !c.Priority || c.Uses != 2 {
			t.Fatalf("minted %+v %v", c, err)
		}

		a, b, vip := newVisitor(t, ts.URL), newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		a.join("drop")
		b.join("drop")
		if r := joinWith(vip, "drop", code); r.Code != 200 || r.num("position") != 1 {
			t.Fatalf("priority join: %d %s", r.Code, r.Raw)
		}
		if _, tk, err := ts.signer.ParseCredential(vip.cred); err != nil || !tk.Priority || tk.Seq != 1 || tk.Room != "drop" {
			t.Fatalf("credential ticket %+v %v", tk, err)
		}
		// A priority visitor who joined later goes ahead without raising
		// the position of a public visitor already waiting (positions never
		// rise); one who joins after it counts it.
		if r := pollNow(ts, a, "drop"); r.num("position") != 1 {
			t.Fatalf("public visitor who joined before the priority one: %s", r.Raw)
		}
		if r := newVisitor(t, ts.URL).join("drop"); r.num("position") != 4 {
			t.Fatalf("public visitor who joined after the priority one: %s", r.Raw)
		}
		// One a tick: the priority visitor goes first, the earlier public
		// joiners wait.
		ts.admitUntil(t, vip, "drop")
		if r := pollNow(ts, a, "drop"); r.str("status") != "waiting" || r.num("position") != 1 {
			t.Fatalf("first public visitor after the priority one's admission: %s", r.Raw)
		}

		// Refusals, with the invite codes' stable codes.
		other := mintOne(t, op, "other", `{"priority":true}`)
		tampered := code[:len(code)-3] + "AAA"
		if strings.HasSuffix(code, "AAA") {
			tampered = code[:len(code)-3] + "BBB"
		}
		alien := invite.NewMinter([]byte("some-other-secret-0123456789")).Mint(invite.Code{Room: "drop", ID: "y", Expires: time.Now().Add(time.Hour), Uses: 1, Priority: true})
		expired := ts.invites.Mint(invite.Code{Room: "drop", ID: invite.NewID(), Expires: time.Now().Add(-time.Second), Uses: 1, Priority: true})
		forUser := mintOne(t, op, "drop", `{"priority":true,"visitor":"member-7"}`)
		for name, tc := range map[string]struct {
			code, want string
			status     int
		}{
			"cross-room":    {other, "invite_wrong_room", 403},
			"forged":        {tampered, "invalid_invite", 403},
			"other secret":  {alien, "invalid_invite", 403},
			"expired":       {expired, "invite_expired", 403},
			"other visitor": {forUser, "invite_wrong_visitor", 403},
		} {
			if r := joinWith(newVisitor(t, ts.URL), "drop", tc.code); r.Code != tc.status || r.errCode() != tc.want {
				t.Fatalf("%s: %d %s", name, r.Code, r.Raw)
			}
		}
		vip2 := newVisitor(t, ts.URL)
		if r := joinWith(vip2, "drop", code); r.Code != 200 || r.num("position") != 1 {
			t.Fatalf("second use: %d %s", r.Code, r.Raw)
		}
		if r := joinWith(newVisitor(t, ts.URL), "drop", code); r.Code != 409 || r.errCode() != "invite_used" {
			t.Fatalf("reused past its uses: %d %s", r.Code, r.Raw)
		}
		if st := op.admin("GET", "/rooms/drop/stats", ""); st.num("priority") != 1 || st.num("waiting") != 4 {
			t.Fatalf("stats: %s", st.Raw)
		}
		member := newVisitor(t, ts.URL)
		member.cred = ts.signer.VisitorCredential("member-7")
		mr := member.do("POST", "/api/v1/rooms/drop/join?invite="+forUser, "", "X-Visitor", member.cred)
		if mr.Code != 200 || mr.num("position") != 2 {
			t.Fatalf("the code's own visitor: %d %s", mr.Code, mr.Raw)
		}
		member.cred = mr.str("visitor")
		// A plain invite code in a public room gives no priority.
		plain := newVisitor(t, ts.URL)
		if r := joinWith(plain, "drop", mintOne(t, op, "drop", `{}`)); r.Code != 200 || r.num("position") != 6 {
			t.Fatalf("plain code in a public room: %d %s", r.Code, r.Raw)
		}
		// In an invite-only room a priority code is the invitation, ahead
		// of those a plain code let in.
		guest, partner := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		if r := joinWith(guest, "presale", mintOne(t, op, "presale", `{}`)); r.Code != 200 || r.num("position") != 1 {
			t.Fatalf("plain code in the presale: %d %s", r.Code, r.Raw)
		}
		if r := joinWith(partner, "presale", mintOne(t, op, "presale", `{"priority":true}`)); r.Code != 200 || r.num("position") != 1 {
			t.Fatalf("priority code in the presale: %d %s", r.Code, r.Raw)
		}

		// Redis loses everything: the public visitors come back first, then
		// the priority ones, who still go ahead of them.
		ctx := context.Background()
		if _, err := ts.redis.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		for i, v := range []*visitor{a, b, plain, vip2} {
			if r := pollNow(ts, v, "drop"); r.str("status") != "waiting" || r.num("position") < 1 || r.num("position") > int64(i+1) {
				t.Fatalf("visitor %d after the loss: %s", i, r.Raw)
			}
		}
		for _, v := range []*visitor{member, vip2, a, b, plain} {
			pollNow(ts, v, "drop")
		}
		want := map[*visitor]int64{vip2: 1, member: 2, a: 3, b: 4, plain: 5}
		for v, pos := range want {
			if r := pollNow(ts, v, "drop"); r.num("position") != pos {
				t.Fatalf("after the loss %s at %s, want position %d", idOf(v), r.Raw, pos)
			}
		}
		// The first priority visitor was let in before the loss: not back.
		if r := pollNow(ts, vip, "drop"); r.str("status") == "waiting" {
			t.Fatalf("admitted priority visitor back in the queue: %s", r.Raw)
		}
	})
}

// Before a scheduled opening a priority visitor is held like everyone (an
// opensAt and no position); at opening it goes ahead of the drawn public
// pre-queue, priority visitors in the order they joined.
func TestPriorityAtOpening(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false; c.JoinRate = 0 }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		opens := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if r := op.admin("POST", "/rooms", `{"room":"drop","batch":1,"opensAt":"`+opens+`"}`); r.Code != 201 {
			t.Fatalf("create: %d %s", r.Code, r.Raw)
		}
		code := mintOne(t, op, "drop", `{"priority":true,"uses":10}`)
		var pubs, vips []*visitor
		for i := range 6 {
			v := newVisitor(t, ts.URL)
			var r reply
			if i%2 == 0 {
				r = v.join("drop")
				pubs = append(pubs, v)
			} else {
				r = joinWith(v, "drop", code)
				vips = append(vips, v)
			}
			if r.Code != 200 || r.str("status") != "waiting" || r.str("opensAt") == "" || r.Body["position"] != nil {
				t.Fatalf("join %d before opening: %d %s", i, r.Code, r.Raw)
			}
		}
		if _, err := ts.q.Admit(context.Background(), "drop"); err != nil {
			t.Fatal(err)
		}
		if r := pollNow(ts, vips[0], "drop"); r.str("status") != "waiting" || r.str("opensAt") == "" {
			t.Fatalf("priority visitor before opening: %s", r.Raw)
		}
		past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
		if r := op.admin("PUT", "/rooms/drop", `{"opensAt":"`+past+`"}`); r.Code != 200 {
			t.Fatalf("open: %d %s", r.Code, r.Raw)
		}
		for i, v := range vips {
			if r := pollNow(ts, v, "drop"); r.num("position") != int64(i+1) {
				t.Fatalf("priority visitor %d after opening: %s", i, r.Raw)
			}
		}
		seen := map[int64]bool{}
		for i, v := range pubs {
			p := pollNow(ts, v, "drop").num("position")
			if p < 4 || p > 6 || seen[p] {
				t.Fatalf("public visitor %d drawn to %d", i, p)
			}
			seen[p] = true
		}
		ts.admitUntil(t, vips[2], "drop")
		for i, v := range pubs {
			if r := pollNow(ts, v, "drop"); r.str("status") != "waiting" {
				t.Fatalf("public visitor %d let in before the priority visitors: %s", i, r.Raw)
			}
		}
	})
}

// A push connection keeps its visitor's ticket with the band: when Redis
// lost the queue, the hub's reconcile puts a priority visitor back in the
// priority band (no poll needed).
func TestPriorityPushRestore(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.OpenRooms = false; c.JoinRate = 0 }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		if r := op.admin("POST", "/rooms", `{"room":"drop","paused":true}`); r.Code != 201 {
			t.Fatalf("create: %d %s", r.Code, r.Raw)
		}
		pub, vip := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
		pub.join("drop")
		if r := joinWith(vip, "drop", mintOne(t, op, "drop", `{"priority":true}`)); r.num("position") != 1 {
			t.Fatalf("priority join: %s", r.Raw)
		}
		clients := []*pushClient{dial(t, "ws", ts.URL, "drop", pub.cred), dial(t, "sse", ts.URL, "drop", vip.cred)}
		waitfor.Until(t, 10*time.Second, "both push clients' first state", func() bool {
			return len(clients[0].messages()) > 0 && len(clients[1].messages()) > 0
		})
		ctx := context.Background()
		score := func(v *visitor) (float64, bool) {
			r, err := ts.redis.Do(ctx, "ZSCORE", "wr:{drop}:q", idOf(v))
			if err != nil || r == nil {
				return 0, false
			}
			switch s := r.(type) {
			case float64: // RESP3
				return s, true
			case string:
				f, err := strconv.ParseFloat(s, 64)
				return f, err == nil
			}
			t.Fatalf("ZSCORE answered %T %v", r, r)
			return 0, false
		}
		if _, err := ts.redis.Do(ctx, "FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		// The hub reconciles every 10 s.
		waitfor.Until(t, 40*time.Second, "both places back", func() bool {
			_, a := score(pub)
			_, b := score(vip)
			return a && b
		})
		if s, _ := score(vip); s >= 0 {
			t.Fatalf("priority visitor back at score %v, not in the priority band", s)
		}
		if s, _ := score(pub); s != 1 {
			t.Fatalf("public visitor back at score %v, want 1", s)
		}
	})
}
