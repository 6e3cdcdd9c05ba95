package hub

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// TestPingWatchesTheStore: with Options.Ping, two failed pings in a row put
// the hub in the degraded state and tell a waiting connection so; one
// failure does not, and the first success after an outage ends it.
func TestPingWatchesTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Int32 // pings left to fail; -1 fails until changed
		var pings atomic.Int32
		ping := func(ctx context.Context) error {
			pings.Add(1)
			switch n := down.Load(); {
			case n < 0:
				return errors.New("down")
			case n > 0:
				down.Add(-1)
				return errors.New("slow")
			}
			return nil
		}
		src, b := newSource(), newBroker()
		h := start(t, New(b, src, nil, quiet(Options{Ping: ping, PingEvery: 100 * time.Millisecond})))
		synctest.Wait()
		src.set("r", "a", wire.State{Status: wire.StatusWaiting, Position: 3})
		tr := newTransport("ws")
		mustAttach(t, h.Hub, "r", "a", tr)

		down.Store(1) // one slow answer is no outage
		time.Sleep(time.Second)
		synctest.Wait()
		if h.Degraded() {
			t.Fatal("degraded after one failed ping")
		}
		down.Store(-1)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		if !h.Degraded() {
			t.Fatal("not degraded after failed pings")
		}
		recs := tr.records()
		if last := string(recs[len(recs)-1].data); !strings.Contains(last, `"degraded":true`) {
			t.Fatalf("the waiting connection was sent %s, want a degraded state", last)
		}
		down.Store(0)
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		if h.Degraded() {
			t.Fatal("still degraded after a ping that answered")
		}
		recs = tr.records()
		if last := string(recs[len(recs)-1].data); strings.Contains(last, `"degraded"`) {
			t.Fatalf("the waiting connection was last sent %s, want a state that is not degraded", last)
		}
		if pings.Load() < 12 {
			t.Fatalf("%d pings in 1.4 s at 100 ms", pings.Load())
		}
	})
}
