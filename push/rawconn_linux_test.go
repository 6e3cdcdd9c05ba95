package push

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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
