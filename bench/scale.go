package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The figures the scale scenario is held against; they hold for the target
// configuration only (45,000 WebSocket visitors over 3 instances).
const (
	scaleTargetN         = 45000
	scaleTargetInstances = 3
	scaleTargetCores     = 0.5   // all instances together, admitting and paused
	scaleTargetIdleCores = 0.01  // per 10,000 connections in the idle phase
	scaleTargetLagP99    = 0.020 // seconds
)

// scaleIdleAfter is how long into the paused phase the idle phase starts:
// the pause message has gone to every connection, the admitted visitors'
// connections are closed and the collector has run.
const scaleIdleAfter = 20 * time.Second

// scaleOptions configure the scale scenario.
type scaleOptions struct {
	Out       string
	Quick     bool
	N         int           // push visitors
	Transport string        // ws or sse
	Instances int           // server instances sharing one redis-server
	Admit     time.Duration // the admitting phase
	Idle      time.Duration // the paused phase after it
	Batch     int
	Tick      time.Duration
	PerProc   int           // visitors per client process; more are spread over scale-worker children
	WSPing    time.Duration // the servers' WebSocket heartbeat interval
	Progress  io.Writer
}

func (o *scaleOptions) defaults() {
	if o.Quick {
		o.N = orInt(o.N, 3000)
		o.Admit = orDur(o.Admit, 5*time.Second)
		o.Idle = orDur(o.Idle, 10*time.Second)
		// Heartbeats every 3 s, so the short paused phase still sees
		// every connection get three.
		o.WSPing = orDur(o.WSPing, 3*time.Second)
	}
	o.WSPing = orDur(o.WSPing, 40*time.Second)
	o.N = orInt(o.N, scaleTargetN)
	o.Admit = orDur(o.Admit, 30*time.Second)
	o.Idle = orDur(o.Idle, 60*time.Second)
	o.Instances = orInt(o.Instances, scaleTargetInstances)
	o.Batch = orInt(o.Batch, 14)
	o.Tick = orDur(o.Tick, 100*time.Millisecond)
	o.PerProc = orInt(o.PerProc, 15000)
	if o.Transport == "" {
		o.Transport = modeWS
	}
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// scalePhase is what one phase cost. Figures of the instances are in the
// order they were started.
type scalePhase struct {
	Name            string    `json:"name"`
	Seconds         float64   `json:"seconds"`
	InstanceCores   []float64 `json:"instanceCpuCores"`
	InstancesCores  float64   `json:"instancesCpuCores"`
	InstanceRSSMiB  []float64 `json:"instanceRssMiBAtEnd"`
	RedisCores      float64   `json:"redisCpuCores"`
	RedisCmdsPerSec float64   `json:"redisCommandsPerSec"`
	ClientCores     float64   `json:"clientProcessesCpuCores"`
	OtherCores      float64   `json:"otherProcessesCpuCores"`
	ConnsMin        float64   `json:"serverConnectionsMin"` // sum of waitroom_connections over the instances
	ConnsMax        float64   `json:"serverConnectionsMax"`
	Admitted        float64   `json:"admittedInPhase"` // Σ waitroom_admissions_total of the room
	Dropped         int       `json:"droppedConnections"`
}

// scaleInstance is one instance once every visitor is connected, and the
// visitors it served.
type scaleInstance struct {
	Instance          int     `json:"instance"`
	Visitors          int     `json:"visitors"`
	Conns             float64 `json:"serverConnections"`
	RSSBeforeMiB      float64 `json:"rssBeforeMiB"`
	RSSConnectedMiB   float64 `json:"rssConnectedMiB"`
	RSSPerConnKiB     float64 `json:"rssPerConnKiB"`
	GoroutinesBefore  float64 `json:"goroutinesBefore"`
	Goroutines        float64 `json:"goroutinesConnected"`
	GoroutinesPerConn float64 `json:"goroutinesPerConn"`
	Admissions        float64 `json:"admissionsByItsTicks"`
	Told              int     `json:"told"`
	LagP50            float64 `json:"lagP50Seconds"`
	LagP99            float64 `json:"lagP99Seconds"`
	ServerLagP99      float64 `json:"serverLagP99Seconds"` // upper bound of the waitroom_delivery_lag_seconds bucket holding p99
}

// scaleCheck is one figure beside its target.
type scaleCheck struct {
	What     string `json:"what"`
	Target   string `json:"target"`
	Measured string `json:"measured"`
	Met      bool   `json:"met"`
}

type scaleReport struct {
	Scenario         string          `json:"scenario"`
	Machine          string          `json:"machine"`
	Command          string          `json:"command"`
	Visitors         int             `json:"visitors"`
	Transport        string          `json:"transport"`
	Instances        int             `json:"instances"`
	ClientProcesses  int             `json:"clientProcesses"`
	Batch            int             `json:"batch"`
	TickMs           int64           `json:"tickMs"`
	AdmitSeconds     float64         `json:"admitSeconds"`
	IdleSeconds      float64         `json:"idleSeconds"`
	TargetConfig     bool            `json:"targetConfiguration"`
	Phases           []scalePhase    `json:"phases"`
	PerInstance      []scaleInstance `json:"perInstance"`
	Admitted         float64         `json:"admittedMetrics"` // Σ waitroom_admissions_total{room} over the instances
	AdmittedRedis    int64           `json:"admittedRedis"`   // admittedTotal of the admin stats (Redis)
	Told             int             `json:"told"`            // visitors that received an admitted state
	ToldTwice        int             `json:"toldMoreThanOnce"`
	Repeats          scaleRepeats    `json:"repeats"`
	Early            int             `json:"pushedBeforeNotBefore"`
	LagP50           float64         `json:"lagP50Seconds"`
	LagP99           float64         `json:"lagP99Seconds"`
	LagMax           float64         `json:"lagMaxSeconds"`
	DroppedConnect   int             `json:"droppedConnecting"`
	DroppedAdmitting int             `json:"droppedAdmitting"`
	DroppedPaused    int             `json:"droppedPaused"`
	FirstDrop        string          `json:"firstDrop,omitempty"`
	Checks           []scaleCheck    `json:"checks"`
}

// scaleRepeats describes the second admitted states visitors received.
type scaleRepeats struct {
	Admitting     int     `json:"inAdmitting"`
	Paused        int     `json:"inPaused"`
	AfterEnd      int     `json:"afterTheRun"` // not in toldMoreThanOnce
	SameNotBefore int     `json:"withSameNotBefore"`
	NBDiffMax     float64 `json:"notBeforeDifferenceMaxSeconds"`
	AfterP50      float64 `json:"afterFirstP50Seconds"`
	AfterMax      float64 `json:"afterFirstMaxSeconds"`
}

// scaleFleetConfig is one client process's share of the visitors.
type scaleFleetConfig struct {
	URLs      []string `json:"urls"` // the instances; visitor i joins and listens at URLs[i % len]
	Room      string   `json:"room"`
	Transport string   `json:"transport"`
	First     int      `json:"first"` // global index of the first visitor
	Count     int      `json:"count"`
	IPBase    int      `json:"ipBase"` // source addresses 127.0.0.IPBase…
	IPs       int      `json:"ips"`
	SetupConc int      `json:"setupConc"` // joins and connects in flight while setting up
}

// scaleVisitor is what one visitor saw; only its own goroutine writes it.
type scaleVisitor struct {
	Index    int   `json:"i"`
	Told     int64 `json:"told,omitempty"` // first admitted state received, Unix ns
	NB       int64 `json:"nb,omitempty"`   // its notBefore
	Admitted int   `json:"admitted,omitempty"`
	Again    int64 `json:"again,omitempty"`   // the second admitted state received, Unix ns
	AgainNB  int64 `json:"againNb,omitempty"` // its notBefore
	Connects int   `json:"connects"`
}

// scaleDrop is a stream that ended without the client closing it.
type scaleDrop struct {
	I   int    `json:"i"`
	T   int64  `json:"t"` // Unix ns
	Err string `json:"err"`
}

type scaleFleetReport struct {
	Visitors []scaleVisitor `json:"visitors"`
	Drops    []scaleDrop    `json:"drops"`
}

// scaleFleet holds its visitors' streams open until end; admitted visitors
// keep theirs too, so a second admitted state would be seen and the
// server's connection count must stay put.
type scaleFleet struct {
	cfg  scaleFleetConfig
	w    wire
	apis []*api
	vis  []scaleVisitor
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu        sync.Mutex
	drops     []scaleDrop
	setupErrs int
	firstErr  string
}

// startScaleFleet joins every visitor at its instance and opens its
// stream, and returns when all are listening. Any visitor that cannot be
// set up fails the fleet: the per-instance figures assume all of them.
func startScaleFleet(ctx context.Context, cfg scaleFleetConfig) (*scaleFleet, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("scale fleet: no instances")
	}
	f := &scaleFleet{cfg: cfg, vis: make([]scaleVisitor, cfg.Count)}
	f.ctx, f.stop = context.WithCancel(context.Background())
	d := newDialer(&f.w, cfg.IPBase, cfg.IPs)
	for _, u := range cfg.URLs {
		f.apis = append(f.apis, newAPI(u, cfg.Room, &f.w, d, max(cfg.SetupConc, 1)))
	}
	sem := make(chan struct{}, max(cfg.SetupConc, 1))
	var ready sync.WaitGroup
	ready.Add(cfg.Count)
	for i := range f.vis {
		v := &f.vis[i]
		v.Index = cfg.First + i
		f.wg.Go(func() { f.runVisitor(v, sem, ready.Done) })
	}
	done := make(chan struct{})
	go func() { ready.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.abort()
		return nil, ctx.Err()
	}
	// The joins' keep-alive connections are not part of what is measured.
	for _, a := range f.apis {
		a.hc.CloseIdleConnections()
	}
	f.mu.Lock()
	n, first := f.setupErrs, f.firstErr
	f.mu.Unlock()
	if n > 0 {
		f.abort()
		return nil, fmt.Errorf("%d of %d visitors could not be set up, first: %s", n, cfg.Count, first)
	}
	return f, nil
}

