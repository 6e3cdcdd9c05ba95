package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
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

	begun      wireTotals
	polls0     int64
	hits0      int64
	marked     fleetReport
	sampleStop chan struct{}
	sampleDone chan struct{}
	samples    []sample
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

// abort stops every visitor without a report, and the sampling if the
// window is open.
func (f *fleet) abort() {
	if f.sampleStop != nil {
		select {
		case <-f.sampleDone: // marked
		default:
			close(f.sampleStop)
			<-f.sampleDone
		}
	}
	f.stop()
	f.wg.Wait()
	f.api.close()
}

// costFleets are the cost scenario's fleets: waiting visitors of one mode,
// stepped through "begin" and "mark" of the measured window.
var costFleets = fleetKind[fleetConfig, fleetReport]{
	worker: "cost-worker",
	start: func(ctx context.Context, cfg fleetConfig) (localFleet[fleetReport], error) {
		f, err := startFleet(ctx, cfg)
		if err != nil {
			return localFleet[fleetReport]{}, err
		}
		return localFleet[fleetReport]{
			steps:  map[string]func(){"begin": f.begin, "mark": f.mark},
			report: f.end,
			stop:   f.abort,
		}, nil
	},
	steps: []string{"begin", "mark"},
}

// costWorkerMain is `bench cost-worker -config JSON`.
func costWorkerMain(ctx context.Context, cfgJSON string) error {
	return costFleets.workerMain(ctx, cfgJSON)
}
