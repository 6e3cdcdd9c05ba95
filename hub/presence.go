package hub

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Presence records that visitors are there. The hub tells it, in batches,
// which visitors of a room hold a push connection (at most once per the
// interval Seen returns for that room, a third of its awayAfter), and which
// just closed their last one. The queue then keeps their place while they
// are connected, and counts the time away from when they left.
type Presence interface {
	// Seen records a sign of life of visitors of room now and returns how
	// soon the same visitors need writing again. The hub calls it with at
	// most Options.ReconcileBatch visitors.
	Seen(ctx context.Context, room string, visitors []string) (time.Duration, error)
}

// Leaver is implemented by a Presence that tells a visitor whose last
// push connection closed from one still connected: Left records the close
// (a sign of life after which nobody knows the visitor is there) and
// returns what Seen does. Without it the hub writes a close with Seen.
type Leaver interface {
	Left(ctx context.Context, room string, visitors []string) (time.Duration, error)
}

// presenceCheck is how often the presence loop looks for rooms due; it
// also bounds how late a closed connection's last sign of life is written.
const presenceCheck = time.Second

// presenceDefault is the interval until a room's first answer.
const presenceDefault = 20 * time.Second

// presenceState is what the presence loop keeps between rounds.
type presenceState struct {
	mu   sync.Mutex
	due  map[string]time.Time // room -> next batch write of its visitors
	left map[string][]string  // room -> visitors whose last connection closed
}

func (p *presenceState) init() {
	p.due = make(map[string]time.Time)
	p.left = make(map[string][]string)
}

// gone notes that visitor's last connection in room closed. Called with
// the room's lock held; takes only p.mu.
func (p *presenceState) gone(room, visitor string) {
	p.mu.Lock()
	p.left[room] = append(p.left[room], visitor)
	p.mu.Unlock()
}

// presenceLoop writes presence until ctx ends.
func (h *Hub) presenceLoop(ctx context.Context) {
	t := time.NewTicker(presenceCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.presenceRound(ctx, time.Now())
	}
}

// presenceRound writes the visitors of every room that is due, and the
// visitors who left since the last round.
func (h *Hub) presenceRound(ctx context.Context, now time.Time) {
	p := &h.pres
	p.mu.Lock()
	left := p.left
	p.left = make(map[string][]string)
	p.mu.Unlock()
	for room, vs := range left {
		slices.Sort(vs)
		vs = slices.Compact(vs)
		// One who connected again since is there: a plain sign of life.
		var back []string
		h.mu.RLock()
		r := h.rooms[room]
		h.mu.RUnlock()
		if r != nil {
			r.mu.Lock()
			vs = slices.DeleteFunc(vs, func(id string) bool {
				if r.visitors[id] != nil {
					back = append(back, id)
					return true
				}
				return false
			})
			r.mu.Unlock()
		}
		h.writeLeft(ctx, room, vs)
		h.writeSeen(ctx, room, back)
	}

	rooms := h.snapshotRooms()
	live := make(map[string]bool, len(rooms))
	for _, r := range rooms {
		live[r.name] = true
		p.mu.Lock()
		due := !now.Before(p.due[r.name])
		p.mu.Unlock()
		if !due {
			continue
		}
		r.mu.Lock()
		ids := make([]string, 0, len(r.visitors))
		for id := range r.visitors {
			ids = append(ids, id)
		}
		r.mu.Unlock()
		every := h.writeSeen(ctx, r.name, ids)
		p.mu.Lock()
		p.due[r.name] = now.Add(every)
		p.mu.Unlock()
	}
	p.mu.Lock()
	for name := range p.due {
		if !live[name] {
			delete(p.due, name)
		}
	}
	p.mu.Unlock()
}

// writeSeen writes ids in batches and returns the room's interval.
func (h *Hub) writeSeen(ctx context.Context, room string, ids []string) time.Duration {
	return h.writePresence(ctx, room, ids, h.opts.Presence.Seen)
}

// writeLeft writes the close of ids' last connection in batches.
func (h *Hub) writeLeft(ctx context.Context, room string, ids []string) {
	write := h.opts.Presence.Seen
	if l, ok := h.opts.Presence.(Leaver); ok {
		write = l.Left
	}
	h.writePresence(ctx, room, ids, write)
}

func (h *Hub) writePresence(ctx context.Context, room string, ids []string, write func(context.Context, string, []string) (time.Duration, error)) time.Duration {
	every := presenceDefault
	for batch := range slices.Chunk(ids, h.opts.ReconcileBatch) {
		wctx, cancel := context.WithTimeout(ctx, stateTimeout)
		d, err := write(wctx, room, batch)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.storeLog.Fail("hub: presence", err, "room", room)
			}
			// Try again next round rather than after a whole interval.
			return presenceCheck
		}
		h.storeLog.OK()
		if d > 0 {
			every = d
		}
	}
	return every
}
