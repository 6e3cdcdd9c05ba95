package autopilot

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/settings"
)

// State is what the controller remembers of a room from one second to the
// next. It is kept in Redis, so whichever instance decides next goes on
// from it.
type State struct {
	Rate float64 // the rate last set (0: none yet)
	// Best is the lowest p95 seen recently (ms): the latency of an origin
	// that is not queueing. It drifts up towards what is seen, so an
	// origin that became slower for good is not held to an old best.
	Best float64
	// Smooth is the p95 smoothed over the last seconds (ms).
	Smooth float64
	// Dev is how far the p95 strays from Smooth from one second to the
	// next, smoothed (ms): the origin's noise, which a p95 must rise
	// above to be read as requests queueing.
	Dev float64
	// Ceiling is the rate the last cut was made from: where trouble
	// began. Under half of it the rate rises fast, then additively, and
	// from near it one step per observation window (0: no cut yet).
	Ceiling float64
	// HoldUntil: after a cut, the rate holds (no cut, no rise) until the
	// orders admitted before the cut have been answered and have left
	// the window, so that their failures are not read as a new overload.
	HoldUntil time.Time
	// CutAt and CutP95: when the last cut was and the p95 it saw (ms).
	// For as long again as the hold after it, a window not much worse
	// than that (draining) does not cut again: the orders admitted before the cut may
	// still be queued at the origin, ahead of those admitted since.
	CutAt      time.Time
	CutP95     float64
	CutErrors  float64 // the error rate the last cut saw
	Overloaded bool
	Reason     string    // of the last change
	ChangedAt  time.Time // of the last change
}

// Input is what one decision is made from.
type Input struct {
	Window Window // the last seconds' samples
	Limits settings.AutopilotLimits
	// Demand: visitors are waiting, so a higher rate would admit more.
	Demand bool
	// Current is the rate the room has now (from its settings), used when
	// the state has none yet.
	Current float64
	Unit    string // of the rate in reasons: "/s" or " slots"
	Now     time.Time
	// Delay is how long a change of the rate takes to show fully in the
	// window, apart from the origin's own latency: the room's tick (the
	// spread of a batch), the window's seconds and one more for the
	// samples of the current second to be counted.
	Delay time.Duration
}

// Decision is the outcome of one second.
type Decision struct {
	State   State
	Changed bool // the rate changed (State.Reason says why)
	// Entered and Left: the origin became overloaded, or stopped being so.
	Entered, Left bool
	P50, P95      float64 // of the window, ms
	ErrorRate     float64
	At            time.Time // the second decided (Input.Now)
	// Reason says what this second saw when it cut, rose, or found the
	// origin healthy again, even when the rate did not change (a cut held
	// at minRate); "" otherwise.
	Reason string
}

// The controller's constants. docs/autopilot.md says why these values.
const (
	// minErrors is the fewest failures that count as an error rate: one
	// stray failure among a handful of requests does not cut.
	minErrors    = 2
	errorCut     = 0.7   // the rate's factor on errors over the limit
	maxCut       = 0.4   // the deepest cut of one second
	latCut       = 0.9   // on a p95 over the target: target/p95 times this
	tolerance    = 2.0   // a p95 up to this times the best is not queueing
	caution      = 1.15  // a p95 over this times the best: requests queue a little
	queueCut     = 0.8   // the deepest cut when requests begin to queue
	fastShare    = 0.5   // of the last cut's rate: under it the rate rises fast again
	draining     = 3.0   // a p95 up to this times the last cut's, just after it: still the same overload
	holdBand     = 0.8   // of the target: a p95 over it stops the rise
	deepQueue    = 2.0   // of the target: a p95 over it cuts the deepest
	queueSamples = 50    // the fewest served requests whose p95 may end the first climb with a cut
	slowStart    = 0.2   // the rise per second far under the ceiling
	nearCeiling  = 0.85  // the share of the last cut's rate that fast rises stop at
	smoothing    = 0.5   // weight of the newest p95 in Smooth
	devSmoothing = 0.2   // weight of the newest deviation in Dev
	noiseBand    = 3.0   // deviations over best·caution a p95 may be before it reads as queueing
	bestDrift    = 0.002 // share of the gap to the p95 seen Best takes each second
)

