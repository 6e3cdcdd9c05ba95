package queue

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/waitroom/waitroom/settings"
)

// logLines is a log the test reads while the code under test writes it.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the lines whose message starts with prefix.
func (l *logLines) lines(t *testing.T, prefix string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	text := l.buf.String()
	l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(text), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// failCount counts the calls to Redis that failed.
type failCount struct {
	Redis
	failed atomic.Int64
}

func (f *failCount) Eval(ctx context.Context, s *rediscall.Script, keys []string, args ...string) (any, error) {
	v, err := f.Redis.Eval(ctx, s, keys, args...)
	if err != nil {
		f.failed.Add(1)
	}
	return v, err
}

func (f *failCount) Do(ctx context.Context, args ...string) (any, error) {
	v, err := f.Redis.Do(ctx, args...)
	if err != nil {
		f.failed.Add(1)
	}
	return v, err
}

// TestTickLogDuringOutage: while Redis is down, the tick loop's calls fail
// several times a tick, and the log gets the outage's first failure, at
// most a line per lograte.DefaultEvery after it, and one line when calls
// succeed again; not a line per failed call.
func TestTickLogDuringOutage(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			ctx := context.Background()
			srv := redistest.StartReal(t)
			r := &failCount{Redis: newRedis(t, srv, client)}
			var log logLines
			var admitted atomic.Int64
			q := newQueue(t, r, &Options{
				Capacity: Capacity{Batch: 1, Tick: 100 * time.Millisecond},
				Logger:   slog.New(slog.NewJSONHandler(&log, nil)),
				OnAdmit:  func(string, int) { admitted.Add(1) },
			})
			for _, room := range []string{"drop", "shop"} {
				if err := q.SetRoomConfig(ctx, room, settings.Room{}); err != nil {
					t.Fatal(err)
				}
				joinN(t, q, room, 200, "v")
			}
			rctx, cancel := context.WithCancel(ctx)
			ran := make(chan error, 1)
			go func() { ran <- q.Run(rctx) }()
			defer func() {
				cancel()
				<-ran
			}()
			waitfor.Until(t, 10*time.Second, "an admission before the outage", func() bool { return admitted.Load() > 0 })

			before := r.failed.Load()
			srv.Stop()
			down := time.Now()
			// Every tick fails at least its look at the rooms, and the
			// admit call of each configured room: about 30 failures a
			// second.
			const fails = 80
			waitfor.Until(t, 30*time.Second, "80 failed calls to Redis", func() bool { return r.failed.Load()-before >= fails })
			lasted := time.Since(down)
			got := log.lines(t, "tick:")
			if most := 1 + int(lasted/lograte.DefaultEvery); len(got) == 0 || len(got) > most {
				t.Fatalf("%d tick lines for %d failed calls in %v, want 1 to %d:\n%v", len(got), r.failed.Load()-before, lasted, most, got)
			}
			if got[0]["level"] != "WARN" || got[0]["err"] == nil {
				t.Errorf("the outage's first line: %v", got[0])
			}

			srv.Restart(t)
			waitfor.Until(t, 30*time.Second, "the tick's line saying its calls succeed again", func() bool {
				return len(log.lines(t, "tick: calls succeed again")) == 1
			})
			end := log.lines(t, "tick: calls succeed again")[0]
			if end["level"] != "INFO" || end["failures"].(float64) < fails {
				t.Errorf("the outage's end: %v", end)
			}
		})
	}
}
