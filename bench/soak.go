package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// soakOptions configure the soak scenario.
type soakOptions struct {
	Out        string
	Quick      bool
	N          int           // visitor slots (each one waiting or just admitted at any time)
	Duration   time.Duration // admitting, with the faults
	Instances  int
	Batch      int
	Tick       time.Duration
	FaultEvery time.Duration // pub/sub connections killed this often
	Linger     time.Duration // an admitted visitor keeps its stream this long
	Sample     time.Duration // RSS and goroutines read this often
	RedisStop  string        // kill (SIGKILL, a crash) or term (SIGTERM, a clean stop)
	PerProc    int
	Progress   io.Writer
}

func (o *soakOptions) defaults() {
	if o.Quick {
		o.N = orInt(o.N, 600)
		o.Duration = orDur(o.Duration, 45*time.Second)
		o.FaultEvery = orDur(o.FaultEvery, 10*time.Second)
		o.Linger = orDur(o.Linger, 2*time.Second)
		o.Sample = orDur(o.Sample, time.Second)
		o.PerProc = orInt(o.PerProc, 300) // two client processes, as in the full run
	}
	o.N = orInt(o.N, 30000)
	o.Duration = orDur(o.Duration, 10*time.Minute)
	o.Instances = orInt(o.Instances, 3)
	o.Batch = orInt(o.Batch, 14)
	o.Tick = orDur(o.Tick, 100*time.Millisecond)
	o.FaultEvery = orDur(o.FaultEvery, time.Minute)
	o.Linger = orDur(o.Linger, 10*time.Second)
	o.Sample = orDur(o.Sample, 5*time.Second)
	o.PerProc = orInt(o.PerProc, 15000)
	if o.RedisStop == "" {
		o.RedisStop = "kill"
	}
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Fault kinds.
const (
	faultPubSub   = "pubsub"   // CLIENT KILL TYPE pubsub
	faultInstance = "instance" // one instance SIGKILLed and started again
	faultRedis    = "redis"    // redis-server stopped and started again on its AOF
)

// soakFault is one fault and what visitors saw after it, until the next.
type soakFault struct {
	Kind         string  `json:"kind"`
	At           float64 `json:"atSeconds"` // since admission started
	What         string  `json:"what"`
	DownSeconds  float64 `json:"downSeconds,omitempty"` // until the process answered again
	KeysBefore   int64   `json:"redisKeysBefore,omitempty"`
	KeysAfter    int64   `json:"redisKeysAfter,omitempty"`
	AOFMiB       float64 `json:"aofMiB,omitempty"` // what Redis loaded at its restart
	TicksMissed  int     `json:"ticksMissed"`      // ticks without an admission until the next fault
	LongestGap   int     `json:"longestGapTicks"`
	Drops        int     `json:"connectionsDropped"`
	SlowDrops    float64 `json:"closedAsSlowByServers"` // waitroom_push_dropped_slow_total, increase until the next fault
	LagMax       float64 `json:"lagMaxSeconds"`         // told − notBefore, worst of the visitors admitted until the next fault
	LagP99       float64 `json:"lagP99Seconds"`
	next         float64 // when the next fault came (or the end)
	instanceDown int     // which instance, for instance faults
}

// soakSample is the instances at one moment; NaN where an instance did not
// answer (while it was down).
type soakSample struct {
	T          float64 `json:"t"` // seconds since admission started (negative while connecting)
	at         time.Time
	RSSMiB     []float64 `json:"rssMiB"`
	Goroutines []float64 `json:"goroutines"`
	Conns      []float64 `json:"connections"`
	Slow       []float64 `json:"closedAsSlow"` // waitroom_push_dropped_slow_total (from 0 again after a restart)
}

// soakInstance is how one instance's memory and goroutines went once warm:
// the floor (lowest sample) of each half of the warm window. Each fault
// brings a burst that comes and goes; a leak raises the floor.
type soakInstance struct {
	Instance  int     `json:"instance"`
	Restarted bool    `json:"restarted"`
	From      float64 `json:"warmFromSeconds"`
	RSSFirst  float64 `json:"rssFloorFirstHalfMiB"`
	RSSSecond float64 `json:"rssFloorSecondHalfMiB"`
	RSSGrowth float64 `json:"rssGrowth"` // second / first − 1
	// Goroutines (go_goroutines): a waiting push connection has none of
	// its own, so they stay flat while connections come and go.
	GoFirst  float64 `json:"goroutinesFloorFirstHalf"`
	GoSecond float64 `json:"goroutinesFloorSecondHalf"`
	GoGrowth float64 `json:"goroutinesGrowth"`
}

type soakReport struct {
	Scenario        string  `json:"scenario"`
	Machine         string  `json:"machine"`
	Command         string  `json:"command"`
	Visitors        int     `json:"visitors"`
	Instances       int     `json:"instances"`
	ClientProcesses int     `json:"clientProcesses"`
	Batch           int     `json:"batch"`
	TickMs          int64   `json:"tickMs"`
	Seconds         float64 `json:"admittingSeconds"`
	ConnectSeconds  float64 `json:"connectSeconds"`
	LingerSeconds   float64 `json:"lingerSeconds"`
	RedisStop       string  `json:"redisStop"`
	Visits          int     `json:"visits"`
	Told            int     `json:"told"`
	Missed          int     `json:"missed"`     // admitted, never told
	Duplicates      int     `json:"duplicates"` // told admitted more than once on a connection
	TwoTokens       int     `json:"toldTwoTokens"`
	LostPlace       int     `json:"heardNotInQueue"` // visits that heard not_in_queue or expired
	AdmittedRedis   int64   `json:"admittedRedis"`
	JoinErrors      int64   `json:"joinErrors"`
	ConnErrors      int64   `json:"connectErrors"`
	FirstErr        string  `json:"firstError,omitempty"`
	TicksExpected   int     `json:"ticksExpected"`
	TicksMissed     int     `json:"ticksMissed"`
	TicksBeforeAny  int     `json:"ticksMissedBeforeFirstFault"`
	// A tick may admit a little more than a batch to make up tokens taken
	// back unused (visitors that went without giving theirs back): at most
	// a quarter of the batch (at least one) more. Over that is a second
	// batch in one tick.
	TicksOverBatch int            `json:"ticksOverOneBatch"`
	TicksMadeUp    int            `json:"ticksWithMakeUp"` // over the batch, within the make-up
	MostInATick    int            `json:"mostAdmittedInATick"`
	LagP50         float64        `json:"lagP50Seconds"`
	LagP99         float64        `json:"lagP99Seconds"`
	LagMax         float64        `json:"lagMaxSeconds"`
	Faults         []soakFault    `json:"faults"`
	PerInstance    []soakInstance `json:"perInstance"`
	WarmSeconds    float64        `json:"warmWindowSeconds"`
	Samples        []soakSample   `json:"samples"`
	MissedExamples []string       `json:"missedExamples,omitempty"`
	Checks         []scaleCheck   `json:"checks"`
}

// RSS and goroutines count as flat when they grow by at most flatLimit
// over the warm window (goroutines also when by at most flatGoroutines: a
// few come and go with requests), judged only when the window is at least
// flatWindow long.
const (
	flatLimit      = 0.10
	flatGoroutines = 50
	flatWindow     = 2 * time.Minute
)

// soakRun is the soak's live state: the environment, whose targets faults
// replace, and the samples.
type soakRun struct {
	o      soakOptions
	env    *scaleEnv
	aofDir string
	room   string
	t0     time.Time // admission started; set before the faults begin
	// mu guards env.insts (an instance restart replaces one) and samples.
	// Only the fault loop touches env.redis.
	mu      sync.Mutex
	samples []soakSample
}

func (r *soakRun) startRedis(t *target, ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	return t.startRedisOn(ctx, port, r.redisArgs()...)
}

// redisArgs is the persistence docs/operations.md recommends: AOF, fsync every
// second, no RDB snapshots.
func (r *soakRun) redisArgs() []string {
	return []string{"--dir", r.aofDir, "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""}
}

func (r *soakRun) insts() []*target {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.env.insts)
}

// sampleLoop reads every instance's RSS, goroutines and connections every
// o.Sample until stop closes.
func (r *soakRun) sampleLoop(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(r.o.Sample)
	defer t.Stop()
	for {
		insts := r.insts()
		s := soakSample{at: time.Now()}
		for _, in := range insts {
			rss, g, c, slow := math.NaN(), math.NaN(), math.NaN(), math.NaN()
			m := in.metrics(ctx)
			if v, ok := m["go_goroutines"]; ok {
				g, c, slow = v, m["waitroom_connections"], m["waitroom_push_dropped_slow_total"]
				if p, err := readProc(in.PID); err == nil {
					rss = float64(p.RSSKiB) / 1024
				}
			}
			s.RSSMiB, s.Goroutines, s.Conns = append(s.RSSMiB, rss), append(s.Goroutines, g), append(s.Conns, c)
			s.Slow = append(s.Slow, slow)
		}
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// killPubSub closes every pub/sub connection Redis has (the instances'
// hubs), which they must notice and open again.
func (r *soakRun) killPubSub(ctx context.Context, f *soakFault) error {
	n, err := r.env.redis.rdb.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Int64()
	if err != nil {
		return err
	}
	f.What = fmt.Sprintf("%d pub/sub connections closed", n)
	return nil
}

// restartInstance SIGKILLs instance i and starts it again on its port (its
// visitors meanwhile reconnect to the others).
func (r *soakRun) restartInstance(ctx context.Context, i int, f *soakFault) error {
	old := r.insts()[i]
	u, err := url.Parse(old.URL)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	t0 := time.Now()
	old.stopProcs(true)
	nt := &target{}
	if err := nt.startServerOn(ctx, port, r.env.redis.RedisAddr, r.env.secret, r.env.args); err != nil {
		nt.Close()
		return err
	}
	f.DownSeconds = time.Since(t0).Seconds()
	f.What = fmt.Sprintf("instance %d SIGKILLed and started again on its port", i+1)
	r.mu.Lock()
	r.env.insts[i] = nt
	r.mu.Unlock()
	return nil
}

// restartRedis stops redis-server (SIGKILL or SIGTERM) and starts it again
// on the same port and AOF directory.
func (r *soakRun) restartRedis(ctx context.Context, f *soakFault) error {
	red := r.env.redis
	f.KeysBefore, _ = red.rdb.DBSize(ctx).Result()
	f.AOFMiB = float64(dirSize(r.aofDir)) / (1 << 20)
	_, port, _ := strings.Cut(red.RedisAddr, ":")
	p, _ := strconv.Atoi(port)
	t0 := time.Now()
	red.stopProcs(r.o.RedisStop == "kill")
	if err := red.startRedisOn(ctx, p, r.redisArgs()...); err != nil {
		return err
	}
	f.DownSeconds = time.Since(t0).Seconds()
	f.KeysAfter, _ = red.rdb.DBSize(ctx).Result()
	sig := "SIGKILL"
	if r.o.RedisStop != "kill" {
		sig = "SIGTERM"
	}
	f.What = fmt.Sprintf("redis-server %s, started again on its AOF (%.1f MiB): %d keys before, %d after loading", sig, f.AOFMiB, f.KeysBefore, f.KeysAfter)
	return nil
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// schedule is when each fault comes, in seconds after admission started:
// pub/sub kills every FaultEvery, the instance restart and the Redis
// restart half-way between two of them, about a third and two thirds in.
func (o soakOptions) schedule() []soakFault {
	d, every := o.Duration.Seconds(), o.FaultEvery.Seconds()
	var fs []soakFault
	for t := every; t < d; t += every {
		fs = append(fs, soakFault{Kind: faultPubSub, At: t})
	}
	mid := func(share float64) float64 { return math.Floor(d*share/every)*every + every/2 }
	fs = append(fs, soakFault{Kind: faultInstance, At: mid(0.35), instanceDown: 1}, soakFault{Kind: faultRedis, At: mid(0.65)})
	slices.SortFunc(fs, func(a, b soakFault) int { return int(math.Round((a.At - b.At) * 1000)) })
	return fs
}

// check says what is wrong with the options of a soak run, once
// defaulted.
func (o *soakOptions) check() error {
	if o.Instances < 2 || o.N < o.Instances || o.PerProc < 1 {
		return fmt.Errorf("soak: need at least 2 instances, a visitor per instance and -per-proc ≥ 1 (got %d, %d, %d)", o.Instances, o.N, o.PerProc)
	}
	if o.RedisStop != "kill" && o.RedisStop != "term" {
		return fmt.Errorf("soak: -redis-stop is kill or term, not %q", o.RedisStop)
	}
	if o.Duration < 2*o.FaultEvery {
		return fmt.Errorf("soak: -duration %v must be at least two -fault-every (%v)", o.Duration, o.FaultEvery)
	}
	return nil
}

func runSoak(ctx context.Context, o soakOptions, command string) (*soakReport, error) {
	o.defaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	connectLimit := time.Minute + time.Duration(o.N)*10*time.Millisecond
	ctx, cancel := withLimit(ctx, connectLimit+o.Duration+3*time.Minute)
	defer cancel()

	r := &soakRun{o: o, room: "soak-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)}
	var err error
	if r.aofDir, err = os.MkdirTemp("", "waitroom-soak-aof-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(r.aofDir)
	procs := (o.N + o.PerProc - 1) / o.PerProc
	rep := &soakReport{Scenario: "soak", Machine: machine(), Command: command, Visitors: o.N, Instances: o.Instances, ClientProcesses: procs,
		Batch: o.Batch, TickMs: o.Tick.Milliseconds(), LingerSeconds: o.Linger.Seconds(), RedisStop: o.RedisStop}
	fmt.Fprintf(o.Progress, "soak: starting redis-server (AOF everysec) and %d instances\n", o.Instances)
	r.env, err = startEnv(ctx, o.Instances, r.startRedis, func(adminKey string) []string {
		return []string{"-tick", o.Tick.String(), "-batch", strconv.Itoa(o.Batch), "-admin-key", adminKey}
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.env.close()
	}()
	if err := r.env.setPaused(ctx, r.room, true); err != nil {
		return nil, fmt.Errorf("pause before the visitors join: %w", err)
	}
	stopSampling := r.startSampling(ctx)
	defer stopSampling()

	// Connect: every slot joins and opens its stream while the room is paused.
	handles := make([]soakHandle, procs)
	defer abortFleets(handles) // those not ended
	connecting := time.Now()
	if err := r.connect(ctx, handles, connectLimit); err != nil {
		return nil, err
	}
	rep.ConnectSeconds = time.Since(connecting).Seconds()
	fmt.Fprintf(o.Progress, "soak: %d connected in %.1fs; admitting %d per %v for %v with faults\n", o.N, rep.ConnectSeconds, o.Batch, o.Tick, o.Duration)

	// Admit, with the faults.
	r.t0 = time.Now()
	if err := r.env.setPaused(ctx, r.room, false); err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	faults := o.schedule()
	if err := r.runFaults(ctx, faults); err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(r.t0).Seconds()
	if err := r.env.setPaused(ctx, r.room, true); err != nil {
		return nil, fmt.Errorf("pause at the end: %w", err)
	}
	tEnd := time.Now()
	stopSampling()
	fmt.Fprintln(o.Progress, "soak: paused; checking who was admitted but not told")

	reports, err := endSoakFleets(handles)
	if err != nil {
		return nil, err
	}
	var stats struct {
		AdmittedTotal int64 `json:"admittedTotal"`
	}
	if err := r.env.admin(ctx, "GET", "/rooms/"+r.room+"/stats", &stats); err != nil {
		return nil, fmt.Errorf("room stats: %w", err)
	}
	rep.AdmittedRedis = stats.AdmittedTotal
	soakSummarise(rep, r, faults, reports, tEnd)
	if err := writeOutputs(o.Out, "soak", soakMarkdown(rep), rep, soakSVG(rep)); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "soak: done: %d visits, %d told, %d missed, %d told twice; %d of %d ticks missed\n",
		rep.Visits, rep.Told, rep.Missed, rep.Duplicates, rep.TicksMissed, rep.TicksExpected)
	return rep, nil
}

func (r *soakRun) progressLine() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) == 0 {
		return
	}
	s := r.samples[len(r.samples)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %5.0fs", s.at.Sub(r.t0).Seconds())
	for i := range s.RSSMiB {
		fmt.Fprintf(&b, " | instance %d: %s MiB, %s goroutines, %s conns", i+1, num(s.RSSMiB[i]), num(s.Goroutines[i]), num(s.Conns[i]))
	}
	fmt.Fprintln(r.o.Progress, b.String())
}

// soakSummarise works the visits, samples and faults into the report.
func soakSummarise(rep *soakReport, r *soakRun, faults []soakFault, reports []soakFleetReport, tEnd time.Time) {
	o := r.o
	t0 := r.t0
	for i := range r.samples {
		r.samples[i].T = r.samples[i].at.Sub(t0).Seconds()
	}
	rep.Samples = r.samples
	for i := range faults {
		faults[i].next = tEnd.Sub(t0).Seconds()
		if i+1 < len(faults) {
			faults[i].next = faults[i+1].At
		}
	}
	perTick := soakTallyVisits(rep, faults, reports, o.Tick.Milliseconds(), t0, tEnd)
	soakSlowDrops(rep, faults, o.Instances)
	soakCountTicks(rep, faults, perTick, o, t0, tEnd)
	rep.Faults = faults
	soakFloors(rep, faults, o, tEnd.Sub(t0).Seconds())
	rep.Checks = soakChecks(rep)
}

// soakFaultAt is the index of the last fault at or before sec, -1 for
// none.
func soakFaultAt(faults []soakFault, sec float64) int {
	k := -1
	for i, f := range faults {
		if f.At <= sec {
			k = i
		}
	}
	return k
}

// soakTallyVisits counts the fleets' visits into rep, their lags into rep
// and the fault each followed, their drops into that fault, and returns
// how many were admitted in each tick (by tick number).
func soakTallyVisits(rep *soakReport, faults []soakFault, reports []soakFleetReport, tickMs int64, t0, tEnd time.Time) map[int64]int {
	perTick := map[int64]int{}
	var lags []float64
	faultLags := make([][]float64, len(faults))
	for _, fr := range reports {
		rep.JoinErrors += fr.JoinErrors
		rep.ConnErrors += fr.ConnErrors
		if rep.FirstErr == "" {
			rep.FirstErr = fr.FirstErr
		}
		for _, v := range fr.Visits {
			if v.NB > 0 {
				perTick[v.NB/1e6/tickMs-1]++
			}
			if !soakTallyVisit(rep, v) {
				continue
			}
			lag := max(float64(v.Told-v.NB)/1e9, 0)
			lags = append(lags, lag)
			if k := soakFaultAt(faults, float64(v.NB-t0.UnixNano())/1e9); k >= 0 {
				faultLags[k] = append(faultLags[k], lag)
			}
		}
		for _, d := range fr.Drops {
			if k := soakFaultAt(faults, float64(d.T-t0.UnixNano())/1e9); k >= 0 && d.T <= tEnd.UnixNano() {
				faults[k].Drops++
			}
		}
	}
	rep.LagP50, rep.LagP99, rep.LagMax = quantile(lags, .5), quantile(lags, .99), quantile(lags, 1)
	for k := range faults {
		faults[k].LagP99, faults[k].LagMax = quantile(faultLags[k], .99), quantile(faultLags[k], 1)
	}
	return perTick
}

// soakTallyVisit counts one visit into rep and says whether it was told.
func soakTallyVisit(rep *soakReport, v soakVisit) (told bool) {
	rep.Visits++
	if v.Lost > 0 {
		rep.LostPlace++
	}
	if v.Missed {
		rep.Missed++
		if len(rep.MissedExamples) < 10 {
			rep.MissedExamples = append(rep.MissedExamples, fmt.Sprintf("slot %d, notBefore %s, %d connects", v.Slot,
				time.Unix(0, v.NB).UTC().Format("15:04:05.000"), v.Connects))
		}
	}
	if v.Admitted == 0 {
		return false
	}
	rep.Told++
	if v.Admitted > 1 {
		rep.Duplicates++
	}
	if v.Tokens > 1 {
		rep.TwoTokens++
	}
	return true
}

// soakSlowDrops counts the connections the servers closed as slow
// consumers, by fault: each instance's counter increase from one sample to
// the next (a fall is a restart, counting from 0 again).
func soakSlowDrops(rep *soakReport, faults []soakFault, instances int) {
	prev := make([]float64, instances)
	for _, s := range rep.Samples {
		for i, v := range s.Slow {
			if math.IsNaN(v) {
				continue
			}
			d := v - prev[i]
			if d < 0 {
				d = v
			}
			prev[i] = v
			if k := soakFaultAt(faults, s.T); k >= 0 && s.T > 0 {
				faults[k].SlowDrops += d
			}
		}
	}
}

// soakCountTicks checks the ticks: every tick from the second after the
// resume to the last whole one before the pause should have admitted one
// batch.
func soakCountTicks(rep *soakReport, faults []soakFault, perTick map[int64]int, o soakOptions, t0, tEnd time.Time) {
	tickMs := o.Tick.Milliseconds()
	first := t0.UnixMilli()/tickMs + 2
	last := tEnd.UnixMilli()/tickMs - 2
	gapRun := make([]int, len(faults))
	for tick := first; tick <= last; tick++ {
		rep.TicksExpected++
		c := perTick[tick]
		rep.MostInATick = max(rep.MostInATick, c)
		switch {
		case c > o.Batch+makeUpMost(o.Batch):
			rep.TicksOverBatch++
		case c > o.Batch:
			rep.TicksMadeUp++
		}
		k := soakFaultAt(faults, float64(tick*tickMs-t0.UnixMilli())/1000)
		if c > 0 {
			if k >= 0 {
				gapRun[k] = 0
			}
			continue
		}
		rep.TicksMissed++
		if k < 0 {
			rep.TicksBeforeAny++
			continue
		}
		faults[k].TicksMissed++
		gapRun[k]++
		faults[k].LongestGap = max(faults[k].LongestGap, gapRun[k])
	}
}

// soakFloors checks each instance is flat once warm: from two fault
// intervals after the instance restart (which moves connections between
// all instances) to the end at endT, the floor of the first half against
// the floor of the second.
func soakFloors(rep *soakReport, faults []soakFault, o soakOptions, endT float64) {
	warm := 2 * o.FaultEvery.Seconds()
	for _, f := range faults {
		if f.Kind == faultInstance {
			warm += f.At + f.DownSeconds
		}
	}
	half := (endT - warm) / 2
	rep.WarmSeconds = endT - warm
	floor := func(from, to float64, get func(soakSample) float64) float64 {
		lo := math.Inf(1)
		for _, s := range rep.Samples {
			if v := get(s); s.T >= from && s.T <= to && !math.IsNaN(v) {
				lo = min(lo, v)
			}
		}
		if math.IsInf(lo, 1) {
			return math.NaN()
		}
		return lo
	}
	for i := range o.Instances {
		in := soakInstance{Instance: i + 1, From: warm}
		for _, f := range faults {
			in.Restarted = in.Restarted || f.Kind == faultInstance && f.instanceDown == i
		}
		rss := func(s soakSample) float64 { return s.RSSMiB[i] }
		gor := func(s soakSample) float64 { return s.Goroutines[i] }
		in.RSSFirst, in.RSSSecond = floor(warm, warm+half, rss), floor(warm+half, endT, rss)
		in.GoFirst, in.GoSecond = floor(warm, warm+half, gor), floor(warm+half, endT, gor)
		in.RSSGrowth = in.RSSSecond/in.RSSFirst - 1
		in.GoGrowth = in.GoSecond/in.GoFirst - 1
		rep.PerInstance = append(rep.PerInstance, in)
	}
}

// makeUpMost is how many admissions a tick may add to a batch of batch to
// make up tokens taken back unused (the admit script's owed_extra).
func makeUpMost(batch int) int { return max(1, batch/4) }

func soakChecks(rep *soakReport) []scaleCheck {
	cs := []scaleCheck{
		{What: "admitted but never told", Target: "0", Measured: strconv.Itoa(rep.Missed), Met: rep.Missed == 0},
		{What: "told admitted twice", Target: "0", Measured: strconv.Itoa(rep.Duplicates), Met: rep.Duplicates == 0},
		{What: "heard not_in_queue or expired", Target: "0", Measured: strconv.Itoa(rep.LostPlace), Met: rep.LostPlace == 0},
		{What: fmt.Sprintf("ticks over one batch and its make-up (%d + %d)", rep.Batch, makeUpMost(rep.Batch)), Target: "0",
			Measured: fmt.Sprintf("%d (%d with make-up admissions; most in a tick %d)", rep.TicksOverBatch, rep.TicksMadeUp, rep.MostInATick), Met: rep.TicksOverBatch == 0},
	}
	if rep.WarmSeconds < flatWindow.Seconds() {
		return cs
	}
	for _, in := range rep.PerInstance {
		cs = append(cs,
			scaleCheck{What: fmt.Sprintf("instance %d RSS once warm", in.Instance), Target: fmt.Sprintf("flat (≤ +%.0f%%)", flatLimit*100),
				Measured: fmt.Sprintf("%s → %s MiB (%+.1f%%)", num(in.RSSFirst), num(in.RSSSecond), in.RSSGrowth*100), Met: in.RSSGrowth <= flatLimit},
			scaleCheck{What: fmt.Sprintf("instance %d goroutines once warm", in.Instance), Target: fmt.Sprintf("flat (≤ +%.0f%% or +%d)", flatLimit*100, flatGoroutines),
				Measured: fmt.Sprintf("%s → %s (%+.1f%%)", num(in.GoFirst), num(in.GoSecond), in.GoGrowth*100),
				Met:      in.GoGrowth <= flatLimit || in.GoSecond-in.GoFirst <= flatGoroutines})
	}
	return cs
}

func soakMarkdown(rep *soakReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Soak: %s push visitors, %d instances, faults\n\n", commas(int64(rep.Visitors)), rep.Instances)
	fmt.Fprintf(&b, "%s WebSocket visitors over %d server instances on one redis-server with AOF (`appendfsync everysec`), clients in %d process(es). Once all are connected (%.0f s), the room admits %d per %d ms tick for %.0f s; each admitted visitor keeps its stream %.0f s (a second admitted state would be seen), then joins again as a new visitor, so the queue stays full. Faults: pub/sub connections killed every interval (`CLIENT KILL TYPE pubsub`), one instance SIGKILLed and started again, redis-server stopped (%s) and started again on its AOF. Machine: %s.\n\n",
		commas(int64(rep.Visitors)), rep.Instances, rep.ClientProcesses, rep.ConnectSeconds, rep.Batch, rep.TickMs, rep.Seconds, rep.LingerSeconds, rep.RedisStop, rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n## Checks\n\n", rep.Command)
	b.WriteString(checksTable(rep.Checks))
	if rep.WarmSeconds < flatWindow.Seconds() {
		fmt.Fprintf(&b, "\nThe warm window (%.0f s) is shorter than %.0f s: RSS and goroutines are not judged flat or not; the per-instance figures below are indicative only.\n", rep.WarmSeconds, flatWindow.Seconds())
	}
	var rows [][]string

	b.WriteString("\n## Faults\n\n")
	rows = nil
	for _, f := range rep.Faults {
		down := ""
		if f.DownSeconds > 0 {
			down = secs(f.DownSeconds)
		}
		rows = append(rows, []string{fmt.Sprintf("%.1f s", f.At), f.Kind, f.What, down, strconv.Itoa(f.TicksMissed), strconv.Itoa(f.LongestGap),
			strconv.Itoa(f.Drops), num(f.SlowDrops), secs(f.LagP99), secs(f.LagMax)})
	}
	b.WriteString(mdTable([]string{"at", "fault", "what", "down until it answered", "ticks missed until the next fault", "longest run missed (ticks)",
		"connections dropped", "of which closed as slow by the servers", "lag p99", "lag max"}, rows))
	fmt.Fprintf(&b, "\nTicks missed before the first fault (none to blame but the machine): %d.\n", rep.TicksBeforeAny)

	b.WriteString("\n## Admission\n\n")
	b.WriteString(mdTable([]string{"visits", "told admitted", "admitted (Redis)", "missed", "told twice", "two tokens", "heard not_in_queue",
		"ticks expected", "ticks missed", "lag p50", "lag p99", "lag max", "join errors", "connect errors"},
		[][]string{{commas(int64(rep.Visits)), commas(int64(rep.Told)), commas(rep.AdmittedRedis), strconv.Itoa(rep.Missed), strconv.Itoa(rep.Duplicates),
			strconv.Itoa(rep.TwoTokens), strconv.Itoa(rep.LostPlace), commas(int64(rep.TicksExpected)), strconv.Itoa(rep.TicksMissed),
			secs(rep.LagP50), secs(rep.LagP99), secs(rep.LagMax), commas(rep.JoinErrors), commas(rep.ConnErrors)}}))
	if rep.FirstErr != "" {
		fmt.Fprintf(&b, "\nFirst client error: %s\n", rep.FirstErr)
	}
	if len(rep.MissedExamples) > 0 {
		fmt.Fprintf(&b, "\nMissed (first %d): %s\n", len(rep.MissedExamples), strings.Join(rep.MissedExamples, "; "))
	}

	b.WriteString("\n## Per instance, once warm\n\n")
	rows = nil
	for _, in := range rep.PerInstance {
		restarted := "no"
		if in.Restarted {
			restarted = "yes"
		}
		rows = append(rows, []string{strconv.Itoa(in.Instance), restarted, fmt.Sprintf("%.0f s", in.From), num(in.RSSFirst), num(in.RSSSecond),
			fmt.Sprintf("%+.1f%%", in.RSSGrowth*100), num(in.GoFirst), num(in.GoSecond), fmt.Sprintf("%+.1f%%", in.GoGrowth*100)})
	}
	b.WriteString(mdTable([]string{"instance", "restarted", "warm from", "RSS floor, first half (MiB)", "RSS floor, second half (MiB)", "RSS growth",
		"goroutines, floor first half", "floor second half", "growth"}, rows))
	b.WriteString(`
RSS, goroutines and connections over time are in soak.svg (and every sample in soak.json).

## How it was measured

- **Visitors**: each slot joins at instance (slot mod instances) and listens on a WebSocket. When its stream drops it connects again after 0.2–1 s; when a connect fails it tries the next instance, as a load balancer would. Told admitted, it keeps the stream for the linger time, then leaves and joins again as a new visitor.
- **Missed**: at the end the room is paused; every visitor not told admitted asks its status once, and if that says admitted, it is given 10 s to be told by push before it counts as missed. **Told twice**: a visitor that received more than one admitted state (it does not reconnect once told, so that is on one connection). **Two tokens**: the admitted states it received carried different tokens.
- **Ticks**: a visitor's tick is its notBefore in ms divided by the tick, minus one. Every tick from the resume to the pause should admit one batch (the queue never runs dry); a tick without any admission is missed and counted against the last fault before it. A tick may admit up to a quarter of a batch (at least one) more to make up tokens taken back unused (a visitor that went without giving its token back, say because its leave hit the instance that was killed); more than that would be a second batch in one tick. The longest run is the outage a visitor saw.
- **Connections dropped**: streams that ended without the client closing them, by the last fault before; *closed as slow by the servers* is the increase of the instances' waitroom_push_dropped_slow_total over the same time (read every sample interval).
- **Lag**: time the client received the admitted state minus its notBefore, by the last fault before the notBefore.
- **RSS** (VmRSS from /proc), **goroutines** (go_goroutines) and **connections** (waitroom_connections) of each instance every sample interval. *Warm* starts two fault intervals after the instance restart (which moves connections between all instances); growth compares the floor (lowest sample) of the first half of the warm window with the floor of the second half: every fault brings a burst of reconnects, reconciles and requests that comes and goes, while a leak raises the floor. Goroutines are judged as a whole: a waiting push connection has no goroutine of its own (it waits in the instance's epoll set), so they stay flat while connections come and go. With the default 10-minute run the warm window is about 4.5 minutes: a slow leak needs a longer -duration to show.
- **Down**: from the kill until the new process answered (/readyz for an instance, PING for Redis after loading its AOF).
`)
	return b.String()
}

func soakSVG(rep *soakReport) string {
	per := func(get func(soakSample) []float64) []series {
		var out []series
		for i := range rep.Instances {
			s := series{Label: fmt.Sprintf("instance %d", i+1)}
			for _, smp := range rep.Samples {
				if smp.T < 0 {
					continue
				}
				s.Points = append(s.Points, point{X: smp.T, Y: get(smp)[i]})
			}
			out = append(out, s)
		}
		return out
	}
	var marks []marker
	for _, f := range rep.Faults {
		marks = append(marks, marker{X: f.At, Label: f.Kind})
	}
	return lineChartSVG(fmt.Sprintf("Soak: %s push visitors over %d instances", commas(int64(rep.Visitors)), rep.Instances),
		fmt.Sprintf("%d per %d ms for %.0f s; dashed lines: faults; a gap: the instance was down", rep.Batch, rep.TickMs, rep.Seconds),
		[]linePanel{
			{Title: "RSS per instance", Unit: "MiB", Series: per(func(s soakSample) []float64 { return s.RSSMiB })},
			{Title: "Goroutines per instance", Series: per(func(s soakSample) []float64 { return s.Goroutines })},
			{Title: "Push connections per instance", Series: per(func(s soakSample) []float64 { return s.Conns })},
		}, marks)
}

func soakScenario() scenario {
	return scenario{name: "soak", quickHelp: "a run of about a minute with 600 visitors (what the tests run)",
		flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
			var o soakOptions
			fs.IntVar(&o.N, "n", 0, "push visitors (default 30000; 600 with -quick)")
			fs.DurationVar(&o.Duration, "duration", 0, "admitting time, with the faults (default 10m; 45s with -quick)")
			fs.IntVar(&o.Instances, "instances", 3, "server instances, all on the one redis-server")
			fs.IntVar(&o.Batch, "batch", 0, "server -batch: visitors admitted per tick (default 14)")
			fs.DurationVar(&o.Tick, "tick", 0, "server -tick (default 100ms)")
			fs.DurationVar(&o.FaultEvery, "fault-every", 0, "pub/sub connections are killed this often (default 1m; 10s with -quick)")
			fs.DurationVar(&o.Linger, "linger", 0, "how long an admitted visitor keeps its stream before joining again (default 10s; 2s with -quick)")
			fs.DurationVar(&o.Sample, "sample", 0, "how often RSS and goroutines are read (default 5s; 1s with -quick)")
			fs.StringVar(&o.RedisStop, "redis-stop", "kill", "how Redis is stopped before its restart: kill (SIGKILL, a crash) or term (SIGTERM)")
			fs.IntVar(&o.PerProc, "per-proc", 0, "visitors per client process; more are spread over child processes (default 15000; 300 with -quick)")
			return func(ctx context.Context, env runEnv) (string, error) {
				o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
				_, err := runSoak(ctx, o, env.command)
				return "soak.{md,json,svg}", err
			}
		}}
}

// connect starts the fleets into handles while the room is paused (every
// slot joins and opens its stream) and waits until the instances hold
// every connection.
func (r *soakRun) connect(ctx context.Context, handles []soakHandle, connectLimit time.Duration) error {
	o, procs := r.o, len(handles)
	urls := r.env.urls()
	fmt.Fprintf(o.Progress, "soak: connecting %d visitors over %d instances from %d process(es)\n", o.N, o.Instances, procs)
	cctx, ccancel := context.WithTimeout(ctx, connectLimit)
	err := soakFleets.startAll(cctx, handles, func(p int) soakFleetConfig {
		first := p * o.N / procs
		return soakFleetConfig{URLs: urls, Room: r.room, First: first, Count: (p+1)*o.N/procs - first,
			IPBase: 2 + p*20, IPs: 20, SetupConc: 64, Linger: o.Linger, Grace: 10 * time.Second}
	})
	ccancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := waitFor(ctx, 30*time.Second, func() bool { return r.env.conns(ctx) == float64(o.N) }); err != nil {
		return fmt.Errorf("the instances hold %.0f of %d connections: %w", r.env.conns(ctx), o.N, err)
	}
	return nil
}

// runFaults brings on each fault at its time, from r.t0 to the end of
// o.Duration, and sets each one's At to when it came.
func (r *soakRun) runFaults(ctx context.Context, faults []soakFault) error {
	o := r.o
	var err error
	nextLine := r.t0.Add(10 * time.Second)
	// wait waits until t, printing a progress line every 10 s.
	wait := func(t time.Time) error {
		for time.Now().Before(t) {
			until := t
			if nextLine.Before(t) {
				until = nextLine
			}
			if err := waitPhase(ctx, until); err != nil {
				return err
			}
			if !time.Now().Before(nextLine) {
				r.progressLine()
				nextLine = nextLine.Add(10 * time.Second)
			}
		}
		return nil
	}
	for i := range faults {
		f := &faults[i]
		if err := wait(r.t0.Add(time.Duration(f.At * float64(time.Second)))); err != nil {
			return err
		}
		f.At = time.Since(r.t0).Seconds()
		switch f.Kind {
		case faultPubSub:
			err = r.killPubSub(ctx, f)
		case faultInstance:
			err = r.restartInstance(ctx, f.instanceDown, f)
		case faultRedis:
			err = r.restartRedis(ctx, f)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A fault the bench could not bring back ends the run: what
			// follows would measure a broken setup.
			return fmt.Errorf("fault %s at %.0fs: %w", f.Kind, f.At, err)
		}
		fmt.Fprintf(o.Progress, "soak: %5.1fs %s: %s\n", f.At, f.Kind, f.What)
	}
	if err := wait(r.t0.Add(o.Duration)); err != nil {
		return err
	}
	return nil
}

// endSoakFleets ends every fleet in handles at once and collects the
// reports; handles is cleared, so the caller's abort skips them.
func endSoakFleets(handles []soakHandle) ([]soakFleetReport, error) {
	reports := make([]soakFleetReport, len(handles))
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Go(func() { reports[i], errs[i] = h.end() })
	}
	wg.Wait()
	clear(handles)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("client processes: %w", err)
	}
	return reports, nil
}

// startSampling starts reading the instances' RSS and goroutines into
// r.samples until ctx ends or the returned stop, which waits for the
// sampler to return and may be called more than once.
func (r *soakRun) startSampling(ctx context.Context) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); r.sampleLoop(ctx, quit) }()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}
