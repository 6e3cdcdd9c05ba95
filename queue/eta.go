package queue

import (
	"math"
	"sync"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Wait ranges: a waiting visitor is told, beside its ETA, the span its
// wait likely falls in (wire.Range). For a place in line the span comes
// from how much the room's measured admission rate moves; in a lottery
// from the spread of a random draw's wait. Both are read from memory: they
// cost Redis nothing.

// spreadHalfLife is how far back the rate's spread looks: samples a
// half-life old weigh half as much as a new one. Long enough to span the
// bursts of a max-active or capacity-limited room, short enough that a
// room whose rate settled stops being told a wide range within a minute.
const spreadHalfLife = 20 * time.Second

// spreadK is how many standard deviations of the rate the range spans on
// each side of the ETA's rate: about the middle two thirds of the rates
// seen, if they were normal.
const spreadK = 1.0

// minRateShare clamps the slow end of a range: a rate that dipped to
// nothing for a moment (a pause, a burst of max-active holds) would make
// the high end endless, so it is taken at no less than this share of the
// rate the ETA assumes: the high end is at most 4 times the ETA.
const minRateShare = 0.25

// rateSpread is the time-weighted mean and variance of the admission
// rates a room's status reads saw, the measured rate's own smoothing
// aside. Safe for concurrent use.
type rateSpread struct {
	mu       sync.Mutex
	at       time.Time // of the last sample (zero: none yet)
	mean     float64
	variance float64
}

// observe adds the rate x seen at now. The weight of what came before
// decays with the time since the last sample, not with the number of
// samples, so a room polled a thousand times a second is not made to look
// steadier than one polled once: a = 1 - 2^(-dt/halfLife);
// mean += a·(x - mean); variance = (1-a)·(variance + a·(x - mean)²), the
// exponentially weighted variance (West's update).
func (s *rateSpread) observe(now time.Time, x float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at.IsZero() {
		s.at, s.mean, s.variance = now, x, 0
		return
	}
	dt := now.Sub(s.at)
	if dt <= 0 {
		return // the same moment: nothing new to weigh
	}
	a := 1 - math.Exp2(-dt.Seconds()/spreadHalfLife.Seconds())
	d := x - s.mean
	s.mean += a * d
	s.variance = (1 - a) * (s.variance + a*d*d)
	s.at = now
}

// sd is the standard deviation of the rates seen.
func (s *rateSpread) sd() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return math.Sqrt(max(s.variance, 0))
}

// spreadOf is the spread of room's measured rate: 0 before this instance
// saw one measured (the rate is then the configured one, and nothing is
// known of how it moves).
func (q *Queue) spreadOf(room string) float64 {
	m := q.roomMemOf(room)
	if m == nil {
		return 0
	}
	return m.spread.sd()
}

// placeRange is the range of the wait at position when the rate is rate
// with a standard deviation of sd: the ETA at rate ± spreadK·sd, the slow
// end at no less than minRateShare of rate. Low <= etaAt(position, rate)
// <= High whatever sd is, as etaAt falls as the rate rises.
func placeRange(position int64, rate, sd float64) wire.Range {
	if position <= 0 || !(rate > 0) {
		return wire.Range{}
	}
	fast := rate + spreadK*sd
	slow := max(rate-spreadK*sd, rate*minRateShare)
	return wire.Range{Low: etaAt(position, fast), High: etaAt(position, slow)}
}

// drawRange is the range of the wait of one visitor among size in a
// lottery that admits rate visitors a second in ticks of tick: its 25th
// to its 75th percentile.
//
// Each tick draws a batch of b = rate·tick uniformly among the size
// waiting, so a given visitor is drawn in a tick with p = b/size, and
// independently of the ticks before while the draw keeps about its size
// (those drawn replaced by those who join): the number of ticks T until
// it is drawn is geometric, P(T > t) = (1-p)^t. Its q-quantile is the
// least t with 1 - (1-p)^t >= q:
//
//	t_q = ceil(ln(1-q) / ln(1-p))
//
// and the wait is t_q·tick (for a small p, about 0.29/p ticks at the 25th
// percentile and 1.39/p at the 75th: the mean, 1/p, sits between them).
// A draw that nobody joins empties faster than this says, so in a closing
// lottery the high end is on the safe side. Rounded up to whole seconds.
func drawRange(size int64, rate float64, tick time.Duration) wire.Range {
	if size <= 0 || !(rate > 0) || tick <= 0 {
		return wire.Range{}
	}
	p := rate * tick.Seconds() / float64(size)
	ticks := func(q float64) float64 {
		if p >= 1 {
			return 1
		}
		// The epsilon keeps an exact quantile on its own tick.
		return math.Ceil(math.Log(1-q)/math.Log1p(-p) - 1e-9)
	}
	secs := func(t float64) int64 { return int64(math.Ceil(t*tick.Seconds() - 1e-9)) }
	return wire.Range{Low: secs(ticks(0.25)), High: secs(ticks(0.75))}
}

// DrawWaitRange is the 25th to 75th percentile of the wait of one visitor
// among size in a lottery admitting rate a second in ticks of tick (see
// drawRange): the range a waiting visitor in such a draw is told.
func DrawWaitRange(size int64, rate float64, tick time.Duration) wire.Range {
	return drawRange(size, rate, tick)
}

// etaRange is the range for s, a waiting state just built at rate: a
// draw's quartiles for a visitor in a lottery, else the span around its
// place's ETA; none without a rate (no ETA). Push (ETARange, DrawRange)
// and polling compute it alike, so they send the same range.
func (q *Queue) etaRange(room string, s wire.State, rate float64) wire.Range {
	switch {
	case s.Status != wire.StatusWaiting:
		return wire.Range{}
	case s.InDraw > 0:
		return drawRange(s.InDraw, rate, q.opts.Capacity.Tick)
	case s.ETASeconds > 0:
		return placeRange(s.Position, rate, q.spreadOf(room))
	}
	return wire.Range{}
}

// ETARange returns the range a poll at position in room would be told
// beside Estimate's ETA (zero: none). A push transport sends the same.
func (q *Queue) ETARange(room string, position int64) wire.Range {
	return placeRange(position, q.rate(room), q.spreadOf(room))
}

// DrawRange returns the range a poll of a visitor in room's lottery of
// size would be told beside DrawEstimate's figures (zero: none).
func (q *Queue) DrawRange(room string, size int64) wire.Range {
	return drawRange(size, q.rate(room), q.opts.Capacity.Tick)
}
