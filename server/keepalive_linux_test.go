package main

import (
	"net"
	"net/url"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"golang.org/x/sys/unix"

	"github.com/waitroom/waitroom/push"
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
		if ut != int(push.PeerTimeout.Milliseconds()) {
			t.Fatalf("push socket with TCP_USER_TIMEOUT %d ms, want %v", ut, push.PeerTimeout)
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
