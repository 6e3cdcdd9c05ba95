package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/cors"
	"github.com/gofiber/fiber/v2/middleware/requestid"

	"github.com/waitroom/waitroom/admin"
	"github.com/waitroom/waitroom/autopilot"
	"github.com/waitroom/waitroom/demo"
	"github.com/waitroom/waitroom/gateway"
	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/instances"
	"github.com/waitroom/waitroom/internal/httperr"
	"github.com/waitroom/waitroom/internal/issuer"
	"github.com/waitroom/waitroom/internal/redisconn"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/metrics"
	"github.com/waitroom/waitroom/opsfiles"
	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/report"
	"github.com/waitroom/waitroom/roomcache"
	"github.com/waitroom/waitroom/schedule"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/static"
	"github.com/waitroom/waitroom/visit"
	"github.com/waitroom/waitroom/webhook"
)

const bodyLimit = 64 << 10

// server is one waitroom instance: the fiber app and what it is wired to.
type server struct {
	cfg       config
	opts      serverOptions
	log       *slog.Logger
	redis     *redisconn.Conn
	q         *queue.Queue
	events    *schedule.Schedule // the rooms' scheduled events (events.go)
	signer    *visitorsig.Signer
	tokens    *issuer.Issuer // entry tokens (entry.go)
	hub       *hub.Hub
	push      *push.Server // WebSocket and SSE
	visit     *visit.API   // the visitor API and the waiting page
	demo      *demo.Demo   // the demo protected endpoint; nil without -demo
	app       *fiber.App
	metrics   *metrics.Metrics
	rooms     *roomcache.Cache
	gw        *gateway.Gateway
	id        string              // this instance, in the instances hash
	instances *instances.Register // the live instances' push figures
	report    *report.Recorder    // the room reports (report.go)

	admin    *admin.API
	ops      *opsfiles.Ops // the rooms file and admin keys in force
	invites  *invite.Minter
	tickets  *push.Tickets // connect tickets (ticket.go)
	draining atomic.Bool

	serviceKeys *issuer.Services    // -service-keys: who may consume tokens, reread on SIGHUP
	hooks       *webhook.Hooks      // webhooks (webhooks.go)
	acts        *activations        // the busy rooms' activation states (activation.go)
	pilot       *autopilot.Pilot    // the rooms' autopilot (autopilot.go)
	apRec       *autopilot.Recorder // the built-in proxy's samples of the origins
}

// newServer connects to Redis and builds the app; nothing runs until run.
// opts may be nil; newServer keeps a copy of it.
func newServer(ctx context.Context, cfg config, opts *serverOptions, log *slog.Logger) (*server, error) {
	secret := []byte(cfg.Secret)
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	signer, err := visitorsig.NewSigner(secret)
	if err != nil {
		return nil, err
	}
	tokens, err := newIssuer(cfg, secret, signer, log)
	if err != nil {
		return nil, err
	}
	rc, err := redisconn.Open(ctx, redisconn.Options{URL: cfg.Redis, Sentinel: cfg.Sentinel, Cluster: cfg.Cluster, Client: cfg.RedisClient}, log)
	if err != nil {
		return nil, err
	}
	if cfg.AdminKey == "" && cfg.AdminKeysFile == "" {
		var k [18]byte
		_, _ = rand.Read(k[:])
		cfg.AdminKey = base64.RawURLEncoding.EncodeToString(k[:])
	}
	var idb [6]byte
	_, _ = rand.Read(idb[:])
	s := &server{
		cfg: cfg, log: log, redis: rc, signer: signer, tokens: tokens,
		id:      fmt.Sprintf("%x", idb),
		invites: invite.NewMinter(secret),
	}
	if opts != nil {
		s.opts = *opts
	}
	s.instances = instances.New(rc, s.id)
	if err := s.build(ctx, secret); err != nil {
		rc.Close()
		return nil, err
	}
	s.app = s.routes()
	return s, nil
}

