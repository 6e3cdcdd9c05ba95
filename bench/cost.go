package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// costOptions configure the cost scenario.
type costOptions struct {
	Out      string
	Quick    bool
	N        int           // waiting visitors
	Duration time.Duration // measured window per mode
	Batch    int
	Tick     time.Duration
	Modes    []string
	PerProc  int // visitors per client process; more are spread over cost-worker children
	Samples  int // visitors whose shown position is sampled
	Ext      externalOpts
	Progress io.Writer
}

func (o *costOptions) defaults() {
	if o.Quick {
		o.N = orInt(o.N, 200)
		o.Duration = orDur(o.Duration, 5*time.Second)
		o.Batch = orInt(o.Batch, 2)
	}
	o.N = orInt(o.N, 10000)
	o.Duration = orDur(o.Duration, 60*time.Second)
	o.Batch = orInt(o.Batch, 14)
	o.Tick = orDur(o.Tick, 100*time.Millisecond)
	o.PerProc = orInt(o.PerProc, 15000)
	o.Samples = orInt(o.Samples, 500)
	if len(o.Modes) == 0 {
		o.Modes = []string{modeWS, modeSSE, modePoll, modePoll1s}
	}
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// pollGrace is the longest a poller can be told to wait (nextPollMs is at
// most min(eta·500 ms, 5 s), +10%), plus a margin for the request.
func (o *costOptions) pollGrace() time.Duration {
	tps := float64(o.Batch) / o.Tick.Seconds()
	longest := min(time.Duration(math.Ceil(float64(o.N)/tps))*500*time.Millisecond, 5*time.Second)
	return longest*11/10 + 500*time.Millisecond
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func orDur(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}

// costResult is one mode's measurements.
type costResult struct {
	Mode            string  `json:"mode"`
	Visitors        int     `json:"visitors"`
	Processes       int     `json:"clientProcesses"`
	WindowSeconds   float64 `json:"windowSeconds"`
	CPUCores        float64 `json:"serverCpuCores"`
	RSSBeforeMiB    float64 `json:"rssBeforeMiB"`
	RSSMiB          float64 `json:"rssWithVisitorsMiB"`
	RSSPerConnKiB   float64 `json:"rssPerConnKiB"`
	Goroutines      float64 `json:"goroutines"`
	GoroutinesPerC  float64 `json:"goroutinesPerConn"`
	Conns           float64 `json:"serverPushConns"`
	RequestsPerSec  float64 `json:"httpRequestsPerSec"`
	RedisCmdsPerSec float64 `json:"redisCommandsPerSec"`
	BytesPerSec     float64 `json:"wireBytesPerSec"`
	PushedPerSec    float64 `json:"pushedPerSec"`    // push messages received, any kind
	PositionsPerSec float64 `json:"positionsPerSec"` // of them waiting states
	PollsPerSec     float64 `json:"pollsPerSec"`
	PollMemoryShare float64 `json:"pollMemoryShare"`
	AdmittedWindow  int     `json:"admittedInWindow"`
	Due             int     `json:"admittedDue"` // admitted in the window with notBefore early enough to be told
	Told            int     `json:"toldOfDue"`
	LagP50          float64 `json:"lagP50Seconds"`
	LagP95          float64 `json:"lagP95Seconds"`
	LagP99          float64 `json:"lagP99Seconds"`
	LagMax          float64 `json:"lagMaxSeconds"`
	Early           int     `json:"pushedBeforeNotBefore"`
	AdmittedPerSec  float64 `json:"admittedPerSec"`
	OtherCores      float64 `json:"otherProcessesCpuCores"`
	ServerLagP50    float64 `json:"serverLagP50UpperBoundSeconds"`
	ServerLagP99    float64 `json:"serverLagP99UpperBoundSeconds"`
	StaleSamples    int     `json:"staleSamples"`
	StaleP50        float64 `json:"staleP50Positions"`
	StaleP95        float64 `json:"staleP95Positions"`
	StaleMax        float64 `json:"staleMaxPositions"`
	StaleMean       float64 `json:"staleMeanPositions"`
	StaleP95Seconds float64 `json:"staleP95Seconds"`
	Errors          int64   `json:"clientErrors"`
	FirstErr        string  `json:"firstError,omitempty"`
}

type costReport struct {
	Scenario   string       `json:"scenario"`
	Machine    string       `json:"machine"`
	Command    string       `json:"command"`
	N          int          `json:"visitors"`
	Batch      int          `json:"batch"`
	TickMs     int64        `json:"tickMs"`
	WindowSecs float64      `json:"windowSeconds"`
	Results    []costResult `json:"results"`
}

func runCost(ctx context.Context, o costOptions, command string) (*costReport, error) {
	o.defaults()
	rep := &costReport{Scenario: "cost", Machine: machine(), Command: command, N: o.N, Batch: o.Batch,
		TickMs: o.Tick.Milliseconds(), WindowSecs: o.Duration.Seconds()}
	for _, m := range o.Modes {
		switch m {
		case modeWS, modeSSE, modePoll, modePoll1s:
		default:
			return nil, fmt.Errorf("cost: unknown mode %q (ws, sse, poll, poll1s)", m)
		}
		r, err := costMode(ctx, o, m)
		if err != nil {
			return nil, fmt.Errorf("cost %s: %w", m, err)
		}
		rep.Results = append(rep.Results, r)
	}
	md, svg := costMarkdown(rep, o), costSVG(rep)
	if err := writeOutputs(o.Out, "cost", md, rep, svg); err != nil {
		return nil, err
	}
	return rep, nil
}

// costMode runs one mode against a fresh server and Redis.
func costMode(ctx context.Context, o costOptions, mode string) (costResult, error) {
	res := costResult{Mode: mode, Visitors: o.N}
	args := []string{"-batch", strconv.Itoa(o.Batch), "-tick", o.Tick.String()}
	tgt, err := startTarget(ctx, o.Ext, args)
	if err != nil {
		return res, err
	}
	defer tgt.Close()
	room := "cost-" + mode + "-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)

	before := tgt.proc()
	m0 := tgt.metrics(ctx)

	// Set up the visitors: in this process, or spread over children.
	procs := (o.N + o.PerProc - 1) / o.PerProc
	res.Processes = procs
	fmt.Fprintf(o.Progress, "cost %s: setting up %d visitors in %d process(es)\n", mode, o.N, procs)
	handles := make([]fleetOf[fleetReport], procs)
	defer abortFleets(handles) // those not ended
	if err := startCostFleets(ctx, o, tgt.URL, room, mode, handles); err != nil {
		return res, err
	}

	// The window.
	withConns := tgt.proc()
	busy0 := machineBusy()
	ours0 := ourCPU(tgt, fleetPIDs(handles))
	m1 := tgt.metrics(ctx)
	redis0 := tgt.redisCommands(ctx)
	polls0 := m1["waitroom_polls_total"]
	t0 := time.Now()
	if err := stepFleets(handles, "begin"); err != nil {
		return res, err
	}
	if err := costWindow(ctx, o, mode, tgt, t0, withConns, polls0); err != nil {
		return res, err
	}
	t1 := time.Now()
	after := tgt.proc()
	res.OtherCores = math.NaN()
	if busy1, ours1 := machineBusy(), ourCPU(tgt, fleetPIDs(handles)); busy0 > 0 && busy1 > 0 {
		res.OtherCores = max((busy1-busy0-(ours1-ours0)).Seconds()/t1.Sub(t0).Seconds(), 0)
	}
	redis1 := tgt.redisCommands(ctx)
	m2 := tgt.metrics(ctx)
	if err := stepFleets(handles, "mark"); err != nil {
		return res, err
	}
	if err := costGrace(ctx, o, mode); err != nil {
		return res, err
	}
	m3 := tgt.metrics(ctx)
	res.ServerLagP50, res.ServerLagP99 = math.NaN(), math.NaN()
	if mode == modeWS || mode == modeSSE {
		res.ServerLagP50 = histQuantile(m1, m3, "waitroom_delivery_lag_seconds", `transport="`+mode+`"`, .50)
		res.ServerLagP99 = histQuantile(m1, m3, "waitroom_delivery_lag_seconds", `transport="`+mode+`"`, .99)
	}
	reports, err := endCostFleets(handles)
	if err != nil {
		return res, err
	}

	win := t1.Sub(t0).Seconds()
	res.WindowSeconds = win
	costServerFigures(&res, tgt.PID, costProcs{before, withConns, after}, m1, m0, win)
	res.RedisCmdsPerSec = math.NaN()
	if redis0 >= 0 && redis1 >= 0 {
		res.RedisCmdsPerSec = float64(redis1-redis0) / win
	}
	costClientFigures(&res, reports, win, m1, m2, polls0)

	if err := costTruth(ctx, tgt, room, o, reports, t0, t1, &res); err != nil {
		if !tgt.External && !alive(tgt.PID) {
			return res, fmt.Errorf("%w; the server has exited, its log: %s", err, tgt.logTail())
		}
		return res, err
	}
	fmt.Fprintf(o.Progress, "cost %s: done: cpu=%.2f cores, %.0f req/s, %.0f redis cmds/s, told %d/%d, lag p99 %s\n",
		mode, res.CPUCores, res.RequestsPerSec, res.RedisCmdsPerSec, res.Told, res.Due, secs(res.LagP99))
	return res, nil
}

// costTruth works out delivery lag and the staleness of shown positions.
//
// The true position needs no extra load during the window. Admission is
// FIFO by ticket and every visitor in the room is one of ours, so:
//   - after the window, a join with each untold visitor's credential (join is
//     always answered from Redis, never from the poll cache) tells whether it
//     was admitted (and its notBefore) or where it still waits;
//   - the tick that admitted a visitor follows from its notBefore: the batch
//     of tick t is valid within [(t+1)·tick, (t+2)·tick), so it was admitted
//     at t·tick (plus the loop's small offset);
//   - sorting admitted visitors by notBefore gives their ticket order (jitter
//     is stratified, so notBefore rises with the ticket); a visitor still
//     waiting at its read has ticket rank A(read) + position;
//   - A(t), the number admitted by t, counts admission times ≤ t; the true
//     position at t is rank − A(t) (0 once admitted).
//
// The shown position is what the page shows: the last one the visitor
// received, moved on at the queue's rate (liveVisitor.shown). The method is
// exact up to one batch for samples within a few ms of a tick boundary.
func costTruth(ctx context.Context, tgt *target, room string, o costOptions, reports []fleetReport, t0, t1 time.Time, res *costResult) error {
	var all []visitorOut
	var samples []sample
	for _, r := range reports {
		all = append(all, r.Visitors...)
		samples = append(samples, r.Samples...)
	}
	byIndex := make(map[int]*visitorOut, len(all))
	for i := range all {
		byIndex[all[i].Index] = &all[i]
	}
	sampled := map[int]bool{}
	for _, s := range samples {
		sampled[s.I] = true
	}
	fr, err := costFinalReads(ctx, tgt, room, all, byIndex, sampled)
	if err != nil {
		return err
	}
	adms, rank, admittedBy := costRanks(all, fr, o.Tick.Nanoseconds())
	costLag(res, adms, byIndex, t0, t1)
	costStaleness(res, samples, rank, admittedBy)
	tps := float64(o.Batch) / o.Tick.Seconds()
	res.StaleP95Seconds = res.StaleP95 / tps
	return nil
}

// costWaitRead is a position read after the window, and when (Unix ns,
// the middle of the request).
type costWaitRead struct {
	pos int64
	at  int64
}

// costReads are the final reads of the visitors not told during the run:
// the notBefore of those admitted since, the position of those waiting.
type costReads struct {
	finalNB   map[int]int64
	waitingAt map[int]costWaitRead
}

// costFinalReads joins again with the credential of each visitor in all
// not yet told, sampled ones first (their positions are compared the
// soonest after the window).
func costFinalReads(ctx context.Context, tgt *target, room string, all []visitorOut, byIndex map[int]*visitorOut, sampled map[int]bool) (costReads, error) {
	var w wire
	a := newAPI(tgt.URL, room, &w, newDialer(&w, 200, 20), 50)
	defer a.close()
	var mu sync.Mutex
	fr := costReads{finalNB: map[int]int64{}, waitingAt: map[int]costWaitRead{}}
	read := func(ids []int) error {
		sem := make(chan struct{}, 50)
		var wg sync.WaitGroup
		var firstErr error
		for _, id := range ids {
			v := byIndex[id]
			if v.Cred == "" {
				continue
			}
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				start := time.Now()
				st, err := a.join(ctx, v.Cred)
				mid := start.Add(time.Since(start) / 2).UnixNano()
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				case st.Status == "admitted":
					fr.finalNB[id] = st.NotBefore.UnixNano()
				case st.Status == "waiting":
					fr.waitingAt[id] = costWaitRead{pos: st.Position, at: mid}
				}
			})
		}
		wg.Wait()
		return firstErr
	}
	var first, rest []int
	for _, v := range all {
		if v.Told != 0 {
			continue
		}
		if sampled[v.Index] {
			first = append(first, v.Index)
		} else {
			rest = append(rest, v.Index)
		}
	}
	if err := read(first); err != nil {
		return fr, fmt.Errorf("final reads: %w", err)
	}
	if err := read(rest); err != nil {
		return fr, fmt.Errorf("final reads: %w", err)
	}
	return fr, nil
}

