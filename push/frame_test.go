package push

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
)

func TestHello(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.FixedZone("CET", 3600))
	b := hello(41100*time.Millisecond, now)
	var h struct {
		Type        string `json:"type"`
		HeartbeatMs int64  `json:"heartbeatMs"`
		ServerTime  string `json:"serverTime"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("hello %s is no JSON object: %v", b, err)
	}
	if h.Type != "hello" || h.HeartbeatMs != 41100 || h.ServerTime != "2026-11-30T11:00:00.123Z" {
		t.Fatalf("hello %s", b)
	}
}

// sseStream returns a transport writing to one end of a loopback TCP
// connection, and a reader of the other end.
func sseStream(t *testing.T, cors string, lastID int64) (*sseTransport, *bufio.Reader) {
	t.Helper()
	srv, cli := tcpPair(t)
	_ = cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	return &sseTransport{conn: srv, id: lastID, every: time.Second, silence: 1500 * time.Millisecond, cors: cors}, bufio.NewReader(cli)
}

// readEvent reads one event (up to its blank line) as its field lines.
func readEvent(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read event: %v (so far %q)", err, lines)
		}
		if l == "\n" {
			return lines
		}
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
}

// TestSSEFraming: the first write sends the response head (with the CORS
// lines of an allowed origin), a retry hint of 1–3 s and the hello, then
// the event with the next id after Last-Event-ID; later events count on,
// a heartbeat carries no id, and nothing is written once closed.
func TestSSEFraming(t *testing.T) {
	cors := "Access-Control-Allow-Origin: https://shop.example\r\n"
	tr, r := sseStream(t, cors, 41)
	deadline := time.Now().Add(time.Second)
	if err := tr.Write(deadline, "state", []byte(`{"type":"state"}`)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("response head: %v", err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" || resp.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("head: %d %v", resp.StatusCode, resp.Header)
	}
	body := bufio.NewReader(resp.Body)
	first := readEvent(t, body)
	if len(first) != 3 || !strings.HasPrefix(first[0], "retry: ") || first[1] != "event: hello" || !strings.HasPrefix(first[2], `data: {"type":"hello","heartbeatMs":1500,`) {
		t.Fatalf("first event %q", first)
	}
	if ms, err := strconv.Atoi(strings.TrimPrefix(first[0], "retry: ")); err != nil || ms < 1000 || ms >= 3000 {
		t.Fatalf("retry %q: want 1000–2999 ms", first[0])
	}
	if got := readEvent(t, body); strings.Join(got, "|") != `id: 42|event: state|data: {"type":"state"}` {
		t.Fatalf("state event %q", got)
	}
	if err := tr.Write(deadline, "heartbeat", []byte(`{"type":"heartbeat"}`)); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, body); strings.Join(got, "|") != `event: heartbeat|data: {"type":"heartbeat"}` {
		t.Fatalf("heartbeat %q", got)
	}
	if err := tr.Write(deadline, "message", []byte(`{"type":"message"}`)); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, body); len(got) == 0 || got[0] != "id: 43" {
		t.Fatalf("next event %q: want id 43", got)
	}
	tr.Close("bye")
	if err := tr.Write(deadline, "state", []byte(`{}`)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v, want net.ErrClosed", err)
	}
	if _, err := body.ReadByte(); err != io.EOF {
		t.Fatalf("after close the stream reads %v, want EOF", err)
	}
}

// TestSSERefuse: a refused stream gets the JSON error shape with its
// status instead of a stream.
func TestSSERefuse(t *testing.T) {
	tr, r := sseStream(t, "", 0)
	tr.refuse(errTooManyForVis)
	tr.stop()
	tr.conn.Close()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 429 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" ||
		body.Error.Code != "too_many_connections_for_visitor" || body.Error.Message == "" {
		t.Fatalf("refusal %d %v %+v", resp.StatusCode, resp.Header, body)
	}
}

func TestStreamCORS(t *testing.T) {
	s := New(nil, &Options{Origins: []string{"https://shop.example", "http://localhost:3000"}})
	if got := s.streamCORS("http://localhost:3000"); got != "Access-Control-Allow-Origin: http://localhost:3000\r\nAccess-Control-Allow-Credentials: true\r\nVary: Origin\r\n" {
		t.Fatalf("allowed origin: %q", got)
	}
	for _, o := range []string{"", "https://evil.example", "https://shop.example.evil"} {
		if got := s.streamCORS(o); got != "" {
			t.Fatalf("origin %q: %q, want none", o, got)
		}
	}
	if strings.Join(s.originHosts, ",") != "shop.example,localhost:3000" {
		t.Fatalf("origin patterns %q", s.originHosts)
	}
}

// TestNewDefaults: zero options mean the defaults, and the caller's
// options are neither kept nor changed.
func TestNewDefaults(t *testing.T) {
	s := New(nil, nil)
	if s.opts.WSHeartbeat != DefaultWSHeartbeat || s.opts.SSEHeartbeat != DefaultSSEHeartbeat || s.log == nil {
		t.Fatalf("defaults: %+v", s.opts)
	}
	opts := &Options{Origins: []string{"https://a.example"}, SSEHeartbeat: time.Second}
	s = New(nil, opts)
	opts.Origins[0] = "https://b.example"
	if s.opts.Origins[0] != "https://a.example" || s.opts.SSEHeartbeat != time.Second || opts.WSHeartbeat != 0 {
		t.Fatalf("options shared with the caller: %+v / %+v", s.opts, opts)
	}
}

// TestHijackWriterHead: the upgrade's status line and headers are written
// by hand, and a refusal closes the connection.
func TestHijackWriterHead(t *testing.T) {
	for _, tc := range []struct {
		code  int
		close bool
	}{{http.StatusSwitchingProtocols, false}, {http.StatusForbidden, true}} {
		srv, cli := tcpPair(t)
		w := &hijackWriter{conn: srv, header: http.Header{}}
		w.Header().Set("Upgrade", "websocket")
		w.WriteHeader(tc.code)
		w.WriteHeader(500) // only the first counts
		srv.Close()
		resp, err := http.ReadResponse(bufio.NewReader(cli), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Upgrade") != "websocket" || resp.Close != tc.close {
			t.Fatalf("%d: got %d %v", tc.code, resp.StatusCode, resp.Header)
		}
	}
}

func TestAttachError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want *httperr.Error
	}{
		{hub.ErrClosed, ErrDraining},
		{fmt.Errorf("attach: %w", hub.ErrTooManyForVisitor), errTooManyForVis},
		{hub.ErrTooManyConns, errTooManyConns},
		{errors.New("hub: read state: down"), errUnavailable},
	} {
		if got := attachError(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}
