package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/wire"
)

// ErrSessionOver is what Store.Touch wraps when the store says a session's
// entry token is over (expired, unknown, past its cap, or not valid yet):
// a verdict on the session, not a failure to reach the store.
var ErrSessionOver = errors.New("session over")

// ErrJoinElsewhere is what Store.Join wraps when the visitor must join
// through the API instead.
var ErrJoinElsewhere = errors.New("join through the API")

// Store is what the gateway needs of the queue. Each call is bounded by
// the ctx it gets (the gateway gives every call its own timeout).
type Store interface {
	// Touch slides the idle expiry of sess's entry token and returns the
	// new expiry. An error wrapping ErrSessionOver means the session is
	// over; any other error, that the store could not be asked.
	Touch(ctx context.Context, sess Session) (time.Time, error)
	// Status is the visitor's state in room (wire.StatusNotInQueue when
	// the room does not know it).
	Status(ctx context.Context, room, visitor string) (wire.State, error)
	// Session is the admitted visitor's entry token: its notBefore and
	// idle expiry; ok is false when it holds none.
	Session(ctx context.Context, room, visitor string) (notBefore, expiresAt time.Time, ok bool, err error)
	// Pass lets visitor into room on the spot when the room allows it
	// (activation busy, nobody waiting, under its threshold), or gives
	// back the entry token the visitor holds already, in any room: its
	// notBefore (maybe ahead: admitted by a tick, not valid yet) and idle
	// expiry. ok is false when the visitor is to queue.
	Pass(ctx context.Context, room, visitor string) (notBefore, expiresAt time.Time, ok bool, err error)
	// Join is the join of an API client refused a protected address
	// (its credential cred, "" for none): the same join as the API's,
	// with the same gates, from client's address. It returns the
	// visitor's state and the credential to hand back, or an error
	// wrapping ErrJoinElsewhere when the visitor must join through the
	// API (a proof of work, an invite code, the join rate).
	Join(ctx context.Context, room, cred string, client netip.Addr) (wire.State, string, error)
	// EndSession ends sess everywhere (tells every instance, frees its
	// slot and seat); fallback bounds the revocation when the token's own
	// cap is unknown.
	EndSession(ctx context.Context, sess Session, fallback time.Time) error
	// Degraded reports whether the server's own watch finds the store
	// unreachable.
	Degraded() bool
}

// Rooms is what the gateway needs of the room settings, from memory: it
// is asked on every protected request.
type Rooms interface {
	// IdleTTL is room's own idle session lifetime, 0 when it has none.
	IdleTTL(room string) time.Duration
	// FailClosed reports whether room refuses visitors while the store
	// is unreachable (else it admits them at its fail-open rate).
	FailClosed(room string) bool
	// Busy reports whether room's activation is busy: a visitor without a
	// session may be let in on the spot (Store.Pass).
	Busy(room string) bool
	// AllowFailOpen takes one admission from room's fail-open rate.
	AllowFailOpen(room string) bool
	// Exists reports whether room exists, answered from memory for a room
	// that does. An error (the store unreachable) is not an answer: the
	// room's fail mode decides then.
	Exists(ctx context.Context, room string) (bool, error)
}

// Visitors reads visitor credentials.
type Visitors interface {
	// ParseVisitor returns the visitor id of a credential this
	// deployment issued, or an error.
	ParseVisitor(cred string) (string, error)
	// NewVisitor issues a fresh visitor id and its credential, for a
	// visitor let in on the spot without one.
	NewVisitor() (id, credential string)
}

// EdgeSigner signs edge sessions (see SessionCheck): a session an edge
// checks with the public keys alone.
type EdgeSigner interface {
	// SignEdgeSession signs sess for the edge, bound to the visitor's
	// credential, valid until until.
	SignEdgeSession(sess Session, credential string, until time.Time) (string, error)
}

