//go:build !linux

package push

import (
	"errors"
	"syscall"

	"github.com/waitroom/waitroom/internal/workpool"
)

// poller has no epoll set to offer here: newPoller always fails, so each
// push connection waits in a goroutine of its own.
type poller struct{}

type pollWait struct{}

func newPoller(*workpool.Pool) (*poller, error) { return nil, errors.New("no epoll here") }

func (*poller) prepare(syscall.RawConn, func() bool, func()) *pollWait { return &pollWait{} }

func (*pollWait) start() {}

func (*pollWait) finish() {}

func (*poller) len() int { return 0 }

func (*poller) stop() {}
