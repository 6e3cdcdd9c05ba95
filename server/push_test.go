package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// pushMsg is one message a push client received.
type pushMsg struct {
	At        time.Time
	Type      string  `json:"type"`
	Status    string  `json:"status"`
	Position  int64   `json:"position"`
	Rate      float64 `json:"ratePerSecond"`
	Paused    bool    `json:"paused"`
	Token     string  `json:"token"`
	NotBefore string  `json:"notBefore"`
	AfterMs   int64   `json:"afterMs"`
	raw       string
}

// pushClient is a WebSocket or SSE client that records what it receives.
type pushClient struct {
	kind   string
	mu     sync.Mutex
	msgs   []pushMsg
	hellos []pushMsg
	closed chan struct{}
	cancel context.CancelFunc
	ws     *websocket.Conn
	resp   *http.Response
}

// add records a message. The hello that opens every connection is kept
// apart (hellos), so msgs holds what the hub sent.
func (p *pushClient) add(raw []byte) {
	m := pushMsg{At: time.Now(), raw: string(raw)}
	_ = json.Unmarshal(raw, &m)
	p.mu.Lock()
	if m.Type == "hello" {
		p.hellos = append(p.hellos, m)
	} else {
		p.msgs = append(p.msgs, m)
	}
	p.mu.Unlock()
}

func (p *pushClient) messages() []pushMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]pushMsg(nil), p.msgs...)
}

// shown is the place the client's page shows now: the last waiting
// state's position moved on at its rate (0 when the last state is not a
// waiting one).
func (p *pushClient) shown() int64 {
	ms := p.messages()
	if len(ms) == 0 || ms[len(ms)-1].Status != "waiting" {
		return 0
	}
	m := ms[len(ms)-1]
	if m.Paused || m.fields()["degraded"] == true {
		return m.Position
	}
	return wire.Shown(m.Position, m.Rate, time.Since(m.At))
}

func (p *pushClient) count(status string) int {
	n := 0
	for _, m := range p.messages() {
		if m.Status == status {
			n++
		}
	}
	return n
}

func (p *pushClient) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

func (p *pushClient) Close() {
	p.cancel()
	if p.ws != nil {
		p.ws.CloseNow()
	}
	if p.resp != nil {
		p.resp.Body.Close()
	}
	<-p.closed
}

func dialWS(tb testing.TB, base, room, cred string) *pushClient {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := strings.Replace(base, "http://", "ws://", 1) + "/api/v1/rooms/" + room + "/ws?visitor=" + cred
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	c, _, err := websocket.Dial(dctx, u, nil)
	if err != nil {
		cancel()
		tb.Fatalf("dial ws: %v", err)
	}
	p := &pushClient{kind: "ws", closed: make(chan struct{}), cancel: cancel, ws: c}
	go func() {
		defer close(p.closed)
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			p.add(data)
		}
	}()
	tb.Cleanup(p.Close)
	return p
}

// sseClient has no overall timeout: a stream lives until the test closes it
// (noKeepAlive's 5 s would end every stream at 5 s).
var sseClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: 5 * time.Second}}

func dialSSE(tb testing.TB, base, room, cred string) *pushClient {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/rooms/"+room+"/sse?visitor="+cred, nil)
	resp, err := sseClient.Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("dial sse: %v", err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		tb.Fatalf("sse: %d %v", resp.StatusCode, resp.Header)
	}
	p := &pushClient{kind: "sse", closed: make(chan struct{}), cancel: cancel, resp: resp}
	go func() {
		defer close(p.closed)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				p.add([]byte(data))
			}
		}
	}()
	tb.Cleanup(p.Close)
	return p
}

func dial(tb testing.TB, kind, base, room, cred string) *pushClient {
	if kind == "ws" {
		return dialWS(tb, base, room, cred)
	}
	return dialSSE(tb, base, room, cred)
}

