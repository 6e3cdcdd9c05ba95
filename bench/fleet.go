package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	wr "github.com/waitroom/waitroom/wire"
)

// The cost scenario's client modes.
const (
	modeWS     = "ws"
	modeSSE    = "sse"
	modePoll   = "poll"   // adaptive: ask again after nextPollMs
	modePoll1s = "poll1s" // fixed: ask every second
)

// fleetConfig is one group of waiting visitors: all of them in the bench
// process, or a share of them in a cost-worker child process.
type fleetConfig struct {
	URL         string        `json:"url"`
	Room        string        `json:"room"`
	Mode        string        `json:"mode"`
	First       int           `json:"first"`       // global index of the first visitor
	Count       int           `json:"count"`       // visitors in this fleet
	SampleStep  int           `json:"sampleStep"`  // a visitor whose global index is a multiple is sampled
	SampleEvery time.Duration `json:"sampleEvery"` // how often sampled visitors' shown position is read
	IPBase      int           `json:"ipBase"`      // source addresses 127.0.0.IPBase…
	IPs         int           `json:"ips"`
	SetupConc   int           `json:"setupConc"` // joins and connects in flight while setting up
	PollConns   int           `json:"pollConns"` // keep-alive connections the pollers share
}

// visitorOut is what one visitor saw, in Unix nanoseconds.
type visitorOut struct {
	Index   int    `json:"i"`
	Cred    string `json:"cred"`
	JoinPos int64  `json:"joinPos"`
	Told    int64  `json:"told,omitempty"` // when the admitted state arrived
	NB      int64  `json:"nb,omitempty"`   // its notBefore
}

// sample is the position one visitor showed at one moment.
type sample struct {
	I   int   `json:"i"`
	T   int64 `json:"t"`
	Pos int64 `json:"p"`
}

type fleetReport struct {
	Visitors []visitorOut `json:"visitors"`
	Samples  []sample     `json:"samples"`
	Wire     wireTotals   `json:"wire"` // between begin and end
	Polls    int64        `json:"polls"`
	PollHits int64        `json:"pollHits"`
	Errors   int64        `json:"errors"`
	FirstErr string       `json:"firstErr,omitempty"`
}

type liveVisitor struct {
	out visitorOut

	mu      sync.Mutex
	pos     int64         // -1 nothing yet, 0 told admitted, else the last position received
	at      time.Time     // when it was received
	rate    float64       // what the page moves it on at (0: it stands)
	horizon time.Duration // how long the page moves it on
}

// shown is the position the visitor's page shows at now: as static/page.js
// does, the last one received moved on at the queue's rate (waitroom's wire.Shown),
// for a push connection until the next message, for a poller until its
// next answer is due (nextPollMs, at least 1 s, plus 2 s). -1 nothing yet,
// 0 told admitted.
func (v *liveVisitor) shown(now time.Time) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.pos <= 0 {
		return v.pos
	}
	return wr.Shown(v.pos, v.rate, min(now.Sub(v.at), v.horizon))
}

func (v *liveVisitor) set(pos int64, at time.Time, rate float64, horizon time.Duration) {
	v.mu.Lock()
	v.pos, v.at, v.rate, v.horizon = pos, at, rate, horizon
	v.mu.Unlock()
}

// fleet runs its visitors until end.
type fleet struct {
	cfg  fleetConfig
	w    wire
	api  *api
	vis  []*liveVisitor
	stop context.CancelFunc
	ctx  context.Context
	wg   sync.WaitGroup

	polls, pollHits, errs atomic.Int64
	errMu                 sync.Mutex
	firstErr              string

	begun       wireTotals
	polls0      int64
	hits0       int64
	marked      fleetReport
	sampleStop  chan struct{}
	sampleDone  chan struct{}
	samples     []sample
	sampleSetMu sync.Mutex
}

func (f *fleet) fail(err error) {
	f.errs.Add(1)
	f.errMu.Lock()
	if f.firstErr == "" {
		f.firstErr = err.Error()
	}
	f.errMu.Unlock()
}

