package report

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/waitroom/waitroom/wire"
)

// Report is what happened in a room over [From, To), to the minute.
type Report struct {
	Room   string    `json:"room"`
	Event  string    `json:"event,omitempty"` // the scheduled event it covers, if any
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
	Totals Totals    `json:"totals"`
	// Series is each minute with anything recorded, in order.
	Series []Minute `json:"series"`
}

// Totals sum a report's minutes.
type Totals struct {
	Arrivals    int64   `json:"arrivals"`
	PeakWaiting int64   `json:"peakWaiting"`
	Admitted    int64   `json:"admitted"`
	Refused     Refused `json:"refused"`
	Left        Left    `json:"left"`
	// QueueSeconds is the time from join to admission of the visitors
	// admitted whose join was known.
	QueueSeconds Percentiles `json:"queueSeconds"`
	// OriginSeconds is the time from an entry token's notBefore to its
	// consumption or its gateway session's end.
	OriginSeconds Percentiles `json:"originSeconds"`
	Promised      Promised    `json:"promised"`
	// SoldOutAt is when the room's seats were first seen all held; nil
	// when they never were.
	SoldOutAt *time.Time `json:"soldOutAt"`
}

// Refused counts refused joins by reason.
type Refused struct {
	RateLimit int64 `json:"rateLimit"`
	Pow       int64 `json:"pow"`
	Invite    int64 `json:"invite"`
	Closed    int64 `json:"closed"`
}

// Left counts visitors lost while waiting: those who left (or gave their
// token back), those set aside as away when their turn came, and those
// dropped after being away too long.
type Left struct {
	Waiting int64 `json:"waiting"`
	Away    int64 `json:"away"`
	Dropped int64 `json:"dropped"`
}

// Percentiles of durations in seconds, each within one histogram bucket.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
}

// Promised compares, for each admitted visitor told a wait at join, the
// wait told with the wait lived.
type Promised struct {
	Count                 int64   `json:"count"`
	MedianAbsErrorSeconds float64 `json:"medianAbsErrorSeconds"`
	// WithinShare is the share of them admitted within ±20 % of the wait
	// told (at least ±1 s).
	WithinShare float64 `json:"withinShare"`
	// RangeCount is how many admitted visitors were told a range
	// (etaRange) at join, and InRangeShare the share of them admitted
	// inside it (a second either side).
	RangeCount   int64   `json:"rangeCount"`
	InRangeShare float64 `json:"inRangeShare"`
}

// Minute is one minute of a report.
type Minute struct {
	At          time.Time `json:"at"`
	Arrivals    int64     `json:"arrivals"`
	PeakWaiting int64     `json:"peakWaiting"`
	Admitted    int64     `json:"admitted"`
	Refused     Refused   `json:"refused"`
	Left        Left      `json:"left"`
}

// ErrRange is returned for a range that is empty or reversed.
var ErrRange = errors.New("report: the range's end is not after its start")

// Read is room's report over [from, to), to the minute (from is rounded
// down and to up to whole minutes). Percentiles are those of the whole
// minutes the range covers.
//
// A report must not stall admission, which shares its Redis: each hour is
// read with one HGETALL of its own, so Redis serves the tick loops' and
// visitors' commands between them and a month's report is some 750 short
// commands, never one long script call; and an instance reads one report
// at a time (the others wait their turn, or their context), so dashboards
// reading at once add no more load than one does.
func (rc *Recorder) Read(ctx context.Context, room string, from, to time.Time) (Report, error) {
	if !wire.ValidRoom(room) {
		return Report{}, wire.ErrInvalidRoom
	}
	if !to.After(from) {
		return Report{}, ErrRange
	}
	select {
	case rc.reading <- struct{}{}:
		defer func() { <-rc.reading }()
	case <-ctx.Done():
		return Report{}, fmt.Errorf("report: read: %w", ctx.Err())
	}
	fromMin := from.Unix() / 60
	toMin := (to.Unix() + 59) / 60
	b := newBuilder(fromMin, toMin)
	for h := fromMin / 60; h <= (toMin-1)/60; h++ {
		v, err := rc.r.Do(ctx, "HGETALL", hourKey(room, h))
		if err != nil {
			return Report{}, fmt.Errorf("report: read: %w", err)
		}
		b.hour(h, v)
	}
	r := b.report()
	r.Room, r.From, r.To = room, time.Unix(fromMin*60, 0).UTC(), time.Unix(toMin*60, 0).UTC()
	return r, nil
}

