// Package push serves the waiting room's push transports, WebSocket and
// server-sent events, on connections taken over from fiber (fasthttp's
// hijack), on the same port as the rest of the API. It frames the hello
// and heartbeat messages, answers refusals with the stable error codes and
// WebSocket close codes, and keeps waiting connections in one epoll set
// where the system has one, so an idle connection holds no goroutine.
//
// The caller authenticates the request and names the room and visitor;
// the connection is then attached to the hub, which writes to it.
package push

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/workpool"
	"github.com/waitroom/waitroom/wire"
)

// Hub is what push needs of the hub: attaching a connection, and how long
// a connection that asked for heartbeats may go silent. *hub.Hub is one.
type Hub interface {
	AttachPage(ctx context.Context, room, visitor string, t hub.Transport, page hub.Page) (*hub.Conn, error)
	BeatSilence(every time.Duration) time.Duration
}

// Options configure a Server. The zero value (or nil) means defaults.
type Options struct {
	// Logger receives debug lines about failed upgrades; nil discards them.
	Logger *slog.Logger
	// WSHeartbeat is how long a WebSocket goes without a message before the
	// hub sends it a heartbeat. Default 40 s.
	WSHeartbeat time.Duration
	// SSEHeartbeat is how often a stream gets a heartbeat event, busy or
	// not. Default 15 s; tests shorten it.
	SSEHeartbeat time.Duration
	// Origins are the origins (scheme://host[:port]) whose pages may open
	// push connections with credentials: WebSocket Origin patterns, and
	// the CORS header lines of a stream.
	Origins []string
	// OnWSHeartbeat is called for each heartbeat written to a WebSocket,
	// for a metric. Nil: not counted.
	OnWSHeartbeat func()
}

// DefaultWSHeartbeat and DefaultSSEHeartbeat are the heartbeat intervals
// of zero Options.
const (
	DefaultWSHeartbeat  = 40 * time.Second
	DefaultSSEHeartbeat = 15 * time.Second
)

// Target is a push connection's room and visitor, as the caller checked
// them, and the ticket the visitor's credential carries. The strings must
// not alias fiber's request buffers, which fasthttp reuses once the
// request is handed over.
type Target struct {
	Room    string
	Visitor string
	Ticket  wire.Ticket
	// Message tells that the page shows an operator's message (hub.Page).
	Message bool
}

// page is what t's page brings to the hub.
func (t Target) page() hub.Page { return hub.Page{Ticket: t.Ticket, Message: t.Message} }

// ErrDraining refuses a push connection on an instance that is shutting
// down. The caller answers with it too once it starts draining.
var ErrDraining = httperr.New(503, "draining", "this instance is shutting down; reconnect")

var (
	errUpgrade       = httperr.New(426, "upgrade_required", "this endpoint speaks WebSocket only")
	errTooManyConns  = httperr.New(429, "too_many_connections", "this instance holds as many connections as it may")
	errTooManyForVis = httperr.New(429, "too_many_connections_for_visitor", "this visitor has too many open connections")
	errUnavailable   = httperr.ErrUnavailable
)

// Server serves push connections. Its methods are safe for concurrent
// use. Make one with New; Start it before serving, Shutdown it after the
// HTTP server has stopped.
type Server struct {
	hub         Hub
	log         *slog.Logger
	opts        Options
	originHosts []string // the hosts of opts.Origins, as WebSocket Origin patterns

	readers *workpool.Pool         // the reads of waiting connections
	poll    atomic.Pointer[poller] // where waiting connections wait; nil: each in its goroutine
	wg      sync.WaitGroup         // every connection, from hijack to its end
	open    atomic.Int64           // the connections wg counts

	// originLog writes WebSockets refused for their Origin once in a
	// while: a page of an origin missing from -origins opens them all day.
	originLog *lograte.Repeats
}

// New returns a Server attaching its connections to h. It starts nothing;
// opts is not kept.
func New(h Hub, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WSHeartbeat <= 0 {
		o.WSHeartbeat = DefaultWSHeartbeat
	}
	if o.SSEHeartbeat <= 0 {
		o.SSEHeartbeat = DefaultSSEHeartbeat
	}
	if o.OnWSHeartbeat == nil {
		o.OnWSHeartbeat = func() {}
	}
	o.Origins = append([]string(nil), o.Origins...)
	s := &Server{hub: h, log: o.Logger, opts: o, readers: workpool.New()}
	s.originLog = lograte.NewRepeats(o.Logger, slog.LevelInfo, nil)
	for _, origin := range o.Origins {
		if u, err := url.Parse(origin); err == nil {
			s.originHosts = append(s.originHosts, u.Host)
		}
	}
	return s
}

// Start opens the epoll set where the system has one. Connections served
// before Start, or where there is no set, wait for their client in a
// goroutine of their own; so does one that fasthttp hands over reading
// through its pooled request reader (the server runs without
// ReduceMemoryUsage, or the client sent bytes after its request), which
// must be served inside the hijack handler. Call it once.
func (s *Server) Start() {
	p, err := newPoller(s.readers)
	if err != nil {
		s.log.Debug("push connections wait in goroutines of their own", "err", err)
		return
	}
	s.poll.Store(p)
}

// Shutdown ends every connection still waiting in the epoll set (and any
// that would start waiting there later), then waits until every
// connection's goroutine is done or ctx ends, and stops the pooled
// readers. Call it once the HTTP server stopped handing over connections
// and the hub closed its connections, so that it only ends stragglers.
func (s *Server) Shutdown(ctx context.Context) {
	if p := s.poll.Load(); p != nil {
		p.stop()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.readers.Stop()
}

// Open is how many push connections the server holds, from the hand-over
// to their end, waiting in the set or not.
func (s *Server) Open() int { return int(s.open.Load()) }

// Waiting is how many connections wait in the epoll set.
func (s *Server) Waiting() int {
	if p := s.poll.Load(); p != nil {
		return p.len()
	}
	return 0
}

// begin counts a connection about to be handed over; end is called once
// when it is over.
func (s *Server) begin() {
	s.wg.Add(1)
	s.open.Add(1)
}

func (s *Server) end() {
	s.open.Add(-1)
	s.wg.Done()
}
