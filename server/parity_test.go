package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestServerParity: every other server test runs on real Redis with
// rueidis (eachServer). This one holds the embedded Redis and go-redis to
// it: a room's way through a server (an admin's change, joins, a
// WebSocket and an SSE stream, an admission each stream hears through the
// hub's pub/sub, a token spent once, a leave) answers alike on real Redis
// and the embedded one, with each client, as the server connects to each
// (internal/redisconn) and subscribes with each client's broker.
func TestServerParity(t *testing.T) {
	type run struct {
		name string
		log  []string
	}
	var runs []run
	for _, kind := range redistest.Kinds {
		for _, client := range clientKinds {
			name := kind + "/" + client
			t.Run(name, func(t *testing.T) {
				var srv *redistest.Server // nil: the server's own embedded Redis
				if kind == "real" {
					srv = redistest.StartReal(t)
				}
				ts := startServer(t, srv, client, withServiceKeys(t, func(c *config) {
					withAdmin(c)
					c.Capacity.Batch = 1
				}))
				runs = append(runs, run{name, serverParityScenario(t, ts)})
			})
		}
	}
	if len(runs) < 2 {
		return
	}
	want := runs[0]
	for _, got := range runs[1:] {
		for i := range max(len(want.log), len(got.log)) {
			w, g := "(nothing)", "(nothing)"
			if i < len(want.log) {
				w = want.log[i]
			}
			if i < len(got.log) {
				g = got.log[i]
			}
			if w != g {
				t.Errorf("%s differs from %s at step %d:\n  %s: %s\n  %s: %s\nall the steps of %s:\n  %s\nof %s:\n  %s",
					got.name, want.name, i+1, want.name, w, got.name, g,
					want.name, strings.Join(want.log, "\n  "), got.name, strings.Join(got.log, "\n  "))
				break
			}
		}
	}
}

// serverParityScenario returns what a room's way through ts showed, one
// line a step, without what differs from run to run (times, tokens,
// credentials).
func serverParityScenario(t *testing.T, ts *testServer) []string {
	var log []string
	note := func(format string, args ...any) { log = append(log, fmt.Sprintf(format, args...)) }
	said := func(r reply) string {
		if r.errCode() != "" {
			return fmt.Sprintf("%d %s", r.Code, r.errCode())
		}
		return fmt.Sprintf("%d %s position %d message %q", r.Code, r.str("status"), r.num("position"), r.str("message"))
	}

	op := newVisitor(t, ts.URL)
	r := op.admin("PUT", "/rooms/drop", `{"batch":1,"message":"Hello · 東京"}`)
	note("put room: %d", r.Code)
	r = op.admin("GET", "/rooms/drop", "")
	note("get room: %d batch %v message %q", r.Code, r.Body["batch"], r.str("message"))

	a, b := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
	note("join a: %s", said(a.join("drop")))
	note("join b: %s", said(b.join("drop")))
	note("join a again: %s", said(a.join("drop")))
	ws := dialWS(t, ts.URL, "drop", a.cred)
	sse := dialSSE(t, ts.URL, "drop", b.cred)
	waitfor.Until(t, 5*time.Second, "first states", func() bool { return ws.count("waiting") > 0 && sse.count("waiting") > 0 })
	firstWaiting := func(p *pushClient) int64 {
		for _, m := range p.messages() {
			if m.Status == "waiting" {
				return m.Position
			}
		}
		return 0
	}
	note("first pushed: ws waiting at %d, sse waiting at %d", firstWaiting(ws), firstWaiting(sse))

	// The admission reaches the stream through Redis's pub/sub: the hub's
	// reconcile (every 10 s) comes too late for these waits.
	admitOne := func() {
		t.Helper()
		waitfor.Until(t, 5*time.Second, "a tick taken", func() bool {
			res, err := ts.q.Admit(context.Background(), "drop")
			if err != nil {
				t.Fatal(err)
			}
			return res.Taken
		})
	}
	admitOne()
	waitfor.Until(t, 5*time.Second, "a admitted on its WebSocket", func() bool { return ws.count("admitted") == 1 })
	var admitted pushMsg
	for _, m := range ws.messages() {
		if m.Status == "admitted" {
			admitted = m
		}
	}
	note("a pushed: admitted, token %v", admitted.Token != "")
	note("b told it was admitted: %d times", sse.count("admitted"))

	nb, err := time.Parse(time.RFC3339Nano, admitted.NotBefore)
	if err != nil {
		t.Fatalf("notBefore %q: %v", admitted.NotBefore, err)
	}
	waitfor.Until(t, 5*time.Second, "notBefore", func() bool { return time.Now().After(nb.Add(5 * time.Millisecond)) })
	body := fmt.Sprintf(`{"token":%q,"visitor":%q}`, admitted.Token, a.cred)
	r = consumeAs(a, testServiceKey, body)
	note("consume: %d consumed %v room %s", r.Code, r.Body["consumed"], r.str("room"))
	r = consumeAs(a, testServiceKey, body)
	note("consume again: %d %s", r.Code, r.errCode())
	note("status a: %s", said(a.status("drop")))

	r = b.do("DELETE", "/api/v1/rooms/drop/queue", "")
	note("leave b: %d", r.Code)
	note("status b: %s", said(b.status("drop")))

	r = op.admin("PUT", "/rooms/drop", `{"batch":1,"paused":true}`)
	note("pause: %d", r.Code)
	c := newVisitor(t, ts.URL)
	r = c.join("drop")
	note("join c while paused: %s paused %v", said(r), r.Body["paused"])
	return log
}
