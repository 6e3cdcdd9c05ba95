package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/workpool"
	"github.com/waitroom/waitroom/wire"
)

// Errors returned by Attach.
var (
	ErrClosed            = errors.New("hub: closed")
	ErrTooManyConns      = errors.New("hub: too many connections")
	ErrTooManyForVisitor = errors.New("hub: too many connections for this visitor")
)

// Options tunes a Hub. The zero value of a field means its default.
type Options struct {
	// MaxPerVisitor caps one visitor's connections (tabs), across all rooms.
	// Default 5.
	MaxPerVisitor int
	// MaxConns caps the connections of the hub. Default 50000.
	MaxConns int
	// SendQueue is the number of messages a connection may have waiting to
	// be written; past it the connection is closed as a slow consumer.
	// Default 16.
	SendQueue int
	// WriteTimeout bounds each Transport.Write. Default 5s.
	WriteTimeout time.Duration
	// PositionEvery sets the resolution of the position flush: steps of
	// PositionEvery/5, of which it serves those with anything due. A visitor is sent a new position no more
	// often than the nextPoll its last update carried (what a poll there
	// is told: 500 ms at the front, up to 5 s further back). Default 500ms.
	PositionEvery time.Duration
	// ReconcileEvery is how often every local visitor's state is read
	// exactly from the Source. Default 10s.
	ReconcileEvery time.Duration
	// ReconcileBatch is the most visitors per Source.States call. Default 500.
	ReconcileBatch int
	// OnDeliver, when set, is called after an admitted message has been
	// written, with the transport kind and the lag (write time minus
	// notBefore). It is called from writer goroutines, concurrently.
	OnDeliver func(kind string, lag time.Duration)
	// Presence, when set, is told which visitors hold a push connection
	// (see Presence).
	Presence Presence
	// Ping, when set, checks that the queue's store answers. Run calls it
	// every PingEvery: two failures in a row put the hub in the
	// degraded state (see SetDegraded), the next success takes it out.
	Ping func(ctx context.Context) error
	// PingEvery is how often Ping is called, and how long one call may
	// take. Default 1s; tests shorten it.
	PingEvery time.Duration
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	def := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	defd := func(p *time.Duration, d time.Duration) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&v.MaxPerVisitor, 5)
	def(&v.MaxConns, 50000)
	def(&v.SendQueue, 16)
	def(&v.ReconcileBatch, 500)
	defd(&v.WriteTimeout, 5*time.Second)
	defd(&v.PositionEvery, 500*time.Millisecond)
	defd(&v.ReconcileEvery, 10*time.Second)
	defd(&v.PingEvery, time.Second)
	return v
}

// stateTimeout bounds one read made by the hub itself: a Source.States
// call and the Source.Reclaim that may follow it.
const stateTimeout = 5 * time.Second

// Hub holds the push connections of one server instance. Create it with New
// and start it with Run. All methods are safe for concurrent use.
type Hub struct {
	b    Broker
	src  Source
	log  *slog.Logger
	opts Options

	mu    sync.RWMutex // guards rooms; taken before any room.mu
	rooms map[string]*room

	perVisitor visitorCounts // connections per visitor across rooms

	closed   atomic.Bool // no more Attach: Drain or shutdown
	degraded atomic.Bool // the queue store is unreachable (SetDegraded)
	shutdown atomic.Bool // Run is closing everything
	running  atomic.Bool
	nconns   atomic.Int64
	gone     chan struct{} // cap 1: a connection left (wakes Drain)

	// life guards goroutines started outside Run's own loops (flushers,
	// transport closes, unsubscribes): after stopped they run inline or not
	// at all, so wg.Wait in Run is final.
	life    sync.Mutex
	stopped bool
	wg      sync.WaitGroup

	flushBuf []*visitor // owned by flushLoop

	flushers *workpool.Pool // writers of admitted messages
	bulk     bulk           // bulk flush jobs and their writers

	beats   beats
	marks   marks // the steps the flush loop has anything to serve at
	sched   scheduler
	recon   reconcileQueue
	metrics metrics
	pres    presenceState

	// storeLog writes the failing reads and writes of the reconcile and
	// presence loops as one outage: while Redis is down, every pass fails
	// for every room.
	storeLog *lograte.Outage
	// subLog writes failed subscribes once in a while: while pub/sub is
	// down, every connection that comes fails one.
	subLog *lograte.Repeats
}

// New returns a Hub receiving room events from b and reading exact state
// from src. A nil log discards; a nil opts means defaults (opts is copied,
// never modified).
func New(b Broker, src Source, log *slog.Logger, opts *Options) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Hub{
		b:        b,
		src:      src,
		log:      log,
		opts:     opts.withDefaults(),
		rooms:    make(map[string]*room),
		gone:     make(chan struct{}, 1),
		flushers: workpool.New(),
		storeLog: lograte.NewOutage(log, "hub", nil),
		subLog:   lograte.NewRepeats(log, slog.LevelWarn, nil),
	}
	h.sched.init()
	h.marks.init()
	h.recon.init()
	h.metrics.init()
	h.pres.init()
	return h
}

