package push

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// quietBroker is a pub/sub that is always up and never delivers: these
// tests need the hub's connections, not its events.
type quietBroker struct{}

func (quietBroker) Run(ctx context.Context, r hub.Receiver) error {
	r.Up()
	<-ctx.Done()
	return nil
}
func (quietBroker) Subscribe(context.Context, string) error   { return nil }
func (quietBroker) Unsubscribe(context.Context, string) error { return nil }
func (quietBroker) Ready() bool                               { return true }

// firstInLine says every visitor waits at the front.
type firstInLine struct{}

func (firstInLine) States(_ context.Context, room string, visitors []string) ([]wire.State, error) {
	out := make([]wire.State, len(visitors))
	for i := range out {
		out[i] = wire.State{Room: room, Status: wire.StatusWaiting, Position: 1}
	}
	return out, nil
}

// Reclaim is never asked for: no visitor reads as lost.
func (firstInLine) Reclaim(context.Context, string, []string, []wire.Claim, []wire.State) error {
	return errors.New("no visitor is lost")
}

func (firstInLine) Admitted(room, _ string, nb, exp time.Time) wire.State {
	return wire.State{Room: room, Status: wire.StatusAdmitted, NotBefore: nb, ExpiresAt: exp}
}

func (firstInLine) Estimate(string, int64) (int64, float64, time.Duration) {
	return 1, 1, time.Second
}

// testPush is a Server behind a fiber app on a loopback port, with a
// running hub.
type testPush struct {
	*Server
	hub *hub.Hub
	url string
}

// startPush serves /ws/:visitor and /sse/:visitor of room "r" until the
// test ends, then shuts down in the server's order.
func startPush(t *testing.T) *testPush {
	t.Helper()
	return startPushWith(t, Options{})
}

// startPushWith is startPush with o (its heartbeats set to 300 ms).
func startPushWith(t *testing.T, o Options) *testPush {
	t.Helper()
	h := hub.New(quietBroker{}, firstInLine{}, nil, &hub.Options{MaxPerVisitor: 1})
	o.WSHeartbeat, o.SSEHeartbeat = 300*time.Millisecond, 300*time.Millisecond
	ps := New(h, &o)
	// ReduceMemoryUsage, as the server runs: a hijacked connection then
	// reads from the socket, not through fasthttp's pooled reader, and may
	// leave the hijack handler to wait in the epoll set.
	app := fiber.New(fiber.Config{DisableStartupMessage: true, ErrorHandler: httperr.Handler(nil), ReduceMemoryUsage: true})
	app.Server().KeepHijackedConns = true
	target := func(c *fiber.Ctx) Target {
		return Target{Room: "r", Visitor: strings.Clone(c.Params("visitor"))}
	}
	app.Get("/ws/:visitor", func(c *fiber.Ctx) error { return ps.WS(c, target(c)) })
	app.Get("/sse/:visitor", func(c *fiber.Ctx) error { return ps.SSE(c, target(c)) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hubDone := make(chan error, 1)
	go func() { hubDone <- h.Run(ctx) }()
	ps.Start()
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-hubDone; err != nil {
			t.Errorf("hub: %v", err)
		}
		if err := app.Shutdown(); err != nil {
			t.Errorf("app shutdown: %v", err)
		}
		<-served
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		ps.Shutdown(sctx)
		if n := ps.Open(); n != 0 {
			t.Errorf("%d connections left after shutdown", n)
		}
	})
	return &testPush{Server: ps, hub: h, url: "http://" + ln.Addr().String()}
}

// msgType is the "type" of a pushed JSON message.
func msgType(t *testing.T, b []byte) string {
	t.Helper()
	var m struct{ Type string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	return m.Type
}

func (tp *testPush) dialWS(t *testing.T, visitor string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tp.url, "http")+"/ws/"+visitor, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// TestWebSocketSession: a WebSocket hears the hello (with the hub's
// silence for the interval), its state and heartbeats; between messages
// it waits in the epoll set where there is one, still answering pings; a
// client that closes is noticed.
func TestWebSocketSession(t *testing.T) {
	tp := startPush(t)
	c := tp.dialWS(t, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var types []string
	for len(types) < 3 {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read after %v: %v", types, err)
		}
		types = append(types, msgType(t, b))
		if len(types) == 1 {
			var h struct{ HeartbeatMs int64 }
			_ = json.Unmarshal(b, &h)
			if want := tp.hub.BeatSilence(300 * time.Millisecond).Milliseconds(); h.HeartbeatMs != want {
				t.Fatalf("hello %s: want heartbeatMs %d", b, want)
			}
		}
	}
	if strings.Join(types, ",") != "hello,state,heartbeat" {
		t.Fatalf("messages %v: want hello, state, heartbeat", types)
	}
	if runtime.GOOS == "linux" {
		waitfor.Until(t, 5*time.Second, "the connection in the epoll set", func() bool { return tp.Waiting() == 1 })
	}
	// Pings are read by the library's reader, which the client's Read
	// serves for the answers.
	readDone := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				readDone <- err
				return
			}
		}
	}()
	for range 3 {
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
	}
	if tp.Open() != 1 {
		t.Fatalf("%d open, want 1", tp.Open())
	}
	if err := c.Close(websocket.StatusNormalClosure, "bye"); err != nil {
		t.Fatalf("close handshake: %v", err)
	}
	<-readDone
	waitfor.Until(t, 5*time.Second, "the server side gone", func() bool { return tp.Open() == 0 && tp.Waiting() == 0 })
}

