package push

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/waitroom/waitroom/internal/lograte"
)

type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestRefusedOriginLogged: a WebSocket from a page of an origin missing
// from -origins is refused (403) and logged with its Origin, once per
// lograte.DefaultEvery however many come; one from a listed origin is
// not logged.
func TestRefusedOriginLogged(t *testing.T) {
	var log syncLog
	tp := startPushWith(t, Options{Origins: []string{"https://shop.example"}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	url := "ws" + strings.TrimPrefix(tp.url, "http") + "/ws/"
	start := time.Now()
	for i := range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, resp, err := websocket.Dial(ctx, url+"v", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
		cancel()
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("dial %d from another origin: %v %v", i, resp, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url+"w", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://shop.example"}}})
	if err != nil {
		t.Fatalf("dial from a listed origin: %v", err)
	}
	c.CloseNow()
	most := 1 + int(time.Since(start)/lograte.DefaultEvery)
	want := `level=INFO msg="push: refused a WebSocket whose Origin is not in -origins (403)" origin=https://evil.example host=127.0.0.1:`
	if n := strings.Count(log.String(), want); n < 1 || n > most {
		t.Fatalf("%d lines %s, want 1 to %d, in:\n%s", n, want, most, log.String())
	}
	if strings.Contains(log.String(), "shop.example") {
		t.Errorf("a listed origin logged:\n%s", log.String())
	}
}
