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
}

// join is a visitor's join as it was written: when, and the wait it was
// told (negative: none).
type join struct {
	at  time.Time
	eta time.Duration
}

func parseJoin(v string) (join, bool) {
	a, b, ok := cut(v, ',')
	if !ok {
		return join{}, false
	}
	ms, err1 := strconv.ParseInt(a, 10, 64)
	eta, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || ms <= 0 {
		return join{}, false
	}
	return join{at: time.UnixMilli(ms), eta: time.Duration(eta) * time.Second}, true
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
// that promise.
func (m *minute) matched(j join, notBefore time.Time) {
	lived := max(notBefore.Sub(j.at), 0)
	m.queue.Add(lived)
	if j.eta < 0 {
		return
	}
	miss := lived - j.eta
	if miss < 0 {
		miss = -miss
	}
	m.promised++
	m.miss.Add(miss)
	if float64(miss) <= max(withinShare*float64(j.eta), float64(time.Second)) {
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