func (f *scaleFleet) setupFailed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setupErrs++
	if f.firstErr == "" {
		f.firstErr = err.Error()
	}
}

func (f *scaleFleet) dropped(i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drops = append(f.drops, scaleDrop{I: i, T: time.Now().UnixNano(), Err: err.Error()})
}

// runVisitor joins, then holds a stream until the fleet ends. A stream the
// server ends is a drop; the visitor connects again after a short random
// pause, as the JS client does, so a later admission still reaches it.
func (f *scaleFleet) runVisitor(v *scaleVisitor, sem chan struct{}, ready func()) {
	ctx := f.ctx
	a := f.apis[v.Index%len(f.apis)]
	var once sync.Once
	release := func() { once.Do(func() { <-sem; ready() }) }
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		once.Do(ready)
		return
	}
	defer release()

	var cred string
	for attempt := 1; ; attempt++ {
		st, err := a.join(ctx, "")
		if err == nil {
			cred = st.Visitor
			break
		}
		if ctx.Err() != nil {
			return
		}
		if attempt == 3 {
			f.setupFailed(fmt.Errorf("join: %w", err))
			return
		}
		if !sleepCtx(ctx, time.Duration(attempt)*100*time.Millisecond) {
			return
		}
	}
	observe := func(st state, at time.Time) bool {
		if st.Status == "admitted" {
			v.Admitted++
			switch v.Admitted {
			case 1:
				v.Told, v.NB = at.UnixNano(), st.NotBefore.UnixNano()
			case 2:
				v.Again, v.AgainNB = at.UnixNano(), st.NotBefore.UnixNano()
			}
		}
		return true // keep listening: a second admitted state must be seen
	}
	failed := 0 // connects in a row that did not open
	for {
		opened := false
		onOpen := func() { opened = true; v.Connects++; release() }
		var err error
		if f.cfg.Transport == modeSSE {
			err = a.sse(ctx, cred, onOpen, observe)
		} else {
			err = a.ws(ctx, cred, onOpen, observe)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stream ended")
		}
		if opened {
			f.dropped(v.Index, err)
			failed = 0
		} else {
			failed++
		}
		if failed == 3 {
			if v.Connects == 0 {
				f.setupFailed(err)
			} else {
				f.dropped(v.Index, fmt.Errorf("gave up reconnecting: %w", err))
			}
			return
		}
		if !sleepCtx(ctx, 200*time.Millisecond+rand.N(800*time.Millisecond)) {
			return
		}
	}
}

