package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/push"
)

// fields decodes a received message as a map.
func (m pushMsg) fields() map[string]any {
	var f map[string]any
	_ = json.Unmarshal([]byte(m.raw), &f)
	return f
}

// TestPushHello: the first message of a push connection says how long the
// server may stay silent on it and what time the server has, before the
// first state; SSE heartbeats are events the page can see.
func TestPushHello(t *testing.T) {
	ts := startServerOpts(t, nil, "rueidis", &serverOptions{NoTick: true, Push: push.Options{SSEHeartbeat: 300 * time.Millisecond}}, func(c *config) { c.WSHeartbeat = 2 * time.Second })
	// The interval, the grain heartbeats are put off by to go out together
	// (a sixteenth of the interval, at least a flush step of 100 ms) and
	// the flush step serving them.
	silence := map[string]float64{"ws": 2000 + 125 + 100, "sse": 300 + 100 + 100}
	v := newVisitor(t, ts.URL)
	v.join("hello")
	for _, kind := range []string{"ws", "sse"} {
		t.Run(kind, func(t *testing.T) {
			p := dial(t, kind, ts.URL, "hello", v.cred)
			var ms []pushMsg
			waitfor.Until(t, 5*time.Second, "hello and state", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				ms = append(append([]pushMsg(nil), p.hellos...), p.msgs...)
				return len(ms) >= 2
			})
			sort.SliceStable(ms, func(i, j int) bool { return ms[i].At.Before(ms[j].At) })
			h := ms[0].fields()
			want := silence[kind]
			if h["type"] != "hello" || h["heartbeatMs"] != want {
				t.Fatalf("first message %s: want a hello with heartbeatMs %v", ms[0].raw, want)
			}
			st, err := time.Parse(time.RFC3339Nano, h["serverTime"].(string))
			if err != nil || time.Since(st).Abs() > 5*time.Second {
				t.Fatalf("serverTime %v (%v)", h["serverTime"], err)
			}
			if ms[1].Type != "state" || ms[1].Status != "waiting" {
				t.Fatalf("second message %s: want the state", ms[1].raw)
			}
			if kind == "sse" {
				waitfor.Until(t, 5*time.Second, "a heartbeat event", func() bool { return p.heartbeats() > 0 })
			}
			p.mu.Lock()
			n := len(p.hellos)
			p.mu.Unlock()
			if n != 1 {
				t.Fatalf("%d hellos, want 1", n)
			}
		})
	}
}

// TestDegradedWhileRedisIsDown: a waiting visitor's push connection hears
// "degraded" while Redis does not answer, with the place it was shown, and
// an undegraded state once it is back.
func TestDegradedWhileRedisIsDown(t *testing.T) {
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			ts := startServer(t, srv, client, nil)
			for range 3 {
				newVisitor(t, ts.URL).join("outage")
			}
			v := newVisitor(t, ts.URL)
			v.join("outage")
			ws := dialWS(t, ts.URL, "outage", v.cred)
			sse := dialSSE(t, ts.URL, "outage", v.cred)
			waitfor.Until(t, 5*time.Second, "first states", func() bool { return ws.count("waiting") > 0 && sse.count("waiting") > 0 })

			srv.Stop()
			degraded := func(p *pushClient) (pushMsg, bool) {
				for _, m := range p.messages() {
					if m.fields()["degraded"] == true {
						return m, true
					}
				}
				return pushMsg{}, false
			}
			waitfor.Until(t, 15*time.Second, "degraded states", func() bool {
				_, a := degraded(ws)
				_, b := degraded(sse)
				return a && b
			})
			for _, p := range []*pushClient{ws, sse} {
				m, _ := degraded(p)
				if m.Status != "waiting" || m.Position != 4 {
					t.Fatalf("%s: degraded state %s: want waiting at the place shown (4)", p.kind, m.raw)
				}
			}
			seen := len(ws.messages())

			srv.Restart(t)
			waitfor.Until(t, 15*time.Second, "a state that is not degraded", func() bool {
				ms := ws.messages()
				for _, m := range ms[seen:] {
					if m.Type == "state" && m.fields()["degraded"] == nil {
						return true
					}
				}
				return false
			})
			if ws.isClosed() {
				t.Fatal("the WebSocket was closed; it should have stayed open through the outage")
			}
		})
	}
}

