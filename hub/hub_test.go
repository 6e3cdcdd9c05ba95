package hub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// quiet keeps the periodic reconcile out of tests that do not test it.
func quiet(o Options) *Options {
	if o.ReconcileEvery == 0 {
		o.ReconcileEvery = time.Hour
	}
	return &o
}

func TestAdmittedOnlyToVisitorTabsOnceAtNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		var mu sync.Mutex
		var lags []time.Duration
		h := start(t, New(b, src, nil, quiet(Options{OnDeliver: func(kind string, lag time.Duration) {
			mu.Lock()
			lags = append(lags, lag)
			mu.Unlock()
		}})))
		synctest.Wait()
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 1})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 2})
		a1, a2, b1 := newTransport("ws"), newTransport("sse"), newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a1)
		mustAttach(t, h.Hub, "drop", "a", a2)
		mustAttach(t, h.Hub, "drop", "b", b1)
		synctest.Wait()
		for _, tr := range []*fakeTransport{a1, a2, b1} {
			if ms := tr.msgs(t); len(ms) != 1 || ms[0].Status != wire.StatusWaiting {
				t.Fatalf("on connect: got %+v, want one waiting state", ms)
			}
		}

		nb := time.Now().Add(150 * time.Millisecond)
		exp := nb.Add(5 * time.Minute)
		ev := admitJSON("drop", 1, entry{"a", nb.UnixMilli(), exp.UnixMilli()})
		b.publish(t, "drop", ev)
		synctest.Wait()
		if n := len(withStatus(a1.msgs(t), wire.StatusAdmitted)); n != 0 {
			t.Fatalf("admitted sent %v before notBefore", time.Until(nb))
		}
		time.Sleep(time.Until(nb))
		synctest.Wait()

		// The same admission seen again by an event and by a reconcile.
		src.set("drop", "a", src.Admitted("drop", "a", time.UnixMilli(nb.UnixMilli()), time.UnixMilli(exp.UnixMilli())))
		b.publish(t, "drop", ev)
		b.publish(t, "drop", `{"type":"config","room":"drop"}`)
		synctest.Wait()
		time.Sleep(2 * time.Second)
		synctest.Wait()

		for _, tr := range []*fakeTransport{a1, a2} {
			recs := tr.records()
			adm := withStatus(tr.msgs(t), wire.StatusAdmitted)
			if len(adm) != 1 {
				t.Fatalf("%s tab got %d admitted states, want 1: %s", tr.kind, len(adm), recs)
			}
			if adm[0].Token != "tok-a" || adm[0].NotBefore == "" || adm[0].ExpiresAt == "" || adm[0].Position != nil {
				t.Errorf("admitted message %+v", adm[0])
			}
			for _, r := range recs {
				if strings.Contains(string(r.data), `"admitted"`) && r.at.Before(time.UnixMilli(nb.UnixMilli())) {
					t.Errorf("admitted written at %v, before notBefore %v", r.at, nb)
				}
			}
		}
		if n := len(withStatus(b1.msgs(t), wire.StatusAdmitted)); n != 0 {
			t.Fatalf("another visitor got %d admitted states", n)
		}
		st := h.Stats()
		if st.Delivered != 2 || st.Lag.Count != 2 {
			t.Errorf("stats: delivered %d lag count %d, want 2", st.Delivered, st.Lag.Count)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(lags) != 2 || lags[0] > time.Millisecond {
			t.Errorf("OnDeliver lags %v, want two of at most 1ms", lags)
		}
	})
}

func TestAdmittedOnConnectWaitsForNotBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		nb := time.Now().Add(80 * time.Millisecond)
		src.set("drop", "a", src.Admitted("drop", "a", nb, nb.Add(time.Minute)))
		a1 := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a1)
		synctest.Wait()
		if n := len(a1.records()); n != 0 {
			t.Fatalf("%d messages before notBefore", n)
		}
		time.Sleep(time.Until(nb))
		synctest.Wait()
		recs := a1.records()
		if len(recs) != 1 || !recs[0].at.Equal(nb) {
			t.Fatalf("got %v, want one message at %v", recs, nb)
		}
		// A tab opened later gets it at once, the first tab not again.
		a2 := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a2)
		synctest.Wait()
		if len(a2.records()) != 1 || len(a1.records()) != 1 {
			t.Fatalf("second tab: %d, first tab: %d messages", len(a2.records()), len(a1.records()))
		}
	})
}

func TestPositionsThrottledAndNeverUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 10})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 20})
		a1, a2, b1 := newTransport("ws"), newTransport("ws"), newTransport("sse")
		mustAttach(t, h.Hub, "drop", "a", a1)
		mustAttach(t, h.Hub, "drop", "a", a2)
		mustAttach(t, h.Hub, "drop", "b", b1)
		synctest.Wait()

		positions := func(tr *fakeTransport) []int64 {
			var ps []int64
			for _, m := range tr.msgs(t) {
				if m.Status != wire.StatusWaiting || m.Position == nil || m.ETASeconds == nil {
					t.Fatalf("unexpected message %+v", m)
				}
				ps = append(ps, *m.Position)
			}
			return ps
		}
		check := func(step string, want map[*fakeTransport][]int64) {
			t.Helper()
			for tr, w := range want {
				if got := positions(tr); !slices.Equal(got, w) {
					t.Fatalf("%s: positions %v, want %v", step, got, w)
				}
			}
		}
		check("connect", map[*fakeTransport][]int64{a1: {10}, a2: {10}, b1: {20}})

		for range 3 {
			b.publish(t, "drop", admitJSON("drop", 2))
		}
		synctest.Wait()
		check("before flush", map[*fakeTransport][]int64{a1: {10}, a2: {10}, b1: {20}})
		time.Sleep(time.Second)
		synctest.Wait()
		check("flush", map[*fakeTransport][]int64{a1: {10, 4}, a2: {10, 4}, b1: {20, 14}})
		time.Sleep(time.Second)
		synctest.Wait()
		check("idle flush", map[*fakeTransport][]int64{a1: {10, 4}, a2: {10, 4}, b1: {20, 14}})

		// An exact read higher than what was sent is not sent.
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 5})
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 18})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		check("higher exact", map[*fakeTransport][]int64{a1: {10, 4}, a2: {10, 4}, b1: {20, 14}})

		// A lower one is.
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 12})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		check("lower exact", map[*fakeTransport][]int64{a1: {10, 4}, a2: {10, 4}, b1: {20, 14, 12}})

		// Positions stop at 1.
		b.publish(t, "drop", admitJSON("drop", 100))
		time.Sleep(time.Second)
		synctest.Wait()
		check("head passed", map[*fakeTransport][]int64{a1: {10, 4, 1}, a2: {10, 4, 1}, b1: {20, 14, 12, 1}})
	})
}

func TestSlowConsumerDroppedWithoutDelayingOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{SendQueue: 2, WriteTimeout: time.Hour})))
		synctest.Wait()
		src.set("drop", "slow", wire.State{Status: wire.StatusWaiting, Position: 100})
		src.set("drop", "fast", wire.State{Status: wire.StatusWaiting, Position: 100})
		slow, fast := newTransport("ws"), newTransport("sse")
		slow.stall = true
		mustAttach(t, h.Hub, "drop", "slow", slow)
		mustAttach(t, h.Hub, "drop", "fast", fast)
		step := h.step()
		for i := range 4 {
			published := time.Now()
			b.publish(t, "drop", admitJSON("drop", 1))
			time.Sleep(time.Second)
			synctest.Wait()
			recs := fast.records()
			if len(recs) != i+2 {
				t.Fatalf("after flush %d the fast visitor has %d messages, want %d", i+1, len(recs), i+2)
			}
			// Written at the instant of a flush step, not held up by the
			// stalled one (the fake clock starts on a whole second).
			last := recs[len(recs)-1]
			if last.at.Before(published) || last.at.Truncate(step) != last.at {
				t.Fatalf("fast visitor's update written at %v, between flush steps of %v", last.at, step)
			}
		}
		if !slow.isClosed() || slow.closeReason() != "slow consumer" {
			t.Fatalf("slow transport closed=%v reason=%q", slow.isClosed(), slow.closeReason())
		}
		st := h.Stats()
		if st.DroppedSlow != 1 || st.Conns["ws"] != 0 || st.Conns["sse"] != 1 || st.Visitors != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestWriteTimeoutDropsConn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{WriteTimeout: time.Second})))
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		tr := newTransport("ws")
		tr.stall = true
		mustAttach(t, h.Hub, "drop", "a", tr)
		time.Sleep(time.Second)
		synctest.Wait()
		if !tr.isClosed() || h.Stats().WriteErrors != 1 || h.Stats().Visitors != 0 {
			t.Fatalf("closed=%v stats %+v", tr.isClosed(), h.Stats())
		}
	})
}

func TestLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{MaxPerVisitor: 2, MaxConns: 3})))
		ctx := context.Background()
		var trs []*fakeTransport
		attach := func(v string) (*Conn, error) {
			tr := newTransport("ws")
			trs = append(trs, tr)
			return h.Attach(ctx, "drop", v, tr)
		}
		a1, err := attach("a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := attach("a"); err != nil {
			t.Fatal(err)
		}
		if _, err := attach("a"); !errors.Is(err, ErrTooManyForVisitor) {
			t.Fatalf("third tab: %v, want ErrTooManyForVisitor", err)
		}
		if _, err := attach("b"); err != nil {
			t.Fatal(err)
		}
		if _, err := attach("c"); !errors.Is(err, ErrTooManyConns) {
			t.Fatalf("fourth connection: %v, want ErrTooManyConns", err)
		}
		a1.Close()
		a1.Close() // idempotent
		if _, err := attach("c"); err != nil {
			t.Fatalf("after a close: %v", err)
		}
		h.stop()
		if _, err := attach("d"); !errors.Is(err, ErrClosed) {
			t.Fatalf("after Run: %v, want ErrClosed", err)
		}
		synctest.Wait()
		for i, tr := range trs {
			if i == 2 || i == 4 || i == 6 { // refused ones are not the hub's
				continue
			}
			if !tr.isClosed() {
				t.Errorf("transport %d not closed at shutdown", i)
			}
		}
		if h.Ready() {
			t.Error("ready after shutdown")
		}
	})
}

func TestDrainSpreadsReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		var trs []*fakeTransport
		for i := range 10 {
			tr := newTransport("ws")
			trs = append(trs, tr)
			mustAttach(t, h.Hub, fmt.Sprintf("room-%d", i%2), fmt.Sprint("v", i), tr)
		}
		synctest.Wait()
		window := 2 * time.Second
		if err := h.Drain(context.Background(), window); err != nil {
			t.Fatal(err)
		}
		var afters []int64
		for _, tr := range trs {
			if !tr.isClosed() {
				t.Fatal("connection open after Drain")
			}
			recs := tr.records()
			last := recs[len(recs)-1]
			var m msg
			if last.event != "reconnect" || len(tr.msgs(t)) != 2 {
				t.Fatalf("messages %s", recs)
			}
			m = tr.msgs(t)[1]
			if m.AfterMs == nil {
				t.Fatalf("reconnect without afterMs: %s", last.data)
			}
			afters = append(afters, *m.AfterMs)
		}
		slices.Sort(afters)
		slot := window.Milliseconds() / int64(len(afters))
		for i, a := range afters {
			if a < int64(i)*slot || a > int64(i+1)*slot {
				t.Fatalf("afterMs %v not spread over %v", afters, window)
			}
		}
		if _, err := h.Attach(context.Background(), "room-0", "late", newTransport("ws")); !errors.Is(err, ErrClosed) {
			t.Fatalf("attach after drain: %v", err)
		}
		synctest.Wait()
		if st := h.Stats(); st.Rooms != 0 || len(st.Conns) != 0 {
			t.Fatalf("stats after drain %+v", st)
		}
		for i := range 2 {
			if b.subscribed(wire.Channel(fmt.Sprint("room-", i))) {
				t.Errorf("room-%d still subscribed", i)
			}
		}
	})
}

func TestDrainContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{WriteTimeout: time.Hour})))
		tr := newTransport("ws")
		tr.stall = true
		mustAttach(t, h.Hub, "drop", "a", tr)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := h.Drain(ctx, time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("drain: %v", err)
		}
		synctest.Wait()
		if !tr.isClosed() {
			t.Fatal("stalled connection left open")
		}
	})
}

func TestSubscribeFollowsConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		ch := wire.Channel("drop")
		c1 := mustAttach(t, h.Hub, "drop", "a", newTransport("ws"))
		if !b.subscribed(ch) {
			t.Fatal("not subscribed when Attach returned")
		}
		c2 := mustAttach(t, h.Hub, "drop", "b", newTransport("ws"))
		c3 := mustAttach(t, h.Hub, "drop", "b", newTransport("sse"))
		c1.Close()
		c2.Close()
		synctest.Wait()
		if sub, unsub := b.counts(ch); sub != 1 || unsub != 0 || !b.subscribed(ch) {
			t.Fatalf("subscribe %d unsubscribe %d subscribed %v", sub, unsub, b.subscribed(ch))
		}
		c3.Close()
		synctest.Wait()
		if sub, unsub := b.counts(ch); sub != 1 || unsub != 1 || b.subscribed(ch) {
			t.Fatalf("after last close: subscribe %d unsubscribe %d", sub, unsub)
		}
		if st := h.Stats(); st.Rooms != 0 || st.Visitors != 0 {
			t.Fatalf("stats %+v", st)
		}
		mustAttach(t, h.Hub, "drop", "a", newTransport("ws"))
		if sub, _ := b.counts(ch); sub != 2 || !b.subscribed(ch) {
			t.Fatalf("re-attach: subscribe %d", sub)
		}
	})
}

func TestReconcileInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, &Options{ReconcileEvery: 10 * time.Second, ReconcileBatch: 500}))
		synctest.Wait()
		var trs []*fakeTransport
		for i := range 1200 {
			v := fmt.Sprint("v", i)
			src.set("drop", v, wire.State{Status: wire.StatusWaiting, Position: int64(i + 1)})
			tr := newTransport("ws")
			trs = append(trs, tr)
			mustAttach(t, h.Hub, "drop", v, tr)
		}
		synctest.Wait()
		before := len(src.batchSizes())
		src.set("drop", "v7", wire.State{Status: wire.StatusExpired})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// The batches are paced (1200 visitors: 10 s / 6 apart, at most 100 ms).
		time.Sleep(time.Second)
		synctest.Wait()
		got := src.batchSizes()[before:]
		slices.Sort(got)
		if !slices.Equal(got, []int{200, 500, 500}) {
			t.Fatalf("reconcile batches %v, want 500, 500, 200", got)
		}
		if ms := trs[7].msgs(t); ms[len(ms)-1].Status != wire.StatusExpired {
			t.Fatalf("v7 got %+v", ms)
		}
		if st := h.Stats(); st.Reconciled != 1200 {
			t.Fatalf("reconciled %d", st.Reconciled)
		}
	})
}

func TestBrokerUpReconcilesEveryVisitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		synctest.Wait()
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		src.set("other", "b", wire.State{Status: wire.StatusWaiting, Position: 3})
		a, bb := newTransport("ws"), newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a)
		mustAttach(t, h.Hub, "other", "b", bb)
		// An admission lost while pub/sub was down.
		nb := time.Now()
		src.set("drop", "a", src.Admitted("drop", "a", nb, nb.Add(time.Minute)))
		src.set("other", "b", wire.State{Status: wire.StatusSoldOut})
		b.receiver().Up()
		synctest.Wait()
		if src.reads("drop", "a") != 2 || src.reads("other", "b") != 2 {
			t.Fatal("not every visitor reconciled")
		}
		if ms := a.msgs(t); ms[len(ms)-1].Status != wire.StatusAdmitted {
			t.Fatalf("a got %+v", ms)
		}
		if ms := bb.msgs(t); ms[len(ms)-1].Status != wire.StatusSoldOut || ms[len(ms)-1].Position != nil {
			t.Fatalf("b got %+v", ms)
		}
	})
}

func TestBadEventsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		synctest.Wait()
		src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		a := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "a", a)
		bad := []string{
			``, `null`, `[]`, `{`, `"admit"`, `{"type":"admit","admitted":"x"}`,
			`{"type":"admit","admitted":[["a"]]}`, `{"type":"admit","admitted":[[1,2,3]]}`,
			`{"type":"admit","count":"lots"}`, `{"type":"admit","count":1e400}`,
			`{"type":"admit","admitted":[["a",null,null]]}`,
			`{"type":"admit","room":"drop","count":1,"admitted":[` + strings.Repeat(`["x",1,2],`, 500000) + `["y",1,2]]}`,
		}
		for _, p := range bad {
			b.publish(t, "drop", p)
		}
		b.publish(t, "drop", `{"type":"surprise","count":5}`)
		b.receiver().Message("not-a-room-channel", []byte(`{}`))
		synctest.Wait()
		st := h.Stats()
		if st.BadEvents != uint64(len(bad)-1) { // null parses as an empty event
			t.Errorf("bad events %d, want %d", st.BadEvents, len(bad)-1)
		}
		// Still working, and notBefore written as a float is accepted.
		nb := time.Now().Add(time.Second)
		b.publish(t, "drop", fmt.Sprintf(`{"type":"admit","count":1,"admitted":[["a",%.6e,%d]]}`, float64(nb.UnixMilli()), nb.Add(time.Minute).UnixMilli()))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if ms := a.msgs(t); len(withStatus(ms, wire.StatusAdmitted)) != 1 {
			t.Fatalf("got %+v", ms)
		}
	})
}

func TestStateFailureFailsAttach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.mu.Lock()
		src.fail = errors.New("redis down")
		src.mu.Unlock()
		tr := newTransport("ws")
		if _, err := h.Attach(context.Background(), "drop", "a", tr); err == nil || !strings.Contains(err.Error(), "redis down") {
			t.Fatalf("attach: %v", err)
		}
		synctest.Wait()
		if st := h.Stats(); st.Rooms != 0 || len(st.Conns) != 0 || b.subscribed(wire.Channel("drop")) {
			t.Fatalf("left behind: %+v", st)
		}
	})
}

