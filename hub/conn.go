package hub

import (
	"context"
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Transport is one push connection as the server implements it (WebSocket
// or SSE).
type Transport interface {
	// Write sends one message: event is "state", "message", "heartbeat" or
	// "reconnect", data its JSON. It gives up at deadline (a deadline on the
	// socket, not a context: a context that can end costs a timer per
	// message, which 10,000 connections feel); Close must also make a
	// pending Write return. Write is never called concurrently for one
	// transport.
	Write(deadline time.Time, event string, data []byte) error
	// Close closes the connection; it must be idempotent and must not wait
	// for the peer. reason is for logs or a WebSocket close reason.
	Close(reason string)
	// Kind is "ws" or "sse", for stats.
	Kind() string
}

// Conn is one connection attached to the hub. Close it when the connection
// ends. Its methods are safe for concurrent use.
type Conn struct {
	h *Hub
	t Transport
	r *room    // set once by add
	v *visitor // set once by add

	// Guarded by r.mu: what this connection has been sent.
	sentStatus wire.Status
	sentPos    int64
	sentAt     int64   // when the waiting position was sent (UnixNano)
	sentRate   float64 // the rate it was sent with; 0 when its page stands still
	sentNB     int64   // notBefore (UnixNano) of the admitted state sent
	sentOpens  int64   // opensAt (UnixNano) of the pre-queue state sent
	sentNotice uint64  // notice.seq of the room message sent

	// Guarded by h.beats.mu (see Beat).
	beatAt    int64 // the wheel step its heartbeat is filed under
	beatEvery time.Duration

	mu        sync.Mutex
	q         []outMsg // nil when empty: an idle connection holds no queue
	lastWrite int64    // when a message was last written (UnixNano)

	// Flags, side by side so that 10,000 connections do not pay a word
	// each for them; each is guarded as its group above says.
	removed    bool // r.mu
	sentPaused bool // r.mu
	beatAlways bool // h.beats.mu
	flushing   bool // mu: a flusher goroutine owns the queue
	closed     bool // mu
}

// outMsg is one queued message. data may be shared by several connections
// and must not be modified.
type outMsg struct {
	event      string
	data       []byte
	notBefore  time.Time // set for an admitted state: delivery lag
	closeAfter bool      // the connection closes once this is written
}

// Close detaches the connection from the hub and closes its transport
// (calling Transport.Close in the caller's goroutine). It does not wait for
// Redis (the room's unsubscribe, if this was its last connection, happens in
// the background) and is idempotent.
func (c *Conn) Close() { c.detach("closed", closeInline) }

// closeHow says whether and where detach calls Transport.Close.
type closeHow int

const (
	closeNone   closeHow = iota // the caller keeps the transport
	closeInline                 // in the calling goroutine
	closeAsync                  // in a goroutine of its own: the caller serves others
)

// detach removes c from the index, stops its writer and closes its
// transport as how says. Only the first call does anything.
func (c *Conn) detach(reason string, how closeHow) {
	h, r := c.h, c.r
	r.mu.Lock()
	removed := h.removeLocked(c)
	r.mu.Unlock()
	if removed {
		h.finish(c, reason, how)
	}
}

// finish releases what a removed connection holds.
func (h *Hub) finish(c *Conn, reason string, how closeHow) {
	c.mu.Lock()
	c.closed = true
	c.q = nil
	c.mu.Unlock()
	switch how {
	case closeInline:
		c.t.Close(reason)
	case closeAsync:
		h.goTracked(func() { c.t.Close(reason) }, true)
	}
	h.metrics.conn(c.t.Kind(), -1)
	h.connGone()
	if h.shutdown.Load() {
		return // the broker is stopping with the hub
	}
	r := c.r
	r.mu.Lock()
	empty := r.nconns == 0
	r.mu.Unlock()
	if empty {
		h.goTracked(func() {
			ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
			defer cancel()
			_ = h.syncSub(ctx, r)
		}, true)
	}
}

// dropSlow finishes connections that pushLocked removed for a full queue.
func (h *Hub) dropSlow(cs []*Conn) {
	for _, c := range cs {
		h.metrics.droppedSlow.Add(1)
		h.log.Debug("hub: slow consumer", "room", c.r.name, "visitor", c.v.id, "kind", c.t.Kind())
		h.finish(c, "slow consumer", closeAsync)
	}
}

// enqueue queues m without blocking and starts a flusher if none runs. It
// reports false when the queue is full: the caller drops c as slow.
func (c *Conn) enqueue(m outMsg) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return true
	}
	if len(c.q) >= c.h.opts.SendQueue {
		c.mu.Unlock()
		return false
	}
	c.q = append(c.q, m)
	start := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	run := c.h.runBulk
	if !m.notBefore.IsZero() {
		// An admission goes ahead of the bulk of position, pause and
		// heartbeat writes: its delivery lag is what visitors feel.
		run = c.h.runWorker
	}
	if start && !run(c.flush) {
		// Run has returned: no writer may start, the connection is being
		// closed anyway.
		c.mu.Lock()
		c.flushing = false
		c.mu.Unlock()
	}
	return true
}

// flush writes queued messages until the queue is empty, then exits; at most
// one flusher runs per connection.
func (c *Conn) flush() {
	for {
		c.mu.Lock()
		if c.closed || len(c.q) == 0 {
			c.flushing = false
			c.mu.Unlock()
			return
		}
		m := c.q[0]
		n := copy(c.q, c.q[1:])
		c.q[n] = outMsg{}
		c.q = c.q[:n]
		if n == 0 {
			c.q = nil
		}
		c.mu.Unlock()

		err := c.t.Write(time.Now().Add(c.h.opts.WriteTimeout), m.event, m.data)
		c.mu.Lock()
		closed := c.closed
		if err == nil {
			c.lastWrite = time.Now().UnixNano()
		}
		c.mu.Unlock()
		if err != nil {
			if !closed {
				c.h.metrics.writeErrors.Add(1)
				c.h.log.Debug("hub: write failed", "room", c.r.name, "kind", c.t.Kind(), "err", err)
			}
			c.detach("write failed", closeInline)
			return
		}
		c.h.metrics.sent.Add(1)
		if !m.notBefore.IsZero() {
			lag := max(time.Since(m.notBefore), 0)
			c.h.metrics.delivered(lag)
			if f := c.h.opts.OnDeliver; f != nil {
				f(c.t.Kind(), lag)
			}
		}
		if m.closeAfter {
			c.detach("reconnect", closeInline)
			return
		}
	}
}
