package hub

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
	"github.com/waitroom/waitroom/wire"
)

// brokers builds each Broker implementation on a client of addr; the
// client is closed when the test ends, after the hub has stopped.
var brokers = []struct {
	name string
	new  func(t *testing.T, addr string) Broker
}{
	{"rueidis", func(t *testing.T, addr string) Broker {
		t.Helper()
		c, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{addr},
			// Needed by miniredis; harmless against Redis.
			DisableCache: true, ForceSingleClient: true, AlwaysRESP2: true,
		})
		if err != nil {
			t.Fatalf("rueidis: %v", err)
		}
		t.Cleanup(c.Close)
		return NewRueidisBroker(c, testLog(t))
	}},
	{"go-redis", func(t *testing.T, addr string) Broker {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		return NewGoRedisBroker(c, testLog(t))
	}},
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter sends log lines to t.Log, shown for failing tests only.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// eachRedis runs f for every Redis kind and broker.
func eachRedis(t *testing.T, kinds []string, f func(t *testing.T, srv *redistest.Server, newBroker func(t *testing.T, addr string) Broker)) {
	for _, kind := range kinds {
		for _, b := range brokers {
			t.Run(kind+"/"+b.name, func(t *testing.T) {
				srv := redistest.Start(t, kind)
				f(t, srv, b.new)
			})
		}
	}
}

func adminClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func numsub(t *testing.T, admin *redis.Client, room string) int64 {
	t.Helper()
	m, err := admin.PubSubNumSub(context.Background(), wire.Channel(room)).Result()
	if err != nil {
		t.Fatalf("pubsub numsub: %v", err)
	}
	return m[wire.Channel(room)]
}

var subscribeCalls = regexp.MustCompile(`cmdstat_subscribe:calls=(\d+)`)