// costAdm is one admission: the visitor, its notBefore and the time of
// the tick that admitted it (Unix ns).
type costAdm struct {
	idx    int
	nb, at int64
}

// costRanks orders the admissions and gives every visitor its rank in
// the queue; admittedBy(t) is how many were admitted by t.
func costRanks(all []visitorOut, fr costReads, tickNs int64) (adms []costAdm, rank map[int]int64, admittedBy func(int64) int64) {
	for _, v := range all {
		nb := v.NB
		if nb == 0 {
			nb = fr.finalNB[v.Index]
		}
		if nb == 0 {
			continue
		}
		at := (nb/tickNs-1)*tickNs + tickNs/10
		adms = append(adms, costAdm{idx: v.Index, nb: nb, at: at})
	}
	sort.Slice(adms, func(i, j int) bool { return adms[i].nb < adms[j].nb })
	rank = make(map[int]int64, len(all))
	admTimes := make([]int64, len(adms))
	for i, ad := range adms {
		rank[ad.idx] = int64(i + 1)
		admTimes[i] = ad.at
	}
	slices.Sort(admTimes)
	admittedBy = func(t int64) int64 {
		n, _ := slices.BinarySearch(admTimes, t+1)
		return int64(n)
	}
	for id, wr := range fr.waitingAt {
		rank[id] = admittedBy(wr.at) + wr.pos
	}
	return adms, rank, admittedBy
}

