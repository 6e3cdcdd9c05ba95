package hub

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// reconcileQueue collects reconcile requests for the reconcile loop.
type reconcileQueue struct {
	mu         sync.Mutex
	everything bool
	rooms      map[string]struct{}
	wake       chan struct{} // cap 1
	passes     atomic.Int64  // reconcile passes finished, for tests
}

func (q *reconcileQueue) init() {
	q.rooms = make(map[string]struct{})
	q.wake = make(chan struct{}, 1)
}

// all asks for every local visitor to be reconciled.
func (q *reconcileQueue) all() {
	q.mu.Lock()
	q.everything = true
	q.mu.Unlock()
	q.signal()
}

// room asks for one room to be reconciled.
func (q *reconcileQueue) room(name string) {
	q.mu.Lock()
	q.rooms[name] = struct{}{}
	q.mu.Unlock()
	q.signal()
}

func (q *reconcileQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *reconcileQueue) take() (all bool, rooms []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	all, q.everything = q.everything, false
	rooms = slices.Collect(maps.Keys(q.rooms))
	clear(q.rooms)
	return all, rooms
}

// reconcileLoop reconciles every room every ReconcileEvery, and whatever
// was asked for (after pub/sub came back, on sold_out or config events).
func (h *Hub) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(h.opts.ReconcileEvery)
	defer t.Stop()
	for {
		var rooms []*room
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			now := time.Now()
			for _, r := range h.snapshotRooms() {
				if h.reconcileDue(r, now) {
					rooms = append(rooms, r)
				}
			}
		case <-h.recon.wake:
			all, names := h.recon.take()
			if all {
				rooms = h.snapshotRooms()
				break
			}
			h.mu.RLock()
			for _, n := range names {
				if r := h.rooms[n]; r != nil {
					rooms = append(rooms, r)
				}
			}
			h.mu.RUnlock()
		}
		for _, r := range rooms {
			switch err := h.reconcileRoom(ctx, r); {
			case err == nil:
				h.storeLog.OK()
			case ctx.Err() == nil:
				h.storeLog.Fail("hub: reconcile", err, "room", r.name)
			}
		}
		h.recon.passes.Add(1)
	}
}

// quietReconcile is how many ReconcileEvery a room that saw no admission
// since its last reconcile waits for the next: a paused room's visitors
// have nothing to learn every 10 s, and reading them all is most of what a
// quiet room costs. Other changes come with an event (config, open,
// sold_out) that has the room reconciled at once.
const quietReconcile = 6

// reconcileDue reports whether the periodic reconcile should read r now.
func (h *Hub) reconcileDue(r *room, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq != r.reconciledSeq || now.Sub(r.reconciledAt) >= quietReconcile*h.opts.ReconcileEvery
}

// reconcileRoom reads the exact state of every local visitor of r, in
// batches of ReconcileBatch, and sends what changed.
func (h *Hub) reconcileRoom(ctx context.Context, r *room) error {
	// In position order, so that a batch is a stretch of the queue that the
	// Source can read with one range walk instead of a lookup per visitor.
	type entry struct {
		id  string
		pos int64
	}
	r.mu.Lock()
	r.reconciledSeq, r.reconciledAt = r.seq, time.Now()
	entries := make([]entry, 0, len(r.visitors))
	for id, v := range r.visitors {
		pos := int64(1 << 62)
		if v.placed() {
			pos = v.position(r.head)
		}
		entries = append(entries, entry{id, pos})
	}
	r.mu.Unlock()
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.pos, b.pos) })
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.id
	}
	// A big room's batches are paced over part of the interval, so a
	// reconcile is no burst that delays admitted messages.
	pace := min(h.opts.ReconcileEvery/time.Duration(2*(len(ids)/h.opts.ReconcileBatch+1)), 100*time.Millisecond)
	for i, batch := range slices.Collect(slices.Chunk(ids, h.opts.ReconcileBatch)) {
		if i > 0 {
			t := time.NewTimer(pace)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		r.mu.Lock()
		seq := r.seq
		claims := claimsOf(r, batch)
		r.mu.Unlock()
		sctx, cancel := context.WithTimeout(ctx, stateTimeout)
		states, err := h.read(sctx, r.name, batch, claims)
		cancel()
		if err != nil {
			return fmt.Errorf("read states: %w", err)
		}
		h.metrics.reconciled.Add(uint64(len(batch)))
		now := time.Now()
		var slow []*Conn
		r.mu.Lock()
		slow = h.setNotice(r, states[0].Settings, states[0].Message)
		for i, id := range batch {
			v := r.visitors[id]
			if v == nil || v.touched > seq {
				continue // gone, or an event is newer than this read
			}
			h.apply(r, v, states[i], seq)
			slow = append(slow, h.pushLocked(r, v, now)...)
		}
		r.mu.Unlock()
		h.dropSlow(slow)
	}
	return nil
}

// read reads the states of visitors of room from the Source and then, as
// a step of its own, asks the Source to write back what the claims of
// those it read as not_in_queue say they held (Reclaim), so a push
// connection never hears not_in_queue for a visitor whose claim says it
// was queued or admitted when the store lost it. The read itself writes
// nothing. claims is nil or has one entry per visitor.
func (h *Hub) read(ctx context.Context, room string, visitors []string, claims []wire.Claim) ([]wire.State, error) {
	states, err := h.src.States(ctx, room, visitors)
	if err == nil && len(states) != len(visitors) {
		err = fmt.Errorf("got %d states for %d visitors", len(states), len(visitors))
	}
	if err != nil || claims == nil {
		return states, err
	}
	var ids []string
	var held []wire.Claim
	var lost []wire.State
	var at []int
	for i, st := range states {
		if st.Status == wire.StatusNotInQueue && i < len(claims) && !claims[i].IsZero() {
			ids = append(ids, visitors[i])
			held = append(held, claims[i])
			lost = append(lost, st)
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return states, nil
	}
	if err := h.src.Reclaim(ctx, room, ids, held, lost); err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	for j, i := range at {
		states[i] = lost[j]
	}
	return states, nil
}

// claimsOf returns what the connections of the visitors ids of r claim,
// one entry per visitor, or nil when none claims anything. Needs r.mu.
func claimsOf(r *room, ids []string) []wire.Claim {
	var claims []wire.Claim
	for i, id := range ids {
		v := r.visitors[id]
		if v == nil {
			continue
		}
		if c := v.claim(r.name); !c.IsZero() {
			if claims == nil {
				claims = make([]wire.Claim, len(ids))
			}
			claims[i] = c
		}
	}
	return claims
}
