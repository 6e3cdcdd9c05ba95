package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// TestSentinelFailover: a master, a replica and three sentinels (real
// processes), two instances (one on each client), 300 visitors on
// WebSocket, SSE and polling while admission runs. The master is killed
// (SIGKILL) mid-run; Sentinel promotes the replica and the instances follow
// on their own: /readyz is not ready while pub/sub is down, admission goes
// on at one batch per tick, every visitor is admitted and told exactly once.
func TestSentinelFailover(t *testing.T) {
	sen := redistest.StartSentinel(t)
	const tick = 100 * time.Millisecond
	const batch = 5
	mutate := func(c *config) {
		withAdmin(c)
		c.Redis = sen.URL()
		c.Sentinel = sen.Name
		c.OpenRooms = false
		c.JoinRate = 0
		c.Capacity.Tick = tick
	}
	a := startServerOpts(t, nil, "rueidis", &serverOptions{}, mutate)
	b := startServerOpts(t, nil, "go-redis", &serverOptions{}, mutate)
	servers := []*testServer{a, b}
	const room = "sale"
	admin := newVisitor(t, a.URL)
	if r := admin.admin("PUT", "/rooms/"+room, `{"paused":true,"batch":5}`); r.Code != 200 {
		t.Fatalf("create room: %d %s", r.Code, r.Raw)
	}

	const n = 300
	visitors := make([]*visitor, n)
	var pushed []*pushClient
	for i := range n {
		visitors[i] = newVisitor(t, servers[i%2].URL)
		visitors[i].join(room)
	}
	for i := 0; i < 200; i++ {
		kind := "ws"
		if i%2 == 1 {
			kind = "sse"
		}
		pushed = append(pushed, dial(t, kind, servers[(i+1)%2].URL, room, visitors[i].cred))
	}
	waitfor.Until(t, 20*time.Second, "every push client's first state", func() bool {
		for _, p := range pushed {
			if len(p.messages()) == 0 {
				return false
			}
		}
		return true
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// Pollers: ask at the nextPollMs given (at most 1 s apart), and keep
	// asking after admission, which must keep naming the same token.
	var polled sync.Map // index -> notBefore of the admission it was told
	var twice atomic.Int64
	for i := 200; i < n; i++ {
		pollAdmission(ctx, &wg, visitors[i], room, i, &polled, &twice)
	}
	// /readyz must never say ready while this instance's pub/sub is down.
	readyz := watchReadyz(ctx, &wg, servers)

	admitted := func() int {
		k := 0
		for _, p := range pushed {
			if p.count("admitted") > 0 {
				k++
			}
		}
		polled.Range(func(any, any) bool { k++; return true })
		return k
	}
	admin.admin("POST", "/rooms/"+room+"/resume", "")
	waitfor.Until(t, 30*time.Second, "a third admitted", func() bool { return admitted() >= n/3 })
	killedAt := time.Now()
	sen.Kill(t, sen.Master)
	newMaster := sen.WaitFailover(t, sen.Master, 30*time.Second)
	t.Logf("failover to %s took %v", newMaster, time.Since(killedAt).Round(time.Millisecond))
	waitfor.Until(t, 60*time.Second, "everyone admitted", func() bool { return admitted() == n })
	for _, ts := range servers {
		ts.waitReadyz(t, 10*time.Second, 200)
	}
	cancel()
	wg.Wait()

	// Told exactly once: one admitted message per push connection, one
	// token per poller; and one batch per tick.
	perTick := map[int64]int{}
	note := func(nb string) {
		at, err := time.Parse(time.RFC3339Nano, nb)
		if err != nil {
			t.Fatalf("notBefore %q: %v", nb, err)
		}
		perTick[at.UnixMilli()/tick.Milliseconds()-1]++
	}
	for i, p := range pushed {
		var nbs []string
		for _, m := range p.messages() {
			if m.Status == "admitted" {
				nbs = append(nbs, m.NotBefore)
			}
			if m.Status == "not_in_queue" || m.Status == "expired" {
				t.Errorf("push client %d heard %s", i, m.Status)
			}
		}
		if len(nbs) != 1 {
			t.Fatalf("push client %d was told admitted %d times: %v", i, len(nbs), nbs)
		}
		note(nbs[0])
	}
	polled.Range(func(_, nb any) bool { note(nb.(string)); return true })
	if twice.Load() > 0 {
		t.Fatalf("pollers were told %d different admissions", twice.Load())
	}
	ticks := make([]int64, 0, len(perTick))
	for k, c := range perTick {
		if c > batch {
			t.Fatalf("tick %d admitted %d, more than one batch of %d", k, c, batch)
		}
		ticks = append(ticks, k)
	}
	slices.Sort(ticks)
	var gap int64
	for i := 1; i < len(ticks); i++ {
		gap = max(gap, ticks[i]-ticks[i-1]-1)
	}
	t.Logf("admission ticks missed in a row (the outage visitors saw): %d (%v)", gap, time.Duration(gap)*tick)
	if readyz.readyWhileDown.Load() > 0 {
		t.Fatalf("/readyz said ready %d times while pub/sub was down", readyz.readyWhileDown.Load())
	}
	if readyz.notReady.Load() == 0 {
		t.Fatal("/readyz never said not ready during the failover")
	}
}

func TestSentinelConfig(t *testing.T) {
	env := func(string) string { return "" }
	cfg, err := parseConfig([]string{"-redis-sentinel", "main", "-redis", "redis://10.0.0.1:26379,10.0.0.2:26379/2", "-secret", testSecret}, env)
	if err != nil {
		t.Fatal(err)
	}
	addrs, db, err := redisconn.SentinelAddrs(cfg.Redis)
	if err != nil || !slices.Equal(addrs, []string{"10.0.0.1:26379", "10.0.0.2:26379"}) || db != 2 {
		t.Fatalf("sentinels %v db %d: %v", addrs, db, err)
	}
	for _, args := range [][]string{
		{"-redis-sentinel", "main"},
		{"-redis-sentinel", "main", "-redis", "redis://10.0.0.1", "-secret", testSecret},
		{"-redis-sentinel", "main", "-redis", "redis://10.0.0.1:26379,", "-secret", testSecret},
		{"-redis-sentinel", "main", "-redis", "http://10.0.0.1:26379", "-secret", testSecret},
		{"-redis-sentinel", "main", "-redis", "redis://10.0.0.1:26379/x", "-secret", testSecret},
		{"-redis-sentinel", "main", "-redis-cluster", "-redis", "redis://10.0.0.1:26379", "-secret", testSecret},
	} {
		if _, err := parseConfig(args, env); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