// TestPushAcrossInstances: a visitor connected to B, admitted by a tick on
// A, is told once, at or after notBefore, on both tabs; nobody else is.
func TestPushAcrossInstances(t *testing.T) {
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			a := startServer(t, srv, client, func(c *config) { c.Capacity.Batch = 1 })
			b := startServer(t, srv, client, func(c *config) { c.Capacity.Batch = 1 })
			first, second := newVisitor(t, a.URL), newVisitor(t, a.URL)
			first.join("drop")
			second.join("drop")
			tab1 := dialWS(t, b.URL, "drop", first.cred)
			tab2 := dialSSE(t, b.URL, "drop", first.cred)
			other := dialWS(t, b.URL, "drop", second.cred)
			waitfor.Until(t, 5*time.Second, "initial states", func() bool {
				return tab1.count("waiting") > 0 && tab2.count("waiting") > 0 && other.count("waiting") > 0
			})
			res, err := a.q.Admit(context.Background(), "drop")
			for err == nil && !res.Taken {
				res, err = a.q.Admit(context.Background(), "drop")
			}
			if err != nil || len(res.Admitted) != 1 {
				t.Fatalf("admit: %+v %v", res, err)
			}
			nb := res.Admitted[0].NotBefore
			waitfor.Until(t, 5*time.Second, "admitted on both tabs", func() bool {
				return tab1.count("admitted") == 1 && tab2.count("admitted") == 1
			})
			for _, tab := range []*pushClient{tab1, tab2} {
				for _, m := range tab.messages() {
					if m.Status == "admitted" {
						if m.At.Before(nb) {
							t.Fatalf("%s told %v before notBefore", tab.kind, nb.Sub(m.At))
						}
						if m.Token == "" {
							t.Fatal("admitted without token")
						}
					}
				}
			}
			// The other visitor moves up (its page moves on by itself at the
			// rate it was told), and is never told it was admitted.
			waitfor.Until(t, 5*time.Second, "other moves to 1", func() bool { return other.shown() == 1 })
			if other.count("admitted") != 0 {
				t.Fatal("another visitor received the admission")
			}
			// A short wait past the reconcile-free period must not repeat it.
			if tab1.count("admitted") != 1 || tab2.count("admitted") != 1 {
				t.Fatal("told twice")
			}
		})
	}
}

// TestPushManyClients runs three instances with their tick loops on one
// Redis, a few hundred WS and SSE clients, and checks every admitted
// visitor is told exactly once, none missed, and positions never go up.
// It also counts PUBLISH and SUBSCRIBE calls in Redis.
func TestPushManyClients(t *testing.T) {
	srv := redistest.StartReal(t)
	// The test starts the instances' admission loops itself, once every
	// client is connected.
	mutate := func(c *config) {
		c.Capacity.Batch = 10
		c.Capacity.Tick = 50 * time.Millisecond
	}
	servers := []*testServer{
		startServer(t, srv, "rueidis", mutate),
		startServer(t, srv, "go-redis", mutate),
		startServer(t, srv, "rueidis", mutate),
	}
	const n = 300
	rooms := []string{"room-a", "room-b"}
	type entry struct {
		room string
		c    *pushClient
	}
	var clients []entry
	for i := range n {
		ts := servers[i%len(servers)]
		room := rooms[i%len(rooms)]
		v := newVisitor(t, ts.URL)
		v.join(room)
		kind := "ws"
		if i%2 == 1 {
			kind = "sse"
		}
		clients = append(clients, entry{room, dial(t, kind, servers[(i+1)%len(servers)].URL, room, v.cred)})
	}
	waitfor.Until(t, 10*time.Second, "every client has its first state", func() bool {
		for _, e := range clients {
			if len(e.c.messages()) == 0 {
				return false
			}
		}
		return true
	})
	rdb := redisCmd(t, srv.Addr)
	rdb("CONFIG", "RESETSTAT")
	// Start admission on every instance now (three loops, one batch per tick).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, ts := range servers {
		wg.Go(func() { _ = ts.q.Run(ctx) })
	}
	waitfor.Until(t, 60*time.Second, "everyone admitted and told", func() bool {
		for _, e := range clients {
			if e.c.count("admitted") == 0 {
				return false
			}
		}
		return true
	})
	cancel()
	wg.Wait()
	for i, e := range clients {
		if got := e.c.count("admitted"); got != 1 {
			t.Fatalf("client %d (%s) told %d times", i, e.c.kind, got)
		}
		last := int64(1 << 62)
		for _, m := range e.c.messages() {
			if m.Status != "waiting" {
				continue
			}
			if m.Position > last {
				t.Fatalf("client %d: position went up from %d to %d", i, last, m.Position)
			}
			last = m.Position
		}
	}
	stats := rdb("INFO", "commandstats")
	publishes := cmdCalls(stats, "publish")
	subscribes := cmdCalls(stats, "subscribe")
	// Every tick that admitted anyone published one message per room: with
	// 150 visitors per room and batch 10, that is 15 admitting ticks per room.
	if publishes != int64(len(rooms)*(n/len(rooms)/10)) {
		t.Fatalf("PUBLISH calls = %d, want %d (one per room per admitting tick)", publishes, len(rooms)*(n/len(rooms)/10))
	}
	if subscribes != 0 {
		t.Fatalf("SUBSCRIBE calls after the stats reset = %d, want 0 (subscriptions were made once, at the first connection)", subscribes)
	}
	t.Logf("%d clients over 3 instances: %d PUBLISH for %d rooms", n, publishes, len(rooms))
}

