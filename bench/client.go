package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// wire counts what the bench's clients send and receive: bytes on every
// connection they dial, and HTTP requests (a WebSocket upgrade and an SSE
// stream count as one request each).
type wire struct {
	read, written, requests atomic.Int64
	pushed, positions       atomic.Int64 // push messages received (any), of them waiting states
	dialRetries             atomic.Int64 // connects tried again
}

type wireTotals struct {
	Read, Written, Requests int64
	Pushed, Positions       int64
}

func (w *wire) totals() wireTotals {
	return wireTotals{Read: w.read.Load(), Written: w.written.Load(), Requests: w.requests.Load(),
		Pushed: w.pushed.Load(), Positions: w.positions.Load()}
}

func (a wireTotals) sub(b wireTotals) wireTotals {
	return wireTotals{Read: a.Read - b.Read, Written: a.Written - b.Written, Requests: a.Requests - b.Requests,
		Pushed: a.Pushed - b.Pushed, Positions: a.Positions - b.Positions}
}

type countingConn struct {
	net.Conn
	w *wire
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.w.written.Add(int64(n))
	return n, err
}

// dialer dials from source addresses 127.0.0.base … 127.0.0.(base+n-1) in
// turn, so many connections to one server port do not run out of ephemeral
// ports of one source address.
type dialer struct {
	w     *wire
	base  int
	n     int
	next  atomic.Uint64
	inner net.Dialer
}

func newDialer(w *wire, base, n int) *dialer {
	return &dialer{w: w, base: max(base, 1), n: max(n, 1), inner: net.Dialer{Timeout: 10 * time.Second}}
}

// DialContext connects; a failed connect (nothing was sent yet) is tried
// again a few times from the next source address, since with many sockets
// bound to chosen addresses a connect is occasionally reset on loopback.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		nd := d.inner
		if ip != nil && ip.IsLoopback() && ip.To4() != nil {
			last := d.base + int(d.next.Add(1)%uint64(d.n))
			nd.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(min(last, 254)))}
		}
		var c net.Conn
		if c, err = nd.DialContext(ctx, network, addr); err == nil {
			return &countingConn{Conn: c, w: d.w}, nil
		}
		d.w.dialRetries.Add(1)
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	return nil, err
}

