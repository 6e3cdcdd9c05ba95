package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// herdOptions configure the herd scenario.
type herdOptions struct {
	Out       string
	Quick     bool
	Transport string        // ws, sse or poll
	Limit     time.Duration // per run
	Ext       externalOpts
	Progress  io.Writer
}

// herdSpec is one run: a test (A: 500 visitors, B: 140), a batch, jitter.
type herdSpec struct {
	Test     string
	Visitors int
	Batch    int
	NoJitter bool
}

// fieldFigure is what the field published for the same test and batch (a
// Spring server measured with k6 on one laptop).
type fieldFigure struct {
	RequestP95   float64 `json:"requestP95Seconds"`
	TokenWaitP95 float64 `json:"tokenWaitP95Seconds"`
	Success      float64 `json:"successRate"`
	OrderP95     float64 `json:"orderLatencyP95Seconds"`
	Held         *bool   `json:"thresholdHeld"`
}

func ptr[T any](v T) *T { return &v }

var fieldFigures = map[string]fieldFigure{
	"A/14":   {RequestP95: 11.62, TokenWaitP95: 11.39, Success: 1, OrderP95: math.NaN()},
	"A/500":  {RequestP95: 6.4, TokenWaitP95: 6.46, Success: .998, OrderP95: math.NaN()},
	"A/1000": {RequestP95: 12.79, TokenWaitP95: 12.11, Success: .998, OrderP95: math.NaN()},
	"B/14":   {RequestP95: 3.69, TokenWaitP95: math.NaN(), Success: math.NaN(), OrderP95: 2.98, Held: ptr(true)},
	"B/500":  {RequestP95: 1.65, TokenWaitP95: math.NaN(), Success: math.NaN(), OrderP95: 1.47, Held: ptr(true)},
	"B/1000": {RequestP95: 5.42, TokenWaitP95: math.NaN(), Success: math.NaN(), OrderP95: 3.48, Held: ptr(false)},
}

// threshold is the pass mark each run is held to: order latency p95 under
// 2 s, the threshold of the field's k6 test B.
const threshold = 2 * time.Second

type herdResult struct {
	Test          string       `json:"test"`
	Visitors      int          `json:"visitors"`
	Batch         int          `json:"batch"`
	Jitter        bool         `json:"jitter"`
	Transport     string       `json:"transport"`
	Seconds       float64      `json:"runSeconds"`
	RequestP95    float64      `json:"requestP95Seconds"`
	TokenWaitP95  float64      `json:"tokenWaitP95Seconds"`
	OrderP95      float64      `json:"orderLatencyP95Seconds"`
	OrderP99      float64      `json:"orderLatencyP99Seconds"`
	Success       float64      `json:"successRate"`
	Created       int          `json:"created"`
	Admitted      int          `json:"admitted"`
	TooEarly      int          `json:"tooEarlyAnswers"`
	DBTimeouts    int          `json:"dbTimeouts"`
	OtherFailures int          `json:"otherFailures"`
	FirstFailure  string       `json:"firstFailure,omitempty"`
	PeakDBSlots   float64      `json:"peakDbSlots"`
	PeakPer10ms   int          `json:"peakOrderStartsPer10ms"`
	PeakSteady    int          `json:"peakOrderStartsPer10msToldAtNotBefore"`
	Steady        int          `json:"visitorsToldAtNotBefore"`
	StartLagP50   float64      `json:"orderStartAfterNotBeforeP50Seconds"`
	OtherCores    float64      `json:"otherProcessesCpuCores"`
	StartLagP99   float64      `json:"orderStartAfterNotBeforeP99Seconds"`
	ThresholdHeld bool         `json:"thresholdHeld"`
	Field         *fieldFigure `json:"field,omitempty"`
}

type herdReport struct {
	Scenario  string       `json:"scenario"`
	Machine   string       `json:"machine"`
	Command   string       `json:"command"`
	Threshold string       `json:"threshold"`
	Results   []herdResult `json:"results"`
}

