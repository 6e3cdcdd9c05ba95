package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/queue"
)

// sameState reports whether a pushed message and a poll's body are the
// same state, but for nextPollMs (spread at random on each answer).
func sameState(t *testing.T, pushed, polled string) bool {
	t.Helper()
	var a, b map[string]any
	if err := json.Unmarshal([]byte(pushed), &a); err != nil {
		t.Fatalf("pushed %q: %v", pushed, err)
	}
	if err := json.Unmarshal([]byte(polled), &b); err != nil {
		t.Fatalf("polled %q: %v", polled, err)
	}
	delete(a, "nextPollMs")
	delete(b, "nextPollMs")
	return reflect.DeepEqual(a, b) // etaRange is an object

}

// agree polls v until the answer is the state last pushed to p: a poll
// sooner than the nextPollMs it was given is answered from the server's
// memory, so the first may be older than the push.
func agree(t *testing.T, p *pushClient, v *visitor) reply {
	t.Helper()
	var poll reply
	agreed := false
	defer func() { // runs too when the wait below fails the test
		if !agreed {
			t.Logf("%s pushed %s\npoll answered %s", p.kind, lastRaw(p), poll.Raw)
		}
	}()
	waitfor.Until(t, 10*time.Second, "the poll to answer what was pushed", func() bool {
		poll = v.status("drop")
		return sameState(t, lastRaw(p), poll.Raw)
	})
	agreed = true
	return poll
}

func lastRaw(p *pushClient) string {
	m := p.messages()
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1].raw
}

// TestRandomPushEqualsPoll: a room turned random live tells its waiting
// visitors the draw (size and chance per minute, no place) over WebSocket,
// SSE and polling alike, the same object; after a lottery tick the pushed
// draw shrinks and still equals the poll; back to fifo, places again.
func TestRandomPushEqualsPoll(t *testing.T) {
	eachServer(t, func(c *config) { withAdmin(c); c.Capacity.Batch = 1 }, func(t *testing.T, ts *testServer) {
		op := newVisitor(t, ts.URL)
		if r := op.admin("PUT", "/rooms/drop", `{"paused":true}`); r.Code != 200 {
			t.Fatalf("pause: %d %s", r.Code, r.Raw)
		}
		vs := make([]*visitor, 4)
		ws := make([]*pushClient, 4)
		for i := range vs {
			vs[i] = newVisitor(t, ts.URL)
			vs[i].join("drop")
		}
		for i := range vs {
			ws[i] = dialWS(t, ts.URL, "drop", vs[i].cred)
		}
		sse := dialSSE(t, ts.URL, "drop", vs[0].cred)
		waitfor.Until(t, 5*time.Second, "places pushed", func() bool {
			return strings.Contains(lastRaw(ws[3]), `"position":4`) && strings.Contains(lastRaw(sse), `"position":1`)
		})

		if r := op.admin("PUT", "/rooms/drop", `{"paused":true,"method":"random"}`); r.Code != 200 || r.str("method") != "random" {
			t.Fatalf("put random: %d %s", r.Code, r.Raw)
		}
		// The change goes out at once (a config event), as the draw.
		waitfor.Until(t, 5*time.Second, "the draw pushed", func() bool {
			return strings.Contains(lastRaw(ws[0]), `"inDraw":4`) && strings.Contains(lastRaw(sse), `"inDraw":4`)
		})
		poll := agree(t, ws[0], vs[0])
		if poll.num("inDraw") != 4 || poll.Body["position"] != nil || poll.Body["chancePerMinute"] == nil {
			t.Fatalf("poll in the draw: %s", poll.Raw)
		}
		agree(t, sse, vs[0])

		// One lottery tick: one of the four goes, the others hear a
		// draw of three, the same as their polls.
		if r := op.admin("PUT", "/rooms/drop", `{"paused":false,"method":"random"}`); r.Code != 200 {
			t.Fatalf("resume: %d %s", r.Code, r.Raw)
		}
		res, err := ts.q.Admit(context.Background(), "drop")
		for err == nil && !res.Taken {
			res, err = ts.q.Admit(context.Background(), "drop")
		}
		if err != nil || len(res.Admitted) != 1 {
			t.Fatalf("admit: %+v %v", res, err)
		}
		waitfor.Until(t, 5*time.Second, "the drawn one admitted", func() bool {
			n := 0
			for _, p := range ws {
				n += p.count("admitted")
			}
			return n == 1
		})
		for i, v := range vs {
			if ws[i].count("admitted") > 0 {
				continue
			}
			waitfor.Until(t, 10*time.Second, "a draw of three pushed", func() bool { return strings.Contains(lastRaw(ws[i]), `"inDraw":3`) })
			agree(t, ws[i], v)
		}

		// Back to fifo: places in ticket order, pushed and polled alike.
		if r := op.admin("PUT", "/rooms/drop", `{"paused":true,"method":"fifo"}`); r.Code != 200 {
			t.Fatalf("put fifo: %d %s", r.Code, r.Raw)
		}
		want := int64(1)
		for i, v := range vs {
			if ws[i].count("admitted") > 0 {
				continue
			}
			pos := `"position":` + string(rune('0'+want))
			waitfor.Until(t, 5*time.Second, "places pushed again", func() bool { return strings.Contains(lastRaw(ws[i]), pos) })
			agree(t, ws[i], v)
			want++
		}
	})
}

