package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// autopilotOptions configure the autopilot scenario: the same herd through
// the built-in proxy in front of an origin of fixed capacity, under three
// static admission rates and under the autopilot, with the origin's
// capacity halved part-way through every run.
type autopilotOptions struct {
	Out       string
	Quick     bool
	Visitors  int           // the herd: visitors in the room at every moment
	Pool      int           // the origin's slots at the start (halved part-way)
	Service   time.Duration // each order holds a slot this long
	WaitBound time.Duration // an order waits at most this long for a slot, then 503
	Safety    float64       // the optimum is Pool/Service·Safety
	Tick      time.Duration // the server's -tick
	Before    time.Duration // from the herd's arrival to the halving
	After     time.Duration // from the halving to the end
	Target    time.Duration // the room's latencyTarget
	MaxErrors float64       // the room's maxErrorRate
	MinRate   float64       // the room's minRate: where the autopilot starts
	MaxRate   float64       // the room's maxRate
	Transport string        // ws or poll: how a waiting visitor learns it is admitted
	Runs      []string      // of right, high, low, autopilot
	Progress  io.Writer
}

func (o *autopilotOptions) defaults() {
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	q := o.Quick
	// Enough visitors that the room's queue never runs dry, even at twice
	// the optimum with every order waiting out the bound: 280/s × about
	// 1.5 s (notBefore, wait, service) is some 420 between admission and
	// answer.
	o.Visitors = orInt(o.Visitors, map[bool]int{false: 1000, true: 400}[q])
	// -quick: 20 slots, so that its rates (70, 140, 35/s) are whole
	// batches of a 200 ms tick and the machine is spared half the load.
	o.Pool = orInt(o.Pool, map[bool]int{false: 40, true: 20}[q])
	o.Tick = orDur(o.Tick, map[bool]time.Duration{false: 100 * time.Millisecond, true: 200 * time.Millisecond}[q])
	o.Service = orDur(o.Service, 200*time.Millisecond)
	o.WaitBound = orDur(o.WaitBound, time.Second)
	if o.Safety == 0 {
		o.Safety = 0.7
	}
	o.Before = orDur(o.Before, map[bool]time.Duration{false: 60 * time.Second, true: 12 * time.Second}[q])
	o.After = orDur(o.After, map[bool]time.Duration{false: 30 * time.Second, true: 8 * time.Second}[q])
	o.Target = orDur(o.Target, 500*time.Millisecond)
	if o.MaxErrors == 0 {
		o.MaxErrors = 0.01
	}
	if o.MinRate == 0 {
		o.MinRate = 10
	}
	if o.MaxRate == 0 {
		o.MaxRate = 400
	}
	if o.Transport == "" {
		o.Transport = "ws"
	}
	if len(o.Runs) == 0 {
		o.Runs = []string{"right", "high", "low", "autopilot"}
	}
}

// optimum is the origin's rate as the issue names it: its pool over the
// service time at the usual safety margin (40 / 200 ms · 0.7 = 140/s).
func (o *autopilotOptions) optimum(pool int) float64 {
	return float64(pool) / o.Service.Seconds() * o.Safety
}

// errNoAutopilot is returned when the server has no autopilot to turn on.
var errNoAutopilot = errors.New("the server has no autopilot: its room settings or stats lack it (build it from a tree with the controller of issue 44)")

