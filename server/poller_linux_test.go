package main

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
)

// waitLoops counts the goroutines parked in a push connection's read side
// of their own (a WebSocket wait loop, or an SSE stream's read).
func waitLoops() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "push.(*Server).wsWaitLoop(") + strings.Count(string(buf), "push.(*Server).serveSSE(")
}

// loopState is the state of the epoll set's loop goroutine as a stack
// dump shows it ("IO wait", "syscall", "runnable"...), "" if none runs.
func loopState() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "push.(*poller).loop(") {
			head, _, _ := strings.Cut(g, "\n")
			if i, j := strings.Index(head, "["), strings.Index(head, "]"); i >= 0 && j > i {
				state, _, _ := strings.Cut(head[i+1:j], ",")
				return state
			}
		}
	}
	return ""
}

// TestPushConnectionsWaitInTheEpollSet: a waiting WebSocket or SSE
// connection has no goroutine of its own; what its client sends is still
// read (a WebSocket ping is answered, again and again; bytes an SSE client
// sends are dropped and its stream goes on), the hub still writes to it, a
// client that goes is noticed, a connection the hub closes leaves the set
// and is ended, and shutdown ends whatever still waits.
func TestPushConnectionsWaitInTheEpollSet(t *testing.T) {
	for _, kind := range []string{"ws", "sse"} {
		t.Run(kind, func(t *testing.T) {
			ts := startServer(t, nil, "rueidis", withAdmin)
			admin := newVisitor(t, ts.URL)
			if r := admin.admin("POST", "/rooms/epoll/pause", ""); r.Code != 200 {
				t.Fatalf("pause: %d %s", r.Code, r.Raw)
			}
			const n = 30
			var clients []*pushClient
			for range n {
				v := newVisitor(t, ts.URL)
				if r := v.join("epoll"); r.str("status") != "waiting" {
					t.Fatalf("join: %s", r.Raw)
				}
				clients = append(clients, dial(t, kind, ts.URL, "epoll", v.cred))
			}
			inSet := func(want int) func() bool {
				return func() bool { return ts.hub.Stats().Conns[kind] == int64(want) && ts.push.Waiting() == want }
			}
			waitfor.Until(t, 5*time.Second, "every connection waiting in the set", inSet(n))
			if got := waitLoops(); got != 0 {
				t.Fatalf("%d connections wait in a goroutine of their own", got)
			}
			// The set's loop waits in Go's poller, holding no thread in a
			// system call.
			waitfor.Until(t, 5*time.Second, "the set's loop parked in Go's poller", func() bool { return loopState() == "IO wait" })

			if kind == "ws" {
				// Each read puts the connection back in the set.
				for range 3 {
					for _, c := range clients[:5] {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						err := c.ws.Ping(ctx)
						cancel()
						if err != nil {
							t.Fatalf("ping: %v", err)
						}
					}
				}
			}
			var raw net.Conn
			if kind == "sse" {
				v := newVisitor(t, ts.URL)
				v.join("epoll")
				raw = sseRaw(t, ts.URL, "epoll", v.cred)
				waitfor.Until(t, 5*time.Second, "the raw stream in the set", inSet(n+1))
				for range 3 {
					if _, err := raw.Write([]byte(strings.Repeat("x", 100))); err != nil {
						t.Fatal(err)
					}
				}
			}

			// The hub writes to connections in the set, and a stream whose
			// client sent bytes goes on.
			if r := admin.admin("PUT", "/rooms/epoll/message", `{"text":"soon"}`); r.Code != 200 {
				t.Fatalf("message: %d %s", r.Code, r.Raw)
			}
			for _, c := range clients {
				waitfor.Until(t, 5*time.Second, "the message", func() bool { got, _ := c.lastText(); return got == "soon" })
			}
			if raw != nil {
				var got []byte
				waitfor.Until(t, 5*time.Second, "the message on the raw stream", func() bool {
					got = append(got, readSome(raw)...)
					return strings.Contains(string(got), `"soon"`)
				})
				raw.Close()
				waitfor.Until(t, 5*time.Second, "the raw stream gone", inSet(n))
			}

			// Clients that go are noticed.
			for _, c := range clients[:10] {
				c.Close()
			}
			waitfor.Until(t, 5*time.Second, "closed clients noticed", inSet(n-10))

			// Connections the hub closes (a drain: a reconnect hint, then
			// the close) leave the set and are ended: every push
			// connection's done is called.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ts.hub.Drain(ctx, 100*time.Millisecond); err != nil {
				t.Fatalf("drain: %v", err)
			}
			waitfor.Until(t, 10*time.Second, "every connection ended", func() bool {
				return ts.push.Open() == 0 && ts.push.Waiting() == 0
			})
			for _, c := range clients[10:] {
				select {
				case <-c.closed:
				case <-time.After(5 * time.Second):
					t.Fatal("a client was not closed by the drain")
				}
			}
		})
	}
}

// readSome returns what c has to read within a moment.
func readSome(c net.Conn) []byte {
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	b := make([]byte, 4096)
	n, _ := c.Read(b)
	_ = c.SetReadDeadline(time.Time{})
	return b[:n]
}

// sseRaw opens an SSE stream on a plain TCP connection, to send bytes on it.
func sseRaw(t *testing.T, base, room, cred string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_, err = c.Write([]byte("GET /api/v1/rooms/" + room + "/sse?visitor=" + cred + " HTTP/1.1\r\nHost: x\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
