package hub

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
)

// NewRueidisShardedBroker returns a Broker on Redis Cluster's sharded
// pub/sub for a rueidis cluster client. Each channel is one Receive with
// SSUBSCRIBE: rueidis sends it to the master of the channel's slot
// (following MOVED) and multiplexes the subscriptions of one node on that
// node's connection. When that connection fails, rueidis subscribes again
// by itself (retrying within Receive); a hook on each inner return tells
// the broker, so the channel counts as down until it is confirmed again and
// the room is then reconciled. When Redis unsubscribes the channel (its
// slot moved away) Receive returns and the channel is subscribed again
// wherever its slot now is.
// The caller keeps ownership of client and closes it after Run returned.
func NewRueidisShardedBroker(client rueidis.Client, log *slog.Logger) Broker {
	sub := func(ctx context.Context, channel string, confirmed func(), lost func(error), msg func([]byte)) error {
		ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, cc rueidis.CommandClient) error {
			if ctx.Err() != nil {
				// Ended here (Unsubscribe or shutdown): Receive only stops
				// listening, so tell Redis on the same connection.
				uctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = cc.Do(uctx, cc.B().Sunsubscribe().Channel(channel).Build()).Error()
				cancel()
				return err
			}
			if err == nil {
				lost(errors.New("unsubscribed by redis (slot moved)"))
			} else {
				lost(err)
			}
			return err
		})
		ctx = rueidis.WithOnSubscriptionHook(ctx, func(s rueidis.PubSubSubscription) {
			if s.Kind == "ssubscribe" {
				confirmed()
			}
		})
		return client.Receive(ctx, client.B().Ssubscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
			msg([]byte(m.Message))
		})
	}
	return newShardedBroker("rueidis", sub, log)
}