// apPhase is one run's figures before or after the halving.
type apPhase struct {
	Seconds           float64 `json:"seconds"`
	Orders            int     `json:"orders"` // answered 201 by the origin
	OrdersPerSecond   float64 `json:"ordersPerSecond"`
	OfOptimum         float64 `json:"ordersShareOfOptimum"`
	Admitted          int     `json:"admitted"` // visitors whose notBefore falls in the phase
	AdmittedPerSecond float64 `json:"admittedPerSecond"`
	OriginP50Ms       float64 `json:"originP50Ms"` // every order the origin answered, 503s included
	OriginP95Ms       float64 `json:"originP95Ms"`
	Pool503           int     `json:"pool503"`  // 503 pool_timeout from the origin
	Other5xx          int     `json:"other5xx"` // any other 5xx a visitor was answered on an order
	ErrorShare        float64 `json:"errorShare"`
	WaitP50           float64 `json:"waitP50Seconds"` // join to notBefore
	WaitP95           float64 `json:"waitP95Seconds"`
	StillWaiting      int     `json:"stillWaitingAtEnd,omitempty"`
}

// apSecond is one second of a run, counted by when orders were answered.
type apSecond struct {
	T       float64 `json:"t"` // end of the second, from the herd's arrival
	Orders  int     `json:"orders"`
	Errors  int     `json:"errors"`
	P95Ms   float64 `json:"p95Ms"`
	Rate    float64 `json:"rate"` // the room's admission rate read at that second
	Waiting int64   `json:"waiting"`
}

// apChange is a rate change the autopilot reported.
type apChange struct {
	T      float64 `json:"t"`
	Rate   float64 `json:"rate"`
	Reason string  `json:"reason"`
}

type apRun struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"` // right, high, low, autopilot
	StaticRate float64 `json:"staticRatePerSecond,omitempty"`
	Batch      int     `json:"batch"` // per tick at the start
	HalvingAt  float64 `json:"halvingAtSeconds"`
	Seconds    float64 `json:"runSeconds"`
	Before     apPhase `json:"beforeHalving"`
	After      apPhase `json:"afterHalving"`
	// The autopilot's figures (NaN, null in JSON, for a static run or
	// when it did not happen).
	ReachSeconds       float64    `json:"reachSeconds"`
	HoldShare          float64    `json:"holdShare"`
	P95AfterReachMs    float64    `json:"originP95AfterReachMs"`
	RecoverSeconds     float64    `json:"recoverSeconds"`
	ErrorsUntilRecover int        `json:"errorsUntilRecovered"`
	OrdersUntilRecover int        `json:"ordersUntilRecovered"`
	SecondsOverAfter   int        `json:"secondsOverTargetAfterHalving"`
	RateMin            float64    `json:"rateMin"`
	RateMax            float64    `json:"rateMax"`
	RateAtHalving      float64    `json:"rateAtHalving"`
	RateAtEnd          float64    `json:"rateAtEnd"`
	Changes            []apChange `json:"changes"`
	VisitorErrors      int        `json:"visitorErrors"`
	FirstVisitorError  string     `json:"firstVisitorError,omitempty"`
	PerSecond          []apSecond `json:"perSecond"`
	OriginSamples      int        `json:"originSamples"`
	OriginOKTotal      int        `json:"originOkTotal"`
	Origin503Total     int        `json:"origin503Total"`
	// CPU over the run, in cores: the server, redis-server, the bench and
	// its origin; and every other process on the machine.
	OwnCores            float64 `json:"ownCpuCores"`
	OtherCores          float64 `json:"otherProcessesCpuCores"`
	VisitorOrdersOK     int     `json:"visitorOrdersOk"`
	VisitorPool503Total int     `json:"visitorPool503Total"`
}

type autopilotReport struct {
	Scenario        string       `json:"scenario"`
	Machine         string       `json:"machine"`
	Command         string       `json:"command"`
	Visitors        int          `json:"visitors"`
	Pool            int          `json:"pool"`
	PoolAfter       int          `json:"poolAfterHalving"`
	ServiceMs       float64      `json:"serviceMs"`
	WaitBoundMs     float64      `json:"waitBoundMs"`
	Safety          float64      `json:"safety"`
	TickMs          float64      `json:"tickMs"`
	Optimum         float64      `json:"optimumPerSecond"`
	OptimumAfter    float64      `json:"optimumAfterHalvingPerSecond"`
	Capacity        float64      `json:"capacityPerSecond"` // pool/service: the most the origin can serve
	LatencyTargetMs float64      `json:"latencyTargetMs"`
	MaxErrorRate    float64      `json:"maxErrorRate"`
	MinRate         float64      `json:"minRate"`
	MaxRate         float64      `json:"maxRate"`
	Transport       string       `json:"transport"`
	Runs            []apRun      `json:"runs"`
	Checks          []scaleCheck `json:"checks"`
}

