package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// pollAdmission has v poll its status in room until ctx ends, at the
// nextPollMs it is given (kept within 0.2–1 s), and keeps asking after
// admission: polled keeps, under key, the first notBefore v was told, and
// twice counts each answer naming another.
func pollAdmission(ctx context.Context, wg *sync.WaitGroup, v *visitor, room string, key int, polled *sync.Map, twice *atomic.Int64) {
	wg.Go(func() {
		for ctx.Err() == nil {
			r, _ := v.try("GET", "/api/v1/rooms/"+room+"/status")
			if r.str("status") == "admitted" {
				if nb, loaded := polled.LoadOrStore(key, r.str("notBefore")); loaded && nb != r.str("notBefore") {
					twice.Add(1)
				}
			}
			wait := min(max(time.Duration(r.num("nextPollMs"))*time.Millisecond, 200*time.Millisecond), time.Second)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	})
}

// readyzWatch is what watchReadyz saw: /readyz answering 200 while the
// hub said not ready just before and just after, and any other answer.
type readyzWatch struct {
	readyWhileDown, notReady atomic.Int64
}

// watchReadyz asks every server's /readyz each 50 ms until ctx ends.
func watchReadyz(ctx context.Context, wg *sync.WaitGroup, servers []*testServer) *readyzWatch {
	w := &readyzWatch{}
	for _, ts := range servers {
		wg.Go(func() {
			for ctx.Err() == nil {
				before := ts.hub.Ready()
				resp, err := noKeepAlive.Get(ts.URL + "/readyz")
				after := ts.hub.Ready()
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK && !before && !after {
						w.readyWhileDown.Add(1)
					}
					if resp.StatusCode != http.StatusOK {
						w.notReady.Add(1)
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	return w
}