// costLag is the delivery lag of visitors admitted inside the window;
// each had the grace after the window to be told.
func costLag(res *costResult, adms []costAdm, byIndex map[int]*visitorOut, t0, t1 time.Time) {
	push := res.Mode == modeWS || res.Mode == modeSSE
	var lags []float64
	for _, ad := range adms {
		if ad.at < t0.UnixNano() || ad.at > t1.UnixNano() {
			continue
		}
		res.AdmittedWindow++
		v := byIndex[ad.idx]
		res.Due++
		if v.Told == 0 {
			continue
		}
		res.Told++
		lag := float64(v.Told-v.NB) / 1e9
		if lag < 0 {
			if push {
				res.Early++
			}
			lag = 0
		}
		lags = append(lags, lag)
	}
	res.AdmittedPerSec = float64(res.AdmittedWindow) / t1.Sub(t0).Seconds()
	res.LagP50, res.LagP95, res.LagP99 = quantile(lags, .50), quantile(lags, .95), quantile(lags, .99)
	res.LagMax = quantile(lags, 1)
}

// costStaleness is how far the shown positions were from the true ones.
func costStaleness(res *costResult, samples []sample, rank map[int]int64, admittedBy func(int64) int64) {
	var errsPos []float64
	sum := 0.0
	for _, s := range samples {
		r, ok := rank[s.I]
		if !ok {
			continue
		}
		truth := max(r-admittedBy(s.T), 0)
		e := float64(s.Pos - truth)
		errsPos = append(errsPos, math.Abs(e))
		sum += e
	}
	res.StaleSamples = len(errsPos)
	res.StaleP50, res.StaleP95 = quantile(errsPos, .50), quantile(errsPos, .95)
	res.StaleMax = quantile(errsPos, 1)
	res.StaleMean = math.NaN()
	if len(errsPos) > 0 {
		res.StaleMean = sum / float64(len(errsPos))
	}
}