// TestSubscribeOncePerRoomPerInstance counts SUBSCRIBE calls.
func TestSubscribeOncePerRoomPerInstance(t *testing.T) {
	srv := redistest.StartReal(t)
	a := startServer(t, srv, "rueidis", nil)
	b := startServer(t, srv, "go-redis", nil)
	rdb := redisCmd(t, srv.Addr)
	rdb("CONFIG", "RESETSTAT")
	for i := range 20 {
		for _, ts := range []*testServer{a, b} {
			v := newVisitor(t, ts.URL)
			v.join("room-" + fmt.Sprint(i%2))
			dial(t, []string{"ws", "sse"}[i%2], ts.URL, "room-"+fmt.Sprint(i%2), v.cred)
		}
	}
	waitfor.Until(t, 5*time.Second, "connections", func() bool {
		return a.hub.Stats().Visitors == 20 && b.hub.Stats().Visitors == 20
	})
	// SUBSCRIBE may carry several channels, and the rueidis broker's first
	// SUBSCRIBE may be a PING on an empty set: count subscriptions by channel.
	if got := cmdCalls(rdb("INFO", "commandstats"), "subscribe"); got > 4 || got < 2 {
		t.Fatalf("SUBSCRIBE calls = %d for 2 rooms on 2 instances", got)
	}
	for _, room := range []string{"room-0", "room-1"} {
		res := rdb("PUBSUB", "NUMSUB", "wr:{"+room+"}:events")
		if !strings.HasSuffix(strings.TrimSpace(res), " 2") {
			t.Fatalf("NUMSUB %s = %q, want 2 (one per instance)", room, res)
		}
	}
}

// TestPubSubKilledMidRun kills the pub/sub connections while admissions go
// on; every admitted visitor is still told.
func TestPubSubKilledMidRun(t *testing.T) {
	for _, client := range clientKinds {
		t.Run(client, func(t *testing.T) {
			srv := redistest.StartReal(t)
			ts := startServer(t, srv, client, func(c *config) { c.Capacity.Batch = 5 })
			var clients []*pushClient
			for i := range 40 {
				v := newVisitor(t, ts.URL)
				v.join("kill")
				clients = append(clients, dial(t, []string{"ws", "sse"}[i%2], ts.URL, "kill", v.cred))
			}
			waitfor.Until(t, 5*time.Second, "first states", func() bool {
				for _, c := range clients {
					if len(c.messages()) == 0 {
						return false
					}
				}
				return true
			})
			rdb := redisCmd(t, srv.Addr)
			admitted := 0
			for admitted < 40 {
				res, err := ts.q.Admit(context.Background(), "kill")
				if err != nil {
					t.Fatal(err)
				}
				admitted += len(res.Admitted)
				if admitted == 10 {
					rdb("CLIENT", "KILL", "TYPE", "pubsub")
				}
				if !res.Taken {
					// This tick's batch is taken: try again after a clock
					// moment, the next tick boundary, not another goroutine.
					time.Sleep(5 * time.Millisecond)
				}
			}
			waitfor.Until(t, 30*time.Second, "every admitted visitor told", func() bool {
				for _, c := range clients {
					if c.count("admitted") != 1 {
						return false
					}
				}
				return true
			})
			waitfor.Until(t, 10*time.Second, "ready again", ts.hub.Ready)
		})
	}
}

