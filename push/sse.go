package push

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/wire"
)

// sseHeartbeatEvent is an event, not a comment line: EventSource hands
// events to the page, so the page too can tell a quiet stream from a dead
// one.
var sseHeartbeatEvent = []byte("event: heartbeat\ndata: " + string(wire.Heartbeat) + "\n\n")

// SSE serves text/event-stream for the request on the connection fasthttp
// hands over: its one goroutine reads for EOF, so a client that goes away
// is seen at once, and the HTTP server's write timeout and compression do
// not touch the stream. The caller has checked t. The stream resumes its
// event ids from Last-Event-ID; a refusal by the hub is answered with its
// JSON error instead of a stream. As for WS, the app's fasthttp server
// must keep hijacked connections.
func (s *Server) SSE(c *fiber.Ctx, t Target) error {
	lastID, _ := strconv.ParseInt(c.Get("Last-Event-ID"), 10, 64)
	cors := s.streamCORS(c.Get(fiber.HeaderOrigin))
	s.begin()
	c.Context().HijackSetNoResponse(true)
	c.Context().Hijack(func(nc net.Conn) {
		serveHijacked(nc, func(nc net.Conn, mayLeave bool) bool {
			return s.serveSSE(nc, t, lastID, cors, mayLeave, s.end)
		}, s.end)
	})
	return nil
}

// streamCORS returns the CORS header lines of a stream for an allowed
// origin: the stream is written by hand, past the CORS middleware, and an
// EventSource of an embedding page needs them.
func (s *Server) streamCORS(origin string) string {
	for _, o := range s.opts.Origins {
		if origin == o {
			return "Access-Control-Allow-Origin: " + o + "\r\nAccess-Control-Allow-Credentials: true\r\nVary: Origin\r\n"
		}
	}
	return ""
}

// serveSSE attaches the stream to the hub, then waits for its client to
// go: in the server's epoll set with no goroutine of its own when there is
// one and mayLeave allows (it then returns true, and done is called when
// the stream ends), else on this goroutine.
func (s *Server) serveSSE(nc net.Conn, target Target, lastID int64, cors string, mayLeave bool, done func()) (kept bool) {
	t := &sseTransport{conn: nc, id: lastID, every: s.opts.SSEHeartbeat, cors: cors}
	t.silence = s.hub.BeatSilence(t.every)
	conn, err := shallow(func() (*hub.Conn, error) {
		if t.raw = rawConnOf(nc); t.raw != nil {
			setSendBuffer(t.raw, sendBuffer)
			setPeerTimeout(t.raw, PeerTimeout)
		}
		ctx, cancel := context.WithTimeout(context.Background(), attachTimeout)
		defer cancel()
		return s.hub.AttachPage(ctx, target.Room, target.Visitor, t, target.page())
	})
	if err != nil {
		t.refuse(attachError(err))
		t.stop()
		nc.Close()
		return false
	}
	// Busy or not: the heartbeat is also when a peer that takes nothing is
	// found (see Write).
	conn.Beat(t.every, true)
	// fasthttp recycles the hijacked connection once the stream is over:
	// stop waits for a write in progress and turns later ones into no-ops.
	end := func() {
		conn.Close()
		t.stop()
		nc.Close()
	}
	if p := s.poll.Load(); t.raw != nil && mayLeave && p != nil {
		w := p.prepare(t.raw, t.readGone, func() { end(); done() })
		// A close by the hub closes the socket, which leaves the set
		// without an event: the transport finishes the wait then.
		t.wait.Store(w)
		w.start()
		return true
	}
	defer end()
	// Nothing is expected from the client: any read result means it is gone
	// (or the hub closed the connection).
	var b [1]byte
	for {
		if _, err := nc.Read(b[:]); err != nil {
			return false
		}
	}
}

// sseTransport frames hub messages as server-sent events. Writes come from
// the hub's flusher and the heartbeat timer, so they hold a mutex.
type sseTransport struct {
	conn     net.Conn
	mu       sync.Mutex
	started  bool
	closed   bool // no more writes
	released bool // the connection is no longer ours
	id       int64
	cors     string        // CORS header lines for an embedding page's origin
	every    time.Duration // between heartbeats
	silence  time.Duration // the longest without a message, for the hello

	raw        syscall.RawConn // the socket, to see what the peer has not taken; nil where there is none
	lastUnsent int
	stalled    int // heartbeats in a row at which the peer took nothing

	// wait is the stream's wait in the epoll set, if it waits there: a
	// close by the hub ends it.
	wait atomic.Pointer[pollWait]
}