func runAutopilot(ctx context.Context, o autopilotOptions, command string) (*autopilotReport, error) {
	o.defaults()
	if o.Pool < 2 {
		return nil, fmt.Errorf("autopilot: -pool must be at least 2 (it is halved)")
	}
	rep := &autopilotReport{Scenario: "autopilot", Machine: machine(), Command: command, Visitors: o.Visitors,
		Pool: o.Pool, PoolAfter: o.Pool / 2, ServiceMs: ms(o.Service), WaitBoundMs: ms(o.WaitBound), Safety: o.Safety,
		TickMs: ms(o.Tick), Optimum: o.optimum(o.Pool), OptimumAfter: o.optimum(o.Pool / 2),
		Capacity: float64(o.Pool) / o.Service.Seconds(), LatencyTargetMs: ms(o.Target), MaxErrorRate: o.MaxErrors,
		MinRate: o.MinRate, MaxRate: o.MaxRate, Transport: o.Transport}
	// The autopilot's run goes first, so that a server without it is
	// refused before the static runs took minutes; the report keeps the
	// order asked for.
	order := make([]int, 0, len(o.Runs))
	for i, kind := range o.Runs {
		if kind == "autopilot" {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	rep.Runs = make([]apRun, len(o.Runs))
	for _, i := range order {
		r, err := autopilotOnce(ctx, o, o.Runs[i], rep.Optimum)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", o.Runs[i], err)
		}
		rep.Runs[i] = r
	}
	rep.Checks = autopilotChecks(rep)
	if err := writeOutputs(o.Out, "autopilot", autopilotMarkdown(rep), rep, autopilotSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// apVisit is one visitor's record: it joined through the proxy, waited to
// be admitted, and placed one order.
type apVisit struct {
	join, nb, done time.Time // nb zero: not admitted; done zero: no order answered
	status         int       // the order's answer
	code           string    // its error code, if any
	err            error
}

// autopilotOnce runs the herd once: a fresh redis-server, server and
// origin; kind says how the room's rate is set.
func autopilotOnce(ctx context.Context, o autopilotOptions, kind string, optimum float64) (apRun, error) {
	res := apRun{Kind: kind, ReachSeconds: math.NaN(), HoldShare: math.NaN(), P95AfterReachMs: math.NaN(),
		RecoverSeconds: math.NaN(), RateMin: math.NaN(), RateMax: math.NaN(), RateAtHalving: math.NaN(), RateAtEnd: math.NaN()}
	switch kind {
	case "right":
		res.StaticRate = optimum
	case "high":
		res.StaticRate = 2 * optimum
	case "low":
		res.StaticRate = optimum / 2
	case "autopilot":
	default:
		return res, fmt.Errorf("unknown run %q (want right, high, low or autopilot)", kind)
	}
	rate := res.StaticRate
	if kind == "autopilot" {
		rate = o.MinRate
	}
	res.Batch = max(1, int(math.Round(rate*o.Tick.Seconds())))
	if kind == "autopilot" {
		res.Name = "autopilot"
	} else {
		res.StaticRate = float64(res.Batch) / o.Tick.Seconds()
		res.Name = fmt.Sprintf("static %s/s", num(res.StaticRate))
	}

	appPort, err := freePort()
	if err != nil {
		return res, err
	}
	ctlPort, err := freePort()
	if err != nil {
		return res, err
	}
	origin, err := startWorker[originReport](ctx, originKind.worker, originConfig{AppPort: appPort, CtlPort: ctlPort,
		Pool: o.Pool, Service: o.Service, WaitBound: o.WaitBound})
	if err != nil {
		return res, fmt.Errorf("origin: %w", err)
	}
	defer origin.abort()

	dir, err := os.MkdirTemp("", "waitroom-bench-autopilot")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	rooms := filepath.Join(dir, "rooms.yaml")
	if err := os.WriteFile(rooms, fmt.Appendf(nil, "rooms:\n  shop:\n    strategy: fixed\n    batch: %d\n", res.Batch), 0o644); err != nil {
		return res, err
	}
	key := newSecret()
	tgt, err := startTarget(ctx, externalOpts{}, []string{"-admin-key", key, "-tick", o.Tick.String(),
		"-upstream", "http://127.0.0.1:" + strconv.Itoa(appPort), "-route", "{match: '*/shop/*', room: shop}", "-rooms", rooms})
	if err != nil {
		return res, err
	}
	defer tgt.Close()
	// In proxy mode the root is the app's: the server's own readiness is
	// under the page prefix.
	if err := waitReady(ctx, tgt.URL+"/waitroom", 30*time.Second); err != nil {
		return res, fmt.Errorf("server not ready behind its prefix: %w", err)
	}
	adm := adminClient{base: tgt.URL + "/waitroom", key: key}
	if kind == "autopilot" {
		if err := autopilotTurnOn(ctx, adm, o); err != nil {
			return res, err
		}
	}

	label := "autopilot: " + res.Name
	fmt.Fprintf(o.Progress, "%s: server %s, origin 127.0.0.1:%d (pool %d), %d visitors over %s\n", label, tgt.URL, appPort, o.Pool, o.Visitors, o.Transport)
	h := newAPHerd(tgt.URL, o.Transport)
	defer h.close()

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	originPIDs := []int{origin.pid()}
	busy0, own0 := machineBusy(), ourCPU(tgt, originPIDs)
	t0 := time.Now()
	var wg sync.WaitGroup
	for range o.Visitors {
		wg.Go(func() { h.loop(rctx) })
	}
	halveAt := t0.Add(o.Before)
	end := halveAt.Add(o.After)
	halved := false
	var lastReason string
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastOK int64
	for time.Now().Before(end) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		now := time.Now()
		if !halved && !now.Before(halveAt) {
			if err := originResize(ctx, ctlPort, o.Pool/2); err != nil {
				cancel()
				wg.Wait()
				return res, err
			}
			halved = true
			res.HalvingAt = time.Since(t0).Seconds()
			fmt.Fprintf(o.Progress, "%s: %3.0fs the origin's pool is now %d\n", label, res.HalvingAt, o.Pool/2)
		}
		var st apStats
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		err := adm.call(sctx, "GET", "/rooms/shop/stats", "", &st)
		scancel()
		sec := apSecond{T: now.Sub(t0).Seconds(), Rate: math.NaN(), Waiting: -1}
		if err == nil {
			sec.Waiting = st.Waiting
			switch {
			case kind != "autopilot":
				sec.Rate = res.StaticRate
			case st.Autopilot != nil:
				sec.Rate = st.Autopilot.Rate
				if r := st.Autopilot.Reason; r != "" && r != lastReason {
					lastReason = r
					res.Changes = append(res.Changes, apChange{T: sec.T, Rate: st.Autopilot.Rate, Reason: r})
				}
			}
		}
		res.PerSecond = append(res.PerSecond, sec)
		ok := h.ok.Load()
		fmt.Fprintf(o.Progress, "%s: %3.0fs rate %s/s, orders %d in the last second, origin 503 so far %d, other 5xx %d, waiting %d\n",
			label, sec.T, num(sec.Rate), ok-lastOK, h.pool503.Load(), h.other5xx.Load(), sec.Waiting)
		lastOK = ok
	}
	cancel()
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	busy1, own1 := machineBusy(), ourCPU(tgt, originPIDs)
	res.OwnCores, res.OtherCores = math.NaN(), math.NaN()
	if busy0 > 0 && busy1 > 0 {
		res.OwnCores = (own1 - own0).Seconds() / res.Seconds
		res.OtherCores = max((busy1-busy0-(own1-own0)).Seconds()/res.Seconds, 0)
	}
	orep, err := origin.end()
	if err != nil {
		return res, fmt.Errorf("origin report: %w", err)
	}
	if !halved {
		return res, fmt.Errorf("stopped before the halving: %v", ctx.Err())
	}
	apSummarise(&res, o, optimum, t0, h.visits(), orep)
	if res.VisitorErrors > 0 {
		fmt.Fprintf(o.Progress, "%s: %d visitor errors, the first: %s\n", label, res.VisitorErrors, res.FirstVisitorError)
	}
	fmt.Fprintf(o.Progress, "%s: before the halving %s orders/s (%.0f%% of %s), origin p95 %s ms, errors %.1f%%, wait p50 %s p95 %s; after: %s orders/s, p95 %s ms, errors %.1f%%\n",
		label, num(res.Before.OrdersPerSecond), res.Before.OfOptimum*100, num(optimum), num(res.Before.OriginP95Ms), res.Before.ErrorShare*100,
		secs(res.Before.WaitP50), secs(res.Before.WaitP95), num(res.After.OrdersPerSecond), num(res.After.OriginP95Ms), res.After.ErrorShare*100)
	return res, nil
}

// apStats is the part of the room's admin stats the run reads.
type apStats struct {
	Waiting   int64 `json:"waiting"`
	Autopilot *struct {
		On         bool    `json:"on"`
		Rate       float64 `json:"rate"`
		P95Ms      float64 `json:"p95Ms"`
		Overloaded bool    `json:"overloaded"`
		Reason     string  `json:"reason"`
	} `json:"autopilot"`
}

// autopilotTurnOn turns the room's autopilot on from minRate, and checks
// the server says so in the room's stats; errNoAutopilot when it does not.
func autopilotTurnOn(ctx context.Context, adm adminClient, o autopilotOptions) error {
	body, _ := json.Marshal(map[string]any{"autopilot": true, "latencyTarget": o.Target.Milliseconds(),
		"maxErrorRate": o.MaxErrors, "minRate": o.MinRate, "maxRate": o.MaxRate})
	if err := adm.call(ctx, "PUT", "/rooms/shop", string(body), nil); err != nil {
		return fmt.Errorf("%w: %v", errNoAutopilot, err)
	}
	var room map[string]json.RawMessage
	if err := adm.call(ctx, "GET", "/rooms/shop", "", &room); err != nil {
		return err
	}
	if !bytes.Equal(room["autopilot"], []byte("true")) {
		return errNoAutopilot
	}
	var st apStats
	if err := waitFor(ctx, 5*time.Second, func() bool {
		return adm.call(ctx, "GET", "/rooms/shop/stats", "", &st) == nil && st.Autopilot != nil && st.Autopilot.On
	}); err != nil {
		return errNoAutopilot
	}
	return nil
}

// originResize sets the origin's pool size on its control listener.
func originResize(ctx context.Context, port, size int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1:"+strconv.Itoa(port)+"/pool", strings.NewReader(fmt.Sprintf(`{"size":%d}`, size)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("origin resize: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("origin resize: http %d", resp.StatusCode)
	}
	return nil
}

// apHerd is the herd: each of its visitors, in a loop until the run
// ends, calls the shop through the proxy (429: a place is taken), waits
// to be admitted, and calls it again to place its order; then a new
// visitor takes its place. So the room holds the same number of visitors
// the whole run and the origin sees orders as fast as the room admits.
type apHerd struct {
	base      string
	transport string
	w         wire
	a         *api // the waitroom API under the page prefix
	mu        sync.Mutex
	done      []apVisit
	ok        atomic.Int64
	pool503   atomic.Int64
	other5xx  atomic.Int64
}

func newAPHerd(base, transport string) *apHerd {
	h := &apHerd{base: base, transport: transport}
	h.a = newAPI(base+"/waitroom", "shop", &h.w, newDialer(&h.w, 2, 20), 256)
	return h
}

func (h *apHerd) close() { h.a.close() }

func (h *apHerd) visits() []apVisit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.done
}

