package push

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/lograte"
)

const (
	attachTimeout = 5 * time.Second // the subscribe and first state read of a new push connection
	wsReadLimit   = 512             // client messages are tiny; bigger closes with 1009
)

// WS upgrades the request to a WebSocket on the same port: fasthttp hands
// over the connection and coder/websocket speaks the protocol on it. The
// caller has checked t; a request that asks for no upgrade gets 426
// upgrade_required. Once handed over, the connection is served until its
// client goes or the hub closes it, and fiber no longer answers the
// request. The app's fasthttp server must keep hijacked connections
// (KeepHijackedConns), or the hub could not close them.
func (s *Server) WS(c *fiber.Ctx, t Target) error {
	if !strings.EqualFold(c.Get(fiber.HeaderUpgrade), "websocket") {
		c.Set(fiber.HeaderUpgrade, "websocket")
		return errUpgrade
	}
	req := copyRequest(c)
	s.begin()
	c.Context().HijackSetNoResponse(true)
	// The request is only needed for the upgrade: a cell lets it go then,
	// instead of living as long as the connection in a closure.
	cell := &reqCell{req: req}
	c.Context().Hijack(func(nc net.Conn) {
		serveHijacked(nc, func(nc net.Conn, mayLeave bool) bool {
			return s.serveWS(nc, cell, t, mayLeave, s.end)
		}, s.end)
	})
	return nil
}

// serveWS serves the read side of the connection (close frames, pongs,
// dead peers) while the hub writes. Once set up, the connection waits for
// its client in the server's epoll set with no goroutine of its own, when
// there is one and mayLeave allows: serveWS then returns true, and done is
// called when the connection ends. Otherwise it waits on this goroutine;
// the setup runs on a short-lived goroutine and the loop in a small frame,
// so the long-lived stack stays shallow enough for the GC to shrink it.
func (s *Server) serveWS(nc net.Conn, cell *reqCell, target Target, mayLeave bool, done func()) (kept bool) {
	req := cell.req
	cell.req = nil
	sess, _ := shallow(func() (*wsSession, error) { return s.openWS(nc, req, target), nil })
	if sess == nil {
		nc.Close()
		return false
	}
	if p := s.poll.Load(); sess.raw != nil && mayLeave && p != nil {
		w := p.prepare(sess.raw, sess.readWaiting, func() {
			sess.wc.CloseNow()
			sess.end()
			nc.Close()
			done()
		})
		// A close by the hub closes the socket, which leaves the set
		// without an event: the transport finishes the wait then.
		sess.t.onClose.Store(w)
		w.start()
		return true
	}
	defer nc.Close()
	defer sess.end()
	if sess.raw != nil {
		s.wsWaitLoop(sess, sess.raw)
		return false
	}
	wsReadLoop(sess.wc)
	return false
}

type reqCell struct{ req *http.Request }

// wsSession is what a live WebSocket connection holds beyond its loop.
type wsSession struct {
	wc   *websocket.Conn
	nc   net.Conn
	br   *bufio.Reader   // the library's read buffer
	raw  syscall.RawConn // the socket, to wait on; nil where there is none
	t    *wsTransport
	conn *hub.Conn
}

