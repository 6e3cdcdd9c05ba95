package visit

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// PollCache answers a poll that comes sooner than the nextPollMs its
// visitor was given from memory, without touching the store. It is per
// instance; a stale "waiting" is allowed until the told time has passed.
// Its methods are safe for concurrent use.
type PollCache struct {
	seed   maphash.Seed
	shards [32]pollShard
	max    int
	size   atomic.Int64
	hits   atomic.Int64
	misses atomic.Int64
}

type pollShard struct {
	mu sync.Mutex
	m  map[string]pollEntry
}

type pollEntry struct {
	body []byte
	due  time.Time
}

// NewPollCache returns a cache holding at most max answers.
func NewPollCache(max int) *PollCache {
	p := &PollCache{seed: maphash.MakeSeed(), max: max}
	for i := range p.shards {
		p.shards[i].m = make(map[string]pollEntry)
	}
	return p
}

func (p *PollCache) shard(key string) *pollShard {
	return &p.shards[maphash.String(p.seed, key)%uint64(len(p.shards))]
}

// get returns the remembered answer while it is still due in the future.
func (p *PollCache) get(key string, now time.Time) ([]byte, bool) {
	s := p.shard(key)
	s.mu.Lock()
	e, ok := s.m[key]
	s.mu.Unlock()
	if ok && now.Before(e.due) {
		p.hits.Add(1)
		return e.body, true
	}
	p.misses.Add(1)
	return nil, false
}

// put remembers body until due. When full, it stops remembering rather than
// growing without bound.
func (p *PollCache) put(key string, body []byte, due time.Time) {
	s := p.shard(key)
	s.mu.Lock()
	if _, ok := s.m[key]; !ok {
		if p.size.Load() >= int64(p.max) {
			s.mu.Unlock()
			return
		}
		p.size.Add(1)
	}
	s.m[key] = pollEntry{body: body, due: due}
	s.mu.Unlock()
}

// pollKey is the cache key of visitor's answer in room.
func pollKey(room, visitor string) string { return room + "|" + visitor }

// Forget drops visitor's answer in room, so its next poll asks the store.
func (p *PollCache) Forget(room, visitor string) { p.forget(pollKey(room, visitor)) }

// Len is the number of answers held.
func (p *PollCache) Len() int64 { return p.size.Load() }

// Hits is the number of polls answered from memory so far.
func (p *PollCache) Hits() int64 { return p.hits.Load() }

func (p *PollCache) forget(key string) {
	s := p.shard(key)
	s.mu.Lock()
	if _, ok := s.m[key]; ok {
		delete(s.m, key)
		p.size.Add(-1)
	}
	s.mu.Unlock()
}

// sweep drops entries whose time has passed.
func (p *PollCache) sweep(now time.Time) {
	for i := range p.shards {
		s := &p.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if !now.Before(e.due) {
				delete(s.m, k)
				p.size.Add(-1)
			}
		}
		s.mu.Unlock()
	}
}

// Run sweeps every interval until ctx ends.
func (p *PollCache) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			p.sweep(now)
		}
	}
}