// end closes every stream (a close handshake each) and reports.
func (f *scaleFleet) end() scaleFleetReport {
	f.abort()
	f.mu.Lock()
	defer f.mu.Unlock()
	return scaleFleetReport{Visitors: f.vis, Drops: f.drops}
}

func (f *scaleFleet) abort() {
	f.stop()
	f.wg.Wait()
	for _, a := range f.apis {
		a.close()
	}
}

// scaleHandle is a fleet in this process or in a scale-worker child.
type scaleHandle = fleetOf[scaleFleetReport]

// scaleFleets are the scale scenario's fleets: visitors that connect
// and are told when admitted, with no steps between ready and end.
var scaleFleets = fleetKind[scaleFleetConfig, scaleFleetReport]{
	worker: "scale-worker",
	start: func(ctx context.Context, cfg scaleFleetConfig) (localFleet[scaleFleetReport], error) {
		f, err := startScaleFleet(ctx, cfg)
		if err != nil {
			return localFleet[scaleFleetReport]{}, err
		}
		return localFleet[scaleFleetReport]{report: f.end, stop: f.abort}, nil
	},
}

// scaleWorkerMain is `bench scale-worker -config JSON`.
func scaleWorkerMain(ctx context.Context, cfgJSON string) error {
	return scaleFleets.workerMain(ctx, cfgJSON)
}

// scaleEnv is one redis-server and the instances on it, all started here.
type scaleEnv struct {
	redis    *target
	insts    []*target
	adminKey string
	secret   string   // shared by the instances
	args     []string // the instances' extra flags
}

func (e *scaleEnv) close() {
	for _, t := range e.insts {
		t.Close()
	}
	e.redis.Close()
}

// urls are the instances' base URLs.
func (e *scaleEnv) urls() []string {
	var urls []string
	for _, t := range e.insts {
		urls = append(urls, t.URL)
	}
	return urls
}

func startScaleEnv(ctx context.Context, o scaleOptions) (*scaleEnv, error) {
	return startEnv(ctx, o.Instances, (*target).startRedis, func(adminKey string) []string {
		return []string{"-tick", o.Tick.String(), "-batch", strconv.Itoa(o.Batch), "-admin-key", adminKey, "-ws-heartbeat", o.WSPing.String()}
	})
}

// startEnv starts Redis with startRedis, then instances servers on it with
// the flags args gives for the admin key.
func startEnv(ctx context.Context, instances int, startRedis func(*target, context.Context) error, args func(adminKey string) []string) (*scaleEnv, error) {
	e := &scaleEnv{redis: &target{}, adminKey: newSecret(), secret: newSecret()}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	if err := startRedis(e.redis, ctx); err != nil {
		return nil, err
	}
	e.args = args(e.adminKey)
	for i := range instances {
		t := &target{}
		e.insts = append(e.insts, t)
		if err := t.startServer(ctx, e.redis.RedisAddr, e.secret, e.args); err != nil {
			return nil, fmt.Errorf("instance %d: %w", i+1, err)
		}
	}
	ok = true
	return e, nil
}

// admin calls the admin API of the first instance and decodes the answer
// into out (when not nil).
func (e *scaleEnv) admin(ctx context.Context, method, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.insts[0].URL+"/api/v1/admin"+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: http %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

func (e *scaleEnv) setPaused(ctx context.Context, room string, paused bool) error {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	var got struct {
		Paused bool `json:"paused"`
	}
	if err := e.admin(ctx, "POST", "/rooms/"+room+"/"+verb, &got); err != nil {
		return err
	}
	if got.Paused != paused {
		return fmt.Errorf("%s %s: the room says paused=%v", verb, room, got.Paused)
	}
	return nil
}

// scaleSample is everything read at a phase boundary.
type scaleSample struct {
	at      time.Time
	procs   []procSample         // per instance
	metrics []map[string]float64 // per instance
	redis   redisUsage
	client  time.Duration // CPU of this process and the scale-worker children
	busy    time.Duration // the machine's
}

// redisUsage is Redis's CPU time and commands processed since its start.
type redisUsage struct {
	CPU  float64 // seconds
	Cmds int64
}

func readRedisUsage(ctx context.Context, rdb *redis.Client) redisUsage {
	u := redisUsage{CPU: math.NaN(), Cmds: -1}
	info, err := rdb.Info(ctx, "cpu", "stats").Result()
	if err != nil {
		return u
	}
	var cpu float64
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			cpu += f
			seen++
		case "total_commands_processed":
			u.Cmds, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if seen == 2 {
		u.CPU = cpu
	}
	return u
}

func (e *scaleEnv) sample(ctx context.Context, handles []scaleHandle) scaleSample {
	s := scaleSample{at: time.Now(), busy: machineBusy()}
	s.procs = make([]procSample, len(e.insts))
	s.metrics = make([]map[string]float64, len(e.insts))
	var wg sync.WaitGroup
	for i, t := range e.insts {
		s.procs[i] = t.proc()
		wg.Go(func() { s.metrics[i] = t.metrics(ctx) })
	}
	wg.Wait()
	s.redis = readRedisUsage(ctx, e.redis.rdb)
	s.client = clientCPU(handles)
	return s
}

// clientCPU is the CPU time of this process and its scale-worker children.
func clientCPU(handles []scaleHandle) time.Duration {
	pids := append([]int{os.Getpid()}, fleetPIDs(handles)...)
	var sum time.Duration
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil {
			sum += p.CPU
		}
	}
	return sum
}

// conns is the sum of the instances' open push connections; NaN when one
// does not answer.
func (e *scaleEnv) conns(ctx context.Context) float64 {
	sum := 0.0
	for _, t := range e.insts {
		v, ok := t.metrics(ctx)["waitroom_connections"]
		if !ok {
			return math.NaN()
		}
		sum += v
	}
	return sum
}

// conns is the sum of the instances' open push connections; NaN when one
// did not answer.
func (s scaleSample) conns() float64 {
	sum := 0.0
	for _, m := range s.metrics {
		v, ok := m["waitroom_connections"]
		if !ok {
			return math.NaN()
		}
		sum += v
	}
	return sum
}

