package push

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// hijackWriter is the smallest http.ResponseWriter that lets
// coder/websocket upgrade a connection fasthttp has handed over: fiber's
// adaptor cannot (its writer is no http.Hijacker). It writes the status
// line and headers itself.
type hijackWriter struct {
	conn        net.Conn
	header      http.Header
	wroteHeader bool
	status      int           // the status written
	br          *bufio.Reader // the read buffer handed to the library
}

func (w *hijackWriter) Header() http.Header { return w.header }

func (w *hijackWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader, w.status = true, code
	var b strings.Builder
	b.WriteString("HTTP/1.1 ")
	b.WriteString(strconv.Itoa(code))
	b.WriteByte(' ')
	b.WriteString(http.StatusText(code))
	b.WriteString("\r\n")
	if code != http.StatusSwitchingProtocols {
		w.header.Set("Connection", "close")
	}
	_ = w.header.Write(&b)
	b.WriteString("\r\n")
	_, _ = w.conn.Write([]byte(b.String()))
}

func (w *hijackWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.conn.Write(p)
}

// Hijack hands the connection to the WebSocket library with small buffers:
// client messages here are tiny, most server messages fit 256 bytes, and
// buffers are much of a connection's idle cost.
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.br = bufio.NewReaderSize(w.conn, 128)
	return w.conn, bufio.NewReadWriter(w.br, bufio.NewWriterSize(w.conn, 256)), nil
}

// copyRequest builds a net/http request from fiber's before the hijack:
// fiber's strings alias fasthttp buffers that are reused once the handler
// returns.
func copyRequest(c *fiber.Ctx) *http.Request {
	r := &http.Request{
		Method:     strings.Clone(c.Method()),
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, 8),
		Host:       strings.Clone(string(c.Request().Host())),
		RequestURI: strings.Clone(string(c.Request().RequestURI())),
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	r.URL = u
	for k, v := range c.Request().Header.All() {
		r.Header.Add(string(k), string(v))
	}
	return r
}

// shallow runs f on a short-lived goroutine and waits for it. A push
// connection's one long-lived goroutine only reads; deep calls made once at
// connect (the upgrade, the first Redis read) would otherwise grow its stack
// for the connection's whole life, and the stack is most of its idle cost.
func shallow[T any](f func() (T, error)) (T, error) {
	var v T
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		v, err = f()
	}()
	<-done
	return v, err
}

// readsThroughBuffer reports whether a hijacked connection reads through
// fasthttp's pooled request reader (the client sent bytes after its request
// line and headers). Such a connection must be served inside the hijack
// handler, since fasthttp recycles that reader when the handler returns.
// Any other is served on a goroutine of its own and the handler returns at
// once, so fasthttp recycles the request context (a few KiB) instead of
// holding it for the connection's life. Unknown shapes count as buffered.
func readsThroughBuffer(nc net.Conn) bool {
	v := reflect.ValueOf(nc)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return true
	}
	r := v.Elem().FieldByName("r")
	if !r.IsValid() || r.Kind() != reflect.Interface || r.IsNil() {
		return true
	}
	_, isConn := reflect.Zero(r.Elem().Type()).Interface().(net.Conn)
	return !isConn
}

// serveHijacked runs serve for a hijacked connection, off the hijack
// handler when that is safe (see readsThroughBuffer). done is called when
// serve returns, unless serve reports that it kept the connection past its
// return, which it may only when mayLeave is set: it then calls done
// itself once the connection is over.
func serveHijacked(nc net.Conn, serve func(nc net.Conn, mayLeave bool) (kept bool), done func()) {
	if readsThroughBuffer(nc) {
		if !serve(nc, false) {
			done()
		}
		return
	}
	go func() {
		if !serve(nc, true) {
			done()
		}
	}()
}