// startFleet joins every visitor and opens its push connection (or starts
// its polling), and returns when all are listening.
func startFleet(ctx context.Context, cfg fleetConfig) (*fleet, error) {
	f := &fleet{cfg: cfg}
	f.ctx, f.stop = context.WithCancel(context.Background())
	d := newDialer(&f.w, cfg.IPBase, cfg.IPs)
	f.api = newAPI(cfg.URL, cfg.Room, &f.w, d, max(cfg.PollConns, 1))
	sem := make(chan struct{}, max(cfg.SetupConc, 1))
	var ready sync.WaitGroup
	f.vis = make([]*liveVisitor, cfg.Count)
	for i := range f.vis {
		v := &liveVisitor{out: visitorOut{Index: cfg.First + i}, pos: -1}
		f.vis[i] = v
		ready.Add(1)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.runVisitor(v, sem, ready.Done)
		}()
	}
	done := make(chan struct{})
	go func() { ready.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.stop()
		f.wg.Wait()
		return nil, ctx.Err()
	}
	if n := f.errs.Load(); n > int64(cfg.Count/100) {
		f.stop()
		f.wg.Wait()
		return nil, fmt.Errorf("%d of %d visitors failed to set up, first: %s", n, cfg.Count, f.firstErr)
	}
	return f, nil
}

// observe records a state; it returns false once the visitor needs no more.
func (f *fleet) observe(v *liveVisitor, st state, at time.Time) bool {
	switch st.Status {
	case "waiting":
		rate := st.Rate
		if rate <= 0 && st.ETASeconds > 0 {
			rate = float64(st.Position) / float64(st.ETASeconds)
		}
		if st.Paused {
			rate = 0
		}
		horizon := time.Duration(math.MaxInt64)
		if f.cfg.Mode != modeWS && f.cfg.Mode != modeSSE {
			horizon = max(time.Duration(st.NextPollMs)*time.Millisecond, time.Second) + 2*time.Second
		}
		v.set(st.Position, at, rate, horizon)
		return true
	case "admitted":
		if v.out.Told == 0 {
			v.out.Told, v.out.NB = at.UnixNano(), st.NotBefore.UnixNano()
		}
		v.set(0, at, 0, 0)
		return false
	}
	return true
}

func (f *fleet) runVisitor(v *liveVisitor, sem chan struct{}, ready func()) {
	ctx := f.ctx
	var once sync.Once
	release := func() { once.Do(func() { <-sem; ready() }) }
	defer release()
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		once.Do(ready)
		return
	}
	st, err := f.api.join(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			f.fail(err)
		}
		return
	}
	v.out.Cred, v.out.JoinPos = st.Visitor, st.Position
	if !f.observe(v, st, time.Now()) {
		return
	}
	switch f.cfg.Mode {
	case modeWS, modeSSE:
		f.push(ctx, v, release)
	case modePoll:
		release()
		f.pollAdaptive(ctx, v, st)
	case modePoll1s:
		release()
		f.pollFixed(ctx, v, time.Second)
	}
}

// push holds the visitor's stream; a dropped stream is reopened (at most a
// few times) after a short random pause, as the JS client does.
func (f *fleet) push(ctx context.Context, v *liveVisitor, ready func()) {
	fn := func(st state, at time.Time) bool { return f.observe(v, st, at) }
	for attempt := 0; ; attempt++ {
		var err error
		if f.cfg.Mode == modeWS {
			err = f.api.ws(ctx, v.out.Cred, ready, fn)
		} else {
			err = f.api.sse(ctx, v.out.Cred, ready, fn)
		}
		if err == nil || ctx.Err() != nil {
			return
		}
		f.fail(err)
		if attempt >= 3 {
			return
		}
		if !sleepCtx(ctx, 500*time.Millisecond+rand.N(time.Second)) {
			return
		}
	}
}

func (f *fleet) poll(ctx context.Context, v *liveVisitor) (state, bool) {
	st, hit, err := f.api.status(ctx, v.out.Cred)
	if err != nil {
		if ctx.Err() == nil {
			f.fail(err)
		}
		return state{}, false
	}
	f.polls.Add(1)
	if hit {
		f.pollHits.Add(1)
	}
	return st, true
}

