package hub

import "sync"

// runWorker runs f on an idle flush worker if one waits, or else on a new
// one (workers keep their stacks between jobs: a goroutine per flush would
// grow a fresh stack for the WebSocket write each time, which costs more
// than the write). It reports false when the hub has stopped and f did not
// run.
func (h *Hub) runWorker(f func()) bool {
	if !h.running.Load() {
		// No Run to stop workers: a goroutine for this job alone.
		return h.goTracked(f, false)
	}
	return h.flushers.Go(f)
}

// bulkWriters bounds the goroutines writing bulk messages at once. A resume
// or a wave of position updates queues a write on every connection of the
// instance; with a goroutine each, an admitted message would wait behind
// thousands of runnable writers, while a few writers drain the same work
// in the same time and leave the scheduler free for it.
const bulkWriters = 64

// bulk is the queue of bulk flush jobs and its writers.
type bulk struct {
	mu      sync.Mutex
	jobs    []func()
	running int
}

// runBulk runs f on one of at most bulkWriters writers, after the jobs
// queued before it. It reports false when the hub has stopped and f will
// not run.
func (h *Hub) runBulk(f func()) bool {
	b := &h.bulk
	b.mu.Lock()
	if b.running >= bulkWriters {
		b.jobs = append(b.jobs, f)
		b.mu.Unlock()
		return true
	}
	b.running++
	b.mu.Unlock()
	// On a pooled worker, like admitted messages: a writer that starts
	// afresh for each wave of positions or heartbeats grows a new stack for
	// the WebSocket write every time.
	if h.runWorker(func() { h.bulkWriter(f) }) {
		return true
	}
	b.mu.Lock()
	b.running--
	b.mu.Unlock()
	return false
}

// bulkWriter runs f and then queued jobs until there are none.
func (h *Hub) bulkWriter(f func()) {
	b := &h.bulk
	for {
		f()
		b.mu.Lock()
		if len(b.jobs) == 0 {
			b.running--
			if cap(b.jobs) > 1024 {
				b.jobs = nil // let a burst's queue go
			}
			b.mu.Unlock()
			return
		}
		f = b.jobs[0]
		b.jobs[0] = nil
		b.jobs = b.jobs[1:]
		b.mu.Unlock()
	}
}
