package visit

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/limit"
	"github.com/waitroom/waitroom/static"
)

// Options tune the visitor API; the zero value (or nil) means defaults.
type Options struct {
	// JoinRate and JoinBurst limit the joins that create a visitor, per
	// client address, in rooms without a limit of their own; 0: no limit.
	JoinRate  float64
	JoinBurst int
	// PageDir, when set, holds an operator's own waiting page files,
	// served instead of the embedded ones (the dashboard's excepted).
	PageDir string
	// PageHeaders runs before the waiting page is served (its security
	// headers); nil: none.
	PageHeaders fiber.Handler
	// NoWS and NoSSE turn a push transport off (503 transport_disabled).
	NoWS, NoSSE bool
	// Orders tells the waiting page that the demo protected endpoint
	// (package demo) is mounted, so it offers an admitted visitor the
	// demo order; false: it shows the admission and its hold time only.
	Orders bool
	// PollCacheSize bounds the poll answers held in memory (default 1<<20).
	PollCacheSize int
	// SweepEvery is how often Run drops poll answers that are due
	// (default 2s).
	SweepEvery time.Duration
	// LogReaders bounds the lottery log pages read from the store at once
	// (default 4).
	LogReaders int
	Logger     *slog.Logger // default: discard
}

// API is the visitor-facing HTTP API: join, the status poll and its
// memory, leave, the push entry points, entry tokens (the protected
// prefix, touch, verify), proof of work, invites as a gate of the join,
// the public draw and lottery records, and the waiting page with its
// languages and branding. Its handlers are safe for concurrent use; Run
// keeps its poll memory.
type API struct {
	d       Deps
	log     *slog.Logger
	metrics Metrics

	openJoins   *limit.Table // -join-rate; nil: none
	roomJoins   *limit.Table // rooms with a join rate of their own
	pageDir     string
	pageHeaders fiber.Handler
	noWS, noSSE bool
	orders      bool
	sweepEvery  time.Duration

	polls      *PollCache
	uses       *tokenUses
	logReaders chan struct{}
	langs      *languages
	deadlines  sharedDeadline
}

// New builds the visitor API from deps. It fails only when the embedded
// translations of the waiting page do not load. opts is not retained.
func New(deps Deps, opts *Options) (*API, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	langs, err := loadLanguages()
	if err != nil {
		return nil, err
	}
	a := &API{
		d: deps, log: o.Logger, metrics: deps.Metrics,
		openJoins: limit.NewTable(o.JoinRate, o.JoinBurst, joinTableSize),
		roomJoins: limit.NewTable(1, 1, joinTableSize),
		pageDir:   o.PageDir, pageHeaders: o.PageHeaders, noWS: o.NoWS, noSSE: o.NoSSE, orders: o.Orders,
		sweepEvery: cmpOr(o.SweepEvery, 2*time.Second),
		polls:      NewPollCache(cmpOr(o.PollCacheSize, 1<<20)),
		uses:       newTokenUses(),
		logReaders: make(chan struct{}, cmpOr(o.LogReaders, lotteryLogReaders)),
		langs:      langs,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.metrics == nil {
		a.metrics = noMetrics{}
	}
	if a.d.Draining == nil {
		a.d.Draining = func() bool { return false }
	}
	return a, nil
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

type noMetrics struct{}

func (noMetrics) StoreError()     {}
func (noMetrics) Poll(bool)       {}
func (noMetrics) FailOpen(string) {}

// Polls is the memory of poll answers (for the metrics and for tests that
// make a visitor's next poll go to the store).
func (a *API) Polls() *PollCache { return a.polls }

// Run drops poll answers that are due, every Options.SweepEvery, until
// ctx ends; it returns nil then.
func (a *API) Run(ctx context.Context) error { return a.polls.Run(ctx, a.sweepEvery) }

// Mount registers the visitor API's routes on app: under
// /api/v1/rooms/:room, /api/v1/tokens/verify and /consume, and the waiting page with
// its script and assets at /, /waitroom.js and /assets/:name. The
// protected prefix is the caller's to mount, behind RequireToken.
// Middleware app already has for those paths runs first.
func (a *API) Mount(app fiber.Router) {
	api := app.Group("/api/v1")
	rooms := api.Group("/rooms/:room")
	rooms.Post("/join", a.countJoins, a.limitJoins(), a.join)
	rooms.Get("/status", a.status)
	rooms.Get("/challenge", a.challenge)
	rooms.Delete("/queue", a.leave)
	rooms.Get("/ws", a.ws)
	rooms.Get("/sse", a.sse)
	rooms.Post("/ticket", a.ticket)
	rooms.Get("/draw", a.draw)
	rooms.Get("/lottery", a.lottery)
	rooms.Get("/lottery/log", a.lotteryLog)
	rooms.Get("/branding", a.getBranding)
	rooms.Post("/touch", a.touch)
	api.Post("/tokens/verify", a.verify)
	api.Post("/tokens/consume", a.consume)

	if a.pageHeaders != nil {
		app.Get("/", a.pageHeaders, a.page)
	} else {
		app.Get("/", a.page)
	}
	app.Get("/waitroom.js", static.Handler("waitroom.js", "text/javascript; charset=utf-8"))
	app.Get("/assets/:name", a.asset)
}
