package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/settings"
)

func (v *visitor) id() string { return strings.SplitN(v.cred, ".", 2)[0] }

// heartbeats counts the heartbeat messages a client received.
func (p *pushClient) heartbeats() int {
	n := 0
	for _, m := range p.messages() {
		if m.Type == "heartbeat" {
			n++
		}
	}
	return n
}

// holdThroughHeartbeats connects n visitors over WebSocket and n over SSE to
// a paused room, waits until every WebSocket client has received rounds
// heartbeats, and checks that no connection of either kind was dropped.
func holdThroughHeartbeats(t *testing.T, ts *testServer, n int, rounds int) {
	t.Helper()
	admin := newVisitor(t, ts.URL)
	if r := admin.admin("POST", "/rooms/quiet/pause", ""); r.Code != 200 {
		t.Fatalf("pause: %d %s", r.Code, r.Raw)
	}
	var clients []*pushClient
	for i := range 2 * n {
		v := newVisitor(t, ts.URL)
		if r := v.join("quiet"); r.str("status") != "waiting" {
			t.Fatalf("join: %s", r.Raw)
		}
		kind := "ws"
		if i%2 == 1 {
			kind = "sse"
		}
		clients = append(clients, dial(t, kind, ts.URL, "quiet", v.cred))
	}
	waitfor.Until(t, 5*time.Second, "first states", func() bool {
		for _, c := range clients {
			if len(c.messages()) == 0 {
				return false
			}
		}
		return true
	})
	within := time.Duration(rounds+2) * ts.cfg.WSHeartbeat
	waitfor.Until(t, within, "heartbeats", func() bool {
		for _, c := range clients {
			if c.kind == "ws" && c.heartbeats() < rounds {
				return false
			}
		}
		return true
	})
	for _, c := range clients {
		if c.isClosed() {
			t.Fatalf("a %s connection in a paused room was dropped", c.kind)
		}
	}
	if st := ts.hub.Stats(); st.Conns["ws"] != int64(n) || st.Conns["sse"] != int64(n) {
		t.Fatalf("connections %v, want %d of each", st.Conns, n)
	}
	for _, c := range clients {
		for _, m := range c.messages() {
			if m.Type == "heartbeat" {
				continue
			}
			if m.Status != "waiting" || !json.Valid([]byte(m.raw)) {
				t.Fatalf("%s got %s in a paused room", c.kind, m.raw)
			}
		}
	}
}

// TestPushHoldsInPausedRoom: push connections of a room where nothing moves
// stay open for more than two heartbeat intervals, and for longer than the
// 5 s write timeout of the state they were sent at connect (a write
// deadline left on the connection used to fail what was written next).
func TestPushHoldsInPausedRoom(t *testing.T) {
	eachServer(t, func(c *config) {
		withAdmin(c)
		c.WSHeartbeat = 2 * time.Second
	}, func(t *testing.T, ts *testServer) {
		holdThroughHeartbeats(t, ts, 5, 4)
	})
}

// TestPushHoldsPastProductionHeartbeat is the same with the default
// interval of 40 s: about a minute and a half, so it runs beside the other
// tests.
func TestPushHoldsPastProductionHeartbeat(t *testing.T) {
	t.Parallel()
	ts := startServer(t, redistest.StartReal(t), "rueidis", withAdmin)
	if ts.cfg.WSHeartbeat != 40*time.Second {
		t.Fatalf("default heartbeat interval %v", ts.cfg.WSHeartbeat)
	}
	holdThroughHeartbeats(t, ts, 10, 2)
}

// stateFields decodes a state message into its fields, without the ones
// that differ between two reads by design (nextPollMs is spread ±10%).
func stateFields(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("bad state %q: %v", raw, err)
	}
	if np, ok := m["nextPollMs"].(float64); !ok || np <= 0 {
		t.Fatalf("no nextPollMs in %s", raw)
	}
	m["nextPollMs"] = true
	return m
}

