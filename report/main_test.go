package report

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/rediscall"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var clients = []string{"rueidis", "go-redis"}

// each runs f against a real redis-server with rueidis, the default
// client. go-redis and miniredis are held to the same answers by
// TestParity (parity_test.go).
func each(t *testing.T, f func(t *testing.T, srv *redistest.Server, r rediscall.Redis)) {
	t.Run("real/rueidis", func(t *testing.T) {
		srv := redistest.StartReal(t)
		f(t, srv, newRedis(t, srv, "rueidis"))
	})
}

func newRedis(tb testing.TB, srv *redistest.Server, client string) rediscall.Redis {
	tb.Helper()
	switch client {
	case "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{srv.Addr}, DisableCache: true,
			ForceSingleClient: true, AlwaysRESP2: srv.Kind == "mini",
		})
		if err != nil {
			tb.Fatalf("rueidis: %v", err)
		}
		tb.Cleanup(c.Close)
		return redisconn.NewRueidis(c)
	case "go-redis":
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2})
		tb.Cleanup(func() { _ = c.Close() })
		return redisconn.NewGoRedis(c)
	}
	tb.Fatalf("unknown client %q", client)
	return nil
}