// subscribes returns how many SUBSCRIBE commands Redis has run.
func subscribes(t *testing.T, admin *redis.Client) int {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	m := subscribeCalls.FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func publish(t *testing.T, admin *redis.Client, room, payload string) {
	t.Helper()
	if err := admin.Publish(context.Background(), wire.Channel(room), payload).Err(); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func hasStatus(t *testing.T, tr *fakeTransport, status wire.Status) bool {
	return len(withStatus(tr.msgs(t), status)) > 0
}

func TestRedisDeliveryAndSubscriptions(t *testing.T) {
	eachRedis(t, redistest.Kinds, func(t *testing.T, srv *redistest.Server, newBroker func(*testing.T, string) Broker) {
		admin := adminClient(t, srv.Addr)
		real := srv.Kind == "real"
		if real {
			if err := admin.ConfigResetStat(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		}
		src := newSource()
		h := start(t, New(newBroker(t, srv.Addr), src, testLog(t), &Options{PositionEvery: 20 * time.Millisecond, ReconcileEvery: time.Hour}))
		waitfor.Until(t, 5*time.Second, "ready", h.Ready)
		// The reconcile that pub/sub coming up asks for is done before the
		// visitors come: one running during the admission below could read
		// b before or after it, which the positions checked here do not
		// allow for (see TestAdmissionDuringReconcileReadKeepsItsMove).
		waitfor.Until(t, 5*time.Second, "reconciled after pub/sub up", func() bool { return h.recon.passes.Load() >= 1 })

		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 6})
		src.set("other", "c", wire.State{Status: wire.StatusWaiting, Position: 1})
		a1, a2, b1, c1 := newTransport("ws"), newTransport("sse"), newTransport("ws"), newTransport("ws")
		conns := []*Conn{
			mustAttach(t, h.Hub, "drop", "a", a1),
			mustAttach(t, h.Hub, "drop", "a", a2),
			mustAttach(t, h.Hub, "drop", "b", b1),
			mustAttach(t, h.Hub, "other", "c", c1),
		}
		// Attach returns after the SUBSCRIBE is confirmed.
		if n := numsub(t, admin, "drop"); n != 1 {
			t.Fatalf("numsub drop = %d after Attach, want 1", n)
		}
		if n := numsub(t, admin, "other"); n != 1 {
			t.Fatalf("numsub other = %d after Attach, want 1", n)
		}
		if real {
			if n := subscribes(t, admin); n != 2 {
				t.Fatalf("%d SUBSCRIBE commands for 2 rooms", n)
			}
		}

		// As the admit script does: the state changes, then the event is
		// published (a reconcile racing with the event reads the new state).
		nb := time.Now().Add(30 * time.Millisecond)
		src.set("drop", "a", src.Admitted("drop", "a", time.UnixMilli(nb.UnixMilli()), time.UnixMilli(nb.Add(time.Minute).UnixMilli())))
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 5})
		publish(t, admin, "drop", admitJSON("drop", 1, entry{"a", nb.UnixMilli(), nb.Add(time.Minute).UnixMilli()}))
		waitfor.Until(t, 5*time.Second, "admitted on both tabs", func() bool { return hasStatus(t, a1, wire.StatusAdmitted) && hasStatus(t, a2, wire.StatusAdmitted) })
		waitfor.Until(t, 5*time.Second, "b moved one place", func() bool {
			ms := b1.msgs(t)
			return len(ms) == 2 && *ms[1].Position == 5
		})
		for _, tr := range []*fakeTransport{a1, a2} {
			for _, r := range tr.records() {
				if r.event == "state" && strings.Contains(string(r.data), `"admitted"`) && r.at.Before(time.UnixMilli(nb.UnixMilli())) {
					t.Errorf("message %v before notBefore %v", r, nb)
				}
			}
		}
		if hasStatus(t, b1, wire.StatusAdmitted) || hasStatus(t, c1, wire.StatusAdmitted) {
			t.Fatal("admitted sent to another visitor")
		}

		for _, c := range conns[:3] {
			c.Close()
		}
		waitfor.Until(t, 5*time.Second, "unsubscribe after the last close", func() bool { return numsub(t, admin, "drop") == 0 })
		chans, err := admin.PubSubChannels(context.Background(), "wr:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(chans) != 1 || chans[0] != wire.Channel("other") {
			t.Fatalf("pubsub channels %v", chans)
		}
		mustAttach(t, h.Hub, "drop", "b", newTransport("ws"))
		if n := numsub(t, admin, "drop"); n != 1 {
			t.Fatalf("numsub drop = %d after re-attach", n)
		}
		conns[3].Close()
		waitfor.Until(t, 5*time.Second, "other unsubscribed", func() bool { return numsub(t, admin, "other") == 0 })
	})
}

// recorder wraps a Broker to see what it tells the hub.
type recorder struct {
	Broker
	mu          sync.Mutex
	ups, downs  int
	readyAtDown []bool
}

func (r *recorder) Run(ctx context.Context, rc Receiver) error {
	return r.Broker.Run(ctx, recordingReceiver{rc, r})
}

func (r *recorder) counts() (ups, downs int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ups, r.downs
}

type recordingReceiver struct {
	Receiver
	r *recorder
}

func (rr recordingReceiver) Up() {
	rr.r.mu.Lock()
	rr.r.ups++
	rr.r.mu.Unlock()
	rr.Receiver.Up()
}

func (rr recordingReceiver) Down(err error) {
	rr.r.mu.Lock()
	rr.r.downs++
	rr.r.readyAtDown = append(rr.r.readyAtDown, rr.r.Broker.Ready())
	rr.r.mu.Unlock()
	rr.Receiver.Down(err)
}

