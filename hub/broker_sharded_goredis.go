package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/redis/go-redis/v9"
)

// errSlotMoved is how a go-redis sharded subscription ends when Redis
// unsubscribes its channel: the slot moved to another node.
var errSlotMoved = errors.New("channel unsubscribed by redis (slot moved)")

// NewGoRedisShardedBroker returns a Broker on Redis Cluster's sharded
// pub/sub for a go-redis cluster client. A go-redis PubSub of a cluster
// client is bound to the node of its first channel's slot, so each channel
// has its own PubSub (one connection to that node); when Redis unsubscribes
// it (the slot moved) or the connection fails, the client reloads the
// cluster's slot map and the channel is subscribed again on the slot's
// current master. The caller keeps ownership of client and closes it after
// Run returned.
func NewGoRedisShardedBroker(client *redis.ClusterClient, log *slog.Logger) Broker {
	sub := func(ctx context.Context, channel string, confirmed func(), _ func(error), msg func([]byte)) (err error) {
		defer func() {
			if err != nil && ctx.Err() == nil {
				client.ReloadState(ctx)
			}
		}()
		ps := client.SSubscribe(ctx, channel)
		stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
		defer func() {
			stop()
			_ = ps.Close()
		}()
		pinged := false
		for {
			m, err := ps.ReceiveTimeout(ctx, goRedisPingEvery)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					return err
				}
				if pinged {
					return fmt.Errorf("no reply to ping: %w", err)
				}
				if err := ps.Ping(ctx); err != nil {
					return err
				}
				pinged = true
				continue
			}
			switch m := m.(type) {
			case *redis.Message:
				msg([]byte(m.Payload))
			case *redis.Subscription:
				switch m.Kind {
				case "ssubscribe":
					confirmed()
				case "sunsubscribe":
					return errSlotMoved
				}
			case *redis.Pong:
				pinged = false
			}
		}
	}
	return newShardedBroker("go-redis", sub, log)
}
