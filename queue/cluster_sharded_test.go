package queue

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

var cmdCalls = regexp.MustCompile(`cmdstat_(s?publish):calls=(\d+)`)

// pubCounts reads how many PUBLISH and SPUBLISH commands the node at addr
// has run (scripts' calls included).
func pubCounts(t *testing.T, addr string) (publish, spublish int) {
	t.Helper()
	info, err := redistest.Command(addr, "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cmdCalls.FindAllStringSubmatch(info, -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "publish" {
			publish = n
		} else {
			spublish = n
		}
	}
	return publish, spublish
}

// TestClusterShardedPublish checks that a Sharded queue's scripts publish
// room events with SPUBLISH on the node of the room's slot only, where an
// SSUBSCRIBE hears them, and never with PUBLISH (which a cluster sends to
// every node).
func TestClusterShardedPublish(t *testing.T) {
	cl := redistest.StartCluster(t)
	ctx := context.Background()
	sub := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
	t.Cleanup(func() { _ = sub.Close() })
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			var r Redis
			if client == "rueidis" {
				c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				r = redisconn.NewRueidis(c)
			} else {
				c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
				t.Cleanup(func() { _ = c.Close() })
				r = redisconn.NewGoRedis(c)
			}
			for _, a := range cl.Addrs {
				if _, err := redistest.Command(a, "CONFIG", "RESETSTAT"); err != nil {
					t.Fatal(err)
				}
			}
			q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 2, Tick: 100 * time.Millisecond}, Sharded: true})
			rooms := []string{client + "-x", client + "-y", client + "-z"}
			owner := make(map[string]string) // room -> master address
			for _, room := range rooms {
				m, err := sub.MasterForKey(ctx, wire.Channel(room))
				if err != nil {
					t.Fatal(err)
				}
				owner[room] = m.Options().Addr
			}
			for _, room := range rooms {
				ps := sub.SSubscribe(ctx, wire.Channel(room))
				if _, err := ps.Receive(ctx); err != nil { // the confirmation
					t.Fatal(err)
				}
				joinN(t, q, room, 3, "v")
				if err := q.SetRoomConfig(ctx, room, settings.Room{Batch: 2}); err != nil {
					t.Fatal(err)
				}
				res := admitTaken(t, q, room)
				if len(res.Admitted) != 2 {
					t.Fatalf("%s: admitted %d", room, len(res.Admitted))
				}
				// The config event of SetRoomConfig, then the admission.
				for {
					mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					m, err := ps.ReceiveMessage(mctx)
					cancel()
					if err != nil {
						t.Fatalf("%s: no admit event on the sharded channel: %v", room, err)
					}
					if strings.Contains(m.Payload, `"admit"`) {
						break
					}
				}
				_ = ps.Close()
			}
			want := make(map[string]bool)
			for _, a := range owner {
				want[a] = true
			}
			for _, a := range cl.Addrs {
				pub, spub := pubCounts(t, a)
				if pub != 0 {
					t.Errorf("%s ran PUBLISH %d times", a, pub)
				}
				if want[a] != (spub > 0) {
					t.Errorf("%s ran SPUBLISH %d times; owns one of the rooms: %v", a, spub, want[a])
				}
			}
		})
	}
}
