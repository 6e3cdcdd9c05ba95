package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
	"github.com/waitroom/waitroom/internal/waitfor"
)

// A receiver that never answers holds no more than its share of the
// attempts in flight: events keep reaching a healthy receiver while it
// hangs, Emit does not wait for either, and Run ends without waiting for
// the hung requests.
func TestHangingReceiverBlocksNothing(t *testing.T) {
	each(t, func(t *testing.T, srv *redistest.Server, client string) {
		release := make(chan struct{})
		var hung atomic.Int64
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hung.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(hang.Close)
		t.Cleanup(func() { close(release) }) // after Run has returned
		good := newReceiver(t, nil)
		r := newRedis(t, srv, client)
		deploy := []Endpoint{
			{URL: hang.URL + "/hook", Secret: NewSecret(), Events: []string{RoomSoldOut}},
			good.endpoint(),
		}
		o := fast()
		o.Timeout, o.MaxInFlight = 300*time.Millisecond, 4
		h := newHooks(t, r, deploy, o)
		run(t, h)
		ctx := context.Background()
		const n = 20
		for range n {
			ectx, cancel := context.WithTimeout(ctx, 2*time.Second) // far above one Redis script
			err := h.Emit(ectx, "drop", RoomSoldOut, nil)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
		}
		waitfor.Until(t, 20*time.Second, "the healthy receiver's events", func() bool {
			seen, _ := good.counts()
			return len(seen) == n
		})
		if hung.Load() == 0 {
			t.Fatal("the hanging receiver was never called")
		}
		if seen, bad := good.counts(); len(bad) > 0 {
			t.Fatalf("refused %v (seen %v)", bad, seen)
		}
	})
}
