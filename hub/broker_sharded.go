package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
)

// ChannelReceiver is a Receiver that is told about one channel at a time.
// A sharded broker subscribes each channel on the node that owns its slot,
// so one channel can be lost (its slot moved, its node failed) while the
// others stay: it reports that with ChannelDown and the channel's return
// with ChannelUp, instead of Down and Up for the whole set. Up is then
// called once, when the broker starts.
type ChannelReceiver interface {
	Receiver
	// ChannelDown reports the loss of channel's subscription.
	ChannelDown(channel string, err error)
	// ChannelUp reports that channel is subscribed again after a loss:
	// messages published in between may be lost.
	ChannelUp(channel string)
}

// shardSubscribe runs one channel's sharded subscription (SSUBSCRIBE) until
// it ends: confirmed is called on each confirmation from Redis and msg for
// each message. It returns when the subscription is lost (the connection
// failed, or Redis unsubscribed it because the slot moved) or ctx ends. A
// client library that subscribes again by itself after a loss calls lost
// when that happens, and confirmed again once it is back.
type shardSubscribe func(ctx context.Context, channel string, confirmed func(), lost func(error), msg func(payload []byte)) error

// shardedBroker is a Broker for Redis Cluster's sharded pub/sub: every
// channel has its own subscription loop, on the node of its slot as the
// client library routes it, and is subscribed again on its own when it is
// lost. It is ready while no channel of the set is down.
type shardedBroker struct {
	sub    shardSubscribe
	log    *slog.Logger
	client string

	msgMu sync.Mutex // keeps Receiver.Message calls sequential across channels

	mu      sync.Mutex
	chans   map[string]*shard
	start   func(channel string, s *shard) // set while Run runs
	r       Receiver
	ndown   int // channels of the set whose subscription is down
	running bool
	ready   atomic.Bool
}

// shard is one channel's subscription. Guarded by shardedBroker.mu.
type shard struct {
	cancel  context.CancelFunc // ends the loop; nil before Run
	done    chan struct{}      // closed when the loop has returned
	up      bool               // confirmed and not lost since
	down    bool               // counted in ndown: lost, or never got up after a failed attempt
	waiters []chan error       // Subscribe calls waiting for the confirmation
}

func newShardedBroker(client string, sub shardSubscribe, log *slog.Logger) *shardedBroker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &shardedBroker{sub: sub, log: log, client: client, chans: make(map[string]*shard)}
}

func (b *shardedBroker) Ready() bool { return b.ready.Load() }

// setReady recomputes readiness and reports a change to a plain Receiver.
// Needs b.mu.
func (b *shardedBroker) setReady(err error) {
	now := b.running && b.ndown == 0
	if b.ready.Swap(now) == now || b.r == nil {
		return
	}
	if _, ok := b.r.(ChannelReceiver); ok {
		return
	}
	if now {
		b.r.Up()
	} else {
		b.r.Down(err)
	}
}

func (b *shardedBroker) Run(ctx context.Context, r Receiver) error {
	var wg sync.WaitGroup
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return errors.New("hub: broker already running")
	}
	b.r = r
	b.start = func(channel string, s *shard) {
		sctx, cancel := context.WithCancel(ctx)
		s.cancel = cancel
		wg.Go(func() {
			defer close(s.done)
			b.loop(sctx, channel, s)
		})
	}
	for ch, s := range b.chans {
		b.start(ch, s)
	}
	b.running = true
	b.setReady(nil)
	_, perChannel := r.(ChannelReceiver)
	b.mu.Unlock()
	if perChannel {
		r.Up()
	}

	<-ctx.Done()
	b.mu.Lock()
	b.running = false
	b.start = nil
	b.ready.Store(false)
	b.mu.Unlock()
	wg.Wait()
	return nil
}

// loop keeps channel subscribed until its context ends.
func (b *shardedBroker) loop(ctx context.Context, channel string, s *shard) {
	for attempt := 0; ; attempt++ {
		err := b.sub(ctx, channel, func() { b.confirmed(channel, s) }, func(err error) {
			if ctx.Err() == nil {
				b.lost(channel, s, err)
			}
		}, func(p []byte) {
			b.msgMu.Lock()
			defer b.msgMu.Unlock()
			if ctx.Err() == nil {
				b.r.Message(channel, p)
			}
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("unsubscribed by redis")
		}
		if b.lost(channel, s, err) {
			attempt = 0
		} else {
			b.log.Debug("hub: sharded subscribe failed", "client", b.client, "channel", channel, "attempt", attempt, "err", err)
		}
		if !sleepCtx(ctx, backoff(attempt)) {
			return
		}
	}
}

// confirmed marks s up and wakes its waiters.
func (b *shardedBroker) confirmed(channel string, s *shard) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.up || b.chans[channel] != s {
		return
	}
	s.up = true
	for _, w := range s.waiters {
		w <- nil
	}
	s.waiters = nil
	if !s.down {
		return
	}
	s.down = false
	b.ndown--
	b.setReady(nil)
	if cr, ok := b.r.(ChannelReceiver); ok {
		cr.ChannelUp(channel)
	}
}

// lost marks s down after its subscription ended with err; it reports
// whether the subscription had been up.
func (b *shardedBroker) lost(channel string, s *shard, err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	wasUp := s.up
	s.up = false
	for _, w := range s.waiters {
		w <- fmt.Errorf("sharded subscribe %s: %w", channel, err)
	}
	s.waiters = nil
	if b.chans[channel] != s || s.down {
		return wasUp
	}
	s.down = true
	b.ndown++
	b.setReady(err)
	if cr, ok := b.r.(ChannelReceiver); ok && wasUp {
		cr.ChannelDown(channel, err)
	}
	return wasUp
}

// Subscribe adds channel to the set and, while the broker runs, waits for
// Redis to confirm the subscription.
func (b *shardedBroker) Subscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	if _, ok := b.chans[channel]; ok {
		b.mu.Unlock()
		return nil
	}
	s := &shard{done: make(chan struct{})}
	b.chans[channel] = s
	if b.start == nil {
		b.mu.Unlock()
		return nil // subscribed when Run starts
	}
	w := make(chan error, 1) // buffered: confirmed and lost never block
	s.waiters = append(s.waiters, w)
	b.start(channel, s)
	b.mu.Unlock()
	select {
	case err := <-w:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Unsubscribe removes channel from the set and ends its loop, which tells
// Redis (SUNSUBSCRIBE, or closing the channel's connection).
func (b *shardedBroker) Unsubscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	s, ok := b.chans[channel]
	if !ok {
		b.mu.Unlock()
		return nil
	}
	delete(b.chans, channel)
	if s.down {
		b.ndown--
		b.setReady(nil)
	}
	for _, w := range s.waiters {
		w <- errors.New("unsubscribed")
	}
	s.waiters = nil
	b.mu.Unlock()
	if s.cancel == nil {
		return nil
	}
	s.cancel() // the subscription's loop tells Redis as it ends
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
