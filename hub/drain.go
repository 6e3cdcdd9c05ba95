package hub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Drain prepares this instance's shutdown: Attach returns ErrClosed from
// now on, each connection is sent {"type":"reconnect","afterMs":n} with n
// spread uniformly over window (so clients do not come back together) and is
// closed once that is written. Drain returns nil when every connection is
// gone, or ctx's error after closing those left when ctx ends first.
func (h *Hub) Drain(ctx context.Context, window time.Duration) error {
	h.closed.Store(true)
	cs := h.allConns()
	rand.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	for i, c := range cs {
		// One random point in each of len(cs) equal slices of window.
		after := time.Duration((float64(i) + rand.Float64()) / float64(len(cs)) * float64(window))
		data := fmt.Appendf(nil, `{"type":"reconnect","afterMs":%d}`, after.Milliseconds())
		if !c.enqueue(outMsg{event: "reconnect", data: data, closeAfter: true}) {
			h.metrics.droppedSlow.Add(1)
			c.detach("slow consumer", closeAsync)
		}
	}
	for h.nconns.Load() > 0 {
		select {
		case <-h.gone:
		case <-ctx.Done():
			for _, c := range h.allConns() {
				c.detach("drain", closeAsync)
			}
			return fmt.Errorf("hub: drain: %w", ctx.Err())
		}
	}
	return nil
}
