package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/lograte"
)

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRefusalsLoggedOnceInAWhile: a host no route serves (421), a path the
// app could read otherwise (400) and a check from an untrusted peer (403)
// are each logged, with the host, path or peer, but 300 of each make one
// line per lograte.DefaultEvery, not 300.
func TestRefusalsLoggedOnceInAWhile(t *testing.T) {
	var log lockedBuffer
	mk := func(trusted bool) *fiber.App {
		cfg, err := Parse("routes.yaml", []byte("routes:\n  - {match: 'shop.example.com/checkout/*', room: gw}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.NameCookies(); err != nil {
			t.Fatal(err)
		}
		g, err := New(Deps{Routes: cfg, Signer: NewSigner([]byte("test secret")), Store: &fakeStore{slidTo: time.Now().Add(time.Hour)},
			Rooms: fakeRooms{}, Visitors: fakeVisitors{}, Proxies: fakeProxies{trusted}, API: fakeAPI{}},
			&Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		app := fiber.New(fiber.Config{ErrorHandler: httperr.Handler(slog.New(slog.DiscardHandler)), DisableStartupMessage: true})
		app.All("/api/v1/check", g.Check)
		return app
	}
	trusted, untrusted := mk(true), mk(false)
	start := time.Now()
	for _, c := range []struct {
		app    *fiber.App
		status int
		header []string
		uri    string
	}{
		{trusted, 421, []string{"X-Forwarded-Host", "evil.example.net"}, "/checkout/cart"},
		{trusted, 400, nil, "/checkout%2Fcart"},
		{untrusted, 403, nil, "/checkout/cart"},
	} {
		for range 300 {
			req := forwarded(c.uri)
			for i := 0; i+1 < len(c.header); i += 2 {
				req.Header.Set(c.header[i], c.header[i+1])
			}
			resp, err := c.app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("%s: status %d, want %d", c.uri, resp.StatusCode, c.status)
			}
		}
	}
	most := 1 + int(time.Since(start)/lograte.DefaultEvery)
	text := log.String()
	for _, want := range []string{
		`level=INFO msg="gateway: refused a host no route serves (421 unknown_host)" host=evil.example.net client=`,
		`level=INFO msg="gateway: refused a path the app could read otherwise (400 invalid_path)" path=/checkout%2Fcart client=`,
		`level=WARN msg="gateway: check refused" peer=0.0.0.0`,
	} {
		if n := strings.Count(text, want); n < 1 || n > most {
			t.Errorf("%d lines %s, want 1 to %d, in:\n%s", n, want, most, text)
		}
	}
}
