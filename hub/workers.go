package hub

import "time"

// workerIdle is how long a flush worker waits for more work before it
// exits.
const workerIdle = 5 * time.Second

// runWorker runs f on an idle flush worker if one waits, or else on a new
// one, tracked like every goroutine of the hub. A worker keeps its stack
// between jobs: a goroutine per flush would grow a fresh stack for the
// WebSocket write each time, which costs more than the write. It reports
// false when the hub has stopped and f did not run.
func (h *Hub) runWorker(f func()) bool {
	if !h.running.Load() {
		// No Run to stop workers: a goroutine for this job alone.
		return h.goTracked(f, false)
	}
	select {
	case h.work <- f:
		return true
	default:
	}
	return h.goTracked(func() { h.worker(f) }, false)
}

// worker runs f, then whatever work comes, until it has been idle for
// workerIdle or the hub is shutting down.
func (h *Hub) worker(f func()) {
	f()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		select {
		case f := <-h.work:
			f()
			t.Reset(workerIdle)
		case <-t.C:
			return
		case <-h.quit:
			return
		}
	}
}