func herdSpecs(quick bool) []herdSpec {
	if quick {
		return []herdSpec{
			{Test: "A", Visitors: 60, Batch: 14},
			{Test: "A", Visitors: 60, Batch: 60},
			{Test: "A", Visitors: 60, Batch: 14, NoJitter: true},
		}
	}
	var s []herdSpec
	for _, t := range []struct {
		name string
		n    int
	}{{"A", 500}, {"B", 140}} {
		for _, b := range []int{14, 500, 1000} {
			s = append(s, herdSpec{Test: t.name, Visitors: t.n, Batch: b})
		}
	}
	return append(s, herdSpec{Test: "A", Visitors: 500, Batch: 14, NoJitter: true})
}

func runHerd(ctx context.Context, o herdOptions, command string) (*herdReport, error) {
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Transport == "" {
		o.Transport = "ws"
	}
	switch o.Transport {
	case "ws", "sse", "poll":
	default:
		return nil, fmt.Errorf("herd: unknown -transport %q (ws, sse, poll)", o.Transport)
	}
	if o.Limit == 0 {
		o.Limit = 2 * time.Minute
		if o.Quick {
			o.Limit = 30 * time.Second
		}
	}
	rep := &herdReport{Scenario: "herd", Machine: machine(), Command: command,
		Threshold: "order latency (the POST) p95 < 2 s, as the field's k6 test B"}
	for _, sp := range herdSpecs(o.Quick) {
		r, err := herdRun(ctx, o, sp)
		if err != nil {
			return nil, fmt.Errorf("herd %s batch %d: %w", sp.Test, sp.Batch, err)
		}
		rep.Results = append(rep.Results, r)
	}
	if err := writeOutputs(o.Out, "herd", herdMarkdown(rep, o), rep, herdSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

type herdVisitor struct {
	joinAt, nb, done time.Time
	orderLat         time.Duration
	code             int
	early            int
	firstStart       time.Time
	steady           bool // listening before its notBefore: told at notBefore, not on connect
	err              error
}

func herdRun(ctx context.Context, o herdOptions, sp herdSpec) (herdResult, error) {
	res := herdResult{Test: sp.Test, Visitors: sp.Visitors, Batch: sp.Batch, Jitter: !sp.NoJitter, Transport: o.Transport}
	if f, ok := fieldFigures[sp.Test+"/"+strconv.Itoa(sp.Batch)]; ok && !sp.NoJitter && !o.Quick {
		res.Field = &f
	}
	// The visitors order on the demo protected endpoint (-demo). A server
	// given with -url must run with -demo too.
	args := []string{"-demo", "-batch", strconv.Itoa(sp.Batch), "-tick", "100ms", "-db-pool", "40", "-service-time", "200ms", "-db-wait", "10s"}
	if sp.NoJitter {
		args = append(args, "-no-jitter")
	}
	tgt, err := startTarget(ctx, o.Ext, args)
	if err != nil {
		return res, err
	}
	defer tgt.Close()
	rctx, cancel := withLimit(ctx, o.Limit)
	defer cancel()

	var w wire
	room := fmt.Sprintf("herd-%s-%d-%d", strings.ToLower(sp.Test), sp.Batch, time.Now().UnixNano()%1e6)
	a := newAPI(tgt.URL, room, &w, newDialer(&w, 2, 20), sp.Visitors)
	defer a.close()

	vis := make([]herdVisitor, sp.Visitors)
	var startsMu sync.Mutex
	var starts, steadyStarts []time.Time
	var joined, admitted, finished atomic.Int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range vis {
		v := &vis[i]
		wg.Go(func() {
			<-gate
			herdVisit(rctx, a, o.Transport, v, &joined, &admitted, func(t time.Time, steady bool) {
				startsMu.Lock()
				starts = append(starts, t)
				if steady {
					steadyStarts = append(steadyStarts, t)
				}
				startsMu.Unlock()
			})
			finished.Add(1)
		})
	}
	label := fmt.Sprintf("herd %s batch %d jitter=%v", sp.Test, sp.Batch, !sp.NoJitter)
	other := startOtherLoad(tgt)
	t0 := time.Now()
	close(gate)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			fmt.Fprintf(o.Progress, "%s: %2.0fs joined=%d admitted=%d finished=%d/%d\n", label,
				time.Since(t0).Seconds(), joined.Load(), admitted.Load(), finished.Load(), sp.Visitors)
		}
	}
	tick.Stop()
	res.Seconds = time.Since(t0).Seconds()
	res.OtherCores = other()
	m := tgt.metrics(ctx)
	res.PeakDBSlots = m["waitroom_db_slots_peak"]

	herdTally(&res, vis)
	res.PeakPer10ms = peakInWindow(starts, 10*time.Millisecond)
	res.PeakSteady = peakInWindow(steadyStarts, 10*time.Millisecond)
	herdStartLag(&res, vis)
	fmt.Fprintf(o.Progress, "%s: done in %.1fs: success %.1f%%, order p95 %s, request p95 %s, peak DB %.0f, peak starts/10ms %d (told at notBefore: %d, order start after notBefore p50 %s p99 %s)\n",
		label, res.Seconds, res.Success*100, secs(res.OrderP95), secs(res.RequestP95), res.PeakDBSlots, res.PeakPer10ms, res.PeakSteady, secs(res.StartLagP50), secs(res.StartLagP99))
	return res, nil
}

