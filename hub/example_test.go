package hub_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/waitroom/waitroom/hub"
)

// Wiring a hub in a server: run it, attach each push connection, drain it
// before shutdown.
func Example() {
	var (
		client rueidis.Client // from rueidis.NewClient
		src    hub.Source     // exact state from the queue
		t      hub.Transport  // one WebSocket or SSE connection
		log    = slog.Default()
	)
	h := hub.New(hub.NewRueidisBroker(client, log), src, log, &hub.Options{MaxConns: 20000})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	defer func() { stop(); <-done }()

	// In the connection's handler, which keeps reading until the peer goes:
	c, err := h.Attach(ctx, "drop", "visitor-id", t)
	if err != nil {
		return // ErrTooManyConns, ErrTooManyForVisitor, ErrClosed: refuse it
	}
	defer c.Close()

	// On shutdown: stop accepting, spread reconnects, then stop the hub.
	dctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = h.Drain(dctx, 10*time.Second)
}
