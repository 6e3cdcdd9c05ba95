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
	// Ceiling is the rate at the last cut: up to near it the rate rises
	// fast, past it slowly (0: no cut yet).
	Ceiling    float64
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
	minErrors   = 2
	errorCut    = 0.7   // the rate's factor on errors over the limit
	maxCut      = 0.5   // the deepest cut of one second
	latCut      = 0.9   // on a p95 over the target: target/p95 times this
	tolerance   = 2.0   // a p95 up to this times the best is not queueing
	holdBand    = 0.8   // of the target: a p95 over it stops the rise
	slowStart   = 0.2   // the rise per second far under the ceiling
	nearCeiling = 0.85  // the share of the last cut's rate that fast rises stop at
	smoothing   = 0.5   // weight of the newest p95 in Smooth
	bestDrift   = 0.002 // share of the gap to the p95 seen Best takes each second
)

// Decide is one second of the controller: from the room's state and the
// last window, the rate to set and why. It is pure: the same input gives
// the same decision.
//
//   - No samples, or only a single failure: hold.
//   - Errors over maxErrorRate (two at least): cut by 30 %
//     (multiplicative decrease).
//   - p95 over the target: cut by the ratio of target to p95 (and 10 %
//     more), at most by half.
//   - Otherwise, with visitors waiting: the gradient of the best p95 seen
//     (with a tolerance of 2) to the smoothed p95 scales the rate down
//     when the origin starts to queue; when it does not, and the p95 is
//     under 80 % of the target, the rate rises by 20 % a second up to
//     near the last cut's rate, then by half its square root (Gradient2's
//     queue allowance). Without visitors waiting it holds: a rise would
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
	switch {
	case w.Samples == 0:
		// No signal: hold, and say nothing new.
	case w.Errors >= minErrors && d.ErrorRate > l.MaxErrorRate:
		over = true
		s.Ceiling = rate
		next := clamp(rate*errorCut, l.MinRate, l.MaxRate)
		reason = fmt.Sprintf("errors %s %% over %s %% limit: %s → %s%s", pct(d.ErrorRate), pct(l.MaxErrorRate), num(rate), num(next), in.Unit)
		rate = next
	case okSamples == 0:
		// Nothing served to read a latency from: hold.
	case d.P95 > target:
		over = true
		s.Ceiling = rate
		next := clamp(rate*math.Max(maxCut, math.Min(latCut, latCut*target/d.P95)), l.MinRate, l.MaxRate)
		reason = fmt.Sprintf("p95 %s ms over %s ms target: %s → %s%s", ms(d.P95), ms(target), num(rate), num(next), in.Unit)
		rate = next
	default:
		over = false
		if s.Best <= 0 || d.P95 < s.Best {
			s.Best = d.P95
		} else {
			s.Best += (d.P95 - s.Best) * bestDrift
		}
		if s.Smooth <= 0 {
			s.Smooth = d.P95
		} else {
			s.Smooth = s.Smooth*(1-smoothing) + d.P95*smoothing
		}
		if !in.Demand {
			break
		}
		g := math.Min(1, s.Best*tolerance/math.Max(s.Smooth, 1e-3))
		var next float64
		var why string
		switch {
		case g < 1:
			next = rate * math.Max(maxCut, g)
			why = fmt.Sprintf("p95 %s ms rising over best %s ms", ms(s.Smooth), ms(s.Best))
		case s.Smooth > target*holdBand || d.P95 > target*holdBand:
			// Near the target: no rise, so it is not crossed.
			next = rate
		case s.Ceiling <= 0:
			next = rate*(1+slowStart) + 1
			why = fmt.Sprintf("p95 %s ms near best %s ms, visitors waiting", ms(d.P95), ms(s.Best))
		default:
			// Fast up to near the last cut's rate, slowly past it.
			next = math.Max(rate+math.Sqrt(rate)/2, math.Min(rate*(1+slowStart)+1, s.Ceiling*nearCeiling))
			why = fmt.Sprintf("p95 %s ms near best %s ms, visitors waiting (last cut at %s%s)", ms(d.P95), ms(s.Best), num(s.Ceiling), in.Unit)
		}
		next = clamp(roundRate(next), l.MinRate, l.MaxRate)
		if next == rate {
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
