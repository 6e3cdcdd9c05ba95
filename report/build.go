package report

import (
	"maps"
	"slices"
	"time"
)

// report sums the minutes read into a Report.
func (b *builder) report() Report {
	r := Report{Series: make([]Minute, 0, len(b.minutes))}
	for _, k := range slices.Sorted(maps.Keys(b.minutes)) {
		m := *b.minutes[k]
		r.Series = append(r.Series, m)
		t := &r.Totals
		t.Arrivals += m.Arrivals
		t.Admitted += m.Admitted
		t.PeakWaiting = max(t.PeakWaiting, m.PeakWaiting)
		t.Refused.RateLimit += m.Refused.RateLimit
		t.Refused.Pow += m.Refused.Pow
		t.Refused.Invite += m.Refused.Invite
		t.Refused.Closed += m.Refused.Closed
		t.Left.Waiting += m.Left.Waiting
		t.Left.Away += m.Left.Away
		t.Left.Dropped += m.Left.Dropped
	}
	r.Totals.QueueSeconds = percentiles(&b.queue)
	r.Totals.OriginSeconds = percentiles(&b.origin)
	r.Totals.Promised = Promised{Count: b.promised, MedianAbsErrorSeconds: b.miss.Quantile(0.5)}
	if b.promised > 0 {
		r.Totals.Promised.WithinShare = float64(b.within) / float64(b.promised)
	}
	if b.ranged > 0 {
		r.Totals.Promised.RangeCount = b.ranged
		r.Totals.Promised.InRangeShare = float64(b.inRange) / float64(b.ranged)
	}
	if b.soldOut > 0 {
		t := time.UnixMilli(b.soldOut).UTC()
		r.Totals.SoldOutAt = &t
	}
	return r
}

func percentiles(h *Histogram) Percentiles {
	return Percentiles{Count: h.Count(), P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99)}
}