// newHTTPClient is a keep-alive client of at most maxConns connections.
// maxConns 0 means no limit (for long-lived streams).
func newHTTPClient(d *dialer, maxConns int) *http.Client {
	idle := maxConns
	if idle == 0 {
		idle = 1024
	}
	return &http.Client{Transport: &http.Transport{
		DialContext:         d.DialContext,
		MaxConnsPerHost:     maxConns,
		MaxIdleConns:        idle,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// state is the server's state message (join, status, push).
type state struct {
	Type       string    `json:"type"`
	Room       string    `json:"room"`
	Status     string    `json:"status"`
	Position   int64     `json:"position"`
	ETASeconds int64     `json:"etaSeconds"`
	Rate       float64   `json:"ratePerSecond"`
	NextPollMs int64     `json:"nextPollMs"`
	Paused     bool      `json:"paused"`
	Token      string    `json:"token"`
	NotBefore  time.Time `json:"notBefore"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Visitor    string    `json:"visitor"`
	AfterMs    int64     `json:"afterMs"`
}

// api speaks the waitroom HTTP API for one room.
type api struct {
	base   string // http://host:port
	room   string
	hc     *http.Client // requests
	stream *http.Client // WebSocket and SSE (one connection each)
	w      *wire
}

func newAPI(base, room string, w *wire, d *dialer, maxConns int) *api {
	return &api{base: base, room: room, hc: newHTTPClient(d, maxConns), stream: newHTTPClient(d, 0), w: w}
}

func (a *api) close() {
	a.hc.CloseIdleConnections()
	a.stream.CloseIdleConnections()
}

func (a *api) path(p string) string { return a.base + "/api/v1/rooms/" + a.room + p }

// httpError is a non-2xx answer.
type httpError struct {
	Status     int
	Code       string
	RetryAfter time.Duration
}

func (e *httpError) Error() string { return fmt.Sprintf("http %d %s", e.Status, e.Code) }

func (a *api) do(req *http.Request) ([]byte, *http.Response, error) {
	a.w.requests.Add(1)
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, resp, err
	}
	if resp.StatusCode >= 300 {
		he := &httpError{Status: resp.StatusCode}
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil {
			he.Code = e.Error.Code
		}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			he.RetryAfter = time.Duration(s) * time.Second
		}
		return body, resp, he
	}
	return body, resp, nil
}

// join enters the queue (cred "" = a new visitor) or reads the current state
// of cred; join is always answered from Redis.
func (a *api) join(ctx context.Context, cred string) (state, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", a.path("/join"), nil)
	if cred != "" {
		req.Header.Set("X-Visitor", cred)
	}
	body, _, err := a.do(req)
	if err != nil {
		return state{}, err
	}
	var st state
	if err := json.Unmarshal(body, &st); err != nil {
		return state{}, fmt.Errorf("join: %w", err)
	}
	if st.Visitor == "" {
		st.Visitor = cred
	}
	return st, nil
}

// status polls; hit reports an answer from the server's memory.
func (a *api) status(ctx context.Context, cred string) (st state, hit bool, err error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", a.path("/status"), nil)
	req.Header.Set("X-Visitor", cred)
	body, resp, err := a.do(req)
	if err != nil {
		return state{}, false, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return state{}, false, fmt.Errorf("status: %w", err)
	}
	return st, resp.Header.Get("X-Waitroom-Cache") == "hit", nil
}

// order places a demo order with an entry token. It returns the HTTP
// status (201 created) and, for 425 and 503, the wait the server asked for.
func (a *api) order(ctx context.Context, token, cred string) (int, time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", a.path("/orders"), strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		req.Header.Set("X-Visitor", cred)
	}
	_, resp, err := a.do(req)
	var he *httpError
	if errors.As(err, &he) {
		return he.Status, he.RetryAfter, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return resp.StatusCode, 0, nil
}

// onState receives each state a push transport delivers, with the time it
// was read. Returning false ends the stream.
type onState func(st state, at time.Time) bool

// ws holds a WebSocket open and hands every state to fn until fn returns
// false, ctx ends, or the server closes. ready is called once connected.
func (a *api) ws(ctx context.Context, cred string, ready func(), fn onState) error {
	u := "ws" + strings.TrimPrefix(a.path("/ws"), "http") + "?visitor=" + cred
	a.w.requests.Add(1)
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: a.stream})
	if err != nil {
		return fmt.Errorf("ws dial: %w", err)
	}
	defer c.CloseNow()
	ready()
	// Ends with a close handshake when ctx ends, not by dropping the TCP
	// connection as a cancelled Read would: a dropped connection can crash
	// the server (see the report), and a browser closes cleanly too.
	stop := context.AfterFunc(ctx, func() { _ = c.Close(websocket.StatusGoingAway, "bench done") })
	defer stop()
	for {
		_, data, err := c.Read(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ws read: %w", err)
		}
		at := time.Now()
		a.w.pushed.Add(1)
		var st state
		if err := json.Unmarshal(data, &st); err != nil {
			return fmt.Errorf("ws message: %w", err)
		}
		if st.Type != "state" {
			continue
		}
		if st.Status == "waiting" {
			a.w.positions.Add(1)
		}
		if !fn(st, at) {
			_ = c.Close(websocket.StatusNormalClosure, "done")
			return nil
		}
	}
}

// sse holds an event stream open like ws.
func (a *api) sse(ctx context.Context, cred string, ready func(), fn onState) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", a.path("/sse")+"?visitor="+cred, nil)
	req.Header.Set("Accept", "text/event-stream")
	a.w.requests.Add(1)
	resp, err := a.stream.Do(req)
	if err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("sse: http %d", resp.StatusCode)
	}
	ready()
	sc := bufio.NewScanner(resp.Body)
	var event string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if event != "" || data.Len() > 0 {
				a.w.pushed.Add(1)
			}
			if event == "state" && data.Len() > 0 {
				at := time.Now()
				var st state
				if err := json.Unmarshal(data.Bytes(), &st); err != nil {
					return fmt.Errorf("sse message: %w", err)
				}
				if st.Status == "waiting" {
					a.w.positions.Add(1)
				}
				if !fn(st, at) {
					return nil
				}
			}
			event = ""
			data.Reset()
		case bytes.HasPrefix(line, []byte("event:")):
			event = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(line[len("data:"):], []byte(" ")))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("sse read: %w", err)
	}
	return errors.New("sse: stream ended")
}
