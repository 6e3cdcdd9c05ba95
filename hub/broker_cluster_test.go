package hub

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// TestClusterShardedBroker runs both sharded brokers on a real cluster of
// three masters with a replica each, through the faults a cluster has:
// pub/sub connections killed on one node, one room's slot migrated to
// another master, a manual failover and a master killed (SIGKILL) with its
// replica promoted. In every round each room admits one visitor; every
// admitted visitor must be told exactly once, by the event when the
// subscription held, or by the reconcile of that room when it came back.
func TestClusterShardedBroker(t *testing.T) {
	cl := redistest.StartHACluster(t)
	for _, b := range []struct {
		name string
		new  func(t *testing.T) Broker
	}{
		{"rueidis", func(t *testing.T) Broker {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Live(), DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return NewRueidisShardedBroker(c, testLog(t))
		}},
		{"go-redis", func(t *testing.T) Broker {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Live()})
			t.Cleanup(func() { _ = c.Close() })
			return NewGoRedisShardedBroker(c, testLog(t))
		}},
	} {
		t.Run(b.name, func(t *testing.T) { shardedFaults(t, cl, b.name, b.new(t)) })
	}
}

func shardedFaults(t *testing.T, cl *redistest.HACluster, name string, broker Broker) {
	ctx := context.Background()
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Live()})
	t.Cleanup(func() { _ = admin.Close() })
	src := newSource()
	h := start(t, New(broker, src, testLog(t), &Options{ReconcileEvery: time.Hour}))
	waitfor.Until(t, 5*time.Second, "ready", h.Ready)

	const rounds = 5
	var rooms []string
	for i := range 9 {
		rooms = append(rooms, fmt.Sprintf("%s-%d", name, i))
	}
	// roomsOn maps a master's address to the rooms whose slot it owns.
	roomsOn := func() map[string][]string {
		t.Helper()
		m := make(map[string][]string)
		for _, r := range rooms {
			slot, err := cl.Slot(wire.Channel(r))
			if err != nil {
				t.Fatal(err)
			}
			n, err := cl.MasterOf(slot)
			if err != nil {
				t.Fatal(err)
			}
			m[n.Addr] = append(m[n.Addr], r)
		}
		return m
	}
	if on := roomsOn(); len(on) < 2 {
		t.Fatalf("rooms on %d masters, want them spread over at least 2: %v", len(on), on)
	}
	vis := func(room string, k int) string { return fmt.Sprintf("%s.v%d", room, k) }
	tr := make(map[string]*fakeTransport)
	conns := make(map[string][]*Conn)
	for _, r := range rooms {
		for k := range rounds {
			v := vis(r, k)
			src.set(r, v, wire.State{Status: wire.StatusWaiting, Position: int64(k + 1)})
			tr[r+"/"+v] = newTransport("ws")
			conns[r] = append(conns[r], mustAttach(t, h.Hub, r, v, tr[r+"/"+v]))
		}
	}

	// admit makes visitor k of every room admitted in the source, then
	// publishes the events (best effort: during a fault SPUBLISH may fail,
	// and then only the reconcile tells).
	admit := func(k int) {
		nb := time.UnixMilli(time.Now().UnixMilli())
		for _, r := range rooms {
			v := vis(r, k)
			src.set(r, v, src.Admitted(r, v, nb, nb.Add(time.Minute)))
		}
		for _, r := range rooms {
			v := vis(r, k)
			_ = admin.SPublish(ctx, wire.Channel(r), admitJSON(r, 1, entry{v, nb.UnixMilli(), nb.Add(time.Minute).UnixMilli()})).Err()
		}
	}
	told := func(k int) {
		t.Helper()
		waitfor.Until(t, 30*time.Second, fmt.Sprintf("round %d admitted everywhere", k), func() bool {
			for _, r := range rooms {
				if !hasStatus(t, tr[r+"/"+vis(r, k)], wire.StatusAdmitted) {
					return false
				}
			}
			return true
		})
	}
	withReplica := func() []string {
		t.Helper()
		ns, err := cl.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		on := roomsOn()
		var out []string
		for _, m := range ns {
			if !m.Master || m.Failed || len(on[m.Addr]) == 0 {
				continue
			}
			for _, r := range ns {
				if r.MasterID == m.ID && !r.Failed {
					out = append(out, m.Addr)
					break
				}
			}
		}
		slices.Sort(out)
		return out
	}

	// 0: the subscriptions hold.
	admit(0)
	told(0)

	// 1: the pub/sub connections of one master are killed.
	on := roomsOn()
	victim := ""
	for a := range on {
		victim = a
	}
	if n, err := cl.KillPubSub(victim); err != nil || n == 0 {
		t.Fatalf("client kill on %s: %d %v", victim, n, err)
	}
	admit(1)
	told(1)

	// 2: one room's slot moves to another master; its events are then
	// published on the new master only.
	slot, err := cl.Slot(wire.Channel(rooms[0]))
	if err != nil {
		t.Fatal(err)
	}
	from, err := cl.MasterOf(slot)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cl.Masters()
	if err != nil {
		t.Fatal(err)
	}
	to := ms[0]
	if to == from.Addr {
		to = ms[1]
	}
	cl.MigrateSlot(t, slot, to)
	admit(2)
	told(2)

	// 3: a manual failover of a master that holds rooms.
	cands := withReplica()
	if len(cands) == 0 {
		t.Fatal("no master with rooms and a replica")
	}
	promoted := cl.Failover(t, cands[0], 30*time.Second)
	admit(3)
	told(3)

	// 4: a master holding rooms and the hub's subscriptions of them is
	// killed; until its replica is promoted the hub is not ready. (Not the
	// one just promoted: a client may have subscribed again on its replica,
	// the old master, which Redis allows and which hears the shard's
	// events too.)
	victim = ""
	for _, m := range withReplica() {
		chans, err := redistest.Command(m, "PUBSUB", "SHARDCHANNELS")
		if err == nil && chans != "" && m != promoted {
			victim = m
		}
	}
	if victim == "" {
		t.Fatal("no master with a replica holding the hub's subscriptions")
	}
	slot, err = cl.Slot(wire.Channel(roomsOn()[victim][0]))
	if err != nil {
		t.Fatal(err)
	}
	sawDown := make(chan bool)
	stop := make(chan struct{})
	go func() {
		down := false
		for {
			select {
			case <-stop:
				sawDown <- down
				return
			case <-time.After(5 * time.Millisecond): // sampling readiness
				down = down || !h.Ready()
			}
		}
	}()
	cl.Kill(t, victim)
	admit(4)
	cl.WaitPromotion(t, victim, slot, 30*time.Second)
	told(4)
	waitfor.Until(t, 30*time.Second, "ready again", h.Ready)
	close(stop)
	if !<-sawDown {
		t.Error("the hub said ready all along while a room's master was gone")
	}

	for key, f := range tr {
		if n := len(withStatus(f.msgs(t), wire.StatusAdmitted)); n != 1 {
			t.Errorf("%s told admitted %d times", key, n)
		}
	}

	// A room whose last connection closed is unsubscribed on every node.
	for _, r := range rooms {
		for _, c := range conns[r] {
			c.Close()
		}
	}
	waitfor.Until(t, 10*time.Second, "no shard channel subscribed once every room is empty", func() bool {
		for _, a := range cl.Live() {
			if out, err := redistest.Command(a, "PUBSUB", "SHARDCHANNELS"); err != nil || out != "" {
				return false
			}
		}
		return true
	})
}

