package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// soakFleetConfig is one client process's share of the soak's visitors.
// Each visitor is a slot that joins, listens on a WebSocket until it is told
// admitted, keeps listening for Linger (a second admitted state on the same
// connection would be a duplicate), then leaves and joins again as a new
// visitor, so the queue stays full for the whole run.
type soakFleetConfig struct {
	URLs      []string      `json:"urls"` // slot i starts at URLs[i % len]
	Room      string        `json:"room"`
	First     int           `json:"first"` // global index of the first slot
	Count     int           `json:"count"`
	IPBase    int           `json:"ipBase"`
	IPs       int           `json:"ips"`
	SetupConc int           `json:"setupConc"`
	Linger    time.Duration `json:"linger"`
	Grace     time.Duration `json:"grace"` // at the end: how long an admitted but untold visitor may still be told
}

// soakVisit is one visit of one slot: a join, one or more connections,
// at most one admission.
type soakVisit struct {
	Slot     int    `json:"s"`
	Joined   int64  `json:"j"`            // Unix ns
	Told     int64  `json:"t,omitempty"`  // first admitted state received
	NB       int64  `json:"nb,omitempty"` // its notBefore
	Admitted int    `json:"a,omitempty"`  // admitted states received (1 is right)
	Tokens   int    `json:"k,omitempty"`  // distinct tokens among them
	Connects int    `json:"c"`
	Lost     int    `json:"l,omitempty"` // not_in_queue or expired states heard
	Missed   bool   `json:"m,omitempty"` // admitted (status says so) but never pushed
	Cred     string `json:"cred,omitempty"`
}

// soakDrop is a stream the server ended while the visitor waited or lingered.
type soakDrop struct {
	Slot int   `json:"s"`
	T    int64 `json:"t"`
}

type soakFleetReport struct {
	Visits     []soakVisit `json:"visits"`
	Drops      []soakDrop  `json:"drops"`
	JoinErrors int64       `json:"joinErrors"`
	ConnErrors int64       `json:"connErrors"` // connects that did not open
	FirstErr   string      `json:"firstErr,omitempty"`
}

type soakFleet struct {
	cfg  soakFleetConfig
	w    wire
	apis []*api
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// ending: slots finish their current visit and start no other.
	ending atomic.Bool

	joinErrs, connErrs atomic.Int64

	mu       sync.Mutex
	done     []soakVisit   // finished visits
	current  []*soakVisit  // each slot's visit in progress (nil between)
	told     []atomic.Bool // each slot's current visit was told admitted
	drops    []soakDrop
	firstErr string
}

func (f *soakFleet) fail(counter *atomic.Int64, err error) {
	counter.Add(1)
	f.mu.Lock()
	if f.firstErr == "" {
		f.firstErr = err.Error()
	}
	f.mu.Unlock()
}

// startSoakFleet starts every slot and returns once each has joined and
// opened its first stream.
func startSoakFleet(ctx context.Context, cfg soakFleetConfig) (*soakFleet, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("soak fleet: no instances")
	}
	f := &soakFleet{cfg: cfg, current: make([]*soakVisit, cfg.Count), told: make([]atomic.Bool, cfg.Count)}
	f.ctx, f.stop = context.WithCancel(context.Background())
	d := newDialer(&f.w, cfg.IPBase, cfg.IPs)
	for _, u := range cfg.URLs {
		f.apis = append(f.apis, newAPI(u, cfg.Room, &f.w, d, max(cfg.SetupConc, 1)))
	}
	sem := make(chan struct{}, max(cfg.SetupConc, 1))
	var ready sync.WaitGroup
	ready.Add(cfg.Count)
	for i := range cfg.Count {
		f.wg.Go(func() { f.runSlot(i, sem, ready.Done) })
	}
	done := make(chan struct{})
	go func() { ready.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.abort()
		return nil, ctx.Err()
	}
	if n := f.joinErrs.Load() + f.connErrs.Load(); n > int64(cfg.Count/100) {
		f.abort()
		return nil, fmt.Errorf("%d of %d visitors could not be set up, first: %s", n, cfg.Count, f.firstErr)
	}
	return f, nil
}

// runSlot runs visits one after another until the fleet ends. The first
// visit's first stream opening (or failing) releases the set-up semaphore.
func (f *soakFleet) runSlot(i int, sem chan struct{}, ready func()) {
	var once sync.Once
	release := func() { once.Do(func() { <-sem; ready() }) }
	select {
	case sem <- struct{}{}:
	case <-f.ctx.Done():
		once.Do(ready)
		return
	}
	defer release()
	inst := (f.cfg.First + i) % len(f.apis)
	for f.ctx.Err() == nil && !f.ending.Load() {
		v := &soakVisit{Slot: f.cfg.First + i}
		inst = f.visit(i, v, inst, release)
		f.mu.Lock()
		f.current[i] = nil
		if v.Joined != 0 {
			f.done = append(f.done, *v)
		}
		f.mu.Unlock()
		f.told[i].Store(false)
	}
}

// visit joins (at instance inst, or the next ones if it fails) and listens
// until admitted and lingered, the fleet ends, or -- at the end -- the slot
// is let go. It returns the instance to start the next visit at.
// join joins on instance inst, or the next ones while joins fail, until
// one succeeds or the fleet ends (then cred is ""); inst is the instance
// it ended on.
func (f *soakFleet) join(inst int) (cred string, _ int) {
	for attempt := 0; ; attempt++ {
		st, err := f.apis[inst].join(f.ctx, "")
		if err == nil {
			return st.Visitor, inst
		}
		if f.ctx.Err() != nil {
			return "", inst
		}
		f.fail(&f.joinErrs, fmt.Errorf("join: %w", err))
		inst = (inst + 1) % len(f.apis)
		// Redis may be restarting: back off up to about 2 s.
		if !sleepCtx(f.ctx, min(time.Duration(attempt+1)*100*time.Millisecond, 2*time.Second)+rand.N(200*time.Millisecond)) {
			return "", inst
		}
	}
}