func (s scaleSample) admissions(room string) float64 {
	sum := 0.0
	for _, m := range s.metrics {
		sum += m[`waitroom_admissions_total{room="`+room+`"}`]
	}
	return sum
}

// phase works out what happened between two samples.
func (e *scaleEnv) phase(name, room string, a, b scaleSample) scalePhase {
	p := scalePhase{Name: name, Seconds: b.at.Sub(a.at).Seconds()}
	secs := p.Seconds
	var ours time.Duration
	for i := range e.insts {
		d := b.procs[i].CPU - a.procs[i].CPU
		ours += d
		c := d.Seconds() / secs
		p.InstanceCores = append(p.InstanceCores, c)
		p.InstancesCores += c
		p.InstanceRSSMiB = append(p.InstanceRSSMiB, float64(b.procs[i].RSSKiB)/1024)
	}
	p.RedisCores, p.RedisCmdsPerSec = math.NaN(), math.NaN()
	if !math.IsNaN(a.redis.CPU) && !math.IsNaN(b.redis.CPU) {
		p.RedisCores = (b.redis.CPU - a.redis.CPU) / secs
		ours += time.Duration((b.redis.CPU - a.redis.CPU) * float64(time.Second))
	}
	if a.redis.Cmds >= 0 && b.redis.Cmds >= 0 {
		p.RedisCmdsPerSec = float64(b.redis.Cmds-a.redis.Cmds) / secs
	}
	p.ClientCores = (b.client - a.client).Seconds() / secs
	ours += b.client - a.client
	p.OtherCores = math.NaN()
	if a.busy > 0 && b.busy > 0 {
		p.OtherCores = max((b.busy-a.busy-ours).Seconds()/secs, 0)
	}
	p.Admitted = b.admissions(room) - a.admissions(room)
	p.ConnsMin, p.ConnsMax = math.NaN(), math.NaN()
	return p
}

// connWatch samples the instances every period until stopped (one
// /metrics scrape each, so the watching itself costs them little), keeps
// the smallest and largest sum of open push connections seen, and prints a
// progress line each time.
type connWatch struct {
	stop, done chan struct{}
	min, max   float64
}

func (e *scaleEnv) watch(ctx context.Context, every time.Duration, handles []scaleHandle, line func(scaleSample) string, progress io.Writer) *connWatch {
	w := &connWatch{stop: make(chan struct{}), done: make(chan struct{}), min: math.Inf(1), max: math.Inf(-1)}
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			s := e.sample(ctx, handles)
			sum := s.conns()
			if math.IsNaN(sum) {
				continue // an instance did not answer
			}
			w.min, w.max = min(w.min, sum), max(w.max, sum)
			fmt.Fprintln(progress, line(s))
		}
	}()
	return w
}

// end stops the watch; min and max are NaN when nothing was read.
func (w *connWatch) end() (lo, hi float64) {
	close(w.stop)
	<-w.done
	if math.IsInf(w.min, 1) {
		return math.NaN(), math.NaN()
	}
	return w.min, w.max
}

// waitPhase waits until the phase's end while a watch runs.
func waitPhase(ctx context.Context, until time.Time) error {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// check says what is wrong with the options of a scale run, once
// defaulted.
func (o *scaleOptions) check() error {
	if o.Transport != modeWS && o.Transport != modeSSE {
		return fmt.Errorf("scale: -transport must be ws or sse, not %q", o.Transport)
	}
	if o.Instances < 1 || o.N < o.Instances || o.PerProc < 1 {
		return fmt.Errorf("scale: need at least one instance, a visitor per instance and -per-proc ≥ 1 (got %d, %d, %d)", o.Instances, o.N, o.PerProc)
	}
	return nil
}

func runScale(ctx context.Context, o scaleOptions, command string) (*scaleReport, error) {
	o.defaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	// Setting visitors up runs at a few hundred to a few thousand a second
	// on a small machine; the limit only stops a run that hangs.
	connectLimit := time.Minute + time.Duration(o.N)*10*time.Millisecond
	ctx, cancel := withLimit(ctx, connectLimit+o.Admit+o.Idle+2*time.Minute)
	defer cancel()

	rep := &scaleReport{Scenario: "scale", Machine: machine(), Command: command, Visitors: o.N, Transport: o.Transport,
		Instances: o.Instances, Batch: o.Batch, TickMs: o.Tick.Milliseconds(), AdmitSeconds: o.Admit.Seconds(), IdleSeconds: o.Idle.Seconds(),
		TargetConfig: o.N == scaleTargetN && o.Instances == scaleTargetInstances && o.Transport == modeWS}
	fmt.Fprintf(o.Progress, "scale: starting redis-server and %d instances\n", o.Instances)
	env, err := startScaleEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer env.close()
	room := "scale-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	if err := env.setPaused(ctx, room, true); err != nil {
		return nil, fmt.Errorf("pause before the visitors join: %w", err)
	}
	every := 5 * time.Second
	if o.Quick {
		every = time.Second
	}
	urls := env.urls()

	// Connect: the room is paused; every visitor joins and opens its stream.
	procs := (o.N + o.PerProc - 1) / o.PerProc
	rep.ClientProcesses = procs
	handles := make([]scaleHandle, procs)
	defer abortFleets(handles) // those not ended
	var tl scaleTimeline
	if err := tl.connect(ctx, o, env, room, urls, handles, every, connectLimit); err != nil {
		return nil, err
	}
	connect := env.phase("connect", room, tl.s0, tl.s1)
	fmt.Fprintf(o.Progress, "scale: %d connected in %.1fs\n", o.N, connect.Seconds)
	if err := tl.admitThenPause(ctx, o, env, room, handles, every); err != nil {
		return nil, err
	}
	admitting, paused := env.phase("admitting", room, tl.s2, tl.s3), env.phase("paused", room, tl.s3, tl.s4)
	admitting.ConnsMin, admitting.ConnsMax = tl.lo2, tl.hi2
	paused.ConnsMin, paused.ConnsMax = tl.lo3, tl.hi3

	reports, err := endScaleFleets(handles)
	if err != nil {
		return nil, err
	}
	var stats struct {
		AdmittedTotal int64 `json:"admittedTotal"`
	}
	if err := env.admin(ctx, "GET", "/rooms/"+room+"/stats", &stats); err != nil {
		return nil, fmt.Errorf("room stats: %w", err)
	}
	rep.AdmittedRedis = stats.AdmittedTotal
	final := env.sample(ctx, nil)
	rep.Admitted = final.admissions(room) - tl.s0.admissions(room)

	tally := tl.tally(rep, reports, len(env.insts), &connect, &admitting, &paused)
	rep.Phases = []scalePhase{connect, admitting, paused}
	if tl.sIdle != nil {
		idle := env.phase("idle", room, *tl.sIdle, tl.s4)
		idle.ConnsMin, idle.ConnsMax = tl.lo3, tl.hi3
		idle.Dropped = tally.idleDropped
		rep.Phases = append(rep.Phases, idle)
	}
	rep.PerInstance = scalePerInstance(o, env, room, tl.s0, tl.s1, final, tally)
	rep.Checks = scaleChecks(rep)

	if err := writeOutputs(o.Out, "scale", scaleMarkdown(rep), rep, scaleSVG(rep)); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "scale: done: instances %.2f cores admitting, %.2f paused; lag p50 %s p99 %s; told %d of %.0f admitted; dropped %d admitting, %d paused\n",
		admitting.InstancesCores, paused.InstancesCores, secs(rep.LagP50), secs(rep.LagP99), rep.Told, rep.Admitted, rep.DroppedAdmitting, rep.DroppedPaused)
	return rep, nil
}

