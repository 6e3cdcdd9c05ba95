package main

import (
	"context"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/visit"
)

// newVisit builds the visitor API (s.visit) from the server's parts.
func (s *server) newVisit() error {
	var err error
	s.visit, err = visit.New(visit.Deps{
		Queue: s.q, Tokens: s.q, Records: s.q,
		Rooms:    visitRooms{gatewayRooms{rc: s.rooms, open: s.cfg.OpenRooms}},
		Visitors: s.signer, EntryTokens: entryParser{s}, ServiceKeys: serviceKeySet{s}, Challenges: s.signer,
		Invites: s.invites, Recovery: s.q, Push: s.push, Tickets: s.tickets,
		Proxies: s.cfg.TrustedProxies, Metrics: s.metrics,
		Draining: s.draining.Load,
	}, &visit.Options{
		JoinRate: s.cfg.JoinRate, JoinBurst: s.cfg.JoinBurst,
		PageDir: s.cfg.PageDir, PageHeaders: pageHeaders(s.cfg.FrameAncestors, s.cfg.PageDir != ""),
		NoWS: s.cfg.NoWS, NoSSE: s.cfg.NoSSE, Logger: s.log,
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
