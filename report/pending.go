package report

import (
	"strconv"
	"time"
)

// pending is what a Recorder counted in one room since it last wrote.
type pending struct {
	minutes map[int64]*minute // by Unix minute
	joins   []string          // visitor, join value pairs
	admits  []admission       // admissions not matched with their joins yet
}

func (p *pending) at(t time.Time) *minute {
	k := t.Unix() / 60
	m := p.minutes[k]
	if m == nil {
		m = &minute{peak: -1}
		p.minutes[k] = m
	}
	return m
}

// empty reports whether p holds nothing to write.
func (p *pending) empty() bool {
	return len(p.minutes) == 0 && len(p.joins) == 0 && len(p.admits) == 0
}

// admission is an admitted visitor waiting to be matched with its join.
type admission struct {
	visitor   string
	notBefore time.Time
	due       time.Time // matched from then on
}

// minute is one minute's counts of one room.
type minute struct {
	arrivals, admitted, left int64
	refused                  [len(reasons)]int64
	peak                     int64 // -1: not sampled
	queue, origin, miss      Histogram
	promised, within         int64
	ranged, inRange          int64
}

// join is a visitor's join as it was written: when, and the wait it was
// told.
type join struct {
	at   time.Time
	told Promise
}

// joinValue is how a join is written: "ms,eta" in Unix milliseconds and
// whole seconds (eta -1: none), then ",low,high" when told a range.
func joinValue(at time.Time, told Promise) string {
	eta := int64(-1)
	if told.ETA >= 0 {
		eta = int64(told.ETA / time.Second)
	}
	b := strconv.AppendInt(make([]byte, 0, 32), at.UnixMilli(), 10)
	b = strconv.AppendInt(append(b, ','), eta, 10)
	if told.High > 0 {
		b = strconv.AppendInt(append(b, ','), int64(told.Low/time.Second), 10)
		b = strconv.AppendInt(append(b, ','), int64(told.High/time.Second), 10)
	}
	return string(b)
}

func parseJoin(v string) (join, bool) {
	var n [4]int64
	k := 0
	for k < len(n) {
		a, rest, more := cut(v, ',')
		x, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			return join{}, false
		}
		n[k], k, v = x, k+1, rest
		if !more {
			break
		}
	}
	if (k != 2 && k != 4) || n[0] <= 0 {
		return join{}, false
	}
	j := join{at: time.UnixMilli(n[0]), told: Promise{ETA: time.Duration(n[1]) * time.Second}}
	if n[1] < 0 {
		j.told.ETA = -1
	}
	if k == 4 && n[3] > 0 && n[2] <= n[3] {
		j.told.Low, j.told.High = time.Duration(n[2])*time.Second, time.Duration(n[3])*time.Second
	}
	return j, true
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// withinShare is how close a lived wait must be to the promised one to
// count as kept: ±20 % of the promise, and never less than the second
// the promise is rounded to.
const withinShare = 0.2

// matched counts an admitted visitor's wait from its join j to notBefore
// into m: its time in queue and, when it was told a wait, the error of
// that promise and whether the wait fell in the range told.
func (m *minute) matched(j join, notBefore time.Time) {
	lived := max(notBefore.Sub(j.at), 0)
	m.queue.Add(lived)
	if t := j.told; t.High > 0 {
		m.ranged++
		// The ends are whole seconds: a second either side still counts.
		if lived >= t.Low-time.Second && lived <= t.High+time.Second {
			m.inRange++
		}
	}
	if j.told.ETA < 0 {
		return
	}
	miss := lived - j.told.ETA
	if miss < 0 {
		miss = -miss
	}
	m.promised++
	m.miss.Add(miss)
	if float64(miss) <= max(withinShare*float64(j.told.ETA), float64(time.Second)) {
		m.within++
	}
}

// fields appends m's counters as field/value pairs (prefix is the minute
// of the hour and a colon) to incr, and its peak to maxes.
func (m *minute) fields(prefix string, incr, maxes []string) ([]string, []string) {
	add := func(name string, n int64) {
		if n != 0 {
			incr = append(incr, prefix+name, strconv.FormatInt(n, 10))
		}
	}
	add("a", m.arrivals)
	add("ad", m.admitted)
	add("l.left", m.left)
	for i, r := range reasons {
		add("r."+r, m.refused[i])
	}
	add("pn", m.promised)
	add("pw", m.within)
	add("rn", m.ranged)
	add("rw", m.inRange)
	hist := func(name string, h *Histogram) {
		for b, n := range h {
			add(name+strconv.Itoa(b), n)
		}
	}
	hist("q", &m.queue)
	hist("o", &m.origin)
	hist("e", &m.miss)
	if m.peak >= 0 {
		maxes = append(maxes, prefix+"pk", strconv.FormatInt(m.peak, 10))
	}
	return incr, maxes
}