// readGone reads and drops what the client sent (a stream takes nothing
// from it) without waiting for more; false once the stream is over: the
// client went, or the socket failed or was closed.
func (t *sseTransport) readGone() bool {
	var b [64]byte
	for {
		n, err := readNow(t.raw, b[:])
		if err != nil {
			return false
		}
		if n < len(b) {
			return true
		}
	}
}

// sendBuffer is the kernel send buffer of a push connection: room for
// about a hundred messages.
const sendBuffer = 16 << 10

// PeerTimeout is how long written data of a push connection may go
// unacknowledged before the kernel ends the connection (TCP_USER_TIMEOUT,
// where there is one): a peer that vanished without a FIN is noticed at
// the next heartbeat plus this.
const PeerTimeout = 30 * time.Second

// stalledBeats is how many heartbeats in a row may find the peer taking
// nothing before the stream is dropped, as a WebSocket that does not answer
// pings is.
const stalledBeats = 2

var sseHeader = "HTTP/1.1 200 OK\r\n" +
	"Content-Type: text/event-stream\r\n" +
	"Cache-Control: no-cache, no-transform\r\n" +
	"X-Accel-Buffering: no\r\n" +
	"Connection: close\r\n\r\n"

// errStalled ends a stream whose peer took nothing for stalledBeats
// heartbeats.
var errStalled = errors.New("sse: the peer takes nothing")

// Write sends one event; the first also sends the response headers, a
// retry hint spread over 1–3 s so reconnects do not arrive together, and
// the hello event. A heartbeat goes out without an id, after a look at
// whether the peer took what was sent before.
func (t *sseTransport) Write(deadline time.Time, event string, data []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return net.ErrClosed
	}
	if event == "heartbeat" && t.started {
		return t.heartbeatLocked(deadline)
	}
	b := make([]byte, 0, len(sseHeader)+len(t.cors)+len(data)+160)
	if !t.started {
		t.started = true
		b = append(b, sseHeader[:len(sseHeader)-2]...)
		b = append(b, t.cors...)
		b = append(b, "\r\n"...)
		b = append(b, "retry: "...)
		b = strconv.AppendInt(b, 1000+rand.Int64N(2000), 10)
		b = append(b, "\nevent: hello\ndata: "...)
		b = append(b, hello(t.silence, time.Now())...)
		b = append(b, "\n\n"...)
	}
	t.id++
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, t.id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return t.write(deadline, b)
}

func (t *sseTransport) write(deadline time.Time, b []byte) error {
	_ = t.conn.SetWriteDeadline(deadline)
	_, err := t.conn.Write(b)
	return err
}

// heartbeatLocked writes a heartbeat event, or ends a stream whose peer
// stopped taking what is sent. Needs t.mu.
func (t *sseTransport) heartbeatLocked(deadline time.Time) error {
	// A peer that reads has taken what was sent long before a heartbeat;
	// one that does not leaves it unsent, heartbeat after heartbeat.
	if t.raw != nil {
		if n, ok := unsentBytes(t.raw); ok && n > 0 && n >= t.lastUnsent {
			t.stalled++
			t.lastUnsent = n
		} else {
			t.stalled, t.lastUnsent = 0, n
		}
		if t.stalled >= stalledBeats {
			t.endLocked()
			return errStalled
		}
	}
	return t.write(deadline, sseHeartbeatEvent)
}

// endLocked ends the stream; the reading goroutine then returns. Needs
// t.mu.
func (t *sseTransport) endLocked() {
	t.closed = true
	if !t.released {
		_ = t.conn.Close()
	}
}

// refuse answers with a JSON error instead of a stream.
func (t *sseTransport) refuse(e *httperr.Error) {
	body := `{"error":{"code":` + strconv.Quote(e.Code) + `,"message":` + strconv.Quote(e.Message) + `}}`
	resp := "HTTP/1.1 " + strconv.Itoa(e.Status) + " Error\r\nContent-Type: application/json; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	_ = t.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, _ = t.conn.Write([]byte(resp))
}

func (t *sseTransport) stop() {
	t.mu.Lock()
	t.closed = true
	t.released = true
	t.mu.Unlock()
}

// Close ends the stream: the reading goroutine then returns, or its wait
// in the epoll set is finished here (a closed socket leaves the set
// without an event).
func (t *sseTransport) Close(string) {
	t.mu.Lock()
	t.endLocked()
	t.mu.Unlock()
	if w := t.wait.Load(); w != nil {
		w.finish()
	}
}

func (t *sseTransport) Kind() string { return "sse" }