// Run runs the broker, the reconcile loop, the position flush, the
// notBefore scheduler and the store's watch (Options.Ping) until ctx ends.
// Then it closes every connection (Attach returns ErrClosed from then on),
// waits for all of its goroutines and returns nil. Run may be called once.
func (h *Hub) Run(ctx context.Context) error {
	if !h.running.CompareAndSwap(false, true) {
		return errors.New("hub: already running")
	}
	loops, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	loopFns := []func(context.Context){
		func(ctx context.Context) {
			if err := h.b.Run(ctx, receiver{h}); err != nil {
				h.log.Error("hub: broker stopped", "err", err)
			}
		},
		h.reconcileLoop,
		h.flushLoop,
		func(ctx context.Context) { h.sched.run(ctx, h.fire) },
	}
	if h.opts.Presence != nil {
		loopFns = append(loopFns, h.presenceLoop)
	}
	if h.opts.Ping != nil {
		loopFns = append(loopFns, h.watchStore)
	}
	for _, f := range loopFns {
		wg.Go(func() { f(loops) })
	}
	<-ctx.Done()

	h.closed.Store(true)
	h.shutdown.Store(true)
	for _, c := range h.allConns() {
		c.detach("shutdown", closeAsync)
	}
	cancel()
	wg.Wait()
	h.flushers.Stop()

	h.life.Lock()
	h.stopped = true
	h.life.Unlock()
	h.wg.Wait()
	return nil
}

// Ready reports whether the hub can deliver events: Run is running, Drain
// has not started, and the broker's subscription is healthy (false while
// pub/sub is down, until every channel is subscribed again).
func (h *Hub) Ready() bool {
	return h.running.Load() && !h.closed.Load() && h.b.Ready()
}

// goTracked runs f in a goroutine that Run waits for. Once Run is past
// waiting, it runs f inline if inline is set, or not at all. It reports
// whether f ran in a new goroutine.
func (h *Hub) goTracked(f func(), inline bool) bool {
	h.life.Lock()
	if h.stopped {
		h.life.Unlock()
		if inline {
			f()
		}
		return false
	}
	h.wg.Add(1)
	h.life.Unlock()
	go func() {
		defer h.wg.Done()
		f()
	}()
	return true
}

// Attach registers t as a connection of visitor in room and sends it the
// visitor's current state (an admitted state is sent at its notBefore). It
// returns after the room's channel is subscribed and the state was read,
// or with ErrClosed, ErrTooManyConns, ErrTooManyForVisitor, or an error
// from the Source. The returned Conn must be closed when the connection
// ends. ctx bounds the Redis round trips only.
func (h *Hub) Attach(ctx context.Context, room, visitor string, t Transport) (*Conn, error) {
	return h.AttachPage(ctx, room, visitor, t, Page{})
}

// Page is what the page behind a new push connection brings to it.
type Page struct {
	// Ticket is the ticket its credential carries, if any. The hub keeps
	// the newest ticket of a visitor's connections (see wire.Ticket.Newer)
	// for as long as it has one here, and hands it to the Source when a
	// read finds the visitor lost (see Source.Reclaim); a ticket of
	// another room is ignored.
	Ticket wire.Ticket
	// Message tells that the page shows an operator's message, which a
	// join or poll answer carried. When the room has none by the time the
	// connection's first state is read, the connection is told so, even
	// on an instance that never saw the message cleared.
	Message bool
}

// AttachPage is Attach for a connection whose page brings what Page holds.
func (h *Hub) AttachPage(ctx context.Context, room, visitor string, t Transport, page Page) (*Conn, error) {
	ticket := page.Ticket
	if h.closed.Load() {
		return nil, ErrClosed
	}
	if h.nconns.Add(1) > int64(h.opts.MaxConns) {
		h.connGone()
		return nil, ErrTooManyConns
	}
	c := &Conn{h: h, t: t}
	r, seq, claim, err := h.add(room, visitor, c, ticket)
	if err != nil {
		h.connGone()
		return nil, err
	}
	h.metrics.conn(t.Kind(), 1)
	// Drain or shutdown may have started after the first check and missed
	// this connection in its snapshot.
	if h.closed.Load() {
		c.detach("closed", closeNone)
		return nil, ErrClosed
	}
	if err := h.syncSub(ctx, r); err != nil {
		// The channel stays in the broker's set: it is subscribed when
		// pub/sub is back, and the hub then reconciles.
		h.subLog.Log("hub: subscribe", "room", room, "err", err)
	}
	var claims []wire.Claim
	if !claim.IsZero() {
		claims = []wire.Claim{claim}
	}
	states, err := h.read(ctx, room, []string{visitor}, claims)
	if err != nil {
		c.detach("state unavailable", closeNone)
		return nil, fmt.Errorf("hub: read state: %w", err)
	}
	r.mu.Lock()
	var drops []*Conn
	if v := c.v; !c.removed {
		if v.touched <= seq {
			h.apply(r, v, states[0], seq)
		}
		drops = h.pushLocked(r, v, time.Now())
		drops = append(drops, h.noticeOnAttach(r, c, states[0], page.Message)...)
	}
	r.mu.Unlock()
	h.dropSlow(drops)
	return c, nil
}