// TestPushStateIsPollState: before a scheduled opening, after its draw and
// while paused, a WebSocket and an SSE client get the state object a poll
// gets at that moment: the same fields and values.
func TestPushStateIsPollState(t *testing.T) {
	eachServer(t, withAdmin, func(t *testing.T, ts *testServer) {
		admin := newVisitor(t, ts.URL)
		opens := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		if r := admin.admin("PUT", "/rooms/drop", `{"opensAt":"`+opens+`"}`); r.Code != 200 {
			t.Fatalf("put: %d %s", r.Code, r.Raw)
		}
		type pair struct {
			v  *visitor
			ws *pushClient
			ss *pushClient
		}
		var ps []pair
		for range 12 {
			v := newVisitor(t, ts.URL)
			v.join("drop")
			ps = append(ps, pair{v, dial(t, "ws", ts.URL, "drop", v.cred), dial(t, "sse", ts.URL, "drop", v.cred)})
		}
		last := func(c *pushClient) string {
			ms := c.messages()
			if len(ms) == 0 {
				return ""
			}
			return ms[len(ms)-1].raw
		}
		// same waits until both push clients' last state equals a fresh poll.
		same := func(what string, p pair, check func(map[string]any) bool) {
			t.Helper()
			var got, want string
			waitfor.Until(t, 5*time.Second, what, func() bool {
				ts.visit.Polls().Forget("drop", p.v.id())
				want = p.v.status("drop").Raw
				w := stateFields(t, want)
				if !check(w) {
					return false
				}
				for _, c := range []*pushClient{p.ws, p.ss} {
					got = last(c)
					if got == "" || !reflect.DeepEqual(stateFields(t, got), w) {
						return false
					}
				}
				return true
			})
		}
		for _, p := range ps {
			same("pre-queue state pushed", p, func(m map[string]any) bool {
				_, hasPos := m["position"]
				return m["opensAt"] != nil && !hasPos
			})
		}
		// Opening: the first read after opensAt draws the pre-queue, and
		// the open event brings every push client its drawn place.
		waitfor.Until(t, 5*time.Second, "opening", func() bool {
			ts.visit.Polls().Forget("drop", ps[0].v.id())
			return ps[0].v.status("drop").num("position") > 0
		})
		var drawn []int64
		for _, p := range ps {
			same("drawn position pushed", p, func(m map[string]any) bool { return m["position"] != nil })
			for _, c := range []*pushClient{p.ws, p.ss} {
				ms := c.messages()
				if ms[len(ms)-1].Position < 1 {
					t.Fatalf("drawn position %s", ms[len(ms)-1].raw)
				}
			}
			drawn = append(drawn, p.ws.messages()[len(p.ws.messages())-1].Position)
		}
		slices.Sort(drawn)
		for i, d := range drawn {
			if d != int64(i+1) {
				t.Fatalf("drawn positions %v, want 1..%d", drawn, len(ps))
			}
		}
		// Pausing goes out at once, with the same fields as a poll.
		if r := admin.admin("POST", "/rooms/drop/pause", ""); r.Code != 200 {
			t.Fatalf("pause: %d %s", r.Code, r.Raw)
		}
		for _, p := range ps {
			same("paused state pushed", p, func(m map[string]any) bool { return m["paused"] == true })
		}
	})
}

// TestWebSocketReadSide: with the read side waiting on the socket between
// frames, the server still answers a client's pings, reads and discards
// its messages, and takes its close, through several rounds of waiting.
func TestWebSocketReadSide(t *testing.T) {
	ts := startServer(t, nil, "rueidis", func(c *config) { c.WSHeartbeat = push.FrameWait + time.Second })
	v := newVisitor(t, ts.URL)
	v.join("drop")
	p := dialWS(t, ts.URL, "drop", v.cred)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Pings over more than two frame waits: each is answered whether the
	// server was waiting on the socket or inside a read.
	end := time.Now().Add(2*push.FrameWait + time.Second)
	pings := 0
	for time.Now().Before(end) {
		if err := p.ws.Ping(ctx); err != nil {
			t.Fatalf("ping %d: %v", pings, err)
		}
		if err := p.ws.Write(ctx, websocket.MessageText, []byte(`{"hello":1}`)); err != nil {
			t.Fatalf("write: %v", err)
		}
		pings++
		time.Sleep(300 * time.Millisecond) // pacing the client, not synchronising
	}
	if p.isClosed() {
		t.Fatal("connection closed")
	}
	// A message, then silence for longer than a frame wait: the server
	// goes back to waiting without a deadline, and the connection lives
	// on through heartbeats.
	if err := p.ws.Write(ctx, websocket.MessageText, []byte(`{"hello":2}`)); err != nil {
		t.Fatalf("write: %v", err)
	}
	seen := p.heartbeats()
	waitfor.Until(t, 4*ts.cfg.WSHeartbeat, "two more heartbeats", func() bool { return p.heartbeats() >= seen+2 })
	if p.isClosed() || ts.hub.Stats().Conns["ws"] != 1 {
		t.Fatal("connection closed after a quiet spell")
	}
	if err := p.ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
	waitfor.Until(t, 5*time.Second, "server side gone", func() bool { return ts.hub.Stats().Conns["ws"] == 0 })
}

// TestSSEPeerThatNeverReadsIsDropped: a stream whose peer takes nothing
// (its receive window stays shut) is dropped after a few heartbeats, as a
// WebSocket that does not answer pings is; a reading one in the same room
// stays.
func TestSSEPeerThatNeverReadsIsDropped(t *testing.T) {
	ts := startServerOpts(t, nil, "rueidis", &serverOptions{NoTick: true, Push: push.Options{SSEHeartbeat: 300 * time.Millisecond}}, withAdmin)
	v, w := newVisitor(t, ts.URL), newVisitor(t, ts.URL)
	v.join("drop")
	w.join("drop")
	reader := dialSSE(t, ts.URL, "drop", w.cred)

	// A raw client with a tiny receive buffer that sends its request and
	// then never reads.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	nc, err := d.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprintf(nc, "GET /api/v1/rooms/drop/sse?visitor=%s HTTP/1.1\r\nHost: x\r\n\r\n", v.cred)
	waitfor.Until(t, 5*time.Second, "both streams", func() bool { return ts.hub.Stats().Conns["sse"] == 2 })

	// Fill the silent peer's window and the server's send buffer with
	// state changes, until the server gives up on it.
	ctx := context.Background()
	paused := false
	// Within a few heartbeats once its window is shut, not when megabytes
	// of kernel buffer have filled.
	waitfor.Until(t, 15*time.Second, "silent stream dropped", func() bool {
		paused = !paused
		if _, err := ts.q.UpdateRoomConfig(ctx, "drop", func(c *settings.Room) error { c.Paused = paused; return nil }); err != nil {
			t.Fatal(err)
		}
		return ts.hub.Stats().Conns["sse"] == 1
	})
	if reader.isClosed() {
		t.Fatal("the reading stream was dropped too")
	}
}