func (h *apHerd) loop(ctx context.Context) {
	for ctx.Err() == nil {
		v := h.visit(ctx)
		h.mu.Lock()
		h.done = append(h.done, v)
		h.mu.Unlock()
		if v.err != nil && ctx.Err() == nil {
			sleepCtx(ctx, 200*time.Millisecond) // not a tight loop on a failing server
		}
	}
}

// shop calls the guarded path as an API client, with the visitor's
// credential when it has one; it returns the status, the body's error
// code and the body.
func (h *apHerd) shop(ctx context.Context, cred string) (int, string, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", h.base+"/shop/order", strings.NewReader("{}"))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		req.Header.Set("X-Visitor", cred)
	}
	h.w.requests.Add(1)
	// Orders go over the stream client (no connection limit): a capped
	// pool of connections would queue them in the bench and shape the
	// origin's load itself.
	resp, err := h.a.stream.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", nil, err
	}
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode >= 300 && json.Unmarshal(body, &e) == nil {
		return resp.StatusCode, e.Error.Code, body, nil
	}
	return resp.StatusCode, "", body, nil
}

func (h *apHerd) visit(ctx context.Context) (v apVisit) {
	v.join = time.Now()
	code, _, body, err := h.shop(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			v.err = err
		}
		return v
	}
	if code != http.StatusTooManyRequests {
		v.err = fmt.Errorf("a new visitor was answered %d, want 429: %.200s", code, body)
		return v
	}
	var st state
	if err := json.Unmarshal(body, &st); err != nil || st.Visitor == "" {
		v.err = fmt.Errorf("a 429 without a state and credential: %.200s", body)
		return v
	}
	cred := st.Visitor
	if st.Status != "admitted" {
		if st, _, err = waitAdmitted(ctx, h.a, h.transport, cred, st); err != nil {
			if ctx.Err() == nil {
				v.err = err
			}
			return v
		}
	}
	v.nb = st.NotBefore
	if !sleepCtx(ctx, time.Until(st.NotBefore)) {
		return v
	}
	// The check passes a token valid now; a clock a hair behind
	// notBefore is answered 429 again, and asked again shortly.
	for range 40 {
		status, ecode, body, err := h.shop(ctx, cred)
		if err != nil {
			if ctx.Err() == nil {
				v.err = err
			}
			return v
		}
		if status == http.StatusTooManyRequests {
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return v
			}
			continue
		}
		v.done, v.status, v.code = time.Now(), status, ecode
		switch {
		case status == http.StatusCreated:
			h.ok.Add(1)
		case status == http.StatusServiceUnavailable && ecode == "pool_timeout":
			h.pool503.Add(1)
		case status >= 500:
			h.other5xx.Add(1)
		default:
			v.err = fmt.Errorf("order answered %d: %.200s", status, body)
		}
		return v
	}
	v.err = errors.New("admitted, but the proxy did not let the order through within 2 s")
	return v
}

