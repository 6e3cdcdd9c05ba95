//go:build !linux

package push

import (
	"net"
	"syscall"
	"time"
)

// rawConnOf finds no socket to wait on here: the library's read loop serves
// the read side instead.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func waitReadable(syscall.RawConn) error { return nil }

func setSendBuffer(syscall.RawConn, int) {}

func unsentBytes(syscall.RawConn) (int, bool) { return 0, false }

func setPeerTimeout(syscall.RawConn, time.Duration) {}

func readNow(syscall.RawConn, []byte) (int, error) { return 0, nil }