// TestClusterShardedBrokerPlainReceiver: a Receiver that is not a
// ChannelReceiver hears Down when a channel's subscription is lost (with
// Ready already false) and Up when every channel is back.
func TestClusterShardedBrokerPlainReceiver(t *testing.T) {
	cl := redistest.StartCluster(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: cl.Addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	src := newSource()
	rec := &recorder{Broker: NewRueidisShardedBroker(c, testLog(t))}
	h := start(t, New(rec, src, testLog(t), &Options{ReconcileEvery: time.Hour}))
	waitfor.Until(t, 5*time.Second, "ready", h.Ready)
	src.set("p1", "a", wire.State{Status: wire.StatusWaiting, Position: 1})
	a := newTransport("ws")
	mustAttach(t, h.Hub, "p1", "a", a)
	ups, _ := rec.counts()
	reads := src.reads("p1", "a")
	nb := time.Now()
	src.set("p1", "a", src.Admitted("p1", "a", nb, nb.Add(time.Minute)))
	for _, addr := range cl.Addrs {
		if _, err := redistest.Command(addr, "CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, 10*time.Second, "down then up", func() bool { u, d := rec.counts(); return d >= 1 && u > ups })
	rec.mu.Lock()
	if rec.readyAtDown[0] {
		t.Error("Ready was true when the broker reported the channel down")
	}
	rec.mu.Unlock()
	waitfor.Until(t, 5*time.Second, "reconciled after Up", func() bool { return src.reads("p1", "a") > reads })
	waitfor.Until(t, 5*time.Second, "admission made while down delivered", func() bool { return hasStatus(t, a, wire.StatusAdmitted) })
}
