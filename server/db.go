package main

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// dbPool simulates the protected system's database: a pool of slots, each
// order holding one for the service time. It makes the herd observable.
type dbPool struct {
	slots   chan struct{}
	service time.Duration
	wait    time.Duration
	inUse   atomic.Int64
	peak    atomic.Int64
	done    atomic.Int64
	timeout atomic.Int64
}

func newDBPool(size int, service, wait time.Duration) *dbPool {
	return &dbPool{slots: make(chan struct{}, size), service: service, wait: wait}
}

var errDBTimeout = errors.New("no database connection free in time")

// run holds one slot for the service time, waiting at most p.wait for one.
func (p *dbPool) run(ctx context.Context) error {
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
	case <-t.C:
		p.timeout.Add(1)
		return errDBTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
	n := p.inUse.Add(1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	work := time.NewTimer(p.service) // the simulated query
	select {
	case <-work.C:
	case <-ctx.Done():
		work.Stop()
	}
	p.inUse.Add(-1)
	<-p.slots
	p.done.Add(1)
	return ctx.Err()
}

// resetPeak returns the peak since the last reset and starts a new one.
func (p *dbPool) resetPeak() int64 {
	return p.peak.Swap(p.inUse.Load())
}
