package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// goRedisPingEvery is how long the go-redis broker waits for a message before
// it pings; a ping unanswered for as long again counts as a lost connection.
const goRedisPingEvery = 5 * time.Second

// goRedisBroker keeps one go-redis PubSub per connection; a lost connection
// ends the PubSub and the next session starts a fresh one.
type goRedisBroker struct {
	client redis.UniversalClient
	log    *slog.Logger

	// mu serialises SUBSCRIBE and UNSUBSCRIBE writes and guards the fields
	// below.
	mu      sync.Mutex
	chans   map[string]struct{}
	ps      *redis.PubSub // nil while no session holds a connection
	waiters map[string][]chan error
	ready   atomic.Bool
}

// NewGoRedisBroker returns a Broker on a PubSub of client. The caller keeps
// ownership of client and closes it after the broker's Run has returned.
func NewGoRedisBroker(client redis.UniversalClient, log *slog.Logger) Broker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &goRedisBroker{
		client:  client,
		log:     log,
		chans:   make(map[string]struct{}),
		waiters: make(map[string][]chan error),
	}
}

func (b *goRedisBroker) Ready() bool { return b.ready.Load() }

func (b *goRedisBroker) Run(ctx context.Context, r Receiver) error {
	runSessions(ctx, r, b.log, "go-redis", b.session)
	return nil
}

// session runs one PubSub until its connection is lost or ctx ends. It
// reports whether it got up.
func (b *goRedisBroker) session(ctx context.Context, r Receiver) (up bool, err error) {
	ps := b.client.Subscribe(ctx) // no channels: connects on first use
	// Close unblocks a pending ReceiveTimeout when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer func() {
		stop()
		_ = ps.Close()
		b.ready.Store(false)
		b.mu.Lock()
		b.ps = nil
		for ch, ws := range b.waiters {
			for _, w := range ws {
				w <- fmt.Errorf("pubsub connection lost: %w", err)
			}
			delete(b.waiters, ch)
		}
		b.mu.Unlock()
	}()

	b.mu.Lock()
	err = b.subscribeAll(ctx, ps)
	if err == nil {
		b.ps = ps
	}
	b.mu.Unlock()
	if err != nil {
		return false, err
	}

	// The PING written after the SUBSCRIBE of the set is answered after all
	// its confirmations: the session is up at the first PONG.
	pinged := true
	for {
		msg, err := ps.ReceiveTimeout(ctx, goRedisPingEvery)
		if err != nil {
			if ctx.Err() != nil {
				return up, nil
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return up, err
			}
			if pinged {
				return up, fmt.Errorf("no reply to ping: %w", err)
			}
			if err := ps.Ping(ctx); err != nil {
				return up, err
			}
			pinged = true
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			r.Message(m.Channel, []byte(m.Payload))
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				b.confirm(m.Channel)
			}
		case *redis.Pong:
			pinged = false
			if !up {
				up = true
				b.ready.Store(true)
				r.Up()
			}
		}
	}
}

// subscribeAll writes SUBSCRIBE for the whole set and a PING. Needs b.mu.
func (b *goRedisBroker) subscribeAll(ctx context.Context, ps *redis.PubSub) error {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	if chans := slices.Collect(maps.Keys(b.chans)); len(chans) > 0 {
		if err := ps.Subscribe(ctx, chans...); err != nil {
			return err
		}
	}
	return ps.Ping(ctx)
}

// confirm wakes the Subscribe calls waiting for channel.
func (b *goRedisBroker) confirm(channel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiters[channel] {
		w <- nil
	}
	delete(b.waiters, channel)
}

func (b *goRedisBroker) Subscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	b.chans[channel] = struct{}{}
	ps := b.ps
	if ps == nil {
		b.mu.Unlock()
		return nil // subscribed with the set on (re)connect
	}
	w := make(chan error, 1) // buffered: confirm and session end never block
	b.waiters[channel] = append(b.waiters[channel], w)
	err := ps.Subscribe(ctx, channel)
	b.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-w:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *goRedisBroker) Unsubscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.chans, channel)
	if b.ps == nil {
		return nil
	}
	return b.ps.Unsubscribe(ctx, channel)
}
