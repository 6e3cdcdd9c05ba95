package demo

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// pool simulates the protected system's database: a pool of slots, each
// order holding one for the service time.
type pool struct {
	slots   chan struct{}
	service time.Duration
	wait    time.Duration // < 0: do not wait for a slot
	inUse   atomic.Int64
	peak    atomic.Int64
}

func newPool(size int, service, wait time.Duration) *pool {
	return &pool{slots: make(chan struct{}, size), service: service, wait: wait}
}

var errNoSlot = errors.New("no database connection free in time")

// run holds one slot for the service time, waiting at most p.wait for one
// (errNoSlot past it). It returns ctx's error when ctx ends first; a slot
// it held is given back either way.
func (p *pool) run(ctx context.Context) error {
	if err := p.take(ctx); err != nil {
		return err
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
	return ctx.Err()
}

// take takes a slot, waiting for one at most p.wait.
func (p *pool) take(ctx context.Context) error {
	if p.wait < 0 {
		select {
		case p.slots <- struct{}{}:
			return nil
		default:
			return errNoSlot
		}
	}
	t := time.NewTimer(p.wait)
	defer t.Stop()
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errNoSlot
	case <-ctx.Done():
		return ctx.Err()
	}
}
