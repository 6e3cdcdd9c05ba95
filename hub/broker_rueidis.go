package hub

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// rueidisBroker keeps one dedicated rueidis connection in subscribed mode.
type rueidisBroker struct {
	client rueidis.Client
	log    *slog.Logger

	// mu serialises every SUBSCRIBE and UNSUBSCRIBE, so the set and what
	// Redis has agree, and guards chans and dc.
	mu    sync.Mutex
	chans map[string]struct{}
	dc    rueidis.DedicatedClient // nil while disconnected
	ready atomic.Bool
}

// NewRueidisBroker returns a Broker on a dedicated connection of client.
// Against miniredis the client needs DisableCache, ForceSingleClient and
// AlwaysRESP2. The caller keeps ownership of client and closes it after the
// broker's Run has returned.
func NewRueidisBroker(client rueidis.Client, log *slog.Logger) Broker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &rueidisBroker{client: client, log: log, chans: make(map[string]struct{})}
}

func (b *rueidisBroker) Ready() bool { return b.ready.Load() }

func (b *rueidisBroker) Run(ctx context.Context, r Receiver) error {
	runSessions(ctx, r, b.log, "rueidis", b.session)
	return nil
}

// session runs one connection: subscribe the set, then wait for its loss.
// It reports whether the connection got up.
func (b *rueidisBroker) session(ctx context.Context, r Receiver) (bool, error) {
	dc, _ := b.client.Dedicate()
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage: func(m rueidis.PubSubMessage) { r.Message(m.Channel, []byte(m.Message)) },
	})
	defer func() {
		// Close (not just release): a subscribed connection must not go
		// back to the pool. Hooks are not called once lost is closed.
		dc.Close()
		for range lost {
		}
	}()

	b.mu.Lock()
	err := b.subscribeAll(ctx, dc)
	if err == nil {
		b.dc = dc
	}
	b.mu.Unlock()
	if err != nil {
		return false, err
	}
	b.ready.Store(true)
	r.Up()

	select {
	case err = <-lost:
		if err == nil {
			err = errors.New("pubsub connection closed")
		}
	case <-ctx.Done():
	}
	b.ready.Store(false)
	b.mu.Lock()
	b.dc = nil
	b.mu.Unlock()
	return true, err
}

// subscribeAll subscribes dc to the whole set, or pings it when the set is
// empty, so a session is up only on a working connection. Needs b.mu.
func (b *rueidisBroker) subscribeAll(ctx context.Context, dc rueidis.DedicatedClient) error {
	ctx, cancel := context.WithTimeout(ctx, subscribeTimeout)
	defer cancel()
	chans := slices.Collect(maps.Keys(b.chans))
	if len(chans) == 0 {
		return dc.Do(ctx, dc.B().Ping().Build()).Error()
	}
	return dc.Do(ctx, dc.B().Subscribe().Channel(chans...).Build()).Error()
}

func (b *rueidisBroker) Subscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.chans[channel] = struct{}{}
	if b.dc == nil {
		return nil // subscribed with the set on (re)connect
	}
	return b.dc.Do(ctx, b.dc.B().Subscribe().Channel(channel).Build()).Error()
}

func (b *rueidisBroker) Unsubscribe(ctx context.Context, channel string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.chans, channel)
	if b.dc == nil {
		return nil
	}
	return b.dc.Do(ctx, b.dc.B().Unsubscribe().Channel(channel).Build()).Error()
}
