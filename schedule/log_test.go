package schedule

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// switchedRedis fails every call while down, as an unreachable Redis.
type switchedRedis struct {
	rediscall.Redis
	down   atomic.Bool
	failed atomic.Int64
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (s *switchedRedis) Eval(ctx context.Context, sc *rediscall.Script, keys []string, args ...string) (any, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return nil, errUnreachable
	}
	return s.Redis.Eval(ctx, sc, keys, args...)
}

func (s *switchedRedis) Do(ctx context.Context, args ...string) (any, error) {
	if s.down.Load() {
		s.failed.Add(1)
		return nil, errUnreachable
	}
	return s.Redis.Do(ctx, args...)
}

// lockedLog is a log the test reads while the loop writes it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// count is how many lines hold s.
func (l *lockedLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// TestOutageLoggedOnce: while Redis is unreachable every tick of the loop
// fails; the log gets the first failure, at most a line per
// lograte.DefaultEvery after it, and one line when ticks succeed again.
func TestOutageLoggedOnce(t *testing.T) {
	srv := redistest.StartReal(t)
	in := newInstance(t, srv, "rueidis", nil)
	r := &switchedRedis{Redis: in.r}
	var log lockedLog
	s := New(r, in.q, &Options{Tick: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	run(t, s)

	r.down.Store(true)
	down := time.Now()
	waitfor.Until(t, 20*time.Second, "100 failed ticks", func() bool { return r.failed.Load() >= 100 })
	lasted := time.Since(down)
	if n, most := log.count(`msg="schedule tick"`), 1+int(lasted/lograte.DefaultEvery); n < 1 || n > most {
		t.Fatalf("%d lines for %d failed ticks in %v, want 1 to %d:\n%s", n, r.failed.Load(), lasted, most, log.buf.String())
	}
	r.down.Store(false)
	waitfor.Until(t, 10*time.Second, "the line saying ticks succeed again", func() bool {
		return log.count(`msg="schedule: calls succeed again"`) == 1
	})
}
