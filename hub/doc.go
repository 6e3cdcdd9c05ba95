// Package hub holds the push connections (WebSocket or SSE) of one server
// instance, indexed by room and visitor, and delivers each room event to
// exactly the affected visitors' connections.
//
// The hub knows nothing about HTTP or a wire protocol: the server hands it a
// [Transport] per connection and a [Source] for exact visitor state, and the
// hub talks to Redis pub/sub only through a [Broker]. It subscribes to a
// room's channel (wr:{room}:events) while it holds at least one connection in
// that room, and unsubscribes when the last one leaves.
//
// Pub/sub is at-most-once, so the hub also reconciles every local visitor with
// a batched exact read: periodically, on sold_out and config events, and after
// the broker re-establishes its subscriptions following an outage.
//
// Goroutines: [Hub.Run] owns the long-lived ones (broker loop, reconcile loop,
// position flush, notBefore scheduler, and the store's watch when
// [Options].Ping is set). A connection costs no goroutine while
// idle: a short-lived flusher starts when its send queue becomes non-empty and
// exits when the queue is drained.
package hub