// pollAdaptive asks again after the nextPollMs each answer carries.
func (f *fleet) pollAdaptive(ctx context.Context, v *liveVisitor, st state) {
	for {
		next := time.Duration(st.NextPollMs) * time.Millisecond
		if next <= 0 {
			next = time.Second
		}
		if !sleepCtx(ctx, next) {
			return
		}
		var ok bool
		if st, ok = f.poll(ctx, v); !ok {
			if ctx.Err() != nil {
				return
			}
			st = state{}
			continue
		}
		if !f.observe(v, st, time.Now()) {
			return
		}
	}
}

// pollFixed asks every period, from a random phase, whatever it was told.
func (f *fleet) pollFixed(ctx context.Context, v *liveVisitor, period time.Duration) {
	next := time.Now().Add(rand.N(period))
	for {
		if !sleepCtx(ctx, time.Until(next)) {
			return
		}
		next = next.Add(period)
		if st, ok := f.poll(ctx, v); ok && !f.observe(v, st, time.Now()) {
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// begin starts the measured window: counters are read now and sampled
// visitors' shown positions are recorded from here on.
func (f *fleet) begin() {
	f.begun = f.w.totals()
	f.polls0, f.hits0 = f.polls.Load(), f.pollHits.Load()
	f.sampleStop, f.sampleDone = make(chan struct{}), make(chan struct{})
	step := max(f.cfg.SampleStep, 1)
	var sampled []*liveVisitor
	for _, v := range f.vis {
		if v.out.Index%step == 0 {
			sampled = append(sampled, v)
		}
	}
	go func() {
		defer close(f.sampleDone)
		t := time.NewTicker(f.cfg.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-f.sampleStop:
				return
			case now := <-t.C:
				ns := now.UnixNano()
				for _, v := range sampled {
					if p := v.shown(now); p > 0 {
						f.samples = append(f.samples, sample{I: v.out.Index, T: ns, Pos: p})
					}
				}
			}
		}
	}()
}

// mark closes the measured window: counters are read and sampling stops.
// The visitors go on (so those admitted late in the window are still told)
// until end.
func (f *fleet) mark() {
	close(f.sampleStop)
	<-f.sampleDone
	f.marked = fleetReport{
		Wire:     f.w.totals().sub(f.begun),
		Polls:    f.polls.Load() - f.polls0,
		PollHits: f.pollHits.Load() - f.hits0,
		Samples:  f.samples,
	}
}

// end stops every visitor and reports.
func (f *fleet) end() fleetReport {
	rep := f.marked
	f.stop()
	f.wg.Wait()
	f.api.close()
	rep.Errors = f.errs.Load()
	rep.FirstErr = f.firstErr
	rep.Visitors = make([]visitorOut, len(f.vis))
	for i, v := range f.vis {
		rep.Visitors[i] = v.out
	}
	return rep
}

// abort stops every visitor without a report.
func (f *fleet) abort() {
	f.stop()
	f.wg.Wait()
	f.api.close()
}

// fleetHandle is a fleet in this process or in a cost-worker child.
type fleetHandle interface {
	begin() error
	mark() error
	end() (fleetReport, error)
	abort()
}

type localFleet struct{ f *fleet }

func (l localFleet) begin() error              { l.f.begin(); return nil }
func (l localFleet) mark() error               { l.f.mark(); return nil }
func (l localFleet) end() (fleetReport, error) { return l.f.end(), nil }
func (l localFleet) abort()                    { l.f.abort() }

// workerFleet is a child process of the bench (cost-worker, scale-worker):
// it is given its configuration as JSON on the command line, says "ready"
// on stdout, and is driven by lines on stdin (cost: "begin", "mark", "end";
// scale: "end"); its report is one JSON document on stdout.
type workerFleet struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startWorker starts `bench sub -config JSON(cfg)` and waits for its
// "ready".
func startWorker(ctx context.Context, sub string, cfg any) (*workerFleet, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, sub, "-config", string(js))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startChild(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", sub, err)
	}
	w := &workerFleet{cmd: cmd, in: in, out: bufio.NewReaderSize(outp, 1<<20)}
	line := make(chan string, 1)
	go func() {
		s, _ := w.out.ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s != "ready\n" {
			w.abort()
			return nil, fmt.Errorf("%s did not get ready: %q", sub, s)
		}
	case <-ctx.Done():
		w.abort()
		return nil, ctx.Err()
	}
	return w, nil
}

func (w *workerFleet) begin() error {
	_, err := io.WriteString(w.in, "begin\n")
	return err
}

func (w *workerFleet) mark() error {
	_, err := io.WriteString(w.in, "mark\n")
	return err
}

func (w *workerFleet) end() (fleetReport, error) {
	var rep fleetReport
	err := w.finish(&rep)
	return rep, err
}

// finish says "end", decodes the worker's report into v and reaps it.
func (w *workerFleet) finish(v any) error {
	if _, err := io.WriteString(w.in, "end\n"); err != nil {
		return err
	}
	err := json.NewDecoder(w.out).Decode(v)
	_ = w.in.Close()
	_ = w.cmd.Wait()
	return err
}

func (w *workerFleet) abort() {
	_ = w.in.Close()
	stopProcess(w.cmd.Process.Pid, 5*time.Second)
}

// startFleets starts len(handles) fleets at once, fleet p with cfg(p): in
// this process when there is one (local), else each in a child process
// `bench sub` (worker wraps it). Each one started is put in handles, where
// the caller ends or aborts it, also when another failed.
func startFleets[C any, H any](ctx context.Context, handles []H, sub string, cfg func(p int) C,
	local func(context.Context, C) (H, error), worker func(*workerFleet) H) error {
	procs := len(handles)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for p := range procs {
		c := cfg(p)
		wg.Go(func() {
			if procs == 1 {
				h, err := local(ctx, c)
				if err == nil {
					handles[p] = h
				}
				errs[p] = err
				return
			}
			w, err := startWorker(ctx, sub, c)
			if err == nil {
				handles[p] = worker(w)
			}
			errs[p] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// fleetOf is a fleet in this process or in a worker child, whose report
// is an R.
type fleetOf[R any] interface {
	end() (R, error)
	abort()
	pid() int // 0 for this process
}

// localHandle is a fleet in this process.
type localHandle[R any] struct {
	report func() R
	stop   func()
}

func (l localHandle[R]) end() (R, error) { return l.report(), nil }
func (l localHandle[R]) abort()          { l.stop() }
func (l localHandle[R]) pid() int        { return 0 } // counted as this process

// workerHandle is a fleet in a worker child process whose report is an R.
type workerHandle[R any] struct{ w *workerFleet }

func (h workerHandle[R]) end() (R, error) {
	var rep R
	err := h.w.finish(&rep)
	return rep, err
}
func (h workerHandle[R]) abort() { h.w.abort() }
func (h workerHandle[R]) pid() int {
	if h.w.cmd.Process == nil {
		return 0
	}
	return h.w.cmd.Process.Pid
}

// workerMain is the body of a worker child (`bench name -config JSON`): it
// starts its fleet from the configuration, says "ready", and once it reads
// "end" on stdin writes the fleet's report as JSON on stdout.
func workerMain[C any, F any](ctx context.Context, name, cfgJSON string, start func(context.Context, C) (F, error), abort func(F), report func(F) any) error {
	var cfg C
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return fmt.Errorf("%s: config: %w", name, err)
	}
	f, err := start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Scan()
		got <- sc.Text()
	}()
	select {
	case l := <-got:
		if l != "end" {
			abort(f)
			return fmt.Errorf("%s: stopped before end", name)
		}
	case <-ctx.Done():
		abort(f)
		return ctx.Err()
	}
	return json.NewEncoder(os.Stdout).Encode(report(f))
}

// costWorkerMain is `bench cost-worker -config JSON`.
func costWorkerMain(ctx context.Context, cfgJSON string) error {
	var cfg fleetConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		return fmt.Errorf("cost-worker: config: %w", err)
	}
	f, err := startFleet(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	lines := make(chan string)
	go func() {
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() (string, bool) {
		select {
		case l, ok := <-lines:
			return l, ok
		case <-ctx.Done():
			return "", false
		}
	}
	if l, ok := next(); !ok || l != "begin" {
		f.abort()
		return errors.New("cost-worker: stopped before begin")
	}
	f.begin()
	if l, ok := next(); !ok || l != "mark" {
		f.mark()
		f.end()
		return errors.New("cost-worker: stopped before mark")
	}
	f.mark()
	if l, ok := next(); !ok || l != "end" {
		f.end()
		return errors.New("cost-worker: stopped before end")
	}
	return json.NewEncoder(os.Stdout).Encode(f.end())
}
