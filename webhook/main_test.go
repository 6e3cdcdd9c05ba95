package webhook

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
)

// Every delivery goroutine and HTTP connection must be gone when Run has
// returned.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var clients = []string{"rueidis", "go-redis"}

// each runs f against real Redis and miniredis, through both clients.
func each(t *testing.T, f func(t *testing.T, srv *redistest.Server, client string)) {
	for _, kind := range redistest.Kinds {
		for _, client := range clients {
			t.Run(kind+"/"+client, func(t *testing.T) {
				f(t, redistest.Start(t, kind), client)
			})
		}
	}
}

// newRedis is a connection of client to srv, closed when the test ends.
func newRedis(tb testing.TB, srv *redistest.Server, client string) Redis {
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