func modeLabel(m string) string {
	switch m {
	case modeWS:
		return "WebSocket"
	case modeSSE:
		return "SSE"
	case modePoll:
		return "adaptive polling"
	case modePoll1s:
		return "fixed 1 s polling"
	}
	return m
}

// pushedCell is "all (positions)" for a push mode, "–" for polling.
func pushedCell(r costResult) string {
	if math.IsNaN(r.PushedPerSec) {
		return num(r.PushedPerSec)
	}
	return num(r.PushedPerSec) + " (" + num(r.PositionsPerSec) + ")"
}

func costMarkdown(rep *costReport, o costOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# What push costs against polling\n\n")
	fmt.Fprintf(&b, "%d waiting visitors per mode, admission %d per %v tick (%.0f/s), measured window %.0f s per mode, a fresh server and redis-server per mode. Machine: %s.\n\n",
		rep.N, rep.Batch, o.Tick, float64(rep.Batch)/o.Tick.Seconds(), rep.WindowSecs, rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n## Cost on the server\n\n", rep.Command)
	var rows [][]string
	for _, r := range rep.Results {
		rows = append(rows, []string{modeLabel(r.Mode), num(r.OtherCores), num(r.CPUCores), num(r.RSSMiB), num(r.RSSPerConnKiB), num(r.GoroutinesPerC),
			num(r.RequestsPerSec), num(r.RedisCmdsPerSec), num(r.BytesPerSec / 1024), pushedCell(r), num(r.PollMemoryShare * 100)})
	}
	b.WriteString(mdTable([]string{"mode", "other processes' CPU (cores)", "server CPU (cores)", "RSS (MiB)", "RSS per conn (KiB)", "goroutines per conn",
		"HTTP req/s", "Redis cmds/s", "wire KiB/s", "pushed msgs/s (positions)", "polls from memory (%)"}, rows))
	b.WriteString("\n## What the visitor sees\n\n")
	rows = nil
	for _, r := range rep.Results {
		told := fmt.Sprintf("%d / %d", r.Told, r.Due)
		if r.Early > 0 {
			told += fmt.Sprintf(" (%d pushed before notBefore)", r.Early)
		}
		srv := "n/a"
		if !math.IsNaN(r.ServerLagP99) {
			srv = "≤ " + secs(r.ServerLagP50) + " / ≤ " + secs(r.ServerLagP99)
		}
		rows = append(rows, []string{modeLabel(r.Mode), num(r.AdmittedPerSec), told, secs(r.LagP50), secs(r.LagP95), secs(r.LagP99), srv,
			num(r.StaleP50), num(r.StaleP95), num(r.StaleMax), secs(r.StaleP95Seconds), strconv.FormatInt(r.Errors, 10)})
	}
	b.WriteString(mdTable([]string{"mode", "admitted/s", "told / admitted", "lag p50", "lag p95", "lag p99", "server-side lag p50 / p99",
		"stale p50 (positions)", "stale p95", "stale max", "stale p95 (time)", "client errors"}, rows))
	b.WriteString(`
## How it was measured

- **Server CPU**: utime+stime of the server process (/proc/PID/stat) over the window, in cores. **RSS**: VmRSS with every visitor set up; **per conn** = (RSS with the visitors connected − RSS before any visitor) / open connections (waitroom_connections), push modes only. **Goroutines per conn** from go_goroutines in /metrics the same way.
- **Other processes' CPU**: the machine's busy time (/proc/stat) minus the server's, its redis-server's and the bench's own, in cores: anything above a few hundredths means something else ran during the window and the row is less trustworthy.
- **HTTP req/s** and **wire bytes/s** are counted by the clients over the window: every request (a WebSocket upgrade or SSE stream counts once when opened), and every byte read and written on their TCP connections (HTTP headers included, TCP/IP headers not). Pollers share keep-alive connections (at most 256), as behind a load balancer. **Redis cmds/s**: total_commands_processed from INFO of the redis-server the bench started (a Lua script counts as its EVALSHA plus each command it runs). **Pushed msgs/s**: messages the push clients received over the window, of every kind (positions, admitted states, heartbeats, notices); in brackets the waiting states (positions) among them.
- **Lag**: for each visitor admitted inside the window, the time its client received the admitted state minus its notBefore; 0 when a poll learned it earlier (the client then waits for notBefore). "told / admitted" counts the visitors admitted in the window that their client was told of; after the window the clients run on for 1 s (push) or the longest nextPollMs a poller can be given plus 0.5 s (polling), so each had time to be told.
- **admitted/s**: visitors admitted inside the window per second (the configured rate is batch / tick); a lower figure means admission ticks were missed. **Server-side lag**: waitroom_delivery_lag_seconds (the server's write time minus notBefore) over the window, as the upper bounds of the histogram buckets holding p50 and p99; the difference to the client's lag is time in the kernel and in the (CPU-sharing) client.
- **Staleness**: every second, the position shown by 500 evenly spread visitors is compared with their true position. The shown position is what the page (static/page.js) shows: the last position received, moved on at its ratePerSecond (Waitroom.shown), on a push connection until the next message, for a poller until its next answer is due (nextPollMs, at least 1 s, plus 2 s). The true position is reconstructed after the window without extra load: admission is FIFO by ticket, so sorting admitted visitors by notBefore gives their ticket order; the tick that admitted each follows from its notBefore; a final join per untold visitor (always answered from Redis) gives the notBefore or exact position of the rest. True position = ticket rank − admitted so far; the error is |shown − true|, exact to within one batch near a tick boundary. "stale p95 (time)" divides by the admission rate.
`)
	return b.String()
}

func costSVG(rep *costReport) string {
	mk := func(title, unit string, f func(costResult) float64) panel {
		p := panel{Title: title, Unit: unit}
		for _, r := range rep.Results {
			p.Bars = append(p.Bars, bar{Label: modeLabel(r.Mode), Value: f(r)})
		}
		return p
	}
	panels := []panel{
		mk("Server CPU", "cores", func(r costResult) float64 { return r.CPUCores }),
		mk("Server RSS with visitors", "MiB", func(r costResult) float64 { return r.RSSMiB }),
		mk("HTTP requests", "per s", func(r costResult) float64 { return r.RequestsPerSec }),
		mk("Redis commands", "per s", func(r costResult) float64 { return r.RedisCmdsPerSec }),
		mk("Bytes on the wire", "KiB/s", func(r costResult) float64 { return r.BytesPerSec / 1024 }),
		mk("Delivery lag p99", "s", func(r costResult) float64 { return r.LagP99 }),
		mk("Shown position error p95", "positions", func(r costResult) float64 { return r.StaleP95 }),
		mk("RSS per connection", "KiB", func(r costResult) float64 { return r.RSSPerConnKiB }),
	}
	return barChartSVG("What push costs against polling",
		fmt.Sprintf("%d waiting visitors, %d per %d ms, %.0f s window per mode", rep.N, rep.Batch, rep.TickMs, rep.WindowSecs), panels)
}

// histQuantile estimates a quantile of a Prometheus histogram's
// observations between two scrapes, as the upper bound of the bucket that
// holds it; NaN without observations.
func histQuantile(m0, m1 map[string]float64, name, label string, q float64) float64 {
	type bucket struct{ le, n float64 }
	var bs []bucket
	prefix := name + "_bucket{"
	for k, v := range m1 {
		if !strings.HasPrefix(k, prefix) || !strings.Contains(k, label) {
			continue
		}
		i := strings.Index(k, `le="`)
		if i < 0 {
			continue
		}
		rest := k[i+4:]
		leStr := rest[:strings.IndexByte(rest, '"')]
		le, err := strconv.ParseFloat(leStr, 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{le: le, n: v - m0[k]})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || bs[len(bs)-1].n <= 0 {
		return math.NaN()
	}
	total := bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= q*total {
			return b.le
		}
	}
	return math.Inf(1)
}

// machineBusy is the CPU time all processes used since boot (/proc/stat:
// every field but idle and iowait).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var total int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // steal, guest (guest is inside user already)
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
	}
	return time.Duration(total) * time.Second / clockTicks
}