// Finish writes room's counts, reads its report over [from, to) as the
// report of event, and hands it to Options.OnReady.
func (rc *Recorder) Finish(ctx context.Context, room, event string, from, to time.Time) (Report, error) {
	if err := rc.FlushRoom(ctx, room); err != nil {
		return Report{}, err
	}
	r, err := rc.Read(ctx, room, from, to)
	if err != nil {
		return Report{}, err
	}
	r.Event = event
	if rc.opts.OnReady != nil {
		rc.opts.OnReady(ctx, r)
	}
	return r, nil
}

// builder sums the fields of hour hashes into a report.
type builder struct {
	from, to            int64 // Unix minutes, [from, to)
	minutes             map[int64]*Minute
	queue, origin, miss Histogram
	promised, within    int64
	ranged, inRange     int64
	soldOut             int64 // Unix ms, 0: never
}

func newBuilder(from, to int64) *builder {
	return &builder{from: from, to: to, minutes: make(map[int64]*Minute)}
}

// hour adds the HGETALL reply v of Unix hour h.
func (b *builder) hour(h int64, v any) {
	arr, _ := v.([]any)
	for i := 0; i+1 < len(arr); i += 2 {
		f, _ := arr[i].(string)
		s, _ := arr[i+1].(string)
		mh, name, ok := strings.Cut(f, ":")
		m, err1 := strconv.ParseInt(mh, 10, 64)
		n, err2 := strconv.ParseInt(s, 10, 64)
		if !ok || err1 != nil || err2 != nil || m < 0 || m >= 60 {
			continue
		}
		if k := h*60 + m; k >= b.from && k < b.to {
			b.field(k, name, n)
		}
	}
}

// field adds one field's value n of Unix minute k.
func (b *builder) field(k int64, name string, n int64) {
	if name == "" {
		return
	}
	if h := b.histogram(name[0]); h != nil {
		if bk, err := strconv.Atoi(name[1:]); err == nil && bk >= 0 && bk < Buckets {
			h[bk] += n
			return
		}
	}
	switch name {
	case "pn":
		b.promised += n
		return
	case "pw":
		b.within += n
		return
	case "rn":
		b.ranged += n
		return
	case "rw":
		b.inRange += n
		return
	case "so":
		if b.soldOut == 0 || n < b.soldOut {
			b.soldOut = n
		}
		return
	}
	m := b.minutes[k]
	if m == nil {
		m = &Minute{At: time.Unix(k*60, 0).UTC()}
		b.minutes[k] = m
	}
	m.add(name, n)
}

// histogram is the histogram a field's first letter names, or nil.
func (b *builder) histogram(c byte) *Histogram {
	switch c {
	case 'q':
		return &b.queue
	case 'o':
		return &b.origin
	case 'e':
		return &b.miss
	}
	return nil
}

func (m *Minute) add(name string, n int64) {
	switch name {
	case "a":
		m.Arrivals += n
	case "ad":
		m.Admitted += n
	case "pk":
		m.PeakWaiting = max(m.PeakWaiting, n)
	case "l.left":
		m.Left.Waiting += n
	case "l.away":
		m.Left.Away += n
	case "l.dropped":
		m.Left.Dropped += n
	case "r." + RateLimit:
		m.Refused.RateLimit += n
	case "r." + Pow:
		m.Refused.Pow += n
	case "r." + Invite:
		m.Refused.Invite += n
	case "r." + Closed:
		m.Refused.Closed += n
	}
}
