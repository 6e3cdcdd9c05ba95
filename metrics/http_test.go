package metrics

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/requestid"

	"github.com/waitroom/waitroom/internal/httperr"
)

// syncBuffer is a log sink the handlers' goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testApp(m *Metrics, log *slog.Logger) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(log)})
	app.Use(requestid.New(), m.AccessLog(log))
	app.Get("/rooms/:room/status", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/rooms/:room/join", func(c *fiber.Ctx) error {
		return httperr.New(503, "redis_down", "the queue is unavailable")
	})
	return app
}

func do(t *testing.T, app *fiber.App, method, target string) (int, string) {
	t.Helper()
	resp, err := app.Test(httptest.NewRequest(method, target, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAccessLog: requests are counted by route pattern (made-up paths
// share "unmatched"), an error is answered in the JSON shape, and the log
// has the request without its credentials.
func TestAccessLog(t *testing.T) {
	m := New(Build{})
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	app := testApp(m, log)
	if code, _ := do(t, app, "GET", "/rooms/shop/status?visitor=sekrit.cred&a=1"); code != 200 {
		t.Fatalf("status: %d", code)
	}
	do(t, app, "GET", "/rooms/other/status")
	do(t, app, "GET", "/no/such/path/1")
	do(t, app, "DELETE", "/no/such/path/2")
	code, body := do(t, app, "POST", "/rooms/shop/join")
	if code != 503 || !strings.Contains(body, `"code":"redis_down"`) {
		t.Fatalf("join: %d %s", code, body)
	}
	metrics := scrape(t, m)
	wantLines(t, metrics,
		`waitroom_http_requests_total{code="200",method="GET",route="/rooms/:room/status"} 2`,
		`waitroom_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`waitroom_http_requests_total{code="404",method="DELETE",route="unmatched"} 1`,
		`waitroom_http_requests_total{code="503",method="POST",route="/rooms/:room/join"} 1`,
		`waitroom_http_request_duration_seconds_count{route="/rooms/:room/status"} 2`,
		`waitroom_http_request_duration_seconds_count{route="unmatched"} 2`,
	)
	if strings.Contains(metrics, "/no/such/path") {
		t.Error("a path no route matched became a label")
	}
	logs := out.String()
	if strings.Contains(logs, "sekrit") {
		t.Errorf("the log holds a credential: %s", logs)
	}
	for _, want := range []string{"path=/rooms/shop/status", "query=\"visitor=redacted&a=1\"", "request_id=", "level=WARN msg=request method=POST"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the log:\n%s", want, logs)
		}
	}
}

// TestAccessLogNilLogger: a nil logger logs nothing and still counts.
func TestAccessLogNilLogger(t *testing.T) {
	m := New(Build{})
	app := testApp(m, nil)
	if code, _ := do(t, app, "POST", "/rooms/shop/join"); code != 503 {
		t.Fatalf("join: %d", code)
	}
	wantLines(t, scrape(t, m), `waitroom_http_requests_total{code="503",method="POST",route="/rooms/:room/join"} 1`)
}

func TestMethodLabel(t *testing.T) {
	for in, want := range map[string]string{"GET": "GET", "PATCH": "PATCH", "BREW": "other", "get": "other"} {
		if got := methodLabel(in); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "",
		"visitor=abc.def":              "visitor=redacted",
		"x=1&Visitor=abc&ticket=t&y=2": "x=1&visitor=redacted&ticket=redacted&y=2",
		"%76isitor=abc":                "visitor=redacted",
		"visitors=keep":                "visitors=keep",
	} {
		if got := redactQuery(in); got != want {
			t.Errorf("redactQuery(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkObserveHTTP is the cost every request pays for its two series.
func BenchmarkObserveHTTP(b *testing.B) {
	m := New(Build{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.observeHTTP("/api/v1/check", "GET", 200, time.Millisecond)
		}
	})
}
