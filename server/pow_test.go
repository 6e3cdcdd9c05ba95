package main

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/visitorsig"
)

// solve finds a nonce for ch at n bits, as a client does.
func solve(tb testing.TB, ch string, n int) string {
	tb.Helper()
	for i := 0; i < 1<<(n+8); i++ {
		if nonce := strconv.Itoa(i); visitorsig.Solves(ch, nonce, n) {
			return nonce
		}
	}
	tb.Fatalf("no nonce solves %s at %d bits", ch, n)
	return ""
}

func powBody(ch, nonce string) string {
	return `{"pow":{"challenge":` + strconv.Quote(ch) + `,"nonce":` + strconv.Quote(nonce) + `}}`
}

func TestProofOfWorkJoin(t *testing.T) {
	const bits = 8
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		if r := op.admin("PUT", "/rooms/drop", `{"powBits":`+strconv.Itoa(bits)+`}`); r.Code != 200 || r.num("powBits") != bits {
			t.Fatalf("put powBits: %d %s", r.Code, r.Raw)
		}
		if r := op.admin("PUT", "/rooms/drop", `{"powBits":40}`); r.errCode() != "invalid_field" {
			t.Fatalf("powBits 40: %d %s", r.Code, r.Raw)
		}
		if r := op.admin("PUT", "/rooms/other", `{"batch":2}`); r.Code != 200 {
			t.Fatalf("put other: %d %s", r.Code, r.Raw)
		}
		if err := ts.rooms.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		join := func(v *visitor, room, body string) reply {
			return v.do("POST", "/api/v1/rooms/"+room+"/join", body, "Content-Type", "application/json")
		}

		// A join without a proof gets a challenge and no place.
		v := newVisitor(t, ts.URL)
		r := join(v, "drop", "")
		e, _ := r.Body["error"].(map[string]any)
		ch, _ := e["challenge"].(string)
		if r.Code != 428 || r.errCode() != "pow_required" || ch == "" || e["powBits"] != float64(bits) {
			t.Fatalf("join without proof: %d %s", r.Code, r.Raw)
		}
		// A wrong nonce, a forged challenge, another room's challenge.
		bad := "0"
		for visitorsig.Solves(ch, bad, bits) {
			bad += "0"
		}
		if r := join(v, "drop", powBody(ch, bad)); r.Code != 400 || r.errCode() != "pow_unsolved" {
			t.Fatalf("unsolved: %d %s", r.Code, r.Raw)
		}
		if r := join(v, "drop", powBody(ch+"x", solve(t, ch+"x", bits))); r.errCode() != "pow_invalid" {
			t.Fatalf("forged: %d %s", r.Code, r.Raw)
		}
		forged := strings.Replace(ch, "."+strconv.Itoa(bits)+".", ".1.", 1)
		if r := join(v, "drop", powBody(forged, solve(t, forged, 1))); r.errCode() != "pow_invalid" {
			t.Fatalf("weakened: %d %s", r.Code, r.Raw)
		}
		otherCh := ts.signer.NewChallenge("other", bits, time.Now())
		if r := join(v, "drop", powBody(otherCh, solve(t, otherCh, bits))); r.errCode() != "pow_wrong_room" {
			t.Fatalf("cross-room: %d %s", r.Code, r.Raw)
		}
		weak := ts.signer.NewChallenge("drop", bits-1, time.Now())
		if r := join(v, "drop", powBody(weak, solve(t, weak, bits-1))); r.errCode() != "pow_too_weak" {
			t.Fatalf("weak: %d %s", r.Code, r.Raw)
		}
		old := ts.signer.NewChallenge("drop", bits, time.Now().Add(-visitorsig.ChallengeTTL-time.Second))
		if r := join(v, "drop", powBody(old, solve(t, old, bits))); r.errCode() != "pow_expired" {
			t.Fatalf("expired: %d %s", r.Code, r.Raw)
		}

		// The solution takes a place, once.
		nonce := solve(t, ch, bits)
		r = join(v, "drop", powBody(ch, nonce))
		if r.Code != 200 || r.str("status") != "waiting" {
			t.Fatalf("solved join: %d %s", r.Code, r.Raw)
		}
		v.cred = r.str("visitor")
		w := newVisitor(t, ts.URL)
		if r := join(w, "drop", powBody(ch, nonce)); r.Code != 409 || r.errCode() != "pow_used" {
			t.Fatalf("replayed: %d %s", r.Code, r.Raw)
		}
		// Query parameters carry a solution too.
		ch2 := ts.signer.NewChallenge("drop", bits, time.Now())
		q := "?pow=" + url.QueryEscape(ch2) + "&nonce=" + solve(t, ch2, bits)
		if r := w.do("POST", "/api/v1/rooms/drop/join"+q, ""); r.Code != 200 || r.str("status") != "waiting" {
			t.Fatalf("query solution: %d %s", r.Code, r.Raw)
		}

		// A refresh keeps the place for free; a credential from a room
		// without proof of work does not buy a place here.
		if r := join(v, "drop", ""); r.Code != 200 || r.num("position") != 1 {
			t.Fatalf("refresh: %d %s", r.Code, r.Raw)
		}
		x := newVisitor(t, ts.URL)
		if r := join(x, "other", ""); r.Code != 200 {
			t.Fatalf("other room: %d %s", r.Code, r.Raw)
		}
		if r := join(x, "drop", ""); r.Code != 428 {
			t.Fatalf("credential from another room: %d %s", r.Code, r.Raw)
		}

		// The challenge endpoint, and a room without proof of work.
		c := v.do("GET", "/api/v1/rooms/drop/challenge", "")
		if c.Code != 200 || c.num("powBits") != bits || c.str("challenge") == "" || c.str("expiresAt") == "" {
			t.Fatalf("challenge: %d %s", c.Code, c.Raw)
		}
		if c := v.do("GET", "/api/v1/rooms/other/challenge", ""); c.Code != 200 || c.num("powBits") != 0 || c.str("challenge") != "" {
			t.Fatalf("challenge without pow: %d %s", c.Code, c.Raw)
		}
		if r := join(v, "drop", `{"pow":7}`); r.errCode() != "invalid_field" {
			t.Fatalf("bad pow body: %d %s", r.Code, r.Raw)
		}
	})
}