// apSummarise turns the origin's samples, the visitors' records and the
// per-second readings into the run's figures.
func apSummarise(res *apRun, o autopilotOptions, optimum float64, t0 time.Time, visits []apVisit, orep originReport) {
	t0ms := t0.UnixMilli()
	halve := res.HalvingAt
	at := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	phaseOf := func(t float64) *apPhase {
		if t < halve {
			return &res.Before
		}
		return &res.After
	}
	res.Before.Seconds, res.After.Seconds = halve, res.Seconds-halve
	nsec := int(math.Ceil(res.Seconds))
	perOrders, perErrors := make([]int, nsec+1), make([]int, nsec+1)
	perLat := make([][]float64, nsec+1)
	lat := map[*apPhase][]float64{}
	for _, s := range orep.Samples {
		done := float64(s.AtMs-t0ms)/1e3 + float64(s.Ms)/1e3
		if done < 0 {
			continue
		}
		p := phaseOf(done)
		lat[p] = append(lat[p], float64(s.Ms))
		i := min(int(done), nsec)
		perLat[i] = append(perLat[i], float64(s.Ms))
		res.OriginSamples++
		if s.OK {
			p.Orders++
			res.OriginOKTotal++
			perOrders[i]++
		} else {
			p.Pool503++
			res.Origin503Total++
			perErrors[i]++
		}
	}
	waits := map[*apPhase][]float64{}
	for _, v := range visits {
		if v.err != nil {
			res.VisitorErrors++
			if res.FirstVisitorError == "" {
				res.FirstVisitorError = v.err.Error()
			}
		}
		switch {
		case v.status == http.StatusCreated:
			res.VisitorOrdersOK++
		case v.status == http.StatusServiceUnavailable && v.code == "pool_timeout":
			res.VisitorPool503Total++
		case v.status >= 500:
			t := at(v.done)
			phaseOf(t).Other5xx++
			perErrors[min(max(int(t), 0), nsec)]++
		}
		switch {
		case !v.nb.IsZero() && at(v.nb) <= res.Seconds:
			p := phaseOf(at(v.nb))
			p.Admitted++
			waits[p] = append(waits[p], v.nb.Sub(v.join).Seconds())
		case v.nb.IsZero() && v.err == nil && !v.join.IsZero():
			// Still waiting when the run ended: it waited at least this.
			res.After.StillWaiting++
			waits[&res.After] = append(waits[&res.After], res.Seconds-at(v.join))
		}
	}
	for _, p := range []*apPhase{&res.Before, &res.After} {
		if p.Seconds > 0 {
			p.OrdersPerSecond = float64(p.Orders) / p.Seconds
			p.AdmittedPerSecond = float64(p.Admitted) / p.Seconds
		}
		opt := optimum
		if p == &res.After {
			opt = optimum / 2
		}
		p.OfOptimum = p.OrdersPerSecond / opt
		l := lat[p]
		p.OriginP50Ms, p.OriginP95Ms = quantile(l, .5), quantile(l, .95)
		p.ErrorShare = math.NaN()
		if n := p.Orders + p.Pool503 + p.Other5xx; n > 0 {
			p.ErrorShare = float64(p.Pool503+p.Other5xx) / float64(n)
		}
		w := waits[p]
		p.WaitP50, p.WaitP95 = quantile(w, .5), quantile(w, .95)
	}
	// Per second: the readings taken each second, with the orders
	// answered in the second before each.
	for k := range res.PerSecond {
		s := &res.PerSecond[k]
		i := int(math.Round(s.T)) - 1
		if i < 0 || i > nsec {
			continue
		}
		s.Orders, s.Errors = perOrders[i], perErrors[i]
		s.P95Ms = quantile(perLat[i], .95)
	}
	if res.Kind != "autopilot" {
		return
	}
	target := ms(o.Target)
	for _, s := range res.PerSecond {
		if math.IsNaN(s.Rate) {
			continue
		}
		if math.IsNaN(res.RateMin) || s.Rate < res.RateMin {
			res.RateMin = s.Rate
		}
		if math.IsNaN(res.RateMax) || s.Rate > res.RateMax {
			res.RateMax = s.Rate
		}
		if s.T <= halve {
			res.RateAtHalving = s.Rate
		}
		res.RateAtEnd = s.Rate
	}
	// Reached: the first whole second from which the orders of the last
	// three seconds average 90% of the optimum; held: the share of such
	// three-second spans from then to the halving that stay there.
	avg3 := func(i int) float64 { return float64(perOrders[i]+perOrders[i-1]+perOrders[i-2]) / 3 }
	hb := int(halve) // seconds wholly before the halving
	reach := -1
	for i := 2; i < hb; i++ {
		if avg3(i) >= 0.9*optimum {
			reach = i
			break
		}
	}
	if reach >= 0 {
		res.ReachSeconds = float64(reach + 1)
		held, spans := 0, 0
		var after []float64
		for i := reach; i < hb; i++ {
			spans++
			if avg3(i) >= 0.9*optimum {
				held++
			}
			after = append(after, perLat[i]...)
		}
		res.HoldShare = float64(held) / float64(spans)
		res.P95AfterReachMs = quantile(after, .95)
	}
	// Recovered: the end of the last second after the halving whose p95
	// is over the target, if at least three seconds under it follow
	// before the run ends; 0 when no second after the halving was over.
	first := int(math.Ceil(halve))
	last := -1
	for i := first; i < nsec; i++ {
		if len(perLat[i]) > 0 && quantile(perLat[i], .95) > target {
			last = i
			res.SecondsOverAfter++
		}
	}
	switch {
	case last < 0:
		res.RecoverSeconds = 0
	case last+1 <= nsec-3:
		res.RecoverSeconds = float64(last+1) - halve
	}
	if !math.IsNaN(res.RecoverSeconds) {
		for i := max(int(halve), 0); i < min(nsec, int(math.Ceil(halve+res.RecoverSeconds))); i++ {
			res.ErrorsUntilRecover += perErrors[i]
			res.OrdersUntilRecover += perOrders[i]
		}
	}
}

