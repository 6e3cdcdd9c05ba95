package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// TestClusterFaults: a Redis Cluster of three masters with a replica each
// (six real processes), three instances (rueidis, go-redis, rueidis) with
// sharded pub/sub, three rooms on three different masters, each with
// visitors on WebSocket, SSE and polling spread over the instances. While
// the rooms admit: CLIENT KILL TYPE pubsub on one room's master, the slot
// of another room migrated to another master, and the third room's master
// killed (SIGKILL) until its replica is promoted. Every visitor is
// admitted and told exactly once, no tick of a room admits more than one
// batch, and /readyz never says ready while an instance's subscription of
// a room is down.
func TestClusterFaults(t *testing.T) {
	cl := redistest.StartHACluster(t)
	const tick = 100 * time.Millisecond
	const batch = 2
	url := "redis://" + cl.Addrs[0] + "?addr=" + strings.Join(cl.Addrs[1:], "&addr=")
	mutate := func(c *config) {
		withAdmin(c)
		c.Redis, c.Cluster = url, true
		c.OpenRooms = false
		c.JoinRate = 0
		c.Capacity.Tick = tick
	}
	servers := []*testServer{
		startServerOpts(t, nil, "rueidis", &serverOptions{}, mutate),
		startServerOpts(t, nil, "go-redis", &serverOptions{}, mutate),
		startServerOpts(t, nil, "rueidis", &serverOptions{}, mutate),
	}

	// Three rooms on three masters; the one whose master is killed is not
	// on the master of the rooms list ({rooms}), which every tick reads.
	masterOf := func(key string) string {
		t.Helper()
		slot, err := cl.Slot(key)
		if err != nil {
			t.Fatal(err)
		}
		n, err := cl.MasterOf(slot)
		if err != nil {
			t.Fatal(err)
		}
		return n.Addr
	}
	listOwner := masterOf("{rooms}")
	var kick, move, kill string // the rooms of the three faults
	for i := 0; kick == "" || move == "" || kill == ""; i++ {
		if i > 200 {
			t.Fatal("no room names on three masters")
		}
		name := fmt.Sprintf("c%d", i)
		m := masterOf(wire.Channel(name))
		switch {
		case m == listOwner && kick == "":
			kick = name
		case m != listOwner && kill == "":
			kill = name
		case m != listOwner && m != masterOf(wire.Channel(kill)) && move == "":
			move = name
		}
	}
	rooms := []string{kick, move, kill}
	admin := newVisitor(t, servers[0].URL)
	for _, room := range rooms {
		if r := admin.admin("PUT", "/rooms/"+room, fmt.Sprintf(`{"paused":true,"batch":%d}`, batch)); r.Code != 200 {
			t.Fatalf("create room: %d %s", r.Code, r.Raw)
		}
	}

	// Per room: 90 visitors, 60 pushed (WS and SSE) on another instance
	// than the one they joined, 30 polling.
	const perRoom, pushedPerRoom = 90, 60
	type pushed struct {
		room string
		p    *pushClient
	}
	var pushes []pushed
	var pollers []struct {
		room string
		v    *visitor
	}
	for ri, room := range rooms {
		for i := range perRoom {
			k := ri*perRoom + i
			v := newVisitor(t, servers[k%3].URL)
			v.join(room)
			if i < pushedPerRoom {
				kind := "ws"
				if i%2 == 1 {
					kind = "sse"
				}
				pushes = append(pushes, pushed{room, dial(t, kind, servers[(k+1)%3].URL, room, v.cred)})
				continue
			}
			pollers = append(pollers, struct {
				room string
				v    *visitor
			}{room, v})
		}
	}
	waitfor.Until(t, 30*time.Second, "every push client's first state", func() bool {
		for _, p := range pushes {
			if len(p.p.messages()) == 0 {
				return false
			}
		}
		return true
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var polled sync.Map // poller index -> notBefore it was told
	var twice atomic.Int64
	for i, pl := range pollers {
		pollAdmission(ctx, &wg, pl.v, pl.room, i, &polled, &twice)
	}
	readyz := watchReadyz(ctx, &wg, servers)

	admittedIn := func(room string) int {
		k := 0
		for _, p := range pushes {
			if p.room == room && p.p.count("admitted") > 0 {
				k++
			}
		}
		for i, pl := range pollers {
			if _, ok := polled.Load(i); ok && pl.room == room {
				k++
			}
		}
		return k
	}
	for _, room := range rooms {
		admin.admin("POST", "/rooms/"+room+"/resume", "")
	}
	progress := func(room string, share int) {
		t.Helper()
		waitfor.Until(t, 60*time.Second, fmt.Sprintf("%s at %d%%", room, share), func() bool { return admittedIn(room)*100 >= perRoom*share })
	}

	progress(kick, 20)
	n, err := cl.KillPubSub(masterOf(wire.Channel(kick)))
	if err != nil || n == 0 {
		t.Fatalf("client kill type pubsub: %d %v", n, err)
	}
	t.Logf("killed %d pubsub connections on the master of %s", n, kick)

	progress(move, 30)
	slot, err := cl.Slot(wire.Channel(move))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cl.Masters()
	if err != nil {
		t.Fatal(err)
	}
	from := masterOf(wire.Channel(move))
	to := ms[0]
	for _, m := range ms {
		if m != from && m != masterOf(wire.Channel(kill)) {
			to = m
		}
	}
	movedAt := time.Now()
	cl.MigrateSlot(t, slot, to)
	t.Logf("slot %d of %s moved from %s to %s in %v", slot, move, from, to, time.Since(movedAt).Round(time.Millisecond))

	progress(kill, 30)
	victim := masterOf(wire.Channel(kill))
	killedAt := time.Now()
	promoted := cl.KillMaster(t, victim, 30*time.Second)
	t.Logf("master of %s killed, replica %s promoted after %v", kill, promoted, time.Since(killedAt).Round(time.Millisecond))

	waitfor.Until(t, 90*time.Second, "everyone admitted", func() bool {
		for _, room := range rooms {
			if admittedIn(room) != perRoom {
				return false
			}
		}
		return true
	})
	for _, ts := range servers {
		ts.waitReadyz(t, 20*time.Second, 200)
	}
	cancel()
	wg.Wait()

	perTick := map[string]int{} // room/tick -> admitted
	maxGap := map[string]int64{}
	ticksOf := map[string][]int64{}
	note := func(room, nb string) {
		at, err := time.Parse(time.RFC3339Nano, nb)
		if err != nil {
			t.Fatalf("notBefore %q: %v", nb, err)
		}
		k := at.UnixMilli()/tick.Milliseconds() - 1
		key := fmt.Sprintf("%s/%d", room, k)
		if perTick[key] == 0 {
			ticksOf[room] = append(ticksOf[room], k)
		}
		perTick[key]++
	}
	for i, p := range pushes {
		var nbs []string
		for _, m := range p.p.messages() {
			if m.Status == "admitted" {
				nbs = append(nbs, m.NotBefore)
			}
			if m.Status == "not_in_queue" || m.Status == "expired" {
				t.Errorf("push client %d (%s) heard %s", i, p.room, m.Status)
			}
		}
		if len(nbs) != 1 {
			t.Fatalf("push client %d (%s) was told admitted %d times: %v", i, p.room, len(nbs), nbs)
		}
		note(p.room, nbs[0])
	}
	polled.Range(func(i, nb any) bool { note(pollers[i.(int)].room, nb.(string)); return true })
	if twice.Load() > 0 {
		t.Fatalf("pollers were told %d different admissions", twice.Load())
	}
	for key, c := range perTick {
		if c > batch {
			t.Fatalf("tick %s admitted %d, more than one batch of %d", key, c, batch)
		}
	}
	for room, ks := range ticksOf {
		slices.Sort(ks)
		for i := 1; i < len(ks); i++ {
			maxGap[room] = max(maxGap[room], ks[i]-ks[i-1]-1)
		}
	}
	t.Logf("admission ticks missed in a row per room (pubsub kill %s, slot moved %s, master killed %s): %v", kick, move, kill, maxGap)
	if readyz.readyWhileDown.Load() > 0 {
		t.Fatalf("/readyz said ready %d times while a room's subscription was down", readyz.readyWhileDown.Load())
	}
	if readyz.notReady.Load() == 0 {
		t.Fatal("/readyz never said not ready while a room's master was gone")
	}
}
