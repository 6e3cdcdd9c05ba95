package main

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"golang.org/x/sys/unix"
)

// pushSockets finds this process's sockets that the server at port
// accepted and set up as push connections (a TCP_USER_TIMEOUT is what only
// those get), and reports SO_KEEPALIVE for each.
func pushSockets(t *testing.T, port int) map[int]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]int{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			continue
		}
		in, ok := sa.(*syscall.SockaddrInet4)
		if !ok || in.Port != port {
			continue
		}
		if _, err := syscall.Getpeername(fd); err != nil {
			continue // the listener
		}
		ut, err := syscall.GetsockoptInt(fd, syscall.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		if err != nil || ut == 0 {
			continue // a plain HTTP connection
		}
		if ut != int(pushUserTimeout.Milliseconds()) {
			t.Fatalf("push socket with TCP_USER_TIMEOUT %d ms, want %v", ut, pushUserTimeout)
		}
		ka, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		if err != nil {
			continue // closed meanwhile
		}
		found[fd] = ka
	}
	return found
}

// TestPushSocketsHaveNoKernelKeepalive: the server's side of a WebSocket
// and of an SSE connection has TCP keepalive off. Go turns keepalive on for
// every accepted connection (a probe after 15 s without traffic, then every
// 15 s); with the push connections' TCP_USER_TIMEOUT of 30 s the kernel then
// resets the connection when a single probe, or its answer, is lost. In a
// paused room with 10,000 connections all probes fire together after the
// pause message and overflow the loopback backlog: `bench scale` saw
// hundreds of connections reset ~20–30 s into the pause, one
// TcpExtTCPAbortOnTimeout each.
func TestPushSocketsHaveNoKernelKeepalive(t *testing.T) {
	ts := startServer(t, nil, "rueidis", nil)
	u, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, ps, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(ps)
	for _, kind := range []string{"ws", "sse"} {
		v := newVisitor(t, ts.URL)
		if r := v.join("room"); r.str("status") != "waiting" {
			t.Fatalf("join: %s", r.Raw)
		}
		p := dial(t, kind, ts.URL, "room", v.cred)
		waitfor.Until(t, 5*time.Second, kind+" first state", func() bool { return len(p.messages()) > 0 })
	}
	var socks map[int]int
	waitfor.Until(t, 5*time.Second, "two push sockets", func() bool {
		socks = pushSockets(t, port)
		return len(socks) == 2
	})
	for fd, ka := range socks {
		if ka != 0 {
			t.Errorf("push socket fd %d has SO_KEEPALIVE on", fd)
		}
	}
}

// dropEmptySegments makes the kernel discard every TCP segment without
// payload that arrives for the connection (keepalive probes among them),
// except a reset, with a socket filter: the lost packet of the real case,
// on purpose. The filter sees the segment from its TCP header: payload =
// length - 4 × data offset.
func dropEmptySegments(t *testing.T, c net.Conn) {
	t.Helper()
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 13},            // flags
		{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: 0x04, Jt: 7}, // RST: let it through
		{Code: unix.BPF_LD | unix.BPF_B | unix.BPF_ABS, K: 12},            // data offset in the high nibble
		{Code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, K: 0xf0},
		{Code: unix.BPF_ALU | unix.BPF_RSH | unix.BPF_K, K: 2}, // header length in bytes
		{Code: unix.BPF_MISC | unix.BPF_TAX},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_LEN},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_X, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: 0}, // header only: drop
		{Code: unix.BPF_RET | unix.BPF_K, K: 0xffffffff},
	}
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
			&unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
	}); err != nil || serr != nil {
		t.Fatalf("attach filter: %v %v", err, serr)
	}
}

// TestPushSocketSurvivesLostKeepaliveProbe: a quiet push socket whose
// peer never sees a keepalive probe is not reset. The server side is set
// up as a push connection (setPeerTimeout) on a listener with keepalive
// every 1 s (Go's default is 15 s) and a peer timeout of 2 s instead of
// 30 s; the client drops every segment without payload. With keepalive
// left on, the kernel sends a probe after 1 s, gets no answer, and resets
// the connection at 2 s, which the client reads as "connection reset by
// peer" (what the bench's clients saw); with it off, the connection stays
// quiet and open. About 8 s.
func TestPushSocketSurvivesLostKeepaliveProbe(t *testing.T) {
	lc := net.ListenConfig{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 9}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer srv.Close()
	dropEmptySegments(t, client)
	rc := rawConnOf(srv)
	if rc == nil {
		t.Fatal("no raw socket")
	}
	setPeerTimeout(rc, 2*time.Second)

	// Four times the peer timeout: long enough for a probe and the reset
	// that follows it, with room for a busy machine's late timers.
	_ = client.SetReadDeadline(time.Now().Add(8 * time.Second))
	_, err = client.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("quiet push connection ended: %v", err)
	}
}
