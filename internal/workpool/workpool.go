// Package workpool runs short jobs on goroutines that outlive them: a
// worker keeps its stack between jobs, where a goroutine per job would grow
// a fresh one each time (a WebSocket read or write needs a deep stack, and
// growing it costs more than the job).
package workpool

import (
	"sync"
	"time"
)

// Idle is how long a worker waits for another job before it exits.
const Idle = 5 * time.Second

// Pool is a set of workers that come and go with the load. The zero value
// is not usable; make one with New. Safe for concurrent use.
type Pool struct {
	work chan func() // unbuffered: a send succeeds only to an idle worker
	quit chan struct{}

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

// New returns an empty pool.
func New() *Pool {
	return &Pool{work: make(chan func()), quit: make(chan struct{})}
}

// Go runs f on an idle worker, or on a new one. It reports false, and does
// not run f, once Stop was called.
func (p *Pool) Go(f func()) bool {
	select {
	case p.work <- f:
		return true
	default:
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return false
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go p.worker(f)
	return true
}

// Do runs f on a worker and waits for it; after Stop it runs f in the
// caller's goroutine.
func (p *Pool) Do(f func()) {
	done := make(chan struct{})
	if !p.Go(func() {
		defer close(done)
		f()
	}) {
		f()
		return
	}
	<-done
}

func (p *Pool) worker(f func()) {
	defer p.wg.Done()
	f()
	t := time.NewTimer(Idle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			t.Reset(Idle)
		case <-t.C:
			return
		case <-p.quit:
			return
		}
	}
}

// Stop makes idle workers exit and waits until every worker has, jobs in
// progress included; later Go calls return false.
func (p *Pool) Stop() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