func TestHistogramQuantile(t *testing.T) {
	h := New(newBroker(), newSource(), nil, nil)
	for range 98 {
		h.metrics.delivered(3 * time.Millisecond)
	}
	h.metrics.delivered(300 * time.Millisecond)
	h.metrics.delivered(time.Minute)
	l := h.Stats().Lag
	if l.Quantile(0.5) != 5*time.Millisecond || l.Quantile(0.99) != 500*time.Millisecond || l.Quantile(1) != 5*time.Second {
		t.Fatalf("p50 %v p99 %v max %v", l.Quantile(0.5), l.Quantile(0.99), l.Quantile(1))
	}
	if (Histogram{}).Quantile(0.5) != 0 {
		t.Fatal("empty histogram")
	}
}

func TestOptionsNotMutated(t *testing.T) {
	o := &Options{MaxConns: 7}
	h := New(newBroker(), newSource(), nil, o)
	if o.MaxConns != 7 || o.MaxPerVisitor != 0 || o.SendQueue != 0 || h.opts.MaxPerVisitor != 5 || h.opts.MaxConns != 7 {
		t.Fatalf("caller's %+v, hub's %+v", o, h.opts)
	}
}

func FuzzEvent(f *testing.F) {
	f.Add([]byte(admitJSON("drop", 2, entry{"a", 1732987654400, 1732987954400})))
	f.Add([]byte(`{"type":"sold_out"}`))
	f.Add([]byte(`{"type":"admit","count":-5,"admitted":[["a",1e300,-1]]}`))
	f.Add([]byte(`{"type":"admit","admitted":[["a","1",2,4]]}`))
	src := newSource()
	src.set("drop", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
	h := New(newBroker(), src, nil, nil)
	c := mustAttach(f, h, "drop", "a", newTransport("ws"))
	defer c.Close()
	f.Fuzz(func(t *testing.T, data []byte) {
		// Not through handleMessage: its recover would hide a panic.
		e, err := wire.DecodeEvent(data)
		if err == nil && e.Type == "admit" {
			h.admit("drop", &e)
		}
	})
}

// TestPerVisitorLimitAcrossRooms: one visitor's connections count against
// one limit, whatever rooms they are in; closing one frees its place.
func TestPerVisitorLimitAcrossRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, New(newBroker(), newSource(), nil, quiet(Options{MaxPerVisitor: 3})))
		var conns []*Conn
		for i := range 3 {
			conns = append(conns, mustAttach(t, h.Hub, fmt.Sprintf("room-%d", i), "a", newTransport("ws")))
		}
		if _, err := h.Attach(context.Background(), "room-9", "a", newTransport("sse")); !errors.Is(err, ErrTooManyForVisitor) {
			t.Fatalf("fourth room: %v, want ErrTooManyForVisitor", err)
		}
		mustAttach(t, h.Hub, "room-9", "b", newTransport("ws")) // others are not limited by a
		conns[1].Close()
		mustAttach(t, h.Hub, "room-9", "a", newTransport("sse"))
	})
}

// An admission that comes in while a reconcile reads the room may be
// missing from what the read returns: the visitor keeps the place it had
// moved on to, instead of being put back by the admission until the next
// reconcile.
func TestAdmissionDuringReconcileReadKeepsItsMove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{})))
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 6})
		b1 := newTransport("ws")
		mustAttach(t, h.Hub, "drop", "b", b1)
		synctest.Wait()

		// The read sees b at 6; the admission of one visitor ahead of b
		// arrives before the read's answer is applied.
		var once sync.Once
		src.mu.Lock()
		src.duringRead = func(room string, _ []string) {
			once.Do(func() { b.publish(t, room, admitJSON(room, 1)) })
		}
		src.mu.Unlock()
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()

		var got []int64
		for _, m := range b1.msgs(t) {
			got = append(got, *m.Position)
		}
		if !slices.Equal(got, []int64{6, 5}) {
			t.Fatalf("positions %v, want [6 5]", got)
		}
		// With nothing in between, an exact read is taken as it is.
		src.mu.Lock()
		src.duringRead = nil
		src.mu.Unlock()
		src.set("drop", "b", wire.State{Status: wire.StatusWaiting, Position: 3})
		b.publish(t, "drop", `{"type":"config"}`)
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if ms := b1.msgs(t); len(ms) != 3 || *ms[2].Position != 3 {
			t.Fatalf("after an exact read: %d messages, last %+v", len(ms), ms[len(ms)-1])
		}
	})
}
