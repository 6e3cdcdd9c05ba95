package main

import (
	"sync"
	"time"
)

// poolIdle is how long a pool worker waits for more work before it exits.
const poolIdle = 5 * time.Second

// workPool runs short jobs of many connections on a few goroutines that keep
// their stacks: a WebSocket's read of a pong or a close needs a deep stack,
// and a fresh goroutine would grow one for every such read.
type workPool struct {
	work chan func() // unbuffered: a send succeeds only to an idle worker
	quit chan struct{}

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
}

func newWorkPool() *workPool {
	return &workPool{work: make(chan func()), quit: make(chan struct{})}
}

// do runs f on a worker and waits for it; after stop it runs f inline.
func (p *workPool) do(f func()) {
	done := make(chan struct{})
	job := func() {
		defer close(done)
		f()
	}
	select {
	case p.work <- job:
	default:
		p.mu.Lock()
		if p.stopped {
			p.mu.Unlock()
			job()
			return
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.worker(job)
	}
	<-done
}

func (p *workPool) worker(f func()) {
	defer p.wg.Done()
	f()
	t := time.NewTimer(poolIdle)
	defer t.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			t.Reset(poolIdle)
		case <-t.C:
			return
		case <-p.quit:
			return
		}
	}
}

// stop ends the idle workers and waits for them; later jobs run inline.
func (p *workPool) stop() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
