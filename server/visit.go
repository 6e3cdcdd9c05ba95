package main

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/visit"
)

// newVisit builds the visitor API (s.visit) from the server's parts.
func (s *server) newVisit() error {
	var err error
	s.visit, err = visit.New(visit.Deps{
		Queue: closingQueue{s.q, s.events, s.acts}, Tokens: s.q, Records: s.q,
		Rooms:    visitRooms{gatewayRooms{rc: s.rooms, open: s.cfg.OpenRooms}},
		Visitors: s.signer, EntryTokens: s.tokens, ServiceKeys: s.serviceKeys, Challenges: s.signer,
		Invites: s.invites, Recovery: closingQueue{s.q, s.events, s.acts}, Push: s.push, Tickets: s.tickets,
		Proxies: s.cfg.TrustedProxies, Metrics: s.metrics,
		Draining: s.draining.Load, Report: s.report,
	}, &visit.Options{
		JoinRate: s.cfg.JoinRate, JoinBurst: s.cfg.JoinBurst,
		PageDir: s.cfg.PageDir, PageHeaders: pageHeaders(s.cfg.FrameAncestors, s.cfg.PageDir != ""),
		NoWS: s.cfg.NoWS, NoSSE: s.cfg.NoSSE, Orders: s.cfg.Demo, Logger: s.log,
	})
	return err
}

// visitRooms is the room settings in memory, as the visitor API sees them.
type visitRooms struct{ gatewayRooms }

func (a visitRooms) Version(room string) int64 { return a.rc.Version(room) }
func (a visitRooms) Reload(ctx context.Context, room string) error {
	return a.rc.Reload(ctx, room)
}
func (a visitRooms) JoinLimit(room string) (float64, int) { return a.rc.JoinLimit(room) }
func (a visitRooms) PowBits(room string) int              { return a.rc.PowBits(room) }
func (a visitRooms) Settings(room string) (settings.Room, bool) {
	return a.rc.RoomSettings(room)
}

// ticketNonces remembers used connect tickets in Redis, under the room's
// hash tag, so every instance refuses a ticket used at another.
type ticketNonces struct{ s *server }

func (n ticketNonces) Claim(ctx context.Context, room, nonce string, ttl time.Duration) (bool, error) {
	key := "wr:{" + room + "}:ct:" + nonce
	v, err := n.s.redis.Do(ctx, "SET", key, "1", "NX", "PX", strconv.FormatInt(max(ttl.Milliseconds(), 1), 10))
	if err != nil {
		return false, err
	}
	return v != nil, nil
}