// ourCPU is the CPU time of the server, its Redis, this process and its
// cost-worker children.
func ourCPU(tgt *target, fleetPIDs []int) time.Duration {
	pids := []int{os.Getpid(), tgt.PID}
	for _, c := range tgt.procs {
		if c.Process != nil && c.Process.Pid != tgt.PID {
			pids = append(pids, c.Process.Pid)
		}
	}
	pids = append(pids, fleetPIDs...)
	var sum time.Duration
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil {
			sum += p.CPU
		}
	}
	return sum
}

// startOtherLoad starts measuring the CPU that processes other than the
// target's and this one use; the returned func stops and reports cores.
func startOtherLoad(tgt *target) func() float64 {
	t0, busy0, ours0 := time.Now(), machineBusy(), ourCPU(tgt, nil)
	return func() float64 {
		busy1, ours1 := machineBusy(), ourCPU(tgt, nil)
		if busy0 == 0 || busy1 == 0 {
			return math.NaN()
		}
		return max((busy1-busy0-(ours1-ours0)).Seconds()/time.Since(t0).Seconds(), 0)
	}
}

func costScenario() scenario {
	return scenario{name: "cost", external: true, flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o costOptions
		fs.IntVar(&o.N, "n", 0, "waiting visitors (default 10000; 200 with -quick)")
		fs.DurationVar(&o.Duration, "duration", 0, "measured window per mode (default 60s; 5s with -quick)")
		fs.IntVar(&o.Batch, "batch", 0, "server -batch: visitors admitted per tick (default 14; 2 with -quick)")
		fs.DurationVar(&o.Tick, "tick", 0, "server -tick (default 100ms)")
		modes := fs.String("modes", "ws,sse,poll,poll1s", "modes to run, comma-separated")
		fs.IntVar(&o.PerProc, "per-proc", 0, "visitors per client process; more are spread over child processes (default 15000)")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Ext, o.Progress = env.out, env.quick, env.ext, env.progress
			o.Modes = splitList(*modes)
			rep, err := runCost(ctx, o, env.command)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("cost.{md,json,svg} (%d modes)", len(rep.Results)), nil
		}
	}}
}