func TestRedisClientKillResubscribes(t *testing.T) {
	eachRedis(t, []string{"real"}, func(t *testing.T, srv *redistest.Server, newBroker func(*testing.T, string) Broker) {
		admin := adminClient(t, srv.Addr)
		src := newSource()
		rec := &recorder{Broker: newBroker(t, srv.Addr)}
		h := start(t, New(rec, src, testLog(t), &Options{ReconcileEvery: time.Hour}))
		waitfor.Until(t, 5*time.Second, "ready", h.Ready)
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 4})
		src.set("other", "c", wire.State{Status: wire.StatusWaiting, Position: 1})
		a, b, c := newTransport("ws"), newTransport("ws"), newTransport("sse")
		mustAttach(t, h.Hub, "drop", "a", a)
		mustAttach(t, h.Hub, "drop", "b", b)
		mustAttach(t, h.Hub, "other", "c", c)
		reads := map[string]int{"a": src.reads("drop", "a"), "b": src.reads("drop", "b"), "c": src.reads("other", "c")}

		// An admission that the hub will miss: published while it is
		// disconnected, or in any case only visible through the Source.
		nb := time.Now()
		src.set("drop", "a", src.Admitted("drop", "a", nb, nb.Add(time.Minute)))
		n, err := admin.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Result()
		if err != nil || n < 1 {
			t.Fatalf("client kill: %d, %v", n, err)
		}
		publish(t, admin, "other", `{"type":"admit","count":0,"admitted":[]}`)
		waitfor.Until(t, 10*time.Second, "down then up", func() bool { ups, downs := rec.counts(); return downs >= 1 && ups >= 2 })
		waitfor.Until(t, 5*time.Second, "ready again", h.Ready)
		rec.mu.Lock()
		if rec.readyAtDown[0] {
			t.Error("Ready was true when the broker reported the connection down")
		}
		rec.mu.Unlock()
		waitfor.Until(t, 5*time.Second, "every local visitor reconciled", func() bool {
			return src.reads("drop", "a") > reads["a"] && src.reads("drop", "b") > reads["b"] && src.reads("other", "c") > reads["c"]
		})
		waitfor.Until(t, 5*time.Second, "admission made during the outage delivered", func() bool { return hasStatus(t, a, wire.StatusAdmitted) })
		if numsub(t, admin, "drop") != 1 || numsub(t, admin, "other") != 1 {
			t.Fatal("not resubscribed")
		}
		nb = time.Now()
		src.set("drop", "b", src.Admitted("drop", "b", time.UnixMilli(nb.UnixMilli()), time.UnixMilli(nb.Add(time.Minute).UnixMilli())))
		publish(t, admin, "drop", admitJSON("drop", 1, entry{"b", nb.UnixMilli(), nb.Add(time.Minute).UnixMilli()}))
		waitfor.Until(t, 5*time.Second, "event after resubscribe delivered", func() bool { return hasStatus(t, b, wire.StatusAdmitted) })
		if len(withStatus(a.msgs(t), wire.StatusAdmitted)) != 1 {
			t.Fatal("a admitted more than once")
		}
	})
}

func TestRedisRestartReadyAndReconcile(t *testing.T) {
	eachRedis(t, []string{"real"}, func(t *testing.T, srv *redistest.Server, newBroker func(*testing.T, string) Broker) {
		src := newSource()
		h := start(t, New(newBroker(t, srv.Addr), src, testLog(t), &Options{ReconcileEvery: time.Hour}))
		waitfor.Until(t, 5*time.Second, "ready", h.Ready)
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		a := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a)

		srv.Stop()
		waitfor.Until(t, 10*time.Second, "not ready while Redis is down", func() bool { return !h.Ready() })
		nb := time.Now()
		src.set("drop", "a", src.Admitted("drop", "a", nb, nb.Add(time.Minute)))
		srv.Restart(t)
		waitfor.Until(t, 10*time.Second, "ready after restart", h.Ready)
		waitfor.Until(t, 5*time.Second, "reconciled after restart", func() bool { return hasStatus(t, a, wire.StatusAdmitted) })
		admin := adminClient(t, srv.Addr)
		if n := numsub(t, admin, "drop"); n != 1 {
			t.Fatalf("numsub after restart %d", n)
		}
	})
}