// herdVisit is one visitor: join, learn the admission, wait for notBefore,
// order; on 425 wait Retry-After and order again.
func herdVisit(ctx context.Context, a *api, transport string, v *herdVisitor, joined, admitted *atomic.Int64, started func(t time.Time, steady bool)) {
	v.joinAt = time.Now()
	st, err := a.join(ctx, "")
	if err != nil {
		v.err = err
		return
	}
	joined.Add(1)
	cred := st.Visitor
	var listening time.Time
	if st.Status != "admitted" {
		st, listening, err = waitAdmitted(ctx, a, transport, cred, st)
		if err != nil {
			v.err = err
			return
		}
	}
	admitted.Add(1)
	v.nb = st.NotBefore
	v.steady = !listening.IsZero() && listening.Before(st.NotBefore)
	if !sleepCtx(ctx, time.Until(st.NotBefore)) {
		v.err = ctx.Err()
		return
	}
	for attempt := 0; attempt < 30; attempt++ {
		start := time.Now()
		if attempt == 0 {
			v.firstStart = start
		}
		started(start, v.steady)
		code, retry, err := a.order(ctx, st.Token, cred)
		v.orderLat, v.done, v.code, v.err = time.Since(start), time.Now(), code, err
		if err != nil || code != 425 {
			return
		}
		v.early++
		if !sleepCtx(ctx, max(retry, 50*time.Millisecond)) {
			return
		}
	}
}

// waitAdmitted learns the admitted state by push or by polling. It also
// returns when the visitor began listening.
func waitAdmitted(ctx context.Context, a *api, transport, cred string, st state) (got state, listening time.Time, err error) {
	ready := func() { listening = time.Now() }
	fn := func(s state, _ time.Time) bool {
		if s.Status == "admitted" {
			got = s
			return false
		}
		return true
	}
	switch transport {
	case "ws":
		err = a.ws(ctx, cred, ready, fn)
	case "sse":
		err = a.sse(ctx, cred, ready, fn)
	default:
		ready()
		for got.Status != "admitted" {
			next := time.Duration(st.NextPollMs) * time.Millisecond
			if next <= 0 {
				next = 500 * time.Millisecond
			}
			if !sleepCtx(ctx, next) {
				return got, listening, ctx.Err()
			}
			if st, _, err = a.status(ctx, cred); err != nil {
				return got, listening, err
			}
			fn(st, time.Now())
		}
	}
	if err == nil && got.Status != "admitted" {
		err = fmt.Errorf("stream ended before admission: %v", ctx.Err())
	}
	return got, listening, err
}

