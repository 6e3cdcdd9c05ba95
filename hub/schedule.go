package hub

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// timerEntry asks for v's admitted state to be pushed at notBefore.
type timerEntry struct {
	at time.Time
	r  *room
	v  *visitor
	nb int64 // the notBefore (UnixNano) it was scheduled for
}

type timerHeap []timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = timerEntry{}
	*h = old[:len(old)-1]
	return e
}

// scheduler is one timer for every pending notBefore: a heap served by one
// goroutine, instead of a goroutine or timer per waiting visitor.
type scheduler struct {
	mu   sync.Mutex
	h    timerHeap
	wake chan struct{} // cap 1
}

func (s *scheduler) init() { s.wake = make(chan struct{}, 1) }

// add schedules e; safe under a room lock.
func (s *scheduler) add(e timerEntry) {
	s.mu.Lock()
	heap.Push(&s.h, e)
	first := s.h[0].nb == e.nb && s.h[0].v == e.v
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// run calls fire for each entry when its time comes, until ctx ends.
func (s *scheduler) run(ctx context.Context, fire func(timerEntry)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []timerEntry
	for {
		now := time.Now()
		s.mu.Lock()
		for len(s.h) > 0 && !s.h[0].at.After(now) {
			due = append(due, heap.Pop(&s.h).(timerEntry))
		}
		next := time.Hour
		if len(s.h) > 0 {
			next = s.h[0].at.Sub(now)
		}
		s.mu.Unlock()
		for i, e := range due {
			fire(e)
			due[i] = timerEntry{}
		}
		due = due[:0]
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}