// Proxies is the set of peers trusted to state another request (the
// -trusted-proxies setting).
type Proxies interface {
	// Contains reports whether peer is trusted.
	Contains(peer netip.Addr) bool
	// Client is the client behind a request from peer with the given
	// X-Forwarded-For: the peer itself unless it is trusted.
	Client(peer netip.Addr, forwardedFor string) netip.Addr
}

// API is what the gateway's own endpoints under /api/v1/rooms/{room} need
// of the server's API, so that they answer like the rest of it.
type API interface {
	// Room is the validated :room parameter, or its JSON error.
	Room(c *fiber.Ctx) (string, error)
	// Visitor is the request's verified visitor id, or its JSON error.
	Visitor(c *fiber.Ctx) (string, error)
	// StoreError turns a store failure into the API's JSON error.
	StoreError(c *fiber.Ctx, err error) error
}

// Feed is the pub/sub subscription revocations come on (a hub.Broker).
type Feed interface {
	// Run delivers to r until ctx ends, calling r.Down on a lost
	// connection and r.Up once subscribed again; nil when ctx ends.
	Run(ctx context.Context, r hub.Receiver) error
	// Subscribe adds channel to the subscription.
	Subscribe(ctx context.Context, channel string) error
}

// Metrics counts what the gateway decides; nil counts nothing.
type Metrics interface {
	// StoreError counts a store call of a request that failed.
	StoreError()
	// FailOpenAdmitted counts a request passed without the store.
	FailOpenAdmitted()
}

// Deps are the gateway's collaborators. Routes, Signer, Store, Rooms,
// Visitors, Proxies and API are required; Metrics and Broker may be nil.
type Deps struct {
	Routes   *Config // nil or without routes: every request passes
	Signer   *Signer // signs the session cookies
	Store    Store
	Rooms    Rooms
	Visitors Visitors
	Proxies  Proxies
	API      API
	Metrics  Metrics
	// Edge, when set, signs the edge sessions that Enter and SessionCheck
	// hand out beside the session cookie; nil hands out none.
	Edge EdgeSigner
	// Broker carries the revocations other instances publish on
	// RevokedChannel ("key untilUnixMillis"); nil without routes. Only
	// with a Broker does a store outage switch rooms to their fail mode.
	Broker         Feed
	RevokedChannel string
}

// Options tune a Gateway; the zero value (or nil) means defaults.
type Options struct {
	// Page is the waiting page's path prefix on the protected host
	// (default /waitroom/).
	Page string
	// TokenTTL is the idle session lifetime of a room without its own
	// (default 5m); TokenMax the absolute cap of a session (default 15m).
	TokenTTL, TokenMax time.Duration
	// Upstream, when set (http(s)://host:port), is the app the built-in
	// proxy forwards to.
	Upstream string
	// VisitorCookie is the visitor credential's cookie (default
	// wr_visitor).
	VisitorCookie string
	// CacheSize bounds the revocations and slide marks held, each kind
	// (default 1<<18).
	CacheSize int
	// Health, when set, is told of every request the built-in proxy
	// passes to the upstream on a guarded route: the room (from the
	// route, never from a request header), the time to the upstream's
	// answer and whether it succeeded (a status below 500; no answer,
	// refused or timed out, is a failure).
	Health func(room string, latency time.Duration, ok bool)
	Logger *slog.Logger // default: discard
}

// maxSlideEvery caps the interval between two slides of a session, so a
// room with a long idle TTL still sees its sessions in use.
const maxSlideEvery = 30 * time.Second

// storeTimeout bounds each store call a request makes.
const storeTimeout = 2 * time.Second

