package push

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/internal/workpool"
)

// TestPollerReadsAndRearms: a waiting connection is read each time its
// client sends, stays in the set between reads, and is ended once when
// its client goes.
func TestPollerReadsAndRearms(t *testing.T) {
	readers := workpool.New()
	defer readers.Stop()
	p, err := newPoller(readers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	srv, cli := tcpPair(t)
	rc := rawConnOf(srv)
	if rc == nil {
		t.Fatal("no raw socket")
	}
	var got atomic.Int64 // bytes read
	var ends atomic.Int32
	w := p.prepare(rc, func() bool {
		var b [16]byte
		for {
			n, err := readNow(rc, b[:])
			if err != nil {
				return false
			}
			got.Add(int64(n))
			if n < len(b) {
				return true
			}
		}
	}, func() { ends.Add(1); srv.Close() })
	w.start()
	if p.len() != 1 {
		t.Fatalf("%d waiting, want 1", p.len())
	}
	for i := 1; i <= 3; i++ {
		if _, err := cli.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		waitfor.Until(t, 5*time.Second, "the bytes read", func() bool { return got.Load() == int64(10*i) })
		if p.len() != 1 || ends.Load() != 0 {
			t.Fatalf("after read %d: %d waiting, %d ended", i, p.len(), ends.Load())
		}
	}
	cli.Close()
	waitfor.Until(t, 5*time.Second, "the end of a client that went", func() bool { return ends.Load() == 1 && p.len() == 0 })
	w.finish() // a later finish does nothing
	if ends.Load() != 1 {
		t.Fatalf("ended %d times", ends.Load())
	}
}

// TestPollerFinishBeforeStart: a wait finished before it starts (the hub
// closed the connection first) never enters the set.
func TestPollerFinishBeforeStart(t *testing.T) {
	readers := workpool.New()
	defer readers.Stop()
	p, err := newPoller(readers)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	srv, _ := tcpPair(t)
	var ends atomic.Int32
	w := p.prepare(rawConnOf(srv), func() bool { return true }, func() { ends.Add(1); srv.Close() })
	w.finish()
	w.start()
	if ends.Load() != 1 || p.len() != 0 {
		t.Fatalf("%d ended, %d waiting; want 1, 0", ends.Load(), p.len())
	}
}

// TestPollerStopEndsWhatWaits: a connection still waiting when the set
// stops is ended, and one that starts after is ended at once.
func TestPollerStopEndsWhatWaits(t *testing.T) {
	readers := workpool.New()
	defer readers.Stop()
	p, err := newPoller(readers)
	if err != nil {
		t.Fatal(err)
	}
	var ends atomic.Int32
	wait := func(s net.Conn) *pollWait {
		return p.prepare(rawConnOf(s), func() bool { return true }, func() { ends.Add(1); s.Close() })
	}
	s1, _ := tcpPair(t)
	wait(s1).start()
	if p.len() != 1 {
		t.Fatalf("%d waiting, want 1", p.len())
	}
	p.stop()
	if ends.Load() != 1 || p.len() != 0 {
		t.Fatalf("after stop: %d ended, %d waiting", ends.Load(), p.len())
	}
	s2, _ := tcpPair(t)
	wait(s2).start()
	if ends.Load() != 2 || p.len() != 0 {
		t.Fatalf("a start after stop: %d ended, %d waiting", ends.Load(), p.len())
	}
	p.stop() // twice is fine
}
