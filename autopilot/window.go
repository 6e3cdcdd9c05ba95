package autopilot

import (
	"math"
	"sort"
	"strconv"
	"time"
)

// Bounds are the upper bounds, in milliseconds, of the latency
// histogram's buckets; a last bucket takes what is slower. Fixed, so
// that counts from every instance and every second add up; spaced so that
// a quantile read from them is within about 10 % around the latencies a
// web origin has.
var Bounds = []float64{
	1, 2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 120, 140, 160, 180, 200,
	225, 250, 275, 300, 350, 400, 450, 500, 550, 600, 700, 800, 900, 1000,
	1250, 1500, 1750, 2000, 2500, 3000, 4000, 5000, 7500, 10000, 15000, 30000, 60000,
}

// NumBuckets is the number of the histogram's buckets (the last one
// unbounded).
var NumBuckets = len(Bounds) + 1

// bucket is the index of the bucket of a latency of ms milliseconds.
func bucket(ms float64) int {
	return sort.SearchFloat64s(Bounds, ms)
}

// Sample is one request to the origin: how long it took and whether it
// succeeded (a status below 500, a reply at all).
type Sample struct {
	Latency time.Duration
	OK      bool
}

// Window is what a room's origin did over some seconds: how many requests
// it served, how many failed, and the latencies of those that did not
// fail, in the buckets of Bounds.
type Window struct {
	Samples int64
	Errors  int64
	Buckets []int64 // len NumBuckets, or nil for none
}

// Add counts s.
func (w *Window) Add(s Sample) {
	w.Samples++
	if !s.OK {
		w.Errors++
		return
	}
	if w.Buckets == nil {
		w.Buckets = make([]int64, NumBuckets)
	}
	w.Buckets[bucket(float64(s.Latency)/float64(time.Millisecond))]++
}

// ErrorRate is the share of the samples that failed (0 without samples).
func (w Window) ErrorRate() float64 {
	if w.Samples == 0 {
		return 0
	}
	return float64(w.Errors) / float64(w.Samples)
}

// Quantile is the latency, in milliseconds, under which a share q of the
// successful requests fell, interpolated inside its bucket (0 without
// any). A quantile in the last bucket reads as its lower bound.
func (w Window) Quantile(q float64) float64 {
	var total int64
	for _, n := range w.Buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range w.Buckets {
		if n == 0 {
			continue
		}
		if seen+float64(n) >= rank {
			if i == len(Bounds) {
				return Bounds[len(Bounds)-1]
			}
			lo := 0.0
			if i > 0 {
				lo = Bounds[i-1]
			}
			return lo + (Bounds[i]-lo)*math.Max(0, rank-seen)/float64(n)
		}
		seen += float64(n)
	}
	return Bounds[len(Bounds)-1]
}

// fields are w's counts as the Redis hash of a second keeps them: n, e,
// and b<i> for each bucket that holds any, each followed by its count.
func (w Window) fields() []string {
	out := []string{"n", strconv.FormatInt(w.Samples, 10), "e", strconv.FormatInt(w.Errors, 10)}
	for i, n := range w.Buckets {
		if n > 0 {
			out = append(out, "b"+strconv.Itoa(i), strconv.FormatInt(n, 10))
		}
	}
	return out
}

// addField adds the count of one field of the hash of a second.
func (w *Window) addField(name string, n int64) {
	switch {
	case name == "n":
		w.Samples += n
	case name == "e":
		w.Errors += n
	case len(name) > 1 && name[0] == 'b':
		i, err := strconv.Atoi(name[1:])
		if err != nil || i < 0 || i >= NumBuckets {
			return
		}
		if w.Buckets == nil {
			w.Buckets = make([]int64, NumBuckets)
		}
		w.Buckets[i] += n
	}
}
