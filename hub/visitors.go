package hub

import "sync"

// visitorShards is how many locks the per-visitor connection counts are
// spread over.
const visitorShards = 32

// visitorCounts counts each visitor's connections across every room of
// the hub, so one credential cannot open MaxPerVisitor connections in each
// of many rooms.
type visitorCounts struct {
	shards [visitorShards]struct {
		mu sync.Mutex
		n  map[string]int32
	}
}

func (vc *visitorCounts) shard(id string) *struct {
	mu sync.Mutex
	n  map[string]int32
} {
	return &vc.shards[fnv32(id)%visitorShards]
}

// take counts one more connection of id unless it has max already.
func (vc *visitorCounts) take(id string, max int) bool {
	s := vc.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = make(map[string]int32)
	}
	if int(s.n[id]) >= max {
		return false
	}
	s.n[id]++
	return true
}

// release counts one connection of id out.
func (vc *visitorCounts) release(id string) {
	s := vc.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[id] <= 1 {
		delete(s.n, id)
		return
	}
	s.n[id]--
}

// fnv32 is FNV-1a.
func fnv32(s string) uint32 {
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
