package queue

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// The lottery (method random) is auditable like the pre-queue's draw: when
// a room turns random the queue stores a secret seed (32 random bytes as 64
// hex digits) and its commitment, the SHA-256 of those characters, before
// any tick draws with it. Pick i (0-based, counting every pick of the tick,
// also those set aside as away) of tick t is the visitor at 0-based rank
// LotteryRank(seed, t, i, n) of the n tickets still waiting then, in ticket
// order; a pick leaves the queue before the next. When the room leaves the
// random method the seed may be revealed, and with the ticks' waiting
// lists anyone can recompute every pick.

// LotteryRank is the rank of pick i of tick among n waiting: the first 13
// hex digits (52 bits) of SHA-1(seed + ":" + tick + ":" + i) as a fraction
// of 2^52, times n, rounded down. Every step is exact in float64, as in the
// script that draws.
func LotteryRank(seed string, tick, i, n int64) int64 {
	sum := sha1.Sum([]byte(seed + ":" + strconv.FormatInt(tick, 10) + ":" + strconv.FormatInt(i, 10)))
	x, _ := strconv.ParseUint(hex.EncodeToString(sum[:])[:13], 16, 64)
	return int64(float64(x) / 4503599627370496 * float64(n))
}

// newLotterySeed is a lottery seed: 256 bits from crypto/rand as 64 hex
// digits. Every admit call carries a fresh one (with its commitment) for
// a random room whose seed Redis lost, so that the lottery goes on with
// a committed secret seed, never one a reader of the log could search
// for.
func newLotterySeed() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lottery seed: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Lottery is a room's lottery seed record.
type Lottery struct {
	Commitment  string    // hex SHA-256 of the seed
	CommittedAt time.Time // when the seed was picked
	Ended       bool      // the room left the random method: the seed may be shown
	EndedAt     time.Time
	Seed        string // only once ended
}

// lottery runs the lottery script's op for room and returns the record
// (seed "" when there is none).
func (q *Queue) lottery(ctx context.Context, room, op string) (Lottery, error) {
	seed := ""
	if op == "commit" {
		var err error
		if seed, err = newLotterySeed(); err != nil {
			return Lottery{}, err
		}
	}
	v, err := q.r.Eval(ctx, lotteryScript.Script, roomKeys(room), prefix(room), op, seed, Commitment(seed))
	if err != nil {
		return Lottery{}, fmt.Errorf("queue: lottery: %w", err)
	}
	r, err := decodeLottery(v)
	if err != nil {
		return Lottery{}, fmt.Errorf("queue: lottery: %w", err)
	}
	l := Lottery{Commitment: r.Commitment, CommittedAt: r.CommittedAt, EndedAt: r.EndedAt, Seed: r.Seed}
	l.Ended = !l.EndedAt.IsZero()
	return l, nil
}

// ReadLottery returns room's lottery record; the seed only once the
// lottery ended. ErrNoDraw when the room never admitted by lottery.
func (q *Queue) ReadLottery(ctx context.Context, room string) (Lottery, error) {
	if !wire.ValidRoom(room) {
		return Lottery{}, wire.ErrInvalidRoom
	}
	l, err := q.lottery(ctx, room, "read")
	if err != nil {
		return Lottery{}, err
	}
	if l.Seed == "" {
		return Lottery{}, ErrNoDraw
	}
	if !l.Ended {
		l.Seed = ""
	}
	return l, nil
}

// noteDraw remembers the size of room's lottery (-1: not random) as an
// admission tick or a status read saw it, for DrawEstimate.
func (q *Queue) noteDraw(room string, size int64) {
	if size < 0 {
		if m := q.roomMemOf(room); m != nil {
			m.draw.Store(-1)
		}
		return
	}
	q.roomMemFor(room).draw.Store(size)
}

// DrawEstimate returns what a poll of a visitor in room's lottery would be
// told, from the last size this instance saw: the size, the chance per
// minute and when to ask next. ok is false when this instance knows of no
// lottery in room. A push transport sends the same.
func (q *Queue) DrawEstimate(room string) (size int64, chance float64, nextPoll time.Duration, ok bool) {
	m := q.roomMemOf(room)
	if m == nil {
		return 0, 0, 0, false
	}
	size = m.draw.Load()
	if size <= 0 {
		return 0, 0, 0, false
	}
	chance, nextPoll = q.drawFigures(size, q.rate(room))
	return size, chance, nextPoll, true
}

// drawFigures is the chance per minute and next poll of a visitor among
// size in a lottery admitting rate a second: told to ask as often as the
// last of size visitors in a fifo queue would be.
func (q *Queue) drawFigures(size int64, rate float64) (float64, time.Duration) {
	return wire.DrawChance(size, rate), q.opts.Capacity.nextPoll(size, etaAt(size, rate))
}