// TestConnectTicket: a push connection can carry a one-minute, single-use
// ticket instead of the credential; a used, forged or other room's ticket
// is refused with a clear code.
func TestConnectTicket(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	v := newVisitor(t, ts.URL)
	v.join("tix")
	mint := func(room string) string {
		r := v.do("POST", "/api/v1/rooms/"+room+"/ticket", "")
		if r.Code != 200 || r.str("ticket") == "" || r.num("expiresInMs") != 60000 {
			t.Fatalf("mint: %d %s", r.Code, r.Raw)
		}
		if strings.Contains(r.str("ticket"), v.cred) {
			t.Fatal("the ticket carries the credential")
		}
		return r.str("ticket")
	}
	tk := mint("tix")
	base := strings.Replace(ts.URL, "http://", "ws://", 1) + "/api/v1/rooms/tix/ws?ticket="
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, base+tk, nil)
	if err != nil {
		t.Fatalf("dial with a ticket: %v", err)
	}
	defer c.CloseNow()
	_, first, err := c.Read(ctx)
	if err != nil || !bytes.Contains(first, []byte(`"hello"`)) {
		t.Fatalf("first message %s %v", first, err)
	}

	anon := newVisitor(t, ts.URL) // no cookie: the ticket alone
	// The ticket with another signature: its last two characters changed
	// (a ticket that ended in "AA" already would be the ticket itself).
	forged := tk[:len(tk)-2] + "AA"
	if forged == tk {
		forged = tk[:len(tk)-2] + "BA"
	}
	for _, tc := range []struct{ name, ticket, room, code string }{
		{"used", tk, "tix", "ticket_used"},
		{"other room", mint("tix"), "other", "invalid_ticket"},
		{"forged", forged, "tix", "invalid_ticket"},
		{"garbage", "nope", "tix", "invalid_ticket"},
		{"expired", ts.tickets.Mint("tix", strings.SplitN(v.cred, ".", 2)[0], time.Now().Add(-time.Second)), "tix", "ticket_expired"},
	} {
		r := anon.do("GET", "/api/v1/rooms/"+tc.room+"/sse?ticket="+tc.ticket, "")
		if r.Code != 401 || r.errCode() != tc.code {
			t.Errorf("%s: %d %s, want 401 %s", tc.name, r.Code, r.Raw, tc.code)
		}
	}
	if r := anon.do("POST", "/api/v1/rooms/tix/ticket", ""); r.Code != 401 || r.errCode() != "missing_visitor" {
		t.Errorf("mint without a credential: %d %s", r.Code, r.Raw)
	}
}

// TestEmbeddingHeadersAndLogs: a page of an allowed origin can read Date
// (to correct its clock), and the access log never holds a credential or a
// ticket sent in a query.
func TestEmbeddingHeadersAndLogs(t *testing.T) {
	cfg, err := parseConfig([]string{"-origins", "https://shop.example", "-log-level", "debug"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.OpenRooms = true
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := newServer(context.Background(), cfg, manualAdmission(), log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.redis.Close()
	id, cred := s.signer.NewVisitor()
	if _, err := s.q.Join(context.Background(), "shop", id); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/api/v1/rooms/shop/status?a=1&visitor="+cred+"&ticket=sekrit-ticket", nil)
	req.Header.Set("Origin", "https://shop.example")
	resp, err := s.app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	exposed := strings.ToLower(resp.Header.Get("Access-Control-Expose-Headers"))
	if !strings.Contains(exposed, "date") || !strings.Contains(exposed, "retry-after") {
		t.Fatalf("Access-Control-Expose-Headers %q: want Date and Retry-After", exposed)
	}
	out := logs.String()
	if !strings.Contains(out, "/api/v1/rooms/shop/status") {
		t.Fatalf("no access log line: %s", out)
	}
	for _, secret := range []string{cred, strings.SplitN(cred, ".", 2)[1], "sekrit-ticket"} {
		if strings.Contains(out, secret) {
			t.Fatalf("the log holds a secret: %s", out)
		}
	}
	if !strings.Contains(out, "visitor=redacted") || !strings.Contains(out, "a=1") {
		t.Fatalf("the query is not logged redacted: %s", out)
	}
}
