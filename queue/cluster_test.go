package queue

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// TestCluster runs the queue on a three-node Redis Cluster with both
// clients: every script touches one room's keys, all in the {room} slot,
// and the rooms sets share the {rooms} slot.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	for _, client := range clients {
		t.Run(client, func(t *testing.T) {
			var r Redis
			switch client {
			case "rueidis":
				c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				r = redisconn.NewRueidis(c)
			default:
				c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs})
				t.Cleanup(func() { _ = c.Close() })
				r = redisconn.NewGoRedis(c)
			}
			ctx := context.Background()
			q := newQueue(t, r, &Options{Capacity: Capacity{Batch: 5, Tick: 100 * time.Millisecond}, TokenTTL: time.Second})
			// Rooms whose names hash to different slots.
			rooms := []string{client + "-a", client + "-b", client + "-c"}
			for _, room := range rooms {
				joinN(t, q, room, 12, "v")
				if err := q.SetRoomConfig(ctx, room, settings.Room{Batch: 4}); err != nil {
					t.Fatal(err)
				}
			}
			all, err := q.AllRooms(ctx)
			if err != nil || len(all) < len(rooms) {
				t.Fatalf("rooms: %v %v", all, err)
			}
			for _, room := range rooms {
				res := admitTaken(t, q, room)
				if len(res.Admitted) != 4 {
					t.Fatalf("%s: admitted %d, want the room's batch 4", room, len(res.Admitted))
				}
				a := res.Admitted[0]
				waitUntil(t, a.NotBefore)
				if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: a.Visitor, NotBefore: a.NotBefore}, Spend); err != nil {
					t.Fatalf("%s: consume: %v", room, err)
				}
				if _, err := q.Consume(ctx, visitorsig.Token{Room: room, Visitor: a.Visitor, NotBefore: a.NotBefore}, Spend); !errors.Is(err, ErrTokenUnknown) {
					t.Fatalf("%s: second use: %v", room, err)
				}
				states, err := q.StatusMany(ctx, room, []string{"v000", "v004", "v011", "v005", "v006", "v007", "v008", "v009", "v010"})
				if err != nil {
					t.Fatal(err)
				}
				if states[1].Status != wire.StatusWaiting || states[1].Position != 1 || states[2].Position != 8 {
					t.Fatalf("%s: states after a batch of 4: %+v", room, states[:3])
				}
				st, err := q.Stats(ctx, room)
				if err != nil || st.AdmittedTotal != 4 || st.Waiting != 8 {
					t.Fatalf("%s: stats %+v %v", room, st, err)
				}
				if ok, err := q.Leave(ctx, room, "v011"); !ok || err != nil {
					t.Fatalf("%s: leave: %v %v", room, ok, err)
				}
				// A coalesced call: every visitor's keys are in the room's slot.
				cfg, err := q.RoomConfig(ctx, room)
				if err != nil {
					t.Fatal(err)
				}
				run := []*batchJoin{{visitor: "c1"}, {visitor: "v005"}, {visitor: "c2"}}
				q.joinBatch(ctx, batchKey{room: room, settings: cfg.Version()}, run)
				for i, want := range []int64{8, 2, 9} {
					if j := run[i]; j.err != nil || j.state.Status != wire.StatusWaiting || j.state.Position != want {
						t.Fatalf("%s: %s in a batch: %+v %v, want waiting at %d", room, j.visitor, j.state, j.err, want)
					}
				}
			}
			// The tick loop admits everyone and forgets the emptied rooms.
			waitfor.Until(t, 10*time.Second, "every room admitted and forgotten", func() bool {
				q.tickOnce(ctx)
				waiting, err := q.Rooms(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range waiting {
					if slices.Contains(rooms, w) {
						return false
					}
				}
				return true
			})
		})
	}
}