// endScaleFleets ends every fleet in handles and collects the reports;
// each one ended is set to nil, so the caller's abort skips it.
func endScaleFleets(handles []scaleHandle) ([]scaleFleetReport, error) {
	var reports []scaleFleetReport
	for i, h := range handles {
		r, err := h.end()
		handles[i] = nil
		if err != nil {
			return nil, fmt.Errorf("client process %d: %w", i+1, err)
		}
		reports = append(reports, r)
	}
	return reports, nil
}

// scaleTimeline are the samples that bound a scale run's phases: s0
// before connecting, s1 connected, s2 resumed, s3 paused again, s4 the end,
// and sIdle (if the paused phase is long enough) once the pause has
// settled; lo and hi are the fewest and most connections seen while
// admitting (2) and paused (3).
type scaleTimeline struct {
	s0, s1, s2, s3, s4 scaleSample
	sIdle              *scaleSample
	lo2, hi2, lo3, hi3 float64
}

// connect starts the fleets into handles and waits until the instances
// hold every connection.
func (tl *scaleTimeline) connect(ctx context.Context, o scaleOptions, env *scaleEnv, room string, urls []string,
	handles []scaleHandle, every, connectLimit time.Duration) error {
	procs := len(handles)
	tl.s0 = env.sample(ctx, nil)
	s0 := tl.s0
	fmt.Fprintf(o.Progress, "scale: connecting %d %s visitors over %d instances from %d process(es)\n", o.N, o.Transport, o.Instances, procs)
	watch := env.watch(ctx, every, nil, func(s scaleSample) string {
		return fmt.Sprintf("scale connect: %3.0fs conns=%.0f/%d", s.at.Sub(s0.at).Seconds(), s.conns(), o.N)
	}, o.Progress)
	cctx, ccancel := context.WithTimeout(ctx, connectLimit)
	err := scaleFleets.startAll(cctx, handles, func(p int) scaleFleetConfig {
		first := p * o.N / procs
		return scaleFleetConfig{URLs: urls, Room: room, Transport: o.Transport, First: first, Count: (p+1)*o.N/procs - first,
			IPBase: 2 + p*20, IPs: 20, SetupConc: 64}
	})
	ccancel()
	if err != nil {
		watch.end()
		return fmt.Errorf("connect: %w", err)
	}
	// The clients are ready once their upgrade is answered; the server
	// counts a connection a moment later.
	err = waitFor(ctx, 30*time.Second, func() bool { return env.conns(ctx) == float64(o.N) })
	watch.end()
	tl.s1 = env.sample(ctx, handles)
	if err != nil {
		return fmt.Errorf("the instances hold %.0f of %d connections: %w", tl.s1.conns(), o.N, err)
	}
	return nil
}

// admitThenPause resumes the room for o.Admit, then pauses it for o.Idle.
// The admitting phase starts before the resume and ends after the pause
// (the room admits nobody outside it), so no admission falls outside.
func (tl *scaleTimeline) admitThenPause(ctx context.Context, o scaleOptions, env *scaleEnv, room string, handles []scaleHandle, every time.Duration) error {
	// A phase runs from a sample until its length has passed, watched.
	runPhase := func(name string, start scaleSample, d time.Duration) (lo, hi float64, err error) {
		w := env.watch(ctx, min(every, max(d/4, 250*time.Millisecond)), handles, func(s scaleSample) string {
			p := env.phase(name, room, start, s)
			return fmt.Sprintf("scale %s: %3.0fs/%v conns=%.0f instances=%.2f cores redis=%.2f cores clients=%.2f cores other=%.2f cores admitted=%.0f",
				name, p.Seconds, d, s.conns(), p.InstancesCores, p.RedisCores, p.ClientCores, p.OtherCores, p.Admitted)
		}, o.Progress)
		err = waitPhase(ctx, start.at.Add(d))
		lo, hi = w.end()
		return lo, hi, err
	}
	fmt.Fprintf(o.Progress, "scale: resuming: %d per %v for %v\n", o.Batch, o.Tick, o.Admit)
	tl.s2 = env.sample(ctx, handles)
	if err := env.setPaused(ctx, room, false); err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var err error
	tl.lo2, tl.hi2, err = runPhase("admitting", tl.s2, o.Admit)
	if err != nil {
		return fmt.Errorf("admitting: %w", err)
	}
	if err := env.setPaused(ctx, room, true); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	// Paused again: nobody is admitted and every connection sits idle.
	fmt.Fprintf(o.Progress, "scale: paused for %v\n", o.Idle)
	tl.s3 = env.sample(ctx, handles)
	// Idle: the paused phase once the pause message and the admitting
	// phase's aftermath are over (see scaleIdleAfter).
	idleDone := make(chan struct{})
	if o.Idle >= 2*scaleIdleAfter {
		s3 := tl.s3
		go func() {
			defer close(idleDone)
			if waitPhase(ctx, s3.at.Add(scaleIdleAfter)) == nil {
				x := env.sample(ctx, handles)
				tl.sIdle = &x
			}
		}()
	} else {
		close(idleDone)
	}
	tl.lo3, tl.hi3, err = runPhase("paused", tl.s3, o.Idle)
	<-idleDone
	if err != nil {
		return fmt.Errorf("paused: %w", err)
	}
	tl.s4 = env.sample(ctx, handles)
	return nil
}