// build makes the packages the server is wired from, in dependency order;
// the caller closes Redis when it fails.
func (s *server) build(ctx context.Context, secret []byte) error {
	s.metrics = metrics.New(metrics.Build(buildInfo()))
	s.tickets = push.NewTickets(secret, ticketNonces{s})
	s.newReport()
	if err := s.newQueue(); err != nil {
		return err
	}
	if err := s.newHooks(); err != nil {
		return err
	}
	s.newSchedule()
	s.admin = s.newAdmin()
	s.ops = s.newOps()
	s.rooms = roomcache.New(s.q, &roomcache.Options{FailMode: s.cfg.FailMode})
	s.acts = newActivations(s.noteActivation, func(room string) bool {
		cfg, ok := s.rooms.RoomSettings(room)
		return ok && cfg.Activation == settings.ActivationBusy
	})
	s.tokens.SetRooms(s.rooms)
	s.newAutopilot()
	if err := s.ops.Start(ctx); err != nil {
		return err
	}
	if err := s.startEntry(ctx); err != nil {
		return err
	}
	// The queue is the hub's source: it gives visitors Redis lost their
	// places back before their push connections hear of it.
	s.hub = hub.New(s.redis.RoomBroker(s.log), closingQueue{s.q, s.events, s.acts}, s.log, &hub.Options{
		MaxConns: s.cfg.MaxConns, MaxPerVisitor: s.cfg.MaxPerVis, OnDeliver: s.metrics.Delivered,
		Presence: s.q,
		// Push clients are told when Redis stops answering.
		Ping: s.redis.Ping,
	})
	po := s.opts.Push
	po.Logger, po.WSHeartbeat, po.Origins = s.log, s.cfg.WSHeartbeat, s.cfg.Origins
	po.OnWSHeartbeat = s.metrics.WSHeartbeat
	s.push = push.New(s.hub, &po)
	if err := s.newVisit(); err != nil {
		return err
	}
	s.metrics.Watch(metrics.Sources{Hub: s.hub, Rooms: metricsRooms{s.rooms}, Polls: s.visit.Polls(), MaxConns: s.cfg.MaxConns})
	if s.cfg.Demo {
		s.demo = newDemo(s.cfg)
		if err := s.demo.Register(s.metrics.Registry()); err != nil {
			return err
		}
	}
	return s.newGateway(secret)
}

// newQueue makes the queue on the server's Redis.
func (s *server) newQueue() error {
	keep := s.cfg.TokenKeep
	if keep == 0 {
		keep = -1 // the queue's "none"; its zero means the default
	}
	q, err := queue.New(s.metrics.Redis(s.redis.Redis()), s.signer, &queue.Options{
		Capacity: s.cfg.Capacity, TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax, Retention: keep, NoJitter: s.cfg.NoJitter, Logger: s.log,
		JoinBatch: s.cfg.JoinBatch,
		OnAdmit:   func(room string, n int) { s.metrics.Admitted(s.rooms.Label(room), n) },
		OnTick:    s.noteTick,
		// Settings Redis lost come back from what this instance last read
		// and the rooms file (s.rooms is set below, before anything runs).
		Settings:   restoreSettings{s},
		OnRestored: s.metrics.Restored,
		Sharded:    s.cfg.Cluster,
		Tokens:     s.tokens,
	})
	if err != nil {
		return err
	}
	s.q = q
	return nil
}

func (s *server) routes() *fiber.App {
	app := fiber.New(fiber.Config{
		AppName:               "waitroom",
		BodyLimit:             bodyLimit,
		ErrorHandler:          httperr.Handler(s.log),
		DisableStartupMessage: true,
		ReadTimeout:           cmp.Or(s.opts.ReadTimeout, 10*time.Second),
		WriteTimeout:          10 * time.Second,
		IdleTimeout:           cmp.Or(s.opts.IdleTimeout, 60*time.Second),
		ReadBufferSize:        8192,
		// Frees a connection's read buffer while it is idle and, for a
		// hijacked push connection, for good: most of a push connection's
		// idle cost would otherwise be that buffer.
		ReduceMemoryUsage: true,
	})
	// With fasthttp's default, Close on a hijacked connection does nothing
	// until the handler returns, so the hub could not end a stream. Keeping
	// hijacked connections makes Close real; serveWS and serveSSE close
	// theirs when they return.
	app.Server().KeepHijackedConns = true
	app.Server().ConnState = firstByteDeadline(app.Server().ReadTimeout)
	app.Server().Handler = httperr.KnownMethods(app.Server().Handler)
	app.Server().Handler = s.gw.Front(app.Server().Handler)
	app.Use(s.recoverer, requestid.New(), s.metrics.AccessLog(s.log))

	api := app.Group("/api/v1")
	if len(s.cfg.Origins) > 0 {
		// Pages of these origins include waitroom.js and call the API with
		// the visitor's cookie.
		api.Use(cors.New(cors.Config{
			AllowOrigins:     strings.Join(s.cfg.Origins, ","),
			AllowCredentials: true,
			AllowHeaders:     "Authorization, Content-Type, X-Visitor",
			// Date lets the client correct a clock that is off (a token's
			// notBefore is the server's time).
			ExposeHeaders: "Retry-After, Date",
			MaxAge:        600,
		}))
	}
	s.visit.Mount(app)
	rooms := api.Group("/rooms/:room")
	if s.demo != nil {
		s.demo.Mount(app, s.visit.RequireToken, tokenHolder)
	}
	api.Get("/openapi.json", static.Handler("openapi.json", fiber.MIMEApplicationJSONCharsetUTF8))
	api.All("/check", s.gw.Check)
	api.All("/check-end", s.gw.CheckEnd)
	api.All("/check/*", s.gw.Check) // Envoy: the original path follows the prefix
	rooms.Get("/enter", s.gw.Enter)
	rooms.Delete("/session", s.gw.EndOwnSession)
	rooms.Post("/session", s.gw.SessionCheck)
	rooms.Post("/health", s.health)

	s.admin.Mount(api)

	app.Get("/.well-known/jwks.json", s.jwks)
	app.Get("/healthz", s.healthz)
	app.Get("/readyz", s.readyz)
	app.Get("/metrics", s.metricsGate, adaptor.HTTPHandler(s.metrics.Handler()))
	app.Get("/admin", adminHeaders, static.Handler("admin.html", fiber.MIMETextHTMLCharsetUTF8))
	s.admin.MountPreview(app)
	app.Get("/admin/report", adminHeaders, static.Handler("report.html", fiber.MIMETextHTMLCharsetUTF8))
	return app
}

