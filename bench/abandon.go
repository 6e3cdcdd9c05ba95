package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// abandonOptions configure the abandon scenario: a crowd of which a share
// gives up while waiting, under both strategies, with presence on and off.
type abandonOptions struct {
	Out        string
	Quick      bool
	N          int           // visitors per run
	Leave      float64       // share that leaves while waiting
	DBPool     int           // server -db-pool: sets the capacity
	Limit      time.Duration // per run
	Strategies []string
	Presence   []bool // runs with presence on, off, or both
	Progress   io.Writer
}

func (o *abandonOptions) defaults() {
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.N = orInt(o.N, map[bool]int{false: 5000, true: 200}[o.Quick])
	if o.Leave == 0 {
		o.Leave = 0.3
	}
	// 10 connections of 200 ms at 70% safety: 35 orders/s, so 5,000
	// visitors queue for about 2.5 minutes, long against awayAfter.
	o.DBPool = orInt(o.DBPool, map[bool]int{false: 10, true: 4}[o.Quick])
	o.Limit = orDur(o.Limit, map[bool]time.Duration{false: 8 * time.Minute, true: 35 * time.Second}[o.Quick])
	if len(o.Strategies) == 0 {
		o.Strategies = []string{"fixed", "max-active"}
	}
	if len(o.Presence) == 0 {
		o.Presence = []bool{true, false}
	}
}

// The room settings of every run. awayAfter is its lowest allowed value;
// the token lifetime is shorter than the default 300 s so that a run
// without presence under max-active ends in minutes (its stall is then
// the shorter of the two).
const (
	abandonAwayAfter = 15 * time.Second
	abandonTokenTTL  = 60 * time.Second
	abandonQuickTTL  = 20 * time.Second
	abandonHeldEvery = time.Second
)

type abandonPoint struct {
	T    float64 `json:"t"`    // seconds since the crowd joined
	Held float64 `json:"held"` // live tokens of visitors who left
}

type abandonRun struct {
	Strategy        string         `json:"strategy"`
	Presence        bool           `json:"presence"`
	Visitors        int            `json:"visitors"`
	Leavers         int            `json:"leftWhileWaiting"`
	Stayers         int            `json:"stayed"`
	MaxActive       int            `json:"maxActive,omitempty"`
	TokenTTLSeconds float64        `json:"tokenTtlSeconds"`
	Capacity        float64        `json:"capacityPerSecond"`
	Orders          int            `json:"ordersCompleted"`
	OrdersPerSecond float64        `json:"ordersPerSecond"`
	OfCapacity      float64        `json:"ordersShareOfCapacity"`
	SteadyPerSecond float64        `json:"ordersPerSecondMiddle80"`
	StayWaitP50     float64        `json:"stayedWaitP50Seconds"`
	StayWaitP95     float64        `json:"stayedWaitP95Seconds"`
	StayWaitMean    float64        `json:"stayedWaitMeanSeconds"`
	NotAdmitted     int            `json:"stayedNotAdmittedInTime"`
	Seconds         float64        `json:"runSeconds"`
	PeakHeld        float64        `json:"peakSlotsHeldByLeavers"`
	MeanHeld        float64        `json:"meanSlotsHeldByLeavers"`
	Admitted        int64          `json:"admitted"`
	UsedShare       float64        `json:"ordersPerAdmission"`
	AdmitPerSecond  float64        `json:"admittedPerSecond"`
	Skipped         int64          `json:"setAsideAway"`
	Reclaimed       int64          `json:"tokensTakenBack"`
	MadeUp          int64          `json:"admissionsMadeUp"`
	Errors          int            `json:"errors"`
	FirstError      string         `json:"firstError,omitempty"`
	Held            []abandonPoint `json:"heldOverTime"`
}

type abandonReport struct {
	Scenario  string       `json:"scenario"`
	Machine   string       `json:"machine"`
	Command   string       `json:"command"`
	AwayAfter float64      `json:"awayAfterSeconds"`
	Runs      []abandonRun `json:"runs"`
	Targets   []string     `json:"targets"`
}