// scaleTally is who was told, per instance (by visitor index modulo the
// instances), and how late.
type scaleTally struct {
	perLags     [][]float64
	perTold     []int
	idleDropped int
}

// tally counts the fleets' reports into rep and the phases' drops.
func (tl *scaleTimeline) tally(rep *scaleReport, reports []scaleFleetReport, n int, connect, admitting, paused *scalePhase) scaleTally {
	t := scaleTally{perLags: make([][]float64, n), perTold: make([]int, n)}
	tPause, tEnd := tl.s3.at.UnixNano(), tl.s4.at.UnixNano()
	var lags, after []float64
	for _, r := range reports {
		for _, v := range r.Visitors {
			if v.Admitted == 0 {
				continue
			}
			rep.Told++
			if v.Admitted > 1 && v.Again > tEnd {
				// While other clients were closing: outside the run, but
				// still a second admitted state.
				rep.Repeats.AfterEnd++
			} else if v.Admitted > 1 {
				rep.ToldTwice++
				if v.Again < tPause {
					rep.Repeats.Admitting++
				} else {
					rep.Repeats.Paused++
				}
				if v.AgainNB == v.NB {
					rep.Repeats.SameNotBefore++
				}
				rep.Repeats.NBDiffMax = max(rep.Repeats.NBDiffMax, math.Abs(float64(v.AgainNB-v.NB))/1e9)
				after = append(after, float64(v.Again-v.Told)/1e9)
			}
			lag := float64(v.Told-v.NB) / 1e9
			if lag < 0 {
				rep.Early++
				lag = 0
			}
			lags = append(lags, lag)
			t.perLags[v.Index%n] = append(t.perLags[v.Index%n], lag)
			t.perTold[v.Index%n]++
		}
		t.idleDropped += tl.drops(rep, r.Drops, connect, admitting, paused)
	}
	rep.LagP50, rep.LagP99, rep.LagMax = quantile(lags, .50), quantile(lags, .99), quantile(lags, 1)
	rep.Repeats.AfterP50, rep.Repeats.AfterMax = quantile(after, .50), quantile(after, 1)
	return t
}

// drops counts drops into rep and the phase each fell in, and returns how
// many fell in the idle part of the paused phase.
func (tl *scaleTimeline) drops(rep *scaleReport, drops []scaleDrop, connect, admitting, paused *scalePhase) (idle int) {
	tResume, tPause, tEnd := tl.s2.at.UnixNano(), tl.s3.at.UnixNano(), tl.s4.at.UnixNano()
	for _, d := range drops {
		switch {
		case d.T < tResume:
			rep.DroppedConnect++
			connect.Dropped++
		case d.T < tPause:
			rep.DroppedAdmitting++
			admitting.Dropped++
		case d.T <= tEnd:
			rep.DroppedPaused++
			paused.Dropped++
			if tl.sIdle != nil && d.T >= tl.sIdle.at.UnixNano() {
				idle++
			}
		default:
			continue // the clients were closing
		}
		if rep.FirstDrop == "" {
			rep.FirstDrop = fmt.Sprintf("visitor %d at %s: %s", d.I, time.Unix(0, d.T).Format("15:04:05.000"), d.Err)
		}
	}
	return idle
}

