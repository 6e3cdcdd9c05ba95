package redisconn

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEmbedded: with no URL each client gets an embedded Redis that
// answers, and Close stops it (twice is fine).
func TestEmbedded(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, client := range []string{"rueidis", "go-redis"} {
		t.Run(client, func(t *testing.T) {
			ctx := context.Background()
			c, err := Open(ctx, Options{Client: client}, log)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
				t.Fatal(err)
			}
			v, err := c.Redis().Do(ctx, "GET", "k")
			if err != nil || v != "v" {
				t.Fatalf("GET k = %v, %v", v, err)
			}
			if c.RoomBroker(log) == nil || c.Broker(log) == nil {
				t.Fatal("no broker")
			}
			c.Close()
			c.Close()
		})
	}
}

// TestOpenRefuses: an address nothing listens on and a bad URL fail Open
// with an error, leaving nothing running.
func TestOpenRefuses(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, o := range []Options{
		{URL: "redis://127.0.0.1:1", Client: "rueidis"},
		{URL: "redis://127.0.0.1:1", Client: "go-redis"},
		{URL: "redis://%zz", Client: "go-redis"},
	} {
		if c, err := Open(context.Background(), o, log); err == nil {
			c.Close()
			t.Errorf("Open(%+v) succeeded", o)
		}
	}
}

func TestSentinelAddrs(t *testing.T) {
	for _, tc := range []struct {
		in    string
		addrs []string
		db    int
		ok    bool
	}{
		{"redis://a:26379,b:26380/2", []string{"a:26379", "b:26380"}, 2, true},
		{"a:1", []string{"a:1"}, 0, true},
		{"http://a:1", nil, 0, false},
		{"redis://a", nil, 0, false},
		{"redis://a:1/x", nil, 0, false},
		{"redis://a:1/-1", nil, 0, false},
	} {
		addrs, db, err := SentinelAddrs(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (!slices.Equal(addrs, tc.addrs) || db != tc.db)) {
			t.Errorf("SentinelAddrs(%q) = %v, %d, %v", tc.in, addrs, db, err)
		}
	}
}
