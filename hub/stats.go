package hub

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// lagBounds are the upper bounds of the delivery lag histogram buckets.
var lagBounds = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second,
}

// Stats is a snapshot of a hub's connections and counters.
type Stats struct {
	Conns       map[string]int64 // open connections by transport kind ("ws", "sse")
	Rooms       int              // rooms with local connections
	Visitors    int              // visitors with local connections
	Delivered   uint64           // admitted states written
	Sent        uint64           // messages written, any kind
	DroppedSlow uint64           // connections closed as slow consumers
	WriteErrors uint64           // writes that failed
	BadEvents   uint64           // room events ignored as malformed or too large
	Reconciled  uint64           // visitor states read by reconciles
	Lag         Histogram        // delivery lag of admitted states (write time minus notBefore)
}

// Histogram is a fixed-bucket histogram of durations.
type Histogram struct {
	Bounds []time.Duration // upper bound (inclusive) of each bucket but the last
	Counts []uint64        // len(Bounds)+1 counts; the last is above every bound
	Count  uint64
	Sum    time.Duration
}

// Quantile returns the upper bound of the bucket holding quantile q (0..1),
// or 0 when the histogram is empty. Past the last bound it returns the last
// bound.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(h.Count) + 0.5)
	rank = min(max(rank, 1), h.Count)
	var cum uint64
	for i, n := range h.Counts {
		cum += n
		if cum >= rank && i < len(h.Bounds) {
			return h.Bounds[i]
		}
	}
	return h.Bounds[len(h.Bounds)-1]
}

type metrics struct {
	mu    sync.Mutex
	kinds map[string]int64

	sent, droppedSlow, writeErrors, badEvents, reconciled atomic.Uint64

	lagCounts []atomic.Uint64
	lagCount  atomic.Uint64
	lagSum    atomic.Int64
}

func (m *metrics) init() {
	m.kinds = make(map[string]int64)
	m.lagCounts = make([]atomic.Uint64, len(lagBounds)+1)
}

func (m *metrics) conn(kind string, d int64) {
	m.mu.Lock()
	m.kinds[kind] += d
	if m.kinds[kind] == 0 {
		delete(m.kinds, kind)
	}
	m.mu.Unlock()
}

func (m *metrics) delivered(lag time.Duration) {
	i := 0
	for i < len(lagBounds) && lag > lagBounds[i] {
		i++
	}
	m.lagCounts[i].Add(1)
	m.lagCount.Add(1)
	m.lagSum.Add(int64(lag))
}

// Stats returns a snapshot of the hub's connections and counters. It takes
// each room's lock briefly.
func (h *Hub) Stats() Stats {
	s := Stats{
		Sent:        h.metrics.sent.Load(),
		DroppedSlow: h.metrics.droppedSlow.Load(),
		WriteErrors: h.metrics.writeErrors.Load(),
		BadEvents:   h.metrics.badEvents.Load(),
		Reconciled:  h.metrics.reconciled.Load(),
	}
	h.metrics.mu.Lock()
	s.Conns = maps.Clone(h.metrics.kinds)
	h.metrics.mu.Unlock()
	for _, r := range h.snapshotRooms() {
		r.mu.Lock()
		if r.nconns > 0 {
			s.Rooms++
			s.Visitors += len(r.visitors)
		}
		r.mu.Unlock()
	}
	s.Lag = Histogram{
		Bounds: append([]time.Duration(nil), lagBounds...),
		Counts: make([]uint64, len(lagBounds)+1),
	}
	for i := range h.metrics.lagCounts {
		s.Lag.Counts[i] = h.metrics.lagCounts[i].Load()
		s.Lag.Count += s.Lag.Counts[i]
	}
	s.Delivered = s.Lag.Count
	s.Lag.Sum = time.Duration(h.metrics.lagSum.Load())
	return s
}
