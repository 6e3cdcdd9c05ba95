package push

import (
	"io"
	"net"
	"reflect"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawConnOf returns the socket under a hijacked connection (fasthttp wraps
// it, embedding the net.Conn), or nil when there is none to wait on.
func rawConnOf(nc net.Conn) syscall.RawConn {
	c := nc
	if v := reflect.ValueOf(nc); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if f := v.Elem().FieldByName("Conn"); f.IsValid() && f.CanInterface() {
			if inner, ok := f.Interface().(net.Conn); ok && inner != nil {
				c = inner
			}
		}
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// waitReadable parks until the socket has bytes to read (or the peer closed
// it), without reading any: a peek that would block hands the wait to the
// runtime's poller, with a shallow stack.
func waitReadable(rc syscall.RawConn) error {
	var werr error
	err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EAGAIN || err == syscall.EINTR:
			return false // wait for the poller
		case err != nil:
			werr = err
		case n == 0:
			werr = io.EOF
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// readNow reads what the socket holds without waiting for more: 0 and no
// error when it holds nothing, io.EOF once the peer has closed its side.
func readNow(rc syscall.RawConn, b []byte) (int, error) {
	n := 0
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), b)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
			n, rerr = 0, nil
		case rerr != nil:
			n = 0
		case n == 0 && len(b) > 0:
			rerr = io.EOF
		}
		return true // never wait
	})
	if err != nil {
		return 0, err
	}
	return n, rerr
}

// setSendBuffer bounds the kernel's send buffer of the socket: a push
// connection sends small messages, and a peer that stops reading then makes
// writes block (and time out) instead of parking up to megabytes in the
// kernel.
func setSendBuffer(rc syscall.RawConn, n int) {
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, n)
	})
}

// unsentBytes is how much of what was written the peer has not
// acknowledged yet.
func unsentBytes(rc syscall.RawConn) (int, bool) {
	n, ok := 0, false
	_ = rc.Control(func(fd uintptr) {
		var v int32
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&v)))
		n, ok = int(v), errno == 0
	})
	return n, ok
}

// setPeerTimeout makes the kernel end the connection when written data has
// gone unacknowledged for d (TCP_USER_TIMEOUT): how a peer that vanished
// without a FIN is noticed, at the next heartbeat plus d.
//
// It also turns the socket's TCP keepalive off (Go turns it on for every
// accepted connection: a probe after 15 s without traffic, then every
// 15 s). With TCP_USER_TIMEOUT set, the kernel's keepalive timer no longer
// counts probes: it resets the connection as soon as one probe is out and
// nothing came from the peer for d. At d = 30 s that is a single probe, or
// its answer, lost: one dropped packet closed a quiet push connection with
// an RST. A paused room makes it likely, since the pause message went to
// every connection at once and their keepalive timers then fire together
// (10,000 probes and answers in the same instant overflow the loopback's
// backlog of 1,000 packets). The heartbeat is the probe here: it is data,
// so a lost packet is retransmitted, and d bounds the wait for its
// acknowledgement.
func setPeerTimeout(rc syscall.RawConn, d time.Duration) {
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 0)
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
