package hub

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Broker is the pub/sub connection the hub needs: a dynamic set of
// subscribed channels kept alive across connection loss.
//
// Implementations: NewRueidisBroker and NewGoRedisBroker. All methods are
// safe for concurrent use. The hub calls Subscribe and Unsubscribe for one
// channel in turn, never concurrently for the same channel.
type Broker interface {
	// Run connects, subscribes to every channel in the set and delivers to r
	// until ctx ends. After a connection loss it calls r.Down, reconnects
	// with backoff, subscribes to the whole set again and calls r.Up. No call
	// to r happens after Run returns. Run returns nil when ctx ends, after
	// closing its connection.
	Run(ctx context.Context, r Receiver) error
	// Subscribe adds channel to the set. While connected it sends SUBSCRIBE
	// and returns once Redis has confirmed it, or with an error (ctx done,
	// connection lost); the channel stays in the set either way and is
	// subscribed again on every reconnect.
	Subscribe(ctx context.Context, channel string) error
	// Unsubscribe removes channel from the set and, while connected, sends
	// UNSUBSCRIBE. An error leaves the channel out of the set.
	Unsubscribe(ctx context.Context, channel string) error
	// Ready reports whether the subscription is healthy: connected, and
	// every channel of the set subscribed.
	Ready() bool
}

// Receiver gets what a Broker receives. Message calls are sequential, but
// Up and Down may run concurrently with a Message call. Methods must not
// block for long or call back into the broker.
type Receiver interface {
	// Message is one pub/sub message.
	Message(channel string, payload []byte)
	// Up reports that the connection is established and every channel of
	// the set is subscribed: at start and after every reconnect.
	Up()
	// Down reports the loss of an established connection.
	Down(err error)
}

// subscribeTimeout bounds the SUBSCRIBE of the whole set on (re)connect.
const subscribeTimeout = 5 * time.Second

// backoff returns the wait before reconnect attempt n (0-based): 50ms
// doubling to 2s, with jitter so instances do not reconnect in step.
func backoff(n int) time.Duration {
	d := 50 * time.Millisecond << min(n, 6)
	d = min(d, 2*time.Second)
	return d/2 + rand.N(d/2+1)
}

// runSessions runs one connection after another until ctx ends: a session
// that got up and was lost is reported Down and retried at once-ish, one
// that never got up is retried with a growing, jittered backoff.
func runSessions(ctx context.Context, r Receiver, log *slog.Logger, client string, session func(context.Context, Receiver) (bool, error)) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		up, err := session(ctx, r)
		if ctx.Err() != nil {
			return
		}
		if up {
			r.Down(err)
			attempt = 0
		} else {
			log.Debug("hub: pubsub connect failed", "client", client, "attempt", attempt, "err", err)
		}
		if !sleepCtx(ctx, backoff(attempt)) {
			return
		}
	}
}

// sleepCtx waits d or until ctx ends; it reports whether ctx is still alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
