package main

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/hub"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/visit"
	"github.com/waitroom/waitroom/wire"
)

// newVisit builds the visitor API (s.visit) from the server's parts.
func (s *server) newVisit() error {
	var err error
	s.visit, err = visit.New(visit.Deps{
		Queue: s.q, Tokens: s.q, Records: s.q,
		Rooms:    visitRooms{gatewayRooms{rc: s.rooms, open: s.cfg.OpenRooms}},
		Visitors: s.signer, EntryTokens: s.signer, Challenges: s.signer,
		Invites: s.invites, Recovery: visitRecovery{s}, Push: s.push, Tickets: s.tickets,
		Proxies: s.cfg.TrustedProxies, Metrics: visitMetrics{s.metrics},
		Draining: s.draining.Load,
	}, &visit.Options{
		JoinRate: s.cfg.JoinRate, JoinBurst: s.cfg.JoinBurst,
		PageDir: s.cfg.PageDir, PageHeaders: pageHeaders(s.cfg.FrameAncestors, s.cfg.PageDir != ""),
		NoWS: s.cfg.NoWS, NoSSE: s.cfg.NoSSE, Orders: s.cfg.Demo, Logger: s.log,
	})
	return err
}

// visitRooms is the room settings in memory, as the visitor API sees them.
type visitRooms struct{ gatewayRooms }

func (a visitRooms) Version(room string) int64 { return a.rc.version(room) }
func (a visitRooms) Reload(ctx context.Context, room string) error {
	return a.rc.reload(ctx, room)
}
func (a visitRooms) JoinLimit(room string) (float64, int) { return a.rc.joinLimit(room) }
func (a visitRooms) PowBits(room string) int              { return a.rc.powBits(room) }
func (a visitRooms) Settings(room string) (queue.RoomConfig, bool) {
	return a.rc.RoomSettings(room)
}

// powBits is the proof of work a new visitor of room needs; 0 for a room
// no operator configured.
func (rc *roomCache) powBits(room string) int {
	rc.mu.RLock()
	defer rc.mu.RUnlock()
	return rc.cfg[room].PowBits
}

// visitRecovery gives visitors back what Redis lost (restore.go).
type visitRecovery struct{ s *server }

func (a visitRecovery) Readmit(ctx context.Context, tok queue.Token) (wire.State, bool) {
	return a.s.readmit(ctx, tok)
}

func (a visitRecovery) Retake(ctx context.Context, room string, visitors []string, tickets []queue.Ticket, states []wire.State) error {
	return a.s.retake(ctx, room, visitors, tickets, states)
}

func (a visitRecovery) Held(room string, t queue.Ticket) hub.Held { return heldTicket(room, t) }

// visitMetrics counts the visitor API's work in the server's metrics.
type visitMetrics struct{ m *metrics }

func (a visitMetrics) StoreError() { a.m.redisErr.Inc() }
func (a visitMetrics) Poll(fromMemory bool) {
	if fromMemory {
		a.m.polls.WithLabelValues("memory").Inc()
	} else {
		a.m.polls.WithLabelValues("redis").Inc()
	}
}
func (a visitMetrics) FailOpen(outcome string) { a.m.failOpen.WithLabelValues(outcome).Inc() }

// ticketNonces remembers used connect tickets in Redis, under the room's
// hash tag, so every instance refuses a ticket used at another.
type ticketNonces struct{ s *server }

func (n ticketNonces) Claim(ctx context.Context, room, nonce string, ttl time.Duration) (bool, error) {
	key := "wr:{" + room + "}:ct:" + nonce
	v, err := n.s.redis.q.Do(ctx, "SET", key, "1", "NX", "PX", strconv.FormatInt(max(ttl.Milliseconds(), 1), 10))
	if err != nil {
		return false, err
	}
	return v != nil, nil
}
