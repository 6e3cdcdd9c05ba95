package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/autopilot"
	"github.com/waitroom/waitroom/gateway"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/roomcache"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/visit"
	"github.com/waitroom/waitroom/wire"
)

// newGateway loads the routes and builds the gateway mode (s.gw). secret
// signs session cookies.
func (s *server) newGateway(secret []byte) error {
	cfg, err := s.loadRoutes()
	if err != nil {
		return err
	}
	deps := gateway.Deps{
		Routes: cfg, Signer: gateway.NewSigner(secret),
		Store: gatewayStore{s}, Rooms: gatewayRooms{rc: s.rooms, open: s.cfg.OpenRooms}, Visitors: s.signer,
		Proxies: s.cfg.TrustedProxies, API: gatewayAPI{s}, Metrics: s.metrics, Edge: edgeSigner{s},
		RevokedChannel: queue.RevokedChannel,
	}
	if len(cfg.Routes) > 0 {
		deps.Broker = s.redis.Broker(s.log)
	}
	s.gw, err = gateway.New(deps, &gateway.Options{
		Page: s.cfg.GatewayPage, TokenTTL: s.cfg.TokenTTL, TokenMax: s.cfg.TokenMax,
		Upstream: s.cfg.Upstream, VisitorCookie: visitorCookie, Logger: s.log,
		// Only rooms with autopilot on: the others work as without it,
		// with no write of their own.
		Health: func(room string, latency time.Duration, ok bool) {
			if cfg, _ := s.rooms.RoomSettings(room); cfg.Autopilot {
				s.apRec.Add(room, autopilot.Sample{Latency: latency, OK: ok})
			}
		},
	})
	return err
}

// loadRoutes reads -routes and -route into one named set.
func (s *server) loadRoutes() (*gateway.Config, error) {
	cfg := &gateway.Config{}
	if s.cfg.RoutesFile != "" {
		data, err := os.ReadFile(s.cfg.RoutesFile)
		if err != nil {
			return nil, err
		}
		if cfg, err = gateway.Parse(s.cfg.RoutesFile, data); err != nil {
			return nil, err
		}
	}
	for _, r := range s.cfg.Routes {
		rt, err := gateway.ParseRoute(r)
		if err != nil {
			return nil, err
		}
		cfg.Routes = append(cfg.Routes, rt)
	}
	if err := cfg.NameCookies(); err != nil {
		return nil, fmt.Errorf("routes: %w", err)
	}
	return cfg, nil
}

// gatewayStore is the queue and the server's Redis watch, as the gateway
// sees them.
type gatewayStore struct{ s *server }

func (a gatewayStore) Touch(ctx context.Context, sess gateway.Session) (time.Time, error) {
	exp, err := a.s.q.Consume(ctx, visitorsig.Token{Room: sess.Room, Visitor: sess.Visitor, NotBefore: sess.NotBefore}, queue.Touch)
	if err != nil && visit.IsTokenError(err) {
		return exp, fmt.Errorf("%w: %w", gateway.ErrSessionOver, err)
	}
	return exp, err
}

func (a gatewayStore) Status(ctx context.Context, room, visitor string) (wire.State, error) {
	return a.s.q.Status(ctx, room, visitor)
}

func (a gatewayStore) Session(ctx context.Context, room, visitor string) (time.Time, time.Time, bool, error) {
	return a.s.q.Session(ctx, room, visitor)
}

func (a gatewayStore) Pass(ctx context.Context, room, visitor string) (time.Time, time.Time, bool, error) {
	p, err := a.s.q.PassBusy(ctx, room, visitor)
	if err != nil || !p.Admitted {
		return time.Time{}, time.Time{}, false, err
	}
	if p.New {
		a.s.metrics.Passed(a.s.rooms.Label(room))
	}
	return p.Token.NotBefore, p.Token.ExpiresAt, true, nil
}

func (a gatewayStore) Join(ctx context.Context, room, cred string, client netip.Addr) (wire.State, string, error) {
	st, got, err := a.s.visit.JoinOnSpot(ctx, room, cred, client)
	if errors.Is(err, visit.ErrJoinElsewhere) {
		return st, got, fmt.Errorf("%w: %w", gateway.ErrJoinElsewhere, err)
	}
	return st, got, err
}

func (a gatewayStore) EndSession(ctx context.Context, sess gateway.Session, fallback time.Time) error {
	ended, err := a.s.q.EndSession(ctx, sess.Room, sess.Visitor, sess.NotBefore, sess.Key(), fallback)
	if ended {
		a.s.report.Ended(sess.Room, sess.NotBefore, time.Now())
	}
	return err
}

func (a gatewayStore) Degraded() bool { return a.s.hub.Degraded() }

// edgeSigner signs edge sessions with the entry tokens' active key, so
// an edge checks them against the JWKS.
type edgeSigner struct{ s *server }

func (e edgeSigner) SignEdgeSession(sess gateway.Session, cred string, until time.Time) (string, error) {
	return e.s.tokens.SignEdgeSession(sess.Room, sess.Visitor, sess.NotBefore, until, cred)
}

// gatewayRooms is the room settings in memory, as the gateway sees them.
type gatewayRooms struct {
	rc   *roomcache.Cache
	open bool // -open-rooms: a join makes a room, so every room may be
}

func (a gatewayRooms) Exists(ctx context.Context, room string) (bool, error) {
	if a.open {
		return true, nil
	}
	return a.rc.Exists(ctx, room)
}

func (a gatewayRooms) IdleTTL(room string) time.Duration { return a.rc.TokenTTL(room) }
func (a gatewayRooms) FailClosed(room string) bool       { return a.rc.FailMode(room) == settings.FailClosed }
func (a gatewayRooms) AllowFailOpen(room string) bool    { return a.rc.Limiter(room).Allow() }

func (a gatewayRooms) Busy(room string) bool {
	cfg, _ := a.rc.RoomSettings(room)
	return cfg.Activation == settings.ActivationBusy
}

// gatewayAPI lets the gateway's endpoints answer like the rest of the API.
type gatewayAPI struct{ s *server }

func (a gatewayAPI) Room(c *fiber.Ctx) (string, error)        { return room(c) }
func (a gatewayAPI) Visitor(c *fiber.Ctx) (string, error)     { return a.s.visit.Visitor(c) }
func (a gatewayAPI) StoreError(c *fiber.Ctx, err error) error { return a.s.storeError(c, err) }