// add puts c into the room index, creating room and visitor as needed. It
// returns the room, its event sequence at the time of adding and what the
// visitor's connections claim then.
func (h *Hub) add(name, visitorID string, c *Conn, ticket wire.Ticket) (*room, uint64, wire.Claim, error) {
	for {
		h.mu.RLock()
		r := h.rooms[name]
		h.mu.RUnlock()
		if r == nil {
			h.mu.Lock()
			if r = h.rooms[name]; r == nil {
				r = newRoom(name)
				h.rooms[name] = r
			}
			h.mu.Unlock()
		}
		r.mu.Lock()
		if r.dead { // removed after we looked it up
			r.mu.Unlock()
			continue
		}
		if !h.perVisitor.take(visitorID, h.opts.MaxPerVisitor) {
			r.mu.Unlock()
			return nil, 0, wire.Claim{}, ErrTooManyForVisitor
		}
		v := r.visitors[visitorID]
		if v == nil {
			v = &visitor{id: visitorID}
			r.visitors[visitorID] = v
		}
		if ticket.Room == name && ticket.Newer(v.ticket.in(name)) {
			v.ticket = keepTicket(ticket) // a rejoin after admission took a newer ticket
		}
		v.conns = append(v.conns, c)
		r.nconns++
		c.r, c.v = r, v
		seq, claim := r.seq, v.claim(r.name)
		r.mu.Unlock()
		return r, seq, claim, nil
	}
}

// removeLocked takes c out of the index; it reports whether c was still in
// it. Needs c.r.mu.
func (h *Hub) removeLocked(c *Conn) bool {
	if c.removed {
		return false
	}
	c.removed = true
	r, v := c.r, c.v
	for i, x := range v.conns {
		if x == c {
			v.conns = append(v.conns[:i], v.conns[i+1:]...)
			break
		}
	}
	if len(v.conns) == 0 {
		delete(r.visitors, v.id)
		v.gone = true
		if h.opts.Presence != nil && !h.shutdown.Load() {
			h.pres.gone(r.name, v.id)
		}
	}
	r.nconns--
	h.perVisitor.release(v.id)
	return true
}

// connGone counts a connection out and wakes Drain.
func (h *Hub) connGone() {
	h.nconns.Add(-1)
	select {
	case h.gone <- struct{}{}:
	default:
	}
}

// syncSub makes the broker subscription of r match whether r has
// connections, and forgets r once it is empty and unsubscribed. Calls for
// one room are serialised so SUBSCRIBE and UNSUBSCRIBE never cross.
func (h *Hub) syncSub(ctx context.Context, r *room) error {
	r.subMu.Lock()
	defer r.subMu.Unlock()
	r.mu.Lock()
	want := r.nconns > 0
	r.mu.Unlock()
	switch {
	case want && !r.subscribed:
		r.subscribed = true // in the broker's set even if the call fails
		return h.b.Subscribe(ctx, r.channel)
	case want:
		return nil
	case r.subscribed:
		r.subscribed = false
		if err := h.b.Unsubscribe(ctx, r.channel); err != nil {
			h.log.Warn("hub: unsubscribe", "room", r.name, "err", err)
		}
	}
	h.mu.Lock()
	r.mu.Lock()
	if r.nconns == 0 && !r.dead {
		r.dead = true
		delete(h.rooms, r.name)
	}
	r.mu.Unlock()
	h.mu.Unlock()
	return nil
}

// snapshotRooms returns the current rooms.
func (h *Hub) snapshotRooms() []*room {
	h.mu.RLock()
	defer h.mu.RUnlock()
	rs := make([]*room, 0, len(h.rooms))
	for _, r := range h.rooms {
		rs = append(rs, r)
	}
	return rs
}

// allConns returns every connection in the index.
func (h *Hub) allConns() []*Conn {
	var cs []*Conn
	for _, r := range h.snapshotRooms() {
		r.mu.Lock()
		for _, v := range r.visitors {
			cs = append(cs, v.conns...)
		}
		r.mu.Unlock()
	}
	return cs
}

// receiver adapts the hub to the broker's Receiver without putting those
// methods on Hub.
type receiver struct{ h *Hub }

func (r receiver) Message(channel string, payload []byte) { r.h.handleMessage(channel, payload) }

func (r receiver) Up() {
	r.h.log.Info("hub: pubsub up")
	r.h.recon.all()
}

func (r receiver) Down(err error) {
	r.h.log.Warn("hub: pubsub down", "err", err)
}

// ChannelDown and ChannelUp make the hub a ChannelReceiver: with a sharded
// broker, a room whose channel was lost and is back is reconciled alone.
func (r receiver) ChannelDown(channel string, err error) {
	r.h.log.Warn("hub: room channel down", "channel", channel, "err", err)
}

func (r receiver) ChannelUp(channel string) {
	r.h.log.Info("hub: room channel up", "channel", channel)
	if room := wire.RoomOf(channel); room != "" {
		r.h.recon.room(room)
	}
}