// costWindow waits out the measured window from t0, with a progress line
// every few seconds.
func costWindow(ctx context.Context, o costOptions, mode string, tgt *target, t0 time.Time, withConns procSample, polls0 float64) error {
	every := 5 * time.Second
	if o.Quick {
		every = time.Second
	}
	end := t0.Add(o.Duration)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			m := tgt.metrics(ctx)
			p := tgt.proc()
			el := time.Since(t0)
			fmt.Fprintf(o.Progress, "cost %s: %3.0fs/%v conns=%.0f cpu=%.2f cores rss=%.0f MiB polls=%.0f\n",
				mode, el.Seconds(), o.Duration, m["waitroom_connections"],
				(p.CPU-withConns.CPU).Seconds()/el.Seconds(), float64(p.RSSKiB)/1024, m["waitroom_polls_total"]-polls0)
		case <-time.After(time.Until(end)):
		}
	}
	return nil
}

// endCostFleets ends every fleet in handles and collects the reports;
// each one ended is set to nil, so an abort skips it.
func endCostFleets(handles []fleetOf[fleetReport]) ([]fleetReport, error) {
	var reports []fleetReport
	for i, h := range handles {
		r, err := h.end()
		handles[i] = nil
		if err != nil {
			return nil, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// costProcs are the server's /proc readings before the visitors, once
// they are connected, and at the end of the window.
type costProcs struct{ before, withConns, after procSample }

// costServerFigures are the server's CPU, memory and goroutines in res,
// from /proc (of pid, 0 when unknown) and its metrics m0 before the
// visitors and m1 at the start of the window.
func costServerFigures(res *costResult, pid int, pr costProcs, m1, m0 map[string]float64, win float64) {
	if pid > 0 {
		res.CPUCores = (pr.after.CPU - pr.withConns.CPU).Seconds() / win
		res.RSSBeforeMiB = float64(pr.before.RSSKiB) / 1024
		res.RSSMiB = float64(pr.withConns.RSSKiB) / 1024
	} else {
		res.CPUCores, res.RSSBeforeMiB, res.RSSMiB = math.NaN(), math.NaN(), math.NaN()
	}
	res.Goroutines = m1["go_goroutines"]
	res.Conns = m1["waitroom_connections"]
	res.RSSPerConnKiB, res.GoroutinesPerC = math.NaN(), math.NaN()
	// Per connection: over the connections open when measured (visitors
	// admitted during set-up have already closed theirs).
	if conns := res.Conns; (res.Mode == modeWS || res.Mode == modeSSE) && conns > 0 {
		res.RSSPerConnKiB = float64(pr.withConns.RSSKiB-pr.before.RSSKiB) / conns
		res.GoroutinesPerC = (m1["go_goroutines"] - m0["go_goroutines"]) / conns
		if pid == 0 {
			res.RSSPerConnKiB = math.NaN()
		}
	}
}

// costClientFigures are what the fleets saw in res: requests, bytes,
// pushes and polls per second, and the share of polls answered from
// memory (metrics m1 at the start of the window, m2 at its end).
func costClientFigures(res *costResult, reports []fleetReport, win float64, m1, m2 map[string]float64, polls0 float64) {
	var w wireTotals
	var polls, hits int64
	for _, r := range reports {
		w.Read += r.Wire.Read
		w.Written += r.Wire.Written
		w.Requests += r.Wire.Requests
		w.Pushed += r.Wire.Pushed
		w.Positions += r.Wire.Positions
		polls += r.Polls
		hits += r.PollHits
		res.Errors += r.Errors
		if res.FirstErr == "" {
			res.FirstErr = r.FirstErr
		}
	}
	res.RequestsPerSec = float64(w.Requests) / win
	res.BytesPerSec = float64(w.Read+w.Written) / win
	res.PushedPerSec, res.PositionsPerSec = math.NaN(), math.NaN()
	if res.Mode == modeWS || res.Mode == modeSSE {
		res.PushedPerSec, res.PositionsPerSec = float64(w.Pushed)/win, float64(w.Positions)/win
	}
	res.PollsPerSec = float64(polls) / win
	res.PollMemoryShare = math.NaN()
	if srv := m2["waitroom_polls_total"] - polls0; srv > 0 {
		res.PollMemoryShare = (m2[`waitroom_polls_total{answer="memory"}`] - m1[`waitroom_polls_total{answer="memory"}`]) / srv
	}
}

// startCostFleets starts the mode's visitors into handles, spread evenly,
// with a sample of them recording the positions they show.
func startCostFleets(ctx context.Context, o costOptions, url, room, mode string, handles []fleetOf[fleetReport]) error {
	procs := len(handles)
	step := max(o.N/max(o.Samples, 1), 1)
	sampleEvery := time.Second
	if o.Quick {
		sampleEvery = 250 * time.Millisecond
	}
	return costFleets.startAll(ctx, handles, func(p int) fleetConfig {
		first := p * o.N / procs
		return fleetConfig{URL: url, Room: room, Mode: mode, First: first, Count: (p+1)*o.N/procs - first,
			SampleStep: step, SampleEvery: sampleEvery, IPBase: 2 + p*20, IPs: 20, SetupConc: 64, PollConns: 256}
	})
}

// costGrace gives the visitors admitted late in the window time to be
// told: a pusher at once, a poller after at most the longest nextPollMs.
func costGrace(ctx context.Context, o costOptions, mode string) error {
	grace := time.Second
	if mode == modePoll || mode == modePoll1s {
		grace = o.pollGrace()
	}
	fmt.Fprintf(o.Progress, "cost %s: window closed; %v for late admissions to be told\n", mode, grace)
	if !sleepCtx(ctx, grace) {
		return ctx.Err()
	}
	return nil
}
