package hub

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// syncBuffer is a log the test reads while the hub writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// TestStoreOutageLoggedOnce: while the store is unreachable, the reconcile
// of three rooms fails on every pass (over a hundred times in 25 s); the
// log gets the outage's first failure, one line per 10 s after it with the
// failures left out, and one line once reads succeed again.
func TestStoreOutageLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log syncBuffer
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, slog.New(slog.NewTextHandler(&log, nil)), &Options{ReconcileEvery: 100 * time.Millisecond}))
		synctest.Wait()
		for _, room := range []string{"a", "b", "c"} {
			src.set(room, "v", wire.State{Status: wire.StatusWaiting, Position: 3})
			mustAttach(t, h.Hub, room, "v", newTransport("ws"))
		}
		synctest.Wait()

		src.mu.Lock()
		src.fail = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
		src.mu.Unlock()
		time.Sleep(25 * time.Second)
		synctest.Wait()
		if n := log.count(`msg="hub: reconcile"`); n != 3 {
			t.Fatalf("%d reconcile lines in 25 s of failures, want 3 (at 0, 10 and 20 s):\n%s", n, log.buf.String())
		}
		if n := log.count("suppressed="); n != 2 {
			t.Errorf("%d lines count the failures left out, want 2:\n%s", n, log.buf.String())
		}

		src.mu.Lock()
		src.fail = nil
		src.mu.Unlock()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := log.count(`msg="hub: calls succeed again"`); n != 1 {
			t.Fatalf("%d lines saying reads succeed again, want 1:\n%s", n, log.buf.String())
		}
	})
}