// recoverer turns a panic in a handler into a 500 JSON error.
func (s *server) recoverer(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in handler", "path", c.Path(), "panic", fmt.Sprint(r))
			err = httperr.New(500, "internal", "internal error")
		}
	}()
	return c.Next()
}

// run serves on ln, and the operations listeners on theirs, until ctx
// ends, then shuts down in order: stop being ready, drain push connections
// with a spread-out reconnect hint, stop accepting, close the operations
// listeners (so probes see the drain), stop ticks, close Redis.
func (s *server) run(ctx context.Context, ln net.Listener, ops ...opsListener) error {
	bg, stopBG := context.WithCancel(context.Background())
	var bgWG sync.WaitGroup
	start := func(name string, f func(context.Context) error) {
		bgWG.Go(func() {
			if err := f(bg); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Error("background task stopped", "task", name, "err", err)
			}
		})
	}
	s.push.Start()
	start("hub", s.hub.Run)
	start("polls", s.visit.Run)
	start("housekeeping", func(ctx context.Context) error { return s.housekeeping(ctx, 2*time.Second) })
	start("gateway", s.gw.Run)
	start("webhooks", s.hooks.Run)
	start("reports", s.report.Run)
	hup := notifyHangup()
	start("reload", func(ctx context.Context) error { return s.reloadOnHangup(ctx, hup) })
	if !s.opts.NoTick {
		start("admission", s.q.Run)
	}
	start("schedule", s.events.Run)
	start("autopilot", s.pilot.Run)
	start("autopilot-samples", s.apRec.Run)

	serveErr := make(chan error, 1+len(ops))
	go func() { serveErr <- s.app.Listener(ln) }()
	opsCtx, stopOps := context.WithCancel(context.Background())
	defer stopOps()
	var opsWG sync.WaitGroup
	for _, o := range ops {
		opsWG.Go(func() {
			if err := serveOps(opsCtx, o.ln, o.handler); err != nil {
				serveErr <- fmt.Errorf("%s: %w", o.name, err)
			}
		})
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	s.log.Info("shutting down")
	s.draining.Store(true)
	deadline := time.Now().Add(s.cfg.Shutdown)
	dctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if derr := s.hub.Drain(dctx, s.cfg.DrainWindow); derr != nil {
		s.log.Warn("drain", "err", derr)
	}
	if serr := s.app.ShutdownWithContext(dctx); serr != nil {
		s.log.Warn("http shutdown", "err", serr)
	}
	stopOps()
	opsWG.Wait()
	s.gw.Close()
	stopBG()
	bgWG.Wait()
	// Ends whatever push connection is still waiting after the deadline.
	s.push.Shutdown(dctx)
	s.unpublishEntryKeys(dctx)
	s.redis.Close()
	s.log.Info("stopped", "after", time.Since(deadline.Add(-s.cfg.Shutdown)))
	return err
}
