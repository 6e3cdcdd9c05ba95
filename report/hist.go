package report

import (
	"math"
	"time"
)

// Buckets is how many buckets a duration histogram has. Bucket 0 holds
// durations under a second; bucket b >= 1 holds [2^((b-1)/4), 2^(b/4))
// seconds, each about 19 % wider than the one before; the last also holds
// everything longer (more than about 2.5 days).
const Buckets = 72

// bucketOf is the histogram bucket of d.
func bucketOf(d time.Duration) int {
	s := d.Seconds()
	if s < 1 {
		return 0
	}
	b := int(math.Floor(4*math.Log2(s))) + 1
	// Log2 of an exact power of two may land a hair below it.
	if lo, _ := bucketBounds(b + 1); b+1 < Buckets && s >= lo {
		b++
	}
	return min(b, Buckets-1)
}

// bucketBounds is the range of seconds bucket b holds.
func bucketBounds(b int) (lo, hi float64) {
	if b <= 0 {
		return 0, 1
	}
	return math.Exp2(float64(b-1) / 4), math.Exp2(float64(b) / 4)
}

// Histogram counts durations in Buckets log-spaced buckets.
type Histogram [Buckets]int64

// Add counts d.
func (h *Histogram) Add(d time.Duration) { h[bucketOf(d)]++ }

// Count is how many durations h holds.
func (h *Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the q-quantile (0 < q <= 1) of h in seconds: the middle of
// the bucket it falls in (the geometric one, for the log-spaced buckets),
// so within one bucket of the true value. It is 0 for an empty h.
func (h *Histogram) Quantile(q float64) float64 {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen int64
	for b, c := range h {
		seen += c
		if seen >= rank {
			return bucketMiddle(b)
		}
	}
	return bucketMiddle(Buckets - 1)
}

func bucketMiddle(b int) float64 {
	lo, hi := bucketBounds(b)
	if b == 0 {
		return 0.5
	}
	return math.Round(math.Sqrt(lo*hi)*10) / 10
}
