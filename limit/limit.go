// Package limit holds the per-client abuse limits of the HTTP surface: a
// rate limiter keyed by client in a fixed-size table, and the client key
// itself (peer address, or the nearest untrusted X-Forwarded-For hop).
package limit

import (
	"hash/maphash"
	"sync"
	"time"
)

// ways is how many clients share one set of the table. A client's entry
// lives in the one set its key hashes to, so a lookup touches one set
// under one lock.
const ways = 4

// Table limits events per key with GCRA (a token bucket kept as one
// timestamp per key) in a table of fixed size: memory does not grow with
// the number of clients. A new key takes a free slot of its set, or one
// whose bucket has refilled completely (forgetting it changes nothing);
// when the set is full of clients still being limited, the one closest to
// refilled is forgotten. So a flood of fresh keys costs no memory, and what
// it can do to a client it pushes out is hand it a fresh burst: keys that
// share a set never limit each other. Safe for concurrent use.
type Table struct {
	seed     maphash.Seed
	interval int64 // nanoseconds per event at the sustained rate
	window   int64 // interval·burst: how far ahead of now a bucket may run
	sets     []set
}

type set struct {
	mu    sync.Mutex
	slots [ways]slot
}

type slot struct {
	key uint64 // hash of the client key; 0 marks a free slot
	tat int64  // theoretical arrival time, Unix nanoseconds
}

// NewTable returns a table allowing rate events per second per key with
// bursts of up to burst, in room for at least entries keys (rounded up to
// whole sets). rate ≤ 0 or burst < 1 returns nil, and a nil Table allows
// everything.
func NewTable(rate float64, burst, entries int) *Table {
	if rate <= 0 || burst < 1 {
		return nil
	}
	n := max((entries+ways-1)/ways, 1)
	iv := max(int64(float64(time.Second)/rate), 1)
	return &Table{seed: maphash.MakeSeed(), interval: iv, window: iv * int64(burst), sets: make([]set, n)}
}

// Allow takes one event for key at now. When the key is over its rate it
// returns false and how long until one more event would be allowed.
func (t *Table) Allow(key string, now time.Time) (bool, time.Duration) {
	if t == nil {
		return true, 0
	}
	return t.allow(key, now, t.interval, t.window)
}

// AllowRate is Allow at a rate and burst of the caller's instead of the
// table's, for keys with limits of their own (a key should keep one rate).
func (t *Table) AllowRate(key string, now time.Time, rate float64, burst int) (bool, time.Duration) {
	if t == nil || rate <= 0 || burst < 1 {
		return true, 0
	}
	iv := max(int64(float64(time.Second)/rate), 1)
	return t.allow(key, now, iv, iv*int64(burst))
}

func (t *Table) allow(key string, now time.Time, interval, window int64) (bool, time.Duration) {
	h := maphash.String(t.seed, key)
	s := &t.sets[h%uint64(len(t.sets))]
	h |= 1 // never 0, which marks a free slot
	n := now.UnixNano()

	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(h)
	tat := max(s.slots[i].tat, n)
	if s.slots[i].key != h {
		tat = n
	}
	next := tat + interval
	if next-n > window {
		return false, time.Duration(next - n - window)
	}
	s.slots[i] = slot{key: h, tat: next}
	return true, 0
}

// find returns the slot of key h in the set, else the slot a new key
// takes: a free or refilled one, else the one closest to refilled.
func (s *set) find(h uint64) int {
	victim := 0
	for i := range s.slots {
		if s.slots[i].key == h {
			return i
		}
		if s.slots[i].tat < s.slots[victim].tat {
			victim = i
		}
	}
	// A free slot has tat 0, so it is the smallest; a refilled one
	// (tat ≤ now) is as good as free.
	return victim
}

// Size reports how many keys the table holds at most.
func (t *Table) Size() int {
	if t == nil {
		return 0
	}
	return len(t.sets) * ways
}