// TestVanishedClientsNoticed: a WS or SSE client whose connection goes away
// is removed from the hub within seconds.
func TestVanishedClientsNoticed(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	for _, kind := range []string{"ws", "sse"} {
		v := newVisitor(t, ts.URL)
		v.join("gone")
		c := dial(t, kind, ts.URL, "gone", v.cred)
		waitfor.Until(t, 5*time.Second, "connected", func() bool { return ts.hub.Stats().Conns[kind] == 1 })
		c.Close()
		waitfor.Until(t, 5*time.Second, kind+" disconnect noticed", func() bool { return ts.hub.Stats().Conns[kind] == 0 })
	}
}

// TestConnectionLimits: the sixth connection of one visitor is refused with
// a clear error.
func TestConnectionLimits(t *testing.T) {
	ts := startServer(t, nil, "rueidis", func(c *config) { c.MaxPerVis = 2 })
	v := newVisitor(t, ts.URL)
	v.join("lim")
	dialWS(t, ts.URL, "lim", v.cred)
	dialSSE(t, ts.URL, "lim", v.cred)
	waitfor.Until(t, 5*time.Second, "2 conns", func() bool {
		st := ts.hub.Stats()
		return st.Visitors == 1 && st.Conns["ws"] == 1 && st.Conns["sse"] == 1
	})
	// SSE: a JSON 429.
	resp, err := noKeepAlive.Get(ts.URL + "/api/v1/rooms/lim/sse?visitor=" + v.cred)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error struct{ Code string } }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != 429 || body.Error.Code != "too_many_connections_for_visitor" {
		t.Fatalf("third SSE: %d %+v", resp.StatusCode, body)
	}
	// WS: closed with a policy-violation code naming the reason.
	c, _, err := websocket.Dial(context.Background(), strings.Replace(ts.URL, "http", "ws", 1)+"/api/v1/rooms/lim/ws?visitor="+v.cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Read(context.Background())
	var ce websocket.CloseError
	if !asCloseError(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "too_many_connections_for_visitor" {
		t.Fatalf("third WS: %v", err)
	}
	// A client message over the read limit closes with 1009.
	v2 := newVisitor(t, ts.URL)
	v2.join("lim")
	big := dialWS(t, ts.URL, "lim", v2.cred)
	_ = big.ws.Write(context.Background(), websocket.MessageText, []byte(strings.Repeat("x", 4096)))
	waitfor.Until(t, 5*time.Second, "oversized message closes", big.isClosed)
}

// TestDrain: on shutdown every push client is told to reconnect, with
// afterMs spread over the window, and the server exits in time: neither the
// drain nor the HTTP shutdown runs into the shutdown deadline (each logs a
// warning when it does), whatever the machine's speed.
func TestDrain(t *testing.T) {
	srv := redistest.StartReal(t)
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ts := startServerWithLog(t, srv, "rueidis", log, func(c *config) { c.DrainWindow = time.Second })
	var clients []*pushClient
	for i := range 20 {
		v := newVisitor(t, ts.URL)
		v.join("drain")
		clients = append(clients, dial(t, []string{"ws", "sse"}[i%2], ts.URL, "drain", v.cred))
	}
	waitfor.Until(t, 5*time.Second, "connected", func() bool { return ts.hub.Stats().Visitors == 20 })
	ts.shutdown(t)
	if out := logs.String(); strings.Contains(out, "msg=drain") || strings.Contains(out, `msg="http shutdown"`) {
		t.Fatalf("shutdown ran into its deadline:\n%s", out)
	}
	seen := map[int64]bool{}
	for i, c := range clients {
		waitfor.Until(t, 5*time.Second, "closed", c.isClosed)
		msgs := c.messages()
		last := msgs[len(msgs)-1]
		if last.Type != "reconnect" || last.AfterMs < 0 || last.AfterMs > 1000 {
			t.Fatalf("client %d: last message %q", i, last.raw)
		}
		seen[last.AfterMs/100] = true
	}
	if len(seen) < 4 {
		t.Fatalf("afterMs not spread over the window: %v", seen)
	}
}
