// Package queue is a room's fair queue in Redis: join, status, leave, the
// leaderless admission tick and token consumption, each one atomic Lua
// script using Redis TIME as the only clock; plus capacity maths and the
// signing of visitor credentials and entry tokens. A Queue is also the
// push hub's source of exact state (see Queue.States), which only reads;
// giving a visitor Redis lost its place or admission back is a write of
// its own (see Queue.Reclaim), and the Queue remembers what to write back
// after such a loss (see Retake).
package queue

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/lograte"
	"github.com/waitroom/waitroom/internal/visitorsig"
	"github.com/waitroom/waitroom/wire"
)

// Options configure a Queue. The zero value of a field means its default.
type Options struct {
	Capacity  Capacity
	TokenTTL  time.Duration            // idle lifetime of an entry token, extended by use; default 300s
	TokenMax  time.Duration            // absolute cap of a token's lifetime; default 3 × TokenTTL
	Retention time.Duration            // how long a token record outlives its cap, so a returning visitor reads "expired"; default 5m, negative: not at all
	MaxActive int                      // live tokens per room; 0 = unlimited
	NoJitter  bool                     // admit a whole batch at the start of the window (to measure what jitter buys)
	OnAdmit   func(room string, n int) // called by the tick loop after it admitted n visitors
	Logger    *slog.Logger
	// OnTick is called by the tick loop after each tick of a room it took,
	// with what the tick did; it must not block.
	OnTick func(room string, r Result)
	// Settings is where a room's settings come from when Redis lost them
	// (nil: they are not put back).
	Settings SettingsSource
	// OnRestored is called after state Redis had lost was put back.
	OnRestored func(Restored)
	// Tokens signs the entry tokens of admitted states (nil: the visitorsig.Signer's
	// own HMAC format, SignToken).
	Tokens TokenSigner
	// Sharded publishes room events with SPUBLISH (Redis Cluster's sharded
	// pub/sub: the event stays on the node of the room's slot) instead of
	// PUBLISH. Subscribers must use SSUBSCRIBE then.
	Sharded bool
	// JoinBatch is the most joins of a room without an invite code (or
	// status reads of a room) that one Redis call takes together when they
	// arrive at once (coalesce.go); 0 is DefaultJoinBatch, and 1 or less
	// than 0 makes each a call of its own.
	JoinBatch int
}

// TokenSigner encodes an admitted visitor's entry token. Safe for
// concurrent use.
type TokenSigner interface {
	SignToken(visitorsig.Token) string
}

// Queue runs the queue operations of every room against one Redis.
// Safe for concurrent use.
type Queue struct {
	r      Redis
	signer *visitorsig.Signer
	opts   Options
	log    *slog.Logger
	rooms  sync.Map // room -> *roomMem: all this instance holds of the room

	configured  roomList       // the tick loop's copy of the configured rooms
	recovery    recoverer      // notices a Redis loss and puts back what this instance remembers
	sweptAt     time.Time      // owned by the tick loop: the last look at rooms holding only tokens
	writingBack atomic.Bool    // a background write-back is under way
	wake        chan struct{}  // cap 1: a room may need ticks now (see poke)
	quiet       time.Duration  // quietEvery; longer in tests
	bg          sync.WaitGroup // background write-backs and slow admit calls, waited for by Run
	batches     *joinBatches   // coalesced joins; nil when each join is a call of its own

	// tickLog writes the tick loop's failing Redis calls as one outage,
	// not a line per call: while Redis is down, every tick fails several.
	tickLog *lograte.Outage
}

// DefaultRetention is how long a token record outlives its cap by default:
// long enough for a visitor who comes back to the page to read "expired"
// rather than "not in queue", and no longer than the default token cap, so
// Redis holds records of visitors who recently were, not of all ever seen.
const DefaultRetention = 5 * time.Minute

// New returns a Queue. opts is copied.
func New(r Redis, signer *visitorsig.Signer, opts *Options) (*Queue, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Capacity == (Capacity{}) {
		o.Capacity = Capacity{DBPool: 40, ServiceTime: 200 * time.Millisecond, Safety: 0.7, Tick: 100 * time.Millisecond}
	}
	if err := o.Capacity.Validate(); err != nil {
		return nil, err
	}
	if o.TokenTTL == 0 {
		o.TokenTTL = 300 * time.Second
	}
	if o.TokenTTL < time.Second {
		return nil, errors.New("token-ttl must be at least 1s")
	}
	if o.TokenMax == 0 {
		o.TokenMax = 3 * o.TokenTTL
	}
	if o.TokenMax < o.TokenTTL {
		return nil, errors.New("token-max must be at least token-ttl")
	}
	switch {
	case o.Retention == 0:
		o.Retention = DefaultRetention
	case o.Retention < 0:
		o.Retention = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tokens == nil {
		o.Tokens = signer
	}
	if o.JoinBatch == 0 {
		o.JoinBatch = DefaultJoinBatch
	}
	if o.JoinBatch > MaxJoinBatch {
		return nil, errors.New("join-batch must be at most " + strconv.Itoa(MaxJoinBatch))
	}
	q := &Queue{r: r, signer: signer, opts: o, log: o.Logger, wake: make(chan struct{}, 1), quiet: quietEvery}
	q.tickLog = lograte.NewOutage(o.Logger, "tick", nil)
	if o.JoinBatch > 1 {
		q.batches = newJoinBatches(o.JoinBatch)
	}
	return q, nil
}

// Capacity returns the queue's capacity settings.
func (q *Queue) Capacity() Capacity { return q.opts.Capacity }

func check(room, visitor string) error {
	if !wire.ValidRoom(room) {
		return wire.ErrInvalidRoom
	}
	if !wire.ValidVisitor(visitor) {
		return visitorsig.ErrInvalidToken
	}
	return nil
}

func seed() string { return strconv.FormatInt(1+rand.Int64N(2147483646), 10) }