// scalePerInstance is each instance's row: connections, memory and
// goroutines from s0 to s1, admissions and lag to final.
func scalePerInstance(o scaleOptions, env *scaleEnv, room string, s0, s1, final scaleSample, t scaleTally) []scaleInstance {
	n := len(env.insts)
	var out []scaleInstance
	for i, inst := range env.insts {
		conns := s1.metrics[i]["waitroom_connections"]
		in := scaleInstance{Instance: i + 1, Visitors: o.N/n + btoi(i < o.N%n), Conns: conns,
			RSSBeforeMiB: float64(s0.procs[i].RSSKiB) / 1024, RSSConnectedMiB: float64(s1.procs[i].RSSKiB) / 1024,
			GoroutinesBefore: s0.metrics[i]["go_goroutines"], Goroutines: s1.metrics[i]["go_goroutines"],
			Admissions: final.metrics[i][`waitroom_admissions_total{room="`+room+`"}`],
			Told:       t.perTold[i], LagP50: quantile(t.perLags[i], .50), LagP99: quantile(t.perLags[i], .99),
			ServerLagP99: histQuantile(s1.metrics[i], final.metrics[i], "waitroom_delivery_lag_seconds", `transport="`+o.Transport+`"`, .99)}
		in.RSSPerConnKiB, in.GoroutinesPerConn = math.NaN(), math.NaN()
		if conns > 0 && inst.PID > 0 {
			in.RSSPerConnKiB = float64(s1.procs[i].RSSKiB-s0.procs[i].RSSKiB) / conns
			in.GoroutinesPerConn = (in.Goroutines - in.GoroutinesBefore) / conns
		}
		out = append(out, in)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func scaleChecks(rep *scaleReport) []scaleCheck {
	var cs []scaleCheck
	for _, p := range rep.Phases[1:] {
		cs = append(cs, scaleCheck{What: "instances' CPU, " + p.Name, Target: fmt.Sprintf("≤ %.1f cores", scaleTargetCores),
			Measured: num(p.InstancesCores) + " cores", Met: p.InstancesCores <= scaleTargetCores})
	}
	for _, p := range rep.Phases {
		if p.Name == "idle" && rep.Visitors > 0 {
			per := p.InstancesCores / (float64(rep.Visitors) / 10000)
			cs = append(cs, scaleCheck{What: "instances' CPU idle, per 10,000 connections", Target: fmt.Sprintf("≤ %.2f cores", scaleTargetIdleCores),
				Measured: num(per) + " cores", Met: per <= scaleTargetIdleCores})
		}
	}
	cs = append(cs,
		scaleCheck{What: "admission lag p99", Target: "≤ " + secs(scaleTargetLagP99), Measured: secs(rep.LagP99), Met: rep.LagP99 <= scaleTargetLagP99},
		scaleCheck{What: "connections dropped, admitting", Target: "0", Measured: strconv.Itoa(rep.DroppedAdmitting), Met: rep.DroppedAdmitting == 0},
		scaleCheck{What: "connections dropped, paused", Target: "0", Measured: strconv.Itoa(rep.DroppedPaused), Met: rep.DroppedPaused == 0},
		scaleCheck{What: "told of admitted", Target: "every one, once", Measured: fmt.Sprintf("%d of %.0f (%d more than once)", rep.Told, rep.Admitted, rep.ToldTwice),
			Met: rep.Admitted > 0 && float64(rep.Told) == rep.Admitted && rep.ToldTwice == 0},
	)
	return cs
}

func scaleMarkdown(rep *scaleReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s push visitors over %d instances\n\n", commas(int64(rep.Visitors)), rep.Instances)
	fmt.Fprintf(&b, "%s %s visitors spread over %d server instances on one redis-server, clients in %d process(es). The room is paused while they connect, admits %d per %d ms tick for %.0f s, then is paused again for %.0f s. Machine: %s.\n\n",
		commas(int64(rep.Visitors)), transportLabel(rep.Transport), rep.Instances, rep.ClientProcesses, rep.Batch, rep.TickMs, rep.AdmitSeconds, rep.IdleSeconds, rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n## Against the targets\n\n", rep.Command)
	if !rep.TargetConfig {
		fmt.Fprintf(&b, "The targets are for %s WebSocket visitors over %d instances; this run is smaller or different, so the comparison is only indicative.\n\n",
			commas(scaleTargetN), scaleTargetInstances)
	}
	b.WriteString(checksTable(rep.Checks))
	var rows [][]string

	b.WriteString("\n## Per phase\n\n")
	header := []string{"phase", "seconds"}
	for i := range rep.Instances {
		header = append(header, fmt.Sprintf("instance %d CPU (cores)", i+1))
	}
	header = append(header, "instances total (cores)", "Redis CPU (cores)", "Redis cmds/s", "client processes' CPU (cores)",
		"other processes' CPU (cores)", "server connections min–max", "admitted", "dropped")
	rows = nil
	for _, p := range rep.Phases {
		r := []string{p.Name, num(p.Seconds)}
		for _, c := range p.InstanceCores {
			r = append(r, num(c))
		}
		conns := "n/a"
		if !math.IsNaN(p.ConnsMin) {
			conns = num(p.ConnsMin) + "–" + num(p.ConnsMax)
		}
		r = append(r, num(p.InstancesCores), num(p.RedisCores), num(p.RedisCmdsPerSec), num(p.ClientCores),
			num(p.OtherCores), conns, num(p.Admitted), strconv.Itoa(p.Dropped))
		rows = append(rows, r)
	}
	b.WriteString(mdTable(header, rows))

	b.WriteString("\n## Per instance, once every visitor is connected\n\n")
	rows = nil
	for _, in := range rep.PerInstance {
		rows = append(rows, []string{strconv.Itoa(in.Instance), commas(int64(in.Visitors)), num(in.Conns), num(in.RSSBeforeMiB), num(in.RSSConnectedMiB),
			num(in.RSSPerConnKiB), num(in.GoroutinesPerConn), num(in.Admissions), strconv.Itoa(in.Told), secs(in.LagP50), secs(in.LagP99), "≤ " + secs(in.ServerLagP99)})
	}
	b.WriteString(mdTable([]string{"instance", "visitors", "connections", "RSS before (MiB)", "RSS connected (MiB)", "RSS per conn (KiB)",
		"goroutines per conn", "admitted by its ticks", "told by it", "lag p50", "lag p99", "server-side lag p99"}, rows))

	b.WriteString("\n## Admission\n\n")
	b.WriteString(mdTable([]string{"admitted (Σ waitroom_admissions_total)", "admitted (Redis)", "told", "told more than once",
		"pushed before notBefore", "lag p50", "lag p99", "lag max"},
		[][]string{{num(rep.Admitted), strconv.FormatInt(rep.AdmittedRedis, 10), strconv.Itoa(rep.Told), strconv.Itoa(rep.ToldTwice),
			strconv.Itoa(rep.Early), secs(rep.LagP50), secs(rep.LagP99), secs(rep.LagMax)}}))
	if r := rep.Repeats; rep.ToldTwice > 0 {
		fmt.Fprintf(&b, "\n%d visitors received a second admitted state (%d while admitting, %d paused), %s after the first (median; max %s); %d of them with the same notBefore, the others differing by up to %s. A visitor whose stream was dropped is sent its state again when it reconnects.\n",
			rep.ToldTwice, r.Admitting, r.Paused, secs(r.AfterP50), secs(r.AfterMax), r.SameNotBefore, secs(r.NBDiffMax))
	}
	if n := rep.Repeats.AfterEnd; n > 0 {
		fmt.Fprintf(&b, "\n%d more visitors received a second admitted state after the run, while the client processes were closing their streams one after another.\n", n)
	}
	if rep.FirstDrop != "" {
		fmt.Fprintf(&b, "\nFirst dropped connection: %s\n", rep.FirstDrop)
	}
	b.WriteString(`
## How it was measured

- **Phases**: *connect* runs from the first join until every visitor's stream is open and the instances' waitroom_connections add up to the visitors; *admitting* from the resume (admin API) for the set time; *paused* from the pause for the set time. Each visitor joins and listens at instance (index mod instances), so the instances hold equal shares and every admission is pushed by the instance the visitor is connected to, from the room's pub/sub message.
- **CPU**: utime+stime of each instance (/proc/PID/stat) over the phase, in cores. **Redis CPU**: used_cpu_sys + used_cpu_user, and **cmds/s** total_commands_processed, from INFO of the one redis-server. **Client processes**: this bench process and its scale-worker children. **Other processes**: the machine's busy time (/proc/stat) minus all of the above; more than a few hundredths means something else ran and the figures are less trustworthy.
- **RSS per conn** = (VmRSS once connected − VmRSS before any visitor) / the instance's waitroom_connections; **goroutines per conn** the same with go_goroutines from /metrics.
- **Lag**: the time the client received the admitted state minus the notBefore in it, over every visitor told; per instance by the instance that pushed it. Negative lags (a push before notBefore) are counted and taken as 0. **Server-side lag p99**: the upper bound of the waitroom_delivery_lag_seconds bucket (the instance's write time minus notBefore) holding the 99th percentile over the admitting and paused phases; the difference to the client's lag is time in the kernel and in the (CPU-sharing) client processes.
- **Told / admitted**: admitted is the sum over instances of waitroom_admissions_total for the room (each instance counts its own ticks), beside admittedTotal from the room's admin stats (Redis). Told counts visitors that received an admitted state. Admitted visitors keep their stream open until the end, so a second admitted state would be seen (told more than once) and the connection count must not fall.
- **Pause and resume** (admin API, on the first instance) push the changed state to every visitor; that burst counts in the phase it starts. The servers send a WebSocket a heartbeat message once it has had no message for -ws-heartbeat (40 s, the production default; 3 s with -quick): the paused phase (60 s by default) is longer than an interval, so every connection gets one in it after the pause message. **Idle** is the paused phase from 20 s in: the pause message and what the admitting phase left (closing admitted visitors' connections, the garbage collector) are over, and the instances hold connections and heartbeats only.
- **Dropped**: a stream that ended while the client had not closed it (read error, close frame or end of stream from the server), by the phase it ended in; the client then connects again after 0.2–1 s. **Server connections min–max**: the sum of waitroom_connections over the instances, scraped every few seconds during the phase; it stays at the visitor count when nothing is dropped.
`)
	return b.String()
}

func transportLabel(t string) string {
	if t == modeSSE {
		return "SSE"
	}
	return "WebSocket"
}

func scaleSVG(rep *scaleReport) string {
	phases := func(title, unit string, f func(scalePhase) float64, ref *bar) panel {
		p := panel{Title: title, Unit: unit}
		for _, ph := range rep.Phases {
			p.Bars = append(p.Bars, bar{Label: ph.Name, Value: f(ph)})
		}
		if ref != nil {
			p.Bars = append(p.Bars, *ref)
		}
		return p
	}
	instances := func(title, unit string, f func(scaleInstance) float64) panel {
		p := panel{Title: title, Unit: unit}
		for _, in := range rep.PerInstance {
			p.Bars = append(p.Bars, bar{Label: fmt.Sprintf("instance %d", in.Instance), Value: f(in)})
		}
		return p
	}
	admitting := panel{Title: "CPU per instance, admitting", Unit: "cores"}
	for i, c := range rep.Phases[1].InstanceCores {
		admitting.Bars = append(admitting.Bars, bar{Label: fmt.Sprintf("instance %d", i+1), Value: c})
	}
	lag := panel{Title: "Admission lag", Unit: "s", Bars: []bar{
		{Label: "p50", Value: rep.LagP50}, {Label: "p99", Value: rep.LagP99}, {Label: "target p99", Value: scaleTargetLagP99, Ref: true}}}
	panels := []panel{
		phases("Instances' CPU, all together", "cores", func(p scalePhase) float64 { return p.InstancesCores },
			&bar{Label: "target", Value: scaleTargetCores, Ref: true}),
		admitting,
		instances("RSS per connection", "KiB", func(in scaleInstance) float64 { return in.RSSPerConnKiB }),
		instances("Goroutines per connection", "", func(in scaleInstance) float64 { return in.GoroutinesPerConn }),
		lag,
		phases("Dropped connections", "", func(p scalePhase) float64 { return float64(p.Dropped) }, nil),
		phases("Redis CPU", "cores", func(p scalePhase) float64 { return p.RedisCores }, nil),
		phases("Redis commands", "per s", func(p scalePhase) float64 { return p.RedisCmdsPerSec }, nil),
		phases("Client processes' CPU", "cores", func(p scalePhase) float64 { return p.ClientCores }, nil),
	}
	return barChartSVG(fmt.Sprintf("%s push visitors over %d instances", commas(int64(rep.Visitors)), rep.Instances),
		fmt.Sprintf("%s, paused while connecting, %d per %d ms for %.0f s, then paused %.0f s; hatched bars are targets",
			transportLabel(rep.Transport), rep.Batch, rep.TickMs, rep.AdmitSeconds, rep.IdleSeconds), panels)
}

func scaleScenario() scenario {
	return scenario{name: "scale", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o scaleOptions
		fs.IntVar(&o.N, "n", 0, "push visitors (default 45000; 3000 with -quick)")
		fs.StringVar(&o.Transport, "transport", "ws", "push transport: ws or sse")
		fs.IntVar(&o.Instances, "instances", 3, "server instances, all on the one redis-server")
		fs.DurationVar(&o.Admit, "admit", 0, "admitting phase (default 30s; 5s with -quick)")
		fs.DurationVar(&o.Idle, "idle", 0, "paused phase after it (default 60s; 10s with -quick)")
		fs.IntVar(&o.Batch, "batch", 0, "server -batch: visitors admitted per tick (default 14)")
		fs.DurationVar(&o.Tick, "tick", 0, "server -tick (default 100ms)")
		fs.IntVar(&o.PerProc, "per-proc", 0, "visitors per client process; more are spread over child processes (default 15000)")
		fs.DurationVar(&o.WSPing, "ws-heartbeat", 0, "the servers' WebSocket heartbeat interval (default 40s, the servers' default; 3s with -quick)")
		cluster := fs.Bool("cluster", false, "on a Redis Cluster of 3 masters and 3 replicas started here, visitors spread over rooms on every master (default -n 9000, -admit 20s)")
		rooms := fs.Int("rooms", 6, "with -cluster: rooms, spread evenly over the masters")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			if *cluster {
				_, err := runScaleCluster(ctx, o, *rooms, env.command)
				return "scale-cluster.{md,json}", err
			}
			_, err := runScale(ctx, o, env.command)
			return "scale.{md,json,svg}", err
		}
	}}
}