// Gateway puts rooms in front of an unchanged app: the forward-auth check
// (Check, CheckEnd), the session cookie (Enter, EndOwnSession) and, with
// Options.Upstream, the built-in proxy (Front). Its methods are safe for
// concurrent use; Run keeps its revocation feed.
type Gateway struct {
	routes   *Config
	sessions *Signer
	cache    *Cache
	store    Store
	rooms    Rooms
	missing  missingRooms // routes whose room is gone, for the warning
	visitors Visitors
	proxies  Proxies
	api      API
	metrics  Metrics
	edge     EdgeSigner
	health   func(room string, latency time.Duration, ok bool)
	broker   Feed
	channel  string
	log      *slog.Logger

	page               string
	tokenTTL, tokenMax time.Duration
	visitorCookie      string
	// down is set while the revocation feed has lost the store (not
	// before its first connection: a starting instance is not in an
	// outage).
	down  atomic.Bool
	proxy *upstreamProxy // nil without Options.Upstream

	// The refusals each request may earn, logged once in a while with
	// how many were left out: a client or a gateway misconfigured sends
	// them all day.
	hostLog, pathLog, checkLog *lograte.Repeats
}

// New builds a gateway from deps. It fails only on an invalid
// Options.Upstream. opts is not retained.
func New(deps Deps, opts *Options) (*Gateway, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	routes := deps.Routes
	if routes == nil {
		routes = &Config{}
	}
	g := &Gateway{
		routes: routes, sessions: deps.Signer, cache: NewCache(cmpOr(o.CacheSize, 1<<18)),
		store: deps.Store, rooms: deps.Rooms, visitors: deps.Visitors, proxies: deps.Proxies,
		api: deps.API, metrics: deps.Metrics, edge: deps.Edge, broker: deps.Broker, channel: deps.RevokedChannel,
		log: o.Logger, health: o.Health,
		page: cmpOr(o.Page, "/waitroom/"), tokenTTL: cmpOr(o.TokenTTL, 300*time.Second),
		tokenMax: cmpOr(o.TokenMax, 900*time.Second), visitorCookie: cmpOr(o.VisitorCookie, "wr_visitor"),
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.hostLog = lograte.NewRepeats(g.log, slog.LevelInfo, nil)
	g.pathLog = lograte.NewRepeats(g.log, slog.LevelInfo, nil)
	g.checkLog = lograte.NewRepeats(g.log, slog.LevelWarn, nil)
	if g.metrics == nil {
		g.metrics = noMetrics{}
	}
	if o.Upstream != "" {
		p, err := newUpstreamProxy(o.Upstream)
		if err != nil {
			return nil, err
		}
		g.proxy = p
	}
	return g, nil
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

type noMetrics struct{}

func (noMetrics) StoreError()       {}
func (noMetrics) FailOpenAdmitted() {}

// Page is the waiting page's path prefix.
func (g *Gateway) Page() string { return g.page }

// Sessions is the signer of the session cookies.
func (g *Gateway) Sessions() *Signer { return g.sessions }

// Down reports whether the revocation feed has lost the store.
func (g *Gateway) Down() bool { return g.down.Load() }

// Run keeps the revocation subscription and prunes the cache until ctx
// ends; it returns the broker's error (nil without a broker, at once).
func (g *Gateway) Run(ctx context.Context) error {
	if g.broker == nil {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- g.broker.Run(ctx, revocations{g}) }()
	subscribed := make(chan struct{})
	go func() {
		defer close(subscribed)
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := g.broker.Subscribe(sctx, g.channel); err != nil && ctx.Err() == nil {
			g.log.Warn("gateway: revocation subscribe", "err", err)
		}
	}()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			<-subscribed
			return <-done
		case now := <-t.C:
			g.cache.Prune(now, maxSlideEvery)
		}
	}
}

// Close ends the built-in proxy's WebSocket tunnels and idle upstream
// connections (at shutdown, once the server stopped taking requests).
func (g *Gateway) Close() {
	if g.proxy != nil {
		g.proxy.closeTunnels()
	}
}

// revocations feeds the cache from pub/sub: "key untilUnixMillis".
type revocations struct{ g *Gateway }

func (r revocations) Message(_ string, payload []byte) {
	key, until, ok := strings.Cut(string(payload), " ")
	ms, err := strconv.ParseInt(until, 10, 64)
	if !ok || err != nil {
		return
	}
	r.g.cache.Revoke(key, time.UnixMilli(ms))
}
func (r revocations) Up()        { r.g.down.Store(false) }
func (r revocations) Down(error) { r.g.down.Store(true) }