// openWS upgrades and attaches to the hub; nil when the connection is over.
func (s *Server) openWS(nc net.Conn, req *http.Request, target Target) *wsSession {
	w := &hijackWriter{conn: nc, header: http.Header{}}
	// A control frame is all a client sends here: once one is handled, the
	// read returns at the next frame boundary instead of waiting out
	// FrameWait (see wsWaitLoop).
	done := func() { _ = nc.SetReadDeadline(time.Now()) }
	wc, err := websocket.Accept(w, req, &websocket.AcceptOptions{
		OriginPatterns:  s.originHosts,
		CompressionMode: websocket.CompressionDisabled,
		OnPongReceived:  func(context.Context, []byte) { done() },
		OnPingReceived:  func(context.Context, []byte) bool { done(); return true },
	})
	if err != nil {
		if w.status == http.StatusForbidden {
			// The one refusal an operator fixes: the page's origin is
			// missing from -origins.
			s.originLog.Log("push: refused a WebSocket whose Origin is not in -origins (403)", "origin", lograte.Clip(req.Header.Get("Origin")), "host", lograte.Clip(req.Host))
			return nil
		}
		s.log.Debug("websocket accept", "err", err)
		return nil
	}
	wc.SetReadLimit(wsReadLimit)
	// fasthttp recycles the hijacked connection once serveWS returns, so
	// nothing may touch it after: release waits for the hub's writes and
	// closes, and turns later ones into no-ops.
	t := &wsTransport{c: wc, nc: nc, silence: s.hub.BeatSilence(s.opts.WSHeartbeat), onBeat: s.opts.OnWSHeartbeat}
	actx, cancel := context.WithTimeout(context.Background(), attachTimeout)
	conn, err := s.hub.AttachPage(actx, target.Room, target.Visitor, t, target.page())
	cancel()
	if err != nil {
		e := attachError(err)
		// A refusal that will not change by retrying is a policy close;
		// the others say try again later.
		code := websocket.StatusTryAgainLater
		if e == errTooManyForVis {
			code = websocket.StatusPolicyViolation
		}
		_ = wc.Close(code, e.Code)
		t.release()
		return nil
	}
	// Found here, on the setup goroutine: reflection would grow the
	// long-lived goroutine's stack for good.
	sess := &wsSession{wc: wc, nc: nc, br: w.br, raw: rawConnOf(nc), t: t, conn: conn}
	if sess.raw != nil {
		setSendBuffer(sess.raw, sendBuffer)
		setPeerTimeout(sess.raw, PeerTimeout)
	}
	// A heartbeat message keeps a quiet connection visibly alive for the
	// page and for proxies with idle timeouts; a peer that vanished
	// without a FIN leaves it unacknowledged, and the kernel ends the
	// connection after PeerTimeout. Unlike a ping it needs no answer
	// to be read, so a quiet room costs one write per connection per
	// interval, and a busy one (positions every few seconds) none: it is
	// due an interval after the last message, so no connection goes
	// longer than an interval (and a second) silent. The hub schedules
	// it, with no timer of the connection's own.
	conn.Beat(s.opts.WSHeartbeat, false)
	return sess
}

// end lets the connection go: released first, so the hub's close that
// detaching brings has nothing left to do.
func (sess *wsSession) end() {
	sess.t.release()
	sess.conn.Close()
}

// FrameWait bounds a read once bytes have arrived: a client's frame
// comes whole in far less.
const FrameWait = 2 * time.Second

// wsWaitLoop serves the read side where the epoll set cannot, while
// keeping the connection's one long-lived goroutine on its first 2 KiB
// stack: it waits for the socket to become readable without reading, then
// lets the library read what came on a pooled worker (see readWaiting).
// The library's own read loop, parked in a goroutine for the connection's
// life, would hold a stack of 4 KiB that the GC never shrinks.
func (s *Server) wsWaitLoop(sess *wsSession, rc syscall.RawConn) {
	defer sess.wc.CloseNow()
	for {
		if sess.br.Buffered() == 0 {
			if err := waitReadable(rc); err != nil {
				return
			}
		}
		ok := false
		s.readers.Do(func() { ok = sess.readWaiting() })
		if !ok {
			return
		}
	}
}