// peakInWindow is the most timestamps inside any window of length d.
func peakInWindow(ts []time.Time, d time.Duration) int {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

func runName(r herdResult) string {
	s := fmt.Sprintf("%s/%d", r.Test, r.Batch)
	if !r.Jitter {
		s += " no-jitter"
	}
	return s
}

func herdMarkdown(rep *herdReport, o herdOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The herd: admitted visitors against the protected endpoint\n\n")
	fmt.Fprintf(&b, "Demo protected endpoint on a simulated DB pool of 40 slots, 200 ms per order, 10 s wait for a slot (`-demo -db-pool 40 -service-time 200ms -db-wait 10s`), tick 100 ms. Test A: 500 visitors join at once and each orders as soon as admitted; test B: 140 visitors. Visitors learn admission by %s, wait for notBefore, POST the order, and on 425 wait Retry-After and retry. A fresh server and redis-server per run. Machine: %s.\n\n",
		o.Transport, rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\nThreshold: %s. Field figures in brackets: a Spring server measured with k6 on one laptop (n/p = not published).\n\n", rep.Command, rep.Threshold)
	withField := func(v float64, f *fieldFigure, get func(fieldFigure) float64, fmtf func(float64) string) string {
		s := fmtf(v)
		if f != nil {
			fv := get(*f)
			if math.IsNaN(fv) {
				s += " (n/p)"
			} else {
				s += " (" + fmtf(fv) + ")"
			}
		}
		return s
	}
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", v*100)
	}
	var rows [][]string
	for _, r := range rep.Results {
		held := "yes"
		if !r.ThresholdHeld {
			held = "**no**"
		}
		if r.Field != nil && r.Field.Held != nil {
			if *r.Field.Held {
				held += " (yes)"
			} else {
				held += " (no)"
			}
		} else if r.Field != nil {
			held += " (n/p)"
		}
		rows = append(rows, []string{
			runName(r), strconv.Itoa(r.Visitors),
			withField(r.RequestP95, r.Field, func(f fieldFigure) float64 { return f.RequestP95 }, secs),
			withField(r.TokenWaitP95, r.Field, func(f fieldFigure) float64 { return f.TokenWaitP95 }, secs),
			withField(r.Success, r.Field, func(f fieldFigure) float64 { return f.Success }, pct),
			withField(r.OrderP95, r.Field, func(f fieldFigure) float64 { return f.OrderP95 }, secs),
			secs(r.OrderP99), fmt.Sprintf("%.0f", r.PeakDBSlots), strconv.Itoa(r.PeakPer10ms),
			fmt.Sprintf("%d (%d visitors)", r.PeakSteady, r.Steady),
			strconv.Itoa(r.TooEarly), strconv.Itoa(r.DBTimeouts), held, num(r.OtherCores),
		})
	}
	b.WriteString(mdTable([]string{"run (test/batch)", "visitors", "request p95", "token wait p95", "order success",
		"order latency p95", "order latency p99", "peak DB slots", "peak order starts / 10 ms", "same, told at notBefore only", "425 answers", "503 db_timeout", "p95 < 2 s held", "other processes' CPU (cores)"}, rows))
	b.WriteString(`
- **request**: from the visitor's join to the order's response (the last attempt); **token wait**: from join to the admitted token's notBefore; **order latency**: the order POST itself (last attempt); **success**: 201 answers over visitors.
- **peak DB slots**: waitroom_db_slots_peak from /metrics (most simulated DB connections in use at once; fresh server per run). **peak order starts / 10 ms**: the most order POSTs begun by the clients inside any 10 ms window (client timestamps). When 500 visitors join and connect at once, the first batches are admitted before their clients are listening and all order at the moment they connect; "told at notBefore only" counts only the visitors that were listening before their notBefore, which is where jitter acts.
- The jitter pair is the same test with the batch valid at the window start (-no-jitter) against spread over the tick.
`)
	return b.String()
}

func herdSVG(rep *herdReport) string {
	mk := func(title, unit string, f func(herdResult) float64, ref func(fieldFigure) float64) panel {
		p := panel{Title: title, Unit: unit}
		for _, r := range rep.Results {
			p.Bars = append(p.Bars, bar{Label: runName(r), Value: f(r)})
			if ref != nil && r.Field != nil && !math.IsNaN(ref(*r.Field)) {
				p.Bars = append(p.Bars, bar{Label: runName(r) + " field", Value: ref(*r.Field), Ref: true})
			}
		}
		return p
	}
	panels := []panel{
		mk("Request p95 (join to order response)", "s", func(r herdResult) float64 { return r.RequestP95 }, func(f fieldFigure) float64 { return f.RequestP95 }),
		mk("Order latency p95", "s", func(r herdResult) float64 { return r.OrderP95 }, func(f fieldFigure) float64 { return f.OrderP95 }),
		mk("Token wait p95", "s", func(r herdResult) float64 { return r.TokenWaitP95 }, func(f fieldFigure) float64 { return f.TokenWaitP95 }),
		mk("Peak DB slots in use", "of 40", func(r herdResult) float64 { return r.PeakDBSlots }, nil),
		mk("Peak order starts in 10 ms (told at notBefore)", "", func(r herdResult) float64 { return float64(r.PeakSteady) }, nil),
		mk("Order success", "%", func(r herdResult) float64 { return r.Success * 100 }, func(f fieldFigure) float64 { return f.Success * 100 }),
	}
	return barChartSVG("The herd: batch size and jitter against a 40-slot DB", "grey hatched bars: the field's published figures (Spring, k6, one laptop)", panels)
}

func herdScenario() scenario {
	return scenario{name: "herd", external: true, flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o herdOptions
		fs.StringVar(&o.Transport, "transport", "ws", "how visitors learn they are admitted: ws, sse or poll")
		fs.DurationVar(&o.Limit, "limit", 0, "time limit per run (default 2m)")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Ext, o.Progress = env.out, env.quick, env.ext, env.progress
			_, err := runHerd(ctx, o, env.command)
			return "herd.{md,json,svg}", err
		}
	}}
}

