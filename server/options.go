package main

import (
	"time"

	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/webhook"
)

// serverOptions are what a server is built with besides its flags: knobs
// that tests turn. A nil *serverOptions, like the zero value, is what
// production runs.
type serverOptions struct {
	// NoTick leaves the admission loop off, so a test admits explicitly
	// (queue.Queue.Admit).
	NoTick bool
	// ReadTimeout and IdleTimeout bound an HTTP connection's request read
	// and its keep-alive wait; 0 means 10 s and 60 s.
	ReadTimeout, IdleTimeout time.Duration
	// Push holds the push transports' own options (SSEHeartbeat);
	// newServer sets Logger, WSHeartbeat and Origins (from the flags) and
	// OnWSHeartbeat over them.
	Push push.Options
	// Webhooks holds the webhook delivery's options (Poll, Backoff…);
	// newServer sets Logger.
	Webhooks webhook.Options
}