// readWaiting reads what a waiting connection's client sent (a pong, a
// ping, a close, a message to discard), each frame under a short deadline,
// until nothing is left in the read buffer. It reports false once the
// connection is over. A control frame sets the deadline to now once
// handled (see openWS), so the read returns at the next frame boundary
// instead of waiting out FrameWait; a deadline at a frame boundary is
// the normal way back to waiting, bytes left over twice mean a frame that
// does not come whole, and any other error is the end.
func (sess *wsSession) readWaiting() bool {
	nc := sess.nc
	stuck := false
	for {
		_ = nc.SetReadDeadline(time.Now().Add(FrameWait))
		_, _, err := sess.wc.Read(context.Background())
		// The wait for readability honours the read deadline too.
		_ = nc.SetReadDeadline(time.Time{})
		switch {
		case err == nil:
			stuck = false
		case !errors.Is(err, os.ErrDeadlineExceeded) || (sess.br.Buffered() > 0 && stuck):
			return false
		default:
			stuck = sess.br.Buffered() > 0
		}
		if sess.br.Buffered() == 0 {
			return true
		}
	}
}

// wsReadLoop reads until the connection ends. Client messages carry
// nothing the server needs; reading keeps control frames flowing and
// notices a closed peer. Closing the connection is what ends a Read here,
// so the context is Background (a cancellable one costs memory per
// connection).
func wsReadLoop(wc *websocket.Conn) {
	for {
		if _, _, err := wc.Read(context.Background()); err != nil {
			// The peer answered a close or went away: end a close
			// handshake still waiting in the background now.
			wc.CloseNow()
			return
		}
	}
}

// wsTransport is the hub's view of a WebSocket connection.
type wsTransport struct {
	c  *websocket.Conn
	nc net.Conn
	// silence goes out in the hello before the first message; zero once
	// sent. Only Write touches it, and the hub never calls it concurrently.
	silence time.Duration
	onBeat  func() // counts a heartbeat written, for the metric

	mu       sync.RWMutex // held shared while the connection is used
	released bool
	// onClose is the connection's wait in the epoll set, if it waits
	// there: a close by the hub ends it.
	onClose atomic.Pointer[pollWait]
}

// use runs f unless the connection was released.
func (t *wsTransport) use(f func()) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.released {
		return false
	}
	f()
	return true
}

func (t *wsTransport) release() {
	t.mu.Lock()
	t.released = true
	t.mu.Unlock()
}

// Write bounds the write with a deadline on the connection rather than a
// context: with a context that can end, the WebSocket library registers a
// callback per write, churn that 10,000 connections feel. The deadline is
// cleared after the write: left in place, it would fail the next write of a
// quiet room (a heartbeat), which goes through the same connection.
func (t *wsTransport) Write(deadline time.Time, event string, data []byte) error {
	if event == "heartbeat" {
		t.onBeat()
	}
	err := net.ErrClosed
	t.use(func() {
		err = nil
		_ = t.nc.SetWriteDeadline(deadline)
		if t.silence > 0 {
			err = t.c.Write(context.Background(), websocket.MessageText, hello(t.silence, time.Now()))
			t.silence = 0
		}
		if err == nil {
			err = t.c.Write(context.Background(), websocket.MessageText, data)
		}
		_ = t.nc.SetWriteDeadline(time.Time{})
	})
	return err
}

// attachError is the refusal a push connection gets when the hub would not
// take it.
func attachError(err error) *httperr.Error {
	switch {
	case errors.Is(err, hub.ErrClosed):
		return ErrDraining
	case errors.Is(err, hub.ErrTooManyForVisitor):
		return errTooManyForVis
	case errors.Is(err, hub.ErrTooManyConns):
		return errTooManyConns
	}
	return errUnavailable
}

// Close starts the close handshake without blocking the hub. The library
// closes the socket once the peer answers (or after its own timeout); a
// connection waiting in the epoll set is then ended here, since a closed
// socket leaves the set without an event.
func (t *wsTransport) Close(reason string) {
	t.mu.RLock()
	released := t.released
	t.mu.RUnlock()
	if released {
		return // the connection is over already
	}
	go func() {
		t.use(func() { _ = t.c.Close(websocket.StatusGoingAway, reason) })
		if w := t.onClose.Load(); w != nil {
			w.finish()
		}
	}()
}

func (t *wsTransport) Kind() string { return "ws" }
