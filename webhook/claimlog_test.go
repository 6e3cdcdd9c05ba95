package webhook

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

// downRedis fails every call while down, as an unreachable Redis.
type downRedis struct {
	Redis
	down   atomic.Bool
	failed atomic.Int64
}

var errRefused = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

func (d *downRedis) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	if d.down.Load() {
		d.failed.Add(1)
		return nil, errRefused
	}
	return d.Redis.Eval(ctx, s, keys, args...)
}

func (d *downRedis) Do(ctx context.Context, args ...string) (any, error) {
	if d.down.Load() {
		d.failed.Add(1)
		return nil, errRefused
	}
	return d.Redis.Do(ctx, args...)
}

// logBuffer is a log the test reads while the loop writes it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), s)
}

// TestClaimOutageLoggedOnce: while Redis is unreachable every poll's claim
// fails; the log gets the first failure, at most a line per
// lograte.DefaultEvery after it, and one line when claims succeed again.
func TestClaimOutageLoggedOnce(t *testing.T) {
	srv := redistest.StartReal(t)
	r := &downRedis{Redis: newRedis(t, srv, "rueidis")}
	var log logBuffer
	o := fast()
	o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	run(t, newHooks(t, r, nil, o))

	r.down.Store(true)
	down := time.Now()
	waitfor.Until(t, 20*time.Second, "50 failed claims", func() bool { return r.failed.Load() >= 50 })
	lasted := time.Since(down)
	if n, most := log.count(`msg="webhook claim failed"`), 1+int(lasted/lograte.DefaultEvery); n < 1 || n > most {
		t.Fatalf("%d lines for %d failed claims in %v, want 1 to %d:\n%s", n, r.failed.Load(), lasted, most, log.buf.String())
	}
	r.down.Store(false)
	waitfor.Until(t, 10*time.Second, "the line saying claims succeed again", func() bool {
		return log.count(`msg="webhook: calls succeed again"`) == 1
	})
}