// Decide is one second of the controller: from the room's state and the
// last window, the rate to set and why. It is pure: the same input gives
// the same decision.
//
//   - No samples, or only a single failure: hold.
//   - After a cut, for one observation window (Input.Delay and the
//     origin's latency): hold, so that what was admitted before the cut
//     is not read as a new overload; for as long again, hold on a window
//     not much worse than the cut's.
//   - Errors over maxErrorRate (two at least): cut by 30 %
//     (multiplicative decrease), more if the p95 is over the target too.
//   - p95 over the target: cut by the ratio of target to p95 (and 10 %
//     more), at most to 40 %, and to 40 % on a p95 twice the target. The
//     first cut goes back a step of the first climb for each second of
//     the observation delay, two at least.
//   - Otherwise, with visitors waiting: the gradient of the best p95 seen
//     (with a tolerance of 2) to the smoothed p95 scales the rate down
//     when the origin queues a lot; a p95 over the best by more than the
//     origin's noise (requests begin to queue) steps the rate back a
//     little after a first cut, and ends the first climb with its first
//     cut (read from 50 requests at least; from fewer it only stops the
//     climb). Else the rate
//     rises: by 20 % a second on the first climb and under half the last
//     cut's rate, then by half its square root (Gradient2's queue
//     allowance), and near the last cut's rate one such step per
//     observation window. Without visitors waiting it holds: a rise would
//     admit nobody and prove nothing.
//
// The rate never leaves [minRate, maxRate].
func Decide(s State, in Input) Decision {
	l := in.Limits
	w := in.Window
	d := Decision{P50: w.Quantile(0.5), P95: w.Quantile(0.95), ErrorRate: w.ErrorRate(), At: in.Now}
	old := s.Rate
	if old <= 0 {
		old = in.Current
	}
	rate := clamp(old, l.MinRate, l.MaxRate)
	reason := ""
	if rate != old {
		reason = fmt.Sprintf("rate within %s–%s: %s → %s%s", num(l.MinRate), num(l.MaxRate), num(old), num(rate), in.Unit)
	}
	over := s.Overloaded
	target := float64(l.LatencyTarget) / float64(time.Millisecond)
	okSamples := w.Samples - w.Errors
	held := in.Now.Before(s.HoldUntil)
	grace := in.Now.Before(s.HoldUntil.Add(s.HoldUntil.Sub(s.CutAt)))
	failing := w.Errors >= minErrors && d.ErrorRate > l.MaxErrorRate
	cut := func(next float64, why string) {
		over = true
		if s.Ceiling <= 0 {
			// The first cut ends the first climb, which rose 20 % a
			// second while what is seen was admitted seconds before:
			// back a step for each second of the delay, two at least.
			next = math.Min(next, rate/math.Pow(1+slowStart, math.Max(2, math.Round(in.Delay.Seconds()))))
		}
		next = clamp(next, l.MinRate, l.MaxRate)
		s.Ceiling = rate
		if next < rate {
			// The orders admitted before this cut are still to be
			// answered: their latency, the origin's own (at least the
			// target), plus the delay of the window.
			s.HoldUntil = in.Now.Add(in.Delay + time.Duration(math.Max(target, d.P95)*float64(time.Millisecond)))
			s.CutAt, s.CutP95, s.CutErrors = in.Now, d.P95, d.ErrorRate
		}
		reason = fmt.Sprintf("%s: %s → %s%s", why, num(rate), num(next), in.Unit)
		rate = next
	}
	switch {
	case w.Samples == 0:
		// No signal: hold, and say nothing new.
	case held && !(failing && s.CutErrors <= l.MaxErrorRate && s.Rate > s.Ceiling*errorCut):
		// What the window shows was admitted before the last cut: hold,
		// unless errors began since a step back that saw none and was
		// gentler than the cut errors make (the origin lost capacity
		// since).
	case grace && (d.P95 > target || failing) && d.P95 <= s.CutP95*draining &&
		(!failing || s.CutErrors > l.MaxErrorRate):
		// No better, but no worse than at the last cut: the queue of
		// before the cut may still be draining; hold.
	case failing:
		f := errorCut
		if okSamples > 0 && d.P95 > target {
			f = math.Min(f, latCut*target/d.P95)
		}
		cut(rate*math.Max(maxCut, f), fmt.Sprintf("errors %s %% over %s %% limit", pct(d.ErrorRate), pct(l.MaxErrorRate)))
	case okSamples == 0:
		// Nothing served to read a latency from: hold.
	case d.P95 > target:
		f := math.Min(latCut, latCut*target/d.P95)
		if d.P95 >= deepQueue*target {
			// Requests wait longer than the target itself: a queue
			// that a cut to just under what the origin serves would
			// drain only slowly, behind the target all the while.
			f = maxCut
		}
		cut(rate*math.Max(maxCut, f), fmt.Sprintf("p95 %s ms over %s ms target", ms(d.P95), ms(target)))
	default:
		over = false
		if s.Best <= 0 || d.P95 < s.Best {
			s.Best = d.P95
		} else {
			s.Best += (d.P95 - s.Best) * bestDrift
		}
		threshold := s.Best*caution + noiseBand*s.Dev
		queueing := d.P95 > threshold
		if s.Smooth <= 0 {
			s.Smooth = d.P95
		} else {
			if !grace && d.P95 < s.Smooth {
				// The noise of an origin, read from the seconds under
				// the smoothed p95: not a queue that builds, nor (after
				// a cut) one that drains.
				s.Dev = s.Dev*(1-devSmoothing) + math.Min(s.Smooth-d.P95, s.Best/2)*devSmoothing
			}
			s.Smooth = s.Smooth*(1-smoothing) + d.P95*smoothing
		}
		if !in.Demand || held {
			break
		}
		g := math.Min(1, s.Best*tolerance/math.Max(s.Smooth, 1e-3))
		pastCeiling := s.Ceiling > 0 && rate >= s.Ceiling*nearCeiling
		var next float64
		var why string
		switch {
		case g < 1:
			cut(rate*math.Max(maxCut, g), fmt.Sprintf("p95 %s ms rising over best %s ms", ms(s.Smooth), ms(s.Best)))
			over = s.Overloaded
			next = rate
		case (queueing || d.P95 > target*holdBand) && s.Ceiling > 0:
			// Requests begin to queue after a cut: the rate is just over
			// what the origin serves; step back a little.
			cut(rate*math.Max(queueCut, math.Min(1, math.Sqrt(threshold/d.P95))), fmt.Sprintf("p95 %s ms over best %s ms, requests queue", ms(d.P95), ms(s.Best)))
			over = s.Overloaded
			next = rate
		case queueing && okSamples >= queueSamples && s.Ceiling <= 0:
			// Requests begin to queue on the first climb: what is seen
			// was admitted an observation delay ago, and the climb has
			// gone on since; cut back to before it (a step per second of
			// the delay), before the queue grows to the target. The p95
			// of a handful of requests is noise: that only stops the
			// climb.
			cut(rate, fmt.Sprintf("p95 %s ms over best %s ms, requests queue", ms(d.P95), ms(s.Best)))
			over = s.Overloaded
			next = rate
		case queueing || s.Smooth > target*holdBand || d.P95 > target*holdBand:
			// Requests begin to queue, or the p95 nears the target: no
			// rise.
			next = rate
		case pastCeiling && d.P95 > s.Best*caution:
			// Near or past where the last cut was, a rise needs a p95
			// clear of any queue, noise or not.
			next = rate
		case s.Ceiling <= 0:
			next = rate*(1+slowStart) + 1
			why = fmt.Sprintf("p95 %s ms near best %s ms, visitors waiting", ms(d.P95), ms(s.Best))
		default:
			// Additive after a cut (Gradient2's queue allowance); near
			// and past the rate of the last cut, one step per
			// observation window, so each step's effect is seen before
			// the next.
			// Under half the rate of the last cut, fast again up to it.
			next = math.Max(rate+math.Sqrt(rate)/2, math.Min(rate*(1+slowStart)+1, s.Ceiling*fastShare))
			why = fmt.Sprintf("p95 %s ms near best %s ms, visitors waiting (last cut at %s%s)", ms(d.P95), ms(s.Best), num(s.Ceiling), in.Unit)
			if pastCeiling {
				// A hold of its own, with nothing seen to compare with
				// after it: a worse window then cuts.
				s.HoldUntil = in.Now.Add(in.Delay + time.Duration(d.P95*float64(time.Millisecond)))
				s.CutAt, s.CutP95, s.CutErrors = in.Now, 0, 0
			}
		}
		next = clamp(roundRate(next), l.MinRate, l.MaxRate)
		if next == rate || why == "" {
			break
		}
		reason = fmt.Sprintf("%s: %s → %s%s", why, num(rate), num(next), in.Unit)
		rate = next
	}
	d.Entered, d.Left = over && !s.Overloaded, !over && s.Overloaded
	s.Overloaded = over
	d.Reason = reason
	if d.Reason == "" && d.Left {
		d.Reason = fmt.Sprintf("p95 %s ms within %s ms target, errors %s %% within %s %% limit", ms(d.P95), ms(target), pct(d.ErrorRate), pct(l.MaxErrorRate))
	}
	s.Rate = roundRate(rate)
	if s.Rate != roundRate(old) && reason != "" {
		d.Changed = true
		s.Reason, s.ChangedAt = reason, in.Now
	}
	d.State = s
	return d
}

func clamp(v, lo, hi float64) float64 { return math.Min(hi, math.Max(lo, v)) }

// roundRate keeps two decimals of a rate.
func roundRate(v float64) float64 { return math.Round(v*100) / 100 }

func num(v float64) string { return strconv.FormatFloat(roundRate(v), 'f', -1, 64) }

func ms(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', -1, 64) }

func pct(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/10, 'f', -1, 64) }
