package redisconn

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestGoRedisLinesRateLimited: while Redis is down, go-redis says that its
// pool failed to dial on every call; those lines reach the server's log,
// one per lograte.DefaultEvery, not stderr one per call.
func TestGoRedisLinesRateLimited(t *testing.T) {
	srv := redistest.StartReal(t)
	var log lockedLog
	ctx := context.Background()
	c, err := Open(ctx, Options{URL: srv.URL(), Client: "go-redis"}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Stop()
	start := time.Now()
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range 40 { // at once: each waits out the pool's dial attempts
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := c.Do(cctx, "GET", "k"); err != nil {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n != 40 {
		t.Fatalf("%d of 40 calls failed with Redis stopped", n)
	}
	most := 1 + int(time.Since(start)/lograte.DefaultEvery)
	if n := strings.Count(log.String(), `msg="redis client (go-redis)"`); n < 1 || n > most {
		t.Fatalf("%d lines from go-redis for 40 failed calls, want 1 to %d:\n%s", n, most, log.String())
	}
	// The pool dials again in the background until Redis answers: let it,
	// so that nothing of it is left running after Close.
	srv.Restart(t)
	waitfor.Until(t, 10*time.Second, "a call that succeeds once Redis is back", func() bool {
		_, err := c.Do(ctx, "GET", "k")
		return err == nil
	})
}