// TestLotteryEndpoint: a room that turns random has a commitment and no
// seed to show; once it leaves random the seed is shown and matches.
func TestLotteryEndpoint(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withAdmin)
	op := newVisitor(t, ts.URL)
	if r := op.do("GET", "/api/v1/rooms/drop/lottery", ""); r.Code != 404 || r.errCode() != "no_lottery" {
		t.Fatalf("before any lottery: %d %s", r.Code, r.Raw)
	}
	if r := op.admin("PUT", "/rooms/drop", `{"method":"random"}`); r.Code != 200 {
		t.Fatalf("put random: %d %s", r.Code, r.Raw)
	}
	v := newVisitor(t, ts.URL)
	v.join("drop")
	r := op.do("GET", "/api/v1/rooms/drop/lottery", "")
	commit := r.str("commitment")
	if r.Code != 200 || r.str("state") != "drawing" || len(commit) != 64 || r.Body["seed"] != nil {
		t.Fatalf("while drawing: %d %s", r.Code, r.Raw)
	}
	if r := op.admin("PUT", "/rooms/drop", `{"method":"fifo"}`); r.Code != 200 {
		t.Fatalf("put fifo: %d %s", r.Code, r.Raw)
	}
	r = op.do("GET", "/api/v1/rooms/drop/lottery", "")
	if r.Code != 200 || r.str("state") != "revealed" || queue.Commitment(r.str("seed")) != commit || r.str("commitment") != commit {
		t.Fatalf("after the lottery: %d %s (committed %s)", r.Code, r.Raw, commit)
	}
}

// TestLotteryOneJoinOneAdmission: in a random room, one join is one
// admission. After the order spends the token, the visitor's polls (which
// take a lost place back with the signed ticket) say not_in_queue, and no
// later tick draws the visitor again.
func TestLotteryOneJoinOneAdmission(t *testing.T) {
	ts := startServer(t, nil, "rueidis", withAdmin)
	op := newVisitor(t, ts.URL)
	if r := op.admin("PUT", "/rooms/drop", `{"method":"random","batch":1}`); r.Code != 200 {
		t.Fatalf("put random: %d %s", r.Code, r.Raw)
	}
	v := newVisitor(t, ts.URL)
	v.join("drop")
	for range 5 {
		newVisitor(t, ts.URL).join("drop")
	}
	ctx := context.Background()
	var tok string
	waitfor.Until(t, 10*time.Second, "the visitor drawn", func() bool {
		if _, err := ts.q.Admit(ctx, "drop"); err != nil {
			t.Fatal(err)
		}
		st := v.status("drop")
		tok = st.str("token")
		return st.str("status") == "admitted"
	})
	waitfor.Until(t, 5*time.Second, "the order", func() bool {
		r := v.do("POST", "/api/v1/rooms/drop/orders", "", "Authorization", "Bearer "+tok)
		return r.Code == 201
	})
	// Ticks go on until everyone else was drawn, polled after each.
	admissions, taken := 1, 0
	waitfor.Until(t, 20*time.Second, "every other visitor drawn", func() bool {
		res, err := ts.q.Admit(ctx, "drop")
		if err != nil {
			t.Fatal(err)
		}
		if res.Taken {
			taken++
		}
		st := v.status("drop")
		if st.str("status") == "admitted" && st.str("token") != tok {
			admissions++
			tok = st.str("token")
		}
		if s := st.str("status"); s != "admitted" && s != "not_in_queue" {
			t.Fatalf("after its order the visitor is %s: %s", s, st.Raw)
		}
		return taken >= 10 && res.Taken && res.Waiting == 0
	})
	if admissions != 1 {
		t.Fatalf("one join was admitted %d times", admissions)
	}
}