func (f *soakFleet) visit(i int, v *soakVisit, inst int, opened func()) int {
	ctx := f.ctx
	cred, inst := f.join(inst)
	if cred == "" {
		return inst // the fleet ended
	}
	v.Joined, v.Cred = time.Now().UnixNano(), cred
	f.mu.Lock()
	f.current[i] = v
	f.mu.Unlock()

	// The visit ends Linger after the admitted state, or when the fleet
	// ends.
	vctx, vcancel := context.WithCancel(ctx)
	defer vcancel()
	var firstToken string
	var mu sync.Mutex // observe runs on the reading goroutine; the end reads v too
	observe := func(st state, at time.Time) bool {
		mu.Lock()
		defer mu.Unlock()
		switch st.Status {
		case "admitted":
			v.Admitted++
			if v.Admitted == 1 {
				v.Told, v.NB, firstToken, v.Tokens = at.UnixNano(), st.NotBefore.UnixNano(), st.Token, 1
				f.told[i].Store(true)
				time.AfterFunc(f.cfg.Linger, vcancel)
			} else if st.Token != firstToken {
				v.Tokens++
			}
		case "not_in_queue", "expired":
			v.Lost++
		}
		return true
	}
	failed := 0
	for vctx.Err() == nil {
		ok := false
		err := f.apis[inst].ws(vctx, cred, func() { ok = true; v.Connects++; opened() }, observe)
		if vctx.Err() != nil {
			break
		}
		if ok {
			f.mu.Lock()
			f.drops = append(f.drops, soakDrop{Slot: v.Slot, T: time.Now().UnixNano()})
			f.mu.Unlock()
			failed = 0
			mu.Lock()
			told := v.Admitted > 0
			mu.Unlock()
			if told {
				break // a visitor told admitted has left the waiting room
			}
		} else {
			if err == nil {
				err = errors.New("stream ended before it opened")
			}
			f.fail(&f.connErrs, err)
			failed++
			// The instance may be down: try the next one, as a load
			// balancer would send it there.
			inst = (inst + 1) % len(f.apis)
		}
		pause := 200*time.Millisecond + rand.N(800*time.Millisecond)
		if failed > 3 {
			pause = time.Second + rand.N(time.Second)
		}
		if !sleepCtx(vctx, pause) {
			break
		}
	}
	return inst
}

// finish ends the run: no slot starts a new visit; each current visit that
// was not told admitted is asked by status whether it was admitted, and if
// so is given Grace to be told by push before it counts as missed. Then
// every stream is closed.
func (f *soakFleet) finish() soakFleetReport {
	f.ending.Store(true)
	f.mu.Lock()
	type pending struct {
		i int
		v *soakVisit
	}
	var open []pending
	for i, v := range f.current {
		if v != nil && !f.told[i].Load() {
			open = append(open, pending{i, v})
		}
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(f.cfg.SetupConc, 1))
	var missedMu sync.Mutex
	missed := map[int]int64{} // slot index in this fleet -> notBefore
	for _, p := range open {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			a := f.apis[p.v.Slot%len(f.apis)]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, _, err := a.status(ctx, p.v.Cred)
			cancel()
			if err != nil || st.Status != "admitted" {
				return
			}
			deadline := time.Now().Add(f.cfg.Grace)
			for !f.told[p.i].Load() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !f.told[p.i].Load() {
				missedMu.Lock()
				missed[p.i] = st.NotBefore.UnixNano()
				missedMu.Unlock()
			}
		})
	}
	wg.Wait()
	f.abort()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.done {
		v := &f.done[k]
		i := v.Slot - f.cfg.First
		if nb, ok := missed[i]; ok && v.Admitted == 0 && f.current[i] == nil {
			v.Missed, v.NB = true, nb
			delete(missed, i)
		}
		if !v.Missed {
			v.Cred = "" // only missed visits keep theirs, for looking them up
		}
	}
	return soakFleetReport{Visits: f.done, Drops: f.drops, JoinErrors: f.joinErrs.Load(), ConnErrors: f.connErrs.Load(), FirstErr: f.firstErr}
}

func (f *soakFleet) abort() {
	f.ending.Store(true)
	f.stop()
	f.wg.Wait()
	for _, a := range f.apis {
		a.close()
	}
}

// soakHandle is a fleet in this process or in a soak-worker child.
type soakHandle = fleetOf[soakFleetReport]

// soakFleets are the soak scenario's fleets: slots of visitors that join
// again after each admission, with no steps between ready and end.
var soakFleets = fleetKind[soakFleetConfig, soakFleetReport]{
	worker: "soak-worker",
	start: func(ctx context.Context, cfg soakFleetConfig) (localFleet[soakFleetReport], error) {
		f, err := startSoakFleet(ctx, cfg)
		if err != nil {
			return localFleet[soakFleetReport]{}, err
		}
		return localFleet[soakFleetReport]{report: f.finish, stop: f.abort}, nil
	},
}

// soakWorkerMain is `bench soak-worker -config JSON`.
func soakWorkerMain(ctx context.Context, cfgJSON string) error {
	return soakFleets.workerMain(ctx, cfgJSON)
}