// herdTally counts the visitors' outcomes into res: admitted, orders
// created and failed, and the request, token wait and order latencies.
func herdTally(res *herdResult, vis []herdVisitor) {
	var req, wait, lat []float64
	for _, v := range vis {
		res.TooEarly += v.early
		if !v.nb.IsZero() {
			res.Admitted++
			wait = append(wait, v.nb.Sub(v.joinAt).Seconds())
		}
		switch {
		case v.code == 201:
			res.Created++
		case v.code == 503:
			res.DBTimeouts++
		default:
			res.OtherFailures++
			if res.FirstFailure == "" {
				if v.err != nil {
					res.FirstFailure = v.err.Error()
				} else {
					res.FirstFailure = "http " + strconv.Itoa(v.code)
				}
			}
		}
		if v.code != 0 {
			req = append(req, v.done.Sub(v.joinAt).Seconds())
			lat = append(lat, v.orderLat.Seconds())
		}
	}
	res.Success = float64(res.Created) / float64(len(vis))
	res.RequestP95 = quantile(req, .95)
	res.TokenWaitP95 = quantile(wait, .95)
	res.OrderP95, res.OrderP99 = quantile(lat, .95), quantile(lat, .99)
	res.ThresholdHeld = !math.IsNaN(res.OrderP95) && res.OrderP95 < threshold.Seconds()
}

// herdStartLag is how long after notBefore the visitors told at it
// started their order.
func herdStartLag(res *herdResult, vis []herdVisitor) {
	var startLag []float64
	for _, v := range vis {
		if v.steady {
			res.Steady++
			startLag = append(startLag, v.firstStart.Sub(v.nb).Seconds())
		}
	}
	res.StartLagP50, res.StartLagP99 = quantile(startLag, .5), quantile(startLag, .99)
}