// TestSSESession: a stream hears the hello, its state and heartbeat
// events; a client that goes is noticed.
func TestSSESession(t *testing.T) {
	tp := startPush(t)
	req, _ := http.NewRequest("GET", tp.url+"/sse/v1", nil)
	req.Header.Set("Last-Event-ID", "7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	r := bufio.NewReader(resp.Body)
	var got []string
	for len(got) < 3 {
		ev := readEvent(t, r)
		got = append(got, strings.Join(ev[:len(ev)-1], "|"))
	}
	if !strings.HasSuffix(got[0], "event: hello") || got[1] != "id: 8|event: state" || got[2] != "event: heartbeat" {
		t.Fatalf("events %q: want hello, state (id 8), heartbeat", got)
	}
	if runtime.GOOS == "linux" {
		waitfor.Until(t, 5*time.Second, "the stream in the epoll set", func() bool { return tp.Waiting() == 1 })
	}
	resp.Body.Close()
	waitfor.Until(t, 5*time.Second, "the stream gone", func() bool { return tp.Open() == 0 && tp.Waiting() == 0 })
}

// TestRefusals: a request that asks for no upgrade gets 426; a visitor
// over its connection limit gets a policy close on a WebSocket and a 429
// on a stream, each with its stable code.
func TestRefusals(t *testing.T) {
	tp := startPush(t)
	resp, err := http.Get(tp.url + "/ws/v1")
	if err != nil {
		t.Fatal(err)
	}
	code := errCode(t, resp)
	if resp.StatusCode != 426 || code != "upgrade_required" || resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("no upgrade: %d %s %v", resp.StatusCode, code, resp.Header)
	}

	first := tp.dialWS(t, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := first.Read(ctx); err != nil {
		t.Fatal(err)
	}
	second := tp.dialWS(t, "v1")
	_, _, err = second.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "too_many_connections_for_visitor" {
		t.Fatalf("second WebSocket of a visitor: %v", err)
	}
	resp, err = http.Get(tp.url + "/sse/v1")
	if err != nil {
		t.Fatal(err)
	}
	if code := errCode(t, resp); resp.StatusCode != 429 || code != "too_many_connections_for_visitor" {
		t.Fatalf("stream over the limit: %d %s", resp.StatusCode, code)
	}
	waitfor.Until(t, 5*time.Second, "only the first connection left", func() bool { return tp.Open() == 1 })
}

// TestDrainEndsWaiting: connections the hub drains hear the reconnect
// hint, are closed and leave the epoll set.
func TestDrainEndsWaiting(t *testing.T) {
	tp := startPush(t)
	ws := tp.dialWS(t, "v1")
	resp, err := http.Get(tp.url + "/sse/v2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitfor.Until(t, 5*time.Second, "both connections attached", func() bool { return tp.hub.Stats().Conns["ws"] == 1 && tp.hub.Stats().Conns["sse"] == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.hub.Drain(ctx, 50*time.Millisecond); err != nil {
		t.Fatalf("drain: %v", err)
	}
	last := ""
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Fatalf("WebSocket ended with %v, want going away", err)
			}
			break
		}
		last = msgType(t, b)
	}
	if last != "reconnect" {
		t.Fatalf("last WebSocket message %q, want reconnect", last)
	}
	body := bufio.NewReader(resp.Body)
	sawReconnect := false
	for {
		l, err := body.ReadString('\n')
		if err != nil {
			break
		}
		sawReconnect = sawReconnect || l == "event: reconnect\n"
	}
	if !sawReconnect {
		t.Fatal("the stream ended without a reconnect event")
	}
	waitfor.Until(t, 5*time.Second, "every connection ended", func() bool { return tp.Open() == 0 && tp.Waiting() == 0 })
}

// errCode reads the stable code of a JSON error response.
func errCode(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var body struct{ Error struct{ Code string } }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%d: no JSON error: %v", resp.StatusCode, err)
	}
	return body.Error.Code
}
