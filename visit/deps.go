package visit

import (
	"context"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/invite"
	"github.com/waitroom/waitroom/push"
	"github.com/waitroom/waitroom/queue"
	"github.com/waitroom/waitroom/settings"
	"github.com/waitroom/waitroom/wire"
)

// Queue is what the visitor API needs of the queue for a visitor's place.
// Each call is bounded by the ctx it gets (every request gives its calls
// their own timeout).
type Queue interface {
	// JoinAt takes or keeps visitor's place in room, if the room's
	// settings are still at version settings (else queue.ErrSettingsChanged).
	JoinAt(ctx context.Context, room, visitor string, inv queue.Invite, settings int64) (wire.State, wire.Ticket, error)
	// Status is the visitor's state in room.
	Status(ctx context.Context, room, visitor string) (wire.State, error)
	// Leave takes the visitor out of room's queue, or gives its token back.
	Leave(ctx context.Context, room, visitor string) (bool, error)
	// SpendProof marks a solved proof-of-work challenge used
	// (visitorsig.ErrPowUsed when it was).
	SpendProof(ctx context.Context, c visitorsig.Challenge, now time.Time) error
	// RoomConfig reads room's settings from the store.
	RoomConfig(ctx context.Context, room string) (settings.Room, error)
}

// Tokens is what the visitor API needs of the queue for entry tokens.
type Tokens interface {
	// Consume checks t and, by use, spends it or slides its expiry; it
	// returns the token's expiry. Its verdicts on the token are
	// queue.TooEarlyError, queue.ErrTokenExpired and queue.ErrTokenUnknown
	// (see IsTokenError); any other error is a failure to reach the store.
	Consume(ctx context.Context, t visitorsig.Token, use queue.Use) (time.Time, error)
	// Restore gives back a token that Consume spent.
	Restore(ctx context.Context, t visitorsig.Token, expiresAt time.Time) error
}

// Records are the public commit-reveal records of a room's draw and
// lottery; queue.ErrNoDraw when the room has none.
type Records interface {
	Draw(ctx context.Context, room string, offset, limit int) (queue.Draw, error)
	ReadLottery(ctx context.Context, room string) (queue.Lottery, error)
	ReadLotteryLog(ctx context.Context, room string, after int64, limit int) (queue.LotteryLog, error)
}

// Rooms is the room settings in memory. All but Exists and Reload are
// asked on every join and must not block.
type Rooms interface {
	// Exists reports whether room exists (always true for a deployment
	// whose joins create rooms). An error is a failure to reach the store.
	Exists(ctx context.Context, room string) (bool, error)
	// Version is the version of room's settings held in memory.
	Version(room string) int64
	// Reload reads room's settings from the store into memory.
	Reload(ctx context.Context, room string) error
	// JoinLimit is room's own join rate per client address (rate 0: the
	// deployment's applies).
	JoinLimit(room string) (rate float64, burst int)
	// PowBits is the proof of work a new visitor of room needs, 0 for none.
	PowBits(room string) int
	// FailClosed reports whether room refuses protected requests while
	// the store is unreachable (else it admits at its fail-open rate).
	FailClosed(room string) bool
	// AllowFailOpen takes one admission from room's fail-open rate.
	AllowFailOpen(room string) bool
	// Settings is room's settings in memory; ok is false for a room not
	// read yet.
	Settings(room string) (cfg settings.Room, ok bool)
}

// Visitors issues and reads visitor credentials.
type Visitors interface {
	// NewVisitorID makes a visitor id; TicketCredential signs it.
	NewVisitorID() string
	// ParseVisitor returns the visitor id of a credential issued here.
	ParseVisitor(credential string) (string, error)
	// ParseCredential is ParseVisitor, with the ticket the credential
	// carries (zero when none).
	ParseCredential(credential string) (string, wire.Ticket, error)
	// TicketCredential is the credential of id carrying t, or of id
	// alone when t is zero.
	TicketCredential(id string, t wire.Ticket) string
}

// EntryTokens reads the entry tokens this deployment signed. It is the
// one place a raw token becomes a visitorsig.Token.
type EntryTokens interface {
	ParseToken(raw string) (visitorsig.Token, error)
}

// ServiceKeys knows the keys of the protected services.
type ServiceKeys interface {
	// ServiceKey returns the label of key, compared in constant time;
	// ok is false for a key that is not a service key.
	ServiceKey(key string) (label string, ok bool)
}

// Challenges issues and checks proof-of-work challenges.
type Challenges interface {
	NewChallenge(room string, strength int, now time.Time) string
	// CheckProof checks that nonce solves ch, issued for room at no
	// less than want bits and not expired (queue.ErrPow* otherwise).
	CheckProof(ch, nonce, room string, want int, now time.Time) (visitorsig.Challenge, error)
}

// Invites reads invite codes.
type Invites interface {
	// Parse returns the code a signed invite stands for.
	Parse(code string) (invite.Code, error)
}

// Recovery gives visitors back what a store that lost its data forgot
// (queue.Queue implements it).
type Recovery interface {
	// Reclaim gives each visitor of room whose state is not_in_queue what
	// its claim (one per visitor) says it held: the admission of a token
	// still good, else the place of its ticket; states is updated in place.
	Reclaim(ctx context.Context, room string, visitors []string, claims []wire.Claim, states []wire.State) error
}

// Push takes over checked push requests.
type Push interface {
	WS(c *fiber.Ctx, t push.Target) error
	SSE(c *fiber.Ctx, t push.Target) error
}

// ConnectTickets mints and redeems the one-use tickets that stand for a
// visitor credential in a push URL (see push.Tickets).
type ConnectTickets interface {
	Mint(room, visitor string, expires time.Time) string
	// Redeem returns the visitor of raw and uses it up; an *httperr.Error
	// is a refusal, any other error a failure to reach the store.
	Redeem(ctx context.Context, room, raw string) (string, error)
}

// Proxies is the set of peers trusted to speak for a client (the
// -trusted-proxies setting).
type Proxies interface {
	// Contains reports whether peer is trusted.
	Contains(peer netip.Addr) bool
	// Client is the client behind a request from peer with the given
	// X-Forwarded-For: the peer itself unless it is trusted.
	Client(peer netip.Addr, forwardedFor string) netip.Addr
}

// Metrics counts what the visitor API does; nil counts nothing. Its
// methods must not block.
type Metrics interface {
	// StoreError counts a store call of a request that failed.
	StoreError()
	// Poll counts a status poll, answered from memory or from the store.
	Poll(fromMemory bool)
	// FailOpen counts a protected request decided without the store, by
	// outcome: "closed", "used", "limited" or "admitted".
	FailOpen(outcome string)
}

// Deps are the visitor API's collaborators. All are required but Metrics,
// Report and Draining.
type Deps struct {
	Queue       Queue
	Tokens      Tokens
	Records     Records
	Rooms       Rooms
	Visitors    Visitors
	EntryTokens EntryTokens
	// ServiceKeys are the keys of the protected services that may spend
	// tokens (consume); nil: none, every consume is refused.
	ServiceKeys ServiceKeys
	Challenges  Challenges
	Invites     Invites
	Recovery    Recovery
	Push        Push
	Tickets     ConnectTickets
	Proxies     Proxies
	Metrics     Metrics
	// Report counts what visitors do for the room reports; nil: nothing.
	Report Report
	// Draining reports whether the instance is shutting down: push
	// requests are refused then. Nil: never.
	Draining func() bool
}