func runAbandon(ctx context.Context, o abandonOptions, command string) (*abandonReport, error) {
	o.defaults()
	rep := &abandonReport{Scenario: "abandon", Machine: machine(), Command: command, AwayAfter: abandonAwayAfter.Seconds()}
	for _, strategy := range o.Strategies {
		for _, presence := range o.Presence {
			r, err := abandonOnce(ctx, o, strategy, presence)
			if err != nil {
				return nil, fmt.Errorf("abandon %s presence=%v: %w", strategy, presence, err)
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	rep.Targets = abandonTargets(rep)
	if err := writeOutputs(o.Out, "abandon", abandonMarkdown(rep, o), rep, abandonSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// abandonVisitor is one visitor's record.
type abandonVisitor struct {
	leaveAfter time.Duration // 0: stays
	joinAt     time.Time
	nb         time.Time // admitted (notBefore), zero if never
	orderAt    time.Time // order created
	left       bool
	err        error
}

func abandonOnce(ctx context.Context, o abandonOptions, strategy string, presence bool) (abandonRun, error) {
	ttl := abandonTokenTTL
	if o.Quick {
		ttl = abandonQuickTTL
	}
	res := abandonRun{Strategy: strategy, Presence: presence, Visitors: o.N, TokenTTLSeconds: ttl.Seconds()}
	key := newSecret()
	tgt, err := startTarget(ctx, externalOpts{}, []string{"-demo", "-admin-key", key, "-tick", "100ms",
		"-db-pool", strconv.Itoa(o.DBPool), "-service-time", "200ms", "-safety", "0.7", "-db-wait", "10s"})
	if err != nil {
		return res, err
	}
	defer tgt.Close()
	room := fmt.Sprintf("abandon-%s-%v-%d", strategy, presence, time.Now().UnixNano()%1e6)
	adm := adminClient{base: tgt.URL, key: key}
	if err := abandonConfigure(ctx, adm, room, ttl, &res); err != nil {
		return res, err
	}

	rctx, cancel := withLimit(ctx, o.Limit)
	defer cancel()
	var w wire
	a := newAPI(tgt.URL, room, &w, newDialer(&w, 2, 20), 256)
	defer a.close()

	vis := make([]abandonVisitor, o.N)
	rng := rand.New(rand.NewPCG(uint64(o.N), 13))
	for _, i := range rng.Perm(o.N)[:int(float64(o.N)*o.Leave)] {
		vis[i].leaveAfter = -1 // decided at join, from the ETA it is told
	}
	var holding, finished atomic.Int64 // stayers between admission and order; visitors done
	joinSem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range vis {
		v := &vis[i]
		transport := "ws"
		if i%2 == 1 {
			transport = "poll"
		}
		frac := rng.Float64()
		wg.Go(func() {
			defer finished.Add(1)
			abandonVisit(rctx, a, transport, v, frac, o.Quick, joinSem, &holding)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	label := fmt.Sprintf("abandon %s presence=%v", strategy, presence)
	tick := time.NewTicker(abandonHeldEvery)
	defer tick.Stop()
	var st abandonStats
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
			err := adm.call(sctx, "GET", "/rooms/"+room+"/stats", "", &st)
			scancel()
			if err != nil {
				continue
			}
			held := max(0, float64(st.ActiveTokens-holding.Load()))
			res.Held = append(res.Held, abandonPoint{T: time.Since(t0).Seconds(), Held: held})
			fmt.Fprintf(o.Progress, "%s: %3.0fs waiting=%d active=%d held-by-leavers=%.0f set-aside=%d taken-back=%d made-up=%d done=%d/%d\n",
				label, time.Since(t0).Seconds(), st.Waiting, st.ActiveTokens, held,
				st.Presence.SkippedTotal, st.Presence.ReclaimedTotal, st.Presence.MadeUpTotal, finished.Load(), o.N)
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	abandonFinalStats(ctx, adm, room, &res)
	abandonSummarise(&res, vis, t0)
	if res.Errors > 0 {
		fmt.Fprintf(o.Progress, "%s: %d errors; the server's log ends with:\n%s\n", label, res.Errors, tgt.logTail())
	}
	fmt.Fprintf(o.Progress, "%s: done in %.0fs: %.1f orders/s of %.1f (%.0f%%), %d admitted (%.1f/s), %.0f%% of them ordered, stayed wait p50 %s p95 %s, %d stayed not admitted, peak held by leavers %.0f\n",
		label, res.Seconds, res.OrdersPerSecond, res.Capacity, res.OfCapacity*100, res.Admitted, res.AdmitPerSecond, res.UsedShare*100,
		secs(res.StayWaitP50), secs(res.StayWaitP95), res.NotAdmitted, res.PeakHeld)
	return res, nil
}

// abandonStats is the part of the admin stats the run reads.
type abandonStats struct {
	Waiting       int64 `json:"waiting"`
	ActiveTokens  int64 `json:"activeTokens"`
	AdmittedTotal int64 `json:"admittedTotal"`
	Presence      struct {
		SkippedTotal   int64 `json:"skippedTotal"`
		ReclaimedTotal int64 `json:"reclaimedTotal"`
		MadeUpTotal    int64 `json:"madeUpTotal"`
	} `json:"presence"`
}

// abandonVisit is one visitor: join; a leaver picks its moment to leave
// (uniformly within the wait it was told, a fifth of it with -quick so
// that some are seen away in a short run) and then closes its WebSocket
// or stops polling; whoever is admitted first orders.
func abandonVisit(ctx context.Context, a *api, transport string, v *abandonVisitor, frac float64, quick bool, joinSem chan struct{}, holding *atomic.Int64) {
	joinSem <- struct{}{}
	v.joinAt = time.Now()
	st, err := a.join(ctx, "")
	<-joinSem
	if err != nil {
		v.err = err
		return
	}
	cred := st.Visitor
	wctx := ctx
	if v.leaveAfter < 0 {
		span := float64(st.ETASeconds) * float64(time.Second)
		if quick {
			span /= 5
		}
		v.leaveAfter = time.Duration(frac * span)
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, v.leaveAfter)
		defer cancel()
	}
	if st.Status != "admitted" {
		st, _, err = waitAdmitted(wctx, a, transport, cred, st)
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				v.left = true
				return
			}
			if ctx.Err() == nil {
				v.err = err
			}
			return
		}
	}
	v.nb = st.NotBefore
	holding.Add(1)
	defer holding.Add(-1)
	if !sleepCtx(ctx, time.Until(st.NotBefore)) {
		return
	}
	for range 60 {
		code, retry, err := a.order(ctx, st.Token, cred)
		if err != nil {
			if ctx.Err() == nil {
				v.err = err
			}
			return
		}
		switch code {
		case 201:
			v.orderAt = time.Now()
			return
		case 425, 503:
			if !sleepCtx(ctx, max(retry, 50*time.Millisecond)) {
				return
			}
			continue
		}
		v.err = fmt.Errorf("order: http %d", code)
		return
	}
}

// abandonSummarise turns the visitors' records into the run's figures.
func abandonSummarise(res *abandonRun, vis []abandonVisitor, t0 time.Time) {
	var waits []float64
	var first, last time.Time
	var done []time.Time
	for _, v := range vis {
		if v.err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = v.err.Error()
			}
		}
		if !v.orderAt.IsZero() {
			res.Orders++
			done = append(done, v.orderAt)
			if first.IsZero() || v.orderAt.Before(first) {
				first = v.orderAt
			}
			if v.orderAt.After(last) {
				last = v.orderAt
			}
		}
		if v.left {
			res.Leavers++
			continue
		}
		res.Stayers++
		if v.nb.IsZero() {
			// Not admitted within the run: it waited at least this long.
			res.NotAdmitted++
			waits = append(waits, time.Since(v.joinAt).Seconds())
			continue
		}
		waits = append(waits, v.nb.Sub(v.joinAt).Seconds())
	}
	end := last
	if res.NotAdmitted > 0 {
		end = t0.Add(time.Duration(res.Seconds * float64(time.Second)))
	}
	if res.Orders > 1 && end.After(first) {
		res.OrdersPerSecond = float64(res.Orders-1) / end.Sub(first).Seconds()
	}
	if res.Capacity > 0 {
		res.OfCapacity = res.OrdersPerSecond / res.Capacity
	}
	// How many admissions became orders, and the rate the server admitted
	// at over the same span: orders/s falls short of capacity either
	// because admissions go to visitors who left or because the server
	// admits slower than its batch says (missed ticks on a busy machine).
	if res.Admitted > 0 {
		res.UsedShare = float64(res.Orders) / float64(res.Admitted)
		if end.After(t0) {
			res.AdmitPerSecond = float64(res.Admitted) / end.Sub(t0).Seconds()
		}
	}
	// Between the 10th and the 90th percentile order: the rate once the
	// first leavers could be seen away and before the queue ran dry.
	res.SteadyPerSecond = math.NaN()
	if len(done) >= 20 {
		slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
		i, j := len(done)/10, len(done)*9/10
		if d := done[j].Sub(done[i]).Seconds(); d > 0 {
			res.SteadyPerSecond = float64(j-i) / d
		}
	}
	res.StayWaitP50, res.StayWaitP95 = quantile(waits, .5), quantile(waits, .95)
	res.StayWaitMean = math.NaN()
	if len(waits) > 0 {
		s := 0.0
		for _, w := range waits {
			s += w
		}
		res.StayWaitMean = s / float64(len(waits))
	}
	for _, p := range res.Held {
		res.PeakHeld = max(res.PeakHeld, p.Held)
		res.MeanHeld += p.Held / float64(len(res.Held))
	}
}

// abandonTargets checks the targets against the runs.
func abandonTargets(rep *abandonReport) []string {
	var out []string
	byKey := map[string]abandonRun{}
	for _, r := range rep.Runs {
		byKey[r.Strategy+"/"+strconv.FormatBool(r.Presence)] = r
		if r.Presence {
			verdict := "met"
			if r.OfCapacity < 0.95 {
				verdict = "NOT met"
			}
			out = append(out, fmt.Sprintf("%s, presence on: orders/s %.1f = %.0f%% of capacity %.1f (target ≥ 95%%): %s; in the middle 80%% of orders %.1f/s = %.0f%%",
				r.Strategy, r.OrdersPerSecond, r.OfCapacity*100, r.Capacity, verdict, r.SteadyPerSecond, r.SteadyPerSecond/r.Capacity*100))
		}
	}
	on, okOn := byKey["max-active/true"]
	off, okOff := byKey["max-active/false"]
	if okOn && okOff && on.StayWaitMean > 0 {
		ratio := off.StayWaitMean / on.StayWaitMean
		verdict := "met"
		if ratio < 2 {
			verdict = "NOT met"
		}
		note := ""
		if off.NotAdmitted > 0 {
			note = fmt.Sprintf(" (a lower bound: %d who stayed were not admitted within the run without presence)", off.NotAdmitted)
		}
		out = append(out, fmt.Sprintf("max-active: mean wait of those who stayed %s with presence against %s without: %.1f× shorter (target ≥ 2×)%s: %s",
			secs(on.StayWaitMean), secs(off.StayWaitMean), ratio, note, verdict))
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func abandonMarkdown(rep *abandonReport, o abandonOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# abandon: admission with visitors who leave\n\n%s\n\n`%s`\n\n", rep.Machine, rep.Command)
	fmt.Fprintf(&b, "%d visitors per run join at once (half hold a WebSocket, half poll as told); %.0f%% of them, at random, leave at a random moment within the wait they were told%s, closing the WebSocket or stopping their polls. Whoever is admitted orders at once on the demo protected endpoint (-db-pool %d, 200 ms per order, safety 0.7). awayAfter %s, dropAfter the default; token lifetime %s; max-active holds two seconds of admissions.\n\n",
		o.N, o.Leave*100, map[bool]string{true: " (a fifth of it with -quick)", false: ""}[o.Quick], o.DBPool, secs(rep.AwayAfter), secs(rep.Runs[0].TokenTTLSeconds))
	rows := [][]string{}
	for _, r := range rep.Runs {
		ma := "–"
		if r.MaxActive > 0 {
			ma = strconv.Itoa(r.MaxActive)
		}
		rows = append(rows, []string{r.Strategy, onOff(r.Presence), ma, num(r.Capacity), num(r.OrdersPerSecond),
			fmt.Sprintf("%.0f%%", r.OfCapacity*100), num(r.SteadyPerSecond), secs(r.StayWaitMean), secs(r.StayWaitP50), secs(r.StayWaitP95),
			strconv.Itoa(r.NotAdmitted), num(r.PeakHeld), num(r.MeanHeld), num(r.AdmitPerSecond), fmt.Sprintf("%.0f%%", r.UsedShare*100), commas(r.Skipped), commas(r.Reclaimed), commas(r.MadeUp),
			strconv.Itoa(r.Leavers), strconv.Itoa(r.Errors), secs(r.Seconds)})
	}
	b.WriteString(mdTable([]string{"strategy", "presence", "max-active", "capacity /s", "orders /s", "of capacity",
		"orders /s, middle 80%", "stayed: mean wait", "p50", "p95", "stayed, not admitted in time", "slots held by leavers: peak", "mean",
		"admitted /s", "admissions that ordered", "set aside away", "tokens taken back", "made up", "left", "errors", "run"}, rows))
	b.WriteString("\nOrders/s is over the whole run (first to last order, or to the end of a run that ran out of time); the middle 80% is between the 10th and the 90th percentile order. Admitted /s is every admission (the server's count) over the same span from the crowd's join: below capacity, the server missed ticks (a busy machine); admissions that ordered is orders over admissions, what presence is for. Tokens taken back are those of admitted visitors unseen for awayAfter and never used (under fixed only those never seen since their admission); made up is the admissions added to later batches for them. A stayer not admitted when the run ended counts with the time it had waited, so its wait is a lower bound. Slots held by leavers: live tokens minus those of visitors still there (sampled every second), drawn in abandon.svg.\n\n## Targets\n\n")
	for _, t := range rep.Targets {
		fmt.Fprintf(&b, "- %s\n", t)
	}
	for _, r := range rep.Runs {
		if r.FirstError != "" {
			fmt.Fprintf(&b, "\n%s presence %s: first error: %s\n", r.Strategy, onOff(r.Presence), r.FirstError)
		}
	}
	return b.String()
}

// abandonSVG draws the live tokens of visitors who left, over time: one
// panel per strategy (under fixed they waste admissions, under max-active
// they hold slots), one line per presence setting.
func abandonSVG(rep *abandonReport) string {
	const (
		w, panelH                     = 900, 250
		left, right, top, bottom, gap = 60, 200, 40, 40, 30
	)
	var strategies []string
	for _, r := range rep.Runs {
		if !slices.Contains(strategies, r.Strategy) {
			strategies = append(strategies, r.Strategy)
		}
	}
	maxT := 1.0
	for _, r := range rep.Runs {
		for _, p := range r.Held {
			maxT = max(maxT, p.T)
		}
	}
	h := 40 + len(strategies)*(panelH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="600">Live tokens of visitors who left, over time</text>`+"\n", left)
	for si, strategy := range strategies {
		y0 := 40 + si*(panelH+gap)
		maxY := 1.0
		title := strategy + ": unused tokens of visitors who left (admissions wasted)"
		for _, r := range rep.Runs {
			if r.Strategy != strategy {
				continue
			}
			for _, p := range r.Held {
				maxY = max(maxY, p.Held)
			}
			if r.MaxActive > 0 {
				maxY = max(maxY, float64(r.MaxActive))
				title = fmt.Sprintf("%s: slots held by visitors who left (of %d)", strategy, r.MaxActive)
			}
		}
		maxY = niceCeil(maxY)
		x := func(t float64) float64 { return left + t/maxT*float64(w-left-right) }
		y := func(v float64) float64 { return float64(y0+panelH-bottom) - v/maxY*float64(panelH-top-bottom) }
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="600">%s</text>`+"\n", left, y0+top-12, html.EscapeString(title))
		for i := 0; i <= 4; i++ {
			v := maxY * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", left, y(v), w-right, y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", left-6, y(v)+4, commas(int64(math.Round(v))))
		}
		for i := 0; i <= 5; i++ {
			t := maxT * float64(i) / 5
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.0f s</text>`+"\n", x(t), y0+panelH-bottom+16, t)
		}
		n := 0
		for _, r := range rep.Runs {
			if r.Strategy != strategy {
				continue
			}
			c, dash := "#3b6fb6", ""
			if !r.Presence {
				c, dash = "#e07b39", ` stroke-dasharray="5 3"`
			}
			var pts []string
			for _, p := range r.Held {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.T), y(p.Held)))
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.Join(pts, " "))
			}
			ly := y0 + top + 20*n
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", w-right+14, ly, w-right+40, ly, c, dash)
			fmt.Fprintf(&b, `<text x="%d" y="%d">presence %s</text>`+"\n", w-right+46, ly+4, onOff(r.Presence))
			n++
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// adminClient calls a server's admin API.
type adminClient struct{ base, key string }

func (c adminClient) call(ctx context.Context, method, path, body string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/api/v1/admin"+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: http %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func abandonScenario() scenario {
	return scenario{name: "abandon", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o abandonOptions
		fs.IntVar(&o.N, "n", 0, "visitors per run (default 5000; 200 with -quick)")
		fs.Float64Var(&o.Leave, "leave", 0.3, "share of visitors who leave while waiting")
		fs.IntVar(&o.DBPool, "db-pool", 0, "server -db-pool, which sets the capacity (default 10: 35/s; 4 with -quick)")
		fs.DurationVar(&o.Limit, "limit", 0, "time limit per run (default 8m; 35s with -quick)")
		strategies := fs.String("strategies", "fixed,max-active", "strategies to run, comma-separated")
		presence := fs.String("presence", "on,off", "presence settings to run, comma-separated")
		return func(ctx context.Context, env runEnv) (string, error) {
			if o.Leave <= 0 || o.Leave >= 1 {
				return "", fmt.Errorf("abandon: -leave must be between 0 and 1")
			}
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			o.Strategies = splitList(*strategies)
			for _, p := range splitList(*presence) {
				if p != "on" && p != "off" {
					return "", fmt.Errorf("abandon: -presence takes on and off, not %q", p)
				}
				o.Presence = append(o.Presence, p == "on")
			}
			_, err := runAbandon(ctx, o, env.command)
			return "abandon.{md,json,svg}", err
		}
	}}
}

// abandonConfigure sets the room up for res's strategy and presence: it
// reads the capacity into res and, for max-active, sets the slots.
func abandonConfigure(ctx context.Context, adm adminClient, room string, ttl time.Duration, res *abandonRun) error {
	var eff struct {
		TPS   float64 `json:"tps"`
		Batch int     `json:"batch"`
	}
	if err := adm.call(ctx, "GET", "/rooms/"+room, "", &eff); err != nil {
		return err
	}
	res.Capacity = eff.TPS
	cfg := map[string]any{"strategy": res.Strategy, "presence": res.Presence,
		"awayAfterSeconds": abandonAwayAfter.Seconds(), "tokenTtlSeconds": ttl.Seconds()}
	if res.Strategy == "max-active" {
		// Slots for two seconds of admissions: a visitor who is there
		// orders within a second of its notBefore.
		res.MaxActive = int(math.Ceil(eff.TPS * 2))
		cfg["maxActive"] = res.MaxActive
	}
	body, _ := json.Marshal(cfg)
	return adm.call(ctx, "PUT", "/rooms/"+room, string(body), nil)
}

// abandonFinalStats reads the room's presence and admission totals into
// res; on an error they stay 0.
func abandonFinalStats(ctx context.Context, adm adminClient, room string, res *abandonRun) {
	var st abandonStats
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	if err := adm.call(sctx, "GET", "/rooms/"+room+"/stats", "", &st); err == nil {
		res.Skipped, res.Reclaimed = st.Presence.SkippedTotal, st.Presence.ReclaimedTotal
		res.MadeUp = st.Presence.MadeUpTotal
		res.Admitted = st.AdmittedTotal
	}
}