func autopilotScenario() scenario {
	return scenario{name: "autopilot", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o autopilotOptions
		fs.IntVar(&o.Visitors, "visitors", 0, "visitors in the room at every moment; each one admitted orders once and is replaced by a new one (default 1000; 400 with -quick)")
		fs.IntVar(&o.Pool, "pool", 0, "the origin's slots at the start, halved part-way (default 40; 20 with -quick)")
		fs.DurationVar(&o.Service, "service-time", 0, "how long an order holds a slot (default 200ms)")
		fs.DurationVar(&o.WaitBound, "pool-wait", 0, "how long an order waits for a slot before the origin answers 503 (default 1s)")
		fs.DurationVar(&o.Tick, "tick", 0, "the server's -tick (default 100ms; 200ms with -quick)")
		fs.DurationVar(&o.Before, "before", 0, "from the herd's arrival to the halving (default 60s; 12s with -quick)")
		fs.DurationVar(&o.After, "after", 0, "from the halving to the end of a run (default 30s; 8s with -quick)")
		fs.DurationVar(&o.Target, "latency-target", 0, "the room's latencyTarget (default 500ms)")
		fs.Float64Var(&o.MinRate, "min-rate", 0, "the room's minRate, where the autopilot starts (default 10)")
		fs.Float64Var(&o.MaxRate, "max-rate", 0, "the room's maxRate (default 400)")
		fs.StringVar(&o.Transport, "transport", "ws", "how a waiting visitor learns it is admitted: ws or poll")
		runs := fs.String("runs", "right,high,low,autopilot", "runs, comma-separated: right (the optimum), high (twice), low (half), autopilot")
		return func(ctx context.Context, env runEnv) (string, error) {
			if o.Transport != "ws" && o.Transport != "poll" {
				return "", fmt.Errorf("autopilot: -transport must be ws or poll")
			}
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			o.Runs = splitList(*runs)
			_, err := runAutopilot(ctx, o, env.command)
			return "autopilot.{md,json,svg}", err
		}
	}}
}
