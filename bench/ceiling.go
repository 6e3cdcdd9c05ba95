package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// ceilingOptions configure the ceiling scenario: how many joins a second
// one room takes on one redis-server before its join p99 passes 100 ms.
type ceilingOptions struct {
	Out       string
	Quick     bool
	Instances int
	Rates     []float64     // the steps, in joins/s
	Joins     int           // per step; 0 = rate × Step
	Step      time.Duration // the length of a step's arrivals
	Procs     int           // generator processes
	Retries   int           // a failed step is run again this many times before the ramp stops
	Conns     int           // per instance and generator process
	P99       time.Duration // a step is sustained while its join p99 is at most this
	Statuses  int           // status polls in the status phase
	Flat      int           // joins in the flat-out phase
	Admit     time.Duration // the admission phase
	Batch     int           // per tick in the admission phase
	JoinBatch int           // the servers' -join-batch; 0 = their default
	Limit     time.Duration // the whole run
	Progress  io.Writer
}

func (o *ceilingOptions) defaults() {
	if o.Quick {
		o.Rates = orSlice(o.Rates, []float64{200, 400})
		o.Step = orDur(o.Step, time.Second)
		o.Statuses = orInt(o.Statuses, 500)
		o.Flat = orInt(o.Flat, 500)
		o.Admit = orDur(o.Admit, time.Second)
		o.Procs = orInt(o.Procs, 1)
		o.Limit = orDur(o.Limit, 2*time.Minute)
	}
	o.Instances = orInt(o.Instances, 3)
	o.Rates = orSlice(o.Rates, []float64{1000, 2000, 4000, 8000, 12000, 16000, 24000, 32000, 50000})
	o.Step = orDur(o.Step, 5*time.Second)
	o.Procs = orInt(o.Procs, 2)
	o.Conns = orInt(o.Conns, 256)
	o.P99 = orDur(o.P99, 100*time.Millisecond)
	o.Statuses = orInt(o.Statuses, 20000)
	o.Flat = orInt(o.Flat, 20000)
	o.Admit = orDur(o.Admit, 3*time.Second)
	o.Batch = orInt(o.Batch, 500)
	o.Limit = orDur(o.Limit, 15*time.Minute)
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

func orSlice[T any](v, def []T) []T {
	if len(v) == 0 {
		return def
	}
	return v
}

// ceilingUsage is what Redis, the instances and the generators used
// between two samples, and what the joins, statuses or admissions among
// them cost.
type ceilingUsage struct {
	Seconds          float64 `json:"seconds"`
	RedisCores       float64 `json:"redisCpuCores"`
	ServerCores      float64 `json:"serverCpuCores"` // all instances
	GeneratorCores   float64 `json:"generatorCpuCores"`
	GeneratorMaxProc float64 `json:"generatorBusiestProcessCores"`
	OtherCores       float64 `json:"otherProcessesCpuCores"`
	RedisCPUPerOpUS  float64 `json:"redisCpuUsPerOp"`
	EvalshaCalls     int64   `json:"evalshaCalls"`
	EvalshaPerOp     float64 `json:"evalshaCallsPerOp"`
	EvalshaUSPerCall float64 `json:"evalshaUsecPerCall"`
	EvalshaUSPerOp   float64 `json:"evalshaUsecPerOp"`
	CommandsPerOp    float64 `json:"redisCommandsPerOp"`    // as Redis counts them: a script call is one
	RedisUSPerOp     float64 `json:"redisCommandUsecPerOp"` // the scripts' inner commands are counted inside EVALSHA too
}

// ceilingStep is one rate step.
type ceilingStep struct {
	Rate      float64      `json:"offeredJoinsPerSec"`
	Achieved  float64      `json:"achievedJoinsPerSec"`
	Joins     int          `json:"joins"`
	OK        int          `json:"ok"`
	Errors    int          `json:"errors"`
	Dropped   int          `json:"droppedAtGenerator"`
	FirstErr  string       `json:"firstError,omitempty"`
	P50       float64      `json:"joinP50Seconds"`
	P99       float64      `json:"joinP99Seconds"`
	FromSend  float64      `json:"fromSendP99Seconds"` // p99 counted from when each join was sent, the worst process's
	SendLag   float64      `json:"sendLagP99Seconds"`  // how late the generators sent, p99 of their processes' worst
	Attempt   int          `json:"attempt"`            // 2: the step again after it failed once
	Sustained bool         `json:"sustained"`
	Usage     ceilingUsage `json:"usage"`
}

// ceilingPhase is the status or the admission phase.
type ceilingPhase struct {
	Name   string  `json:"name"`
	Ops    int     `json:"ops"`
	PerSec float64 `json:"opsPerSec"`
	Cached float64 `json:"answeredFromMemoryShare,omitempty"`
	// PerRedisOpUS is the Redis CPU per status that Redis answered (the
	// others cost it nothing).
	PerRedisOpUS float64      `json:"redisCpuUsPerStatusFromRedis,omitempty"`
	Errors       int          `json:"errors"`
	Usage        ceilingUsage `json:"usage"`
	Comment      string       `json:"comment"`
}

type ceilingReport struct {
	Scenario     string            `json:"scenario"`
	Machine      string            `json:"machine"`
	Command      string            `json:"command"`
	Instances    int               `json:"instances"`
	Procs        int               `json:"generatorProcesses"`
	P99Limit     float64           `json:"p99LimitSeconds"`
	Background   ceilingBackground `json:"background"` // Redis with nobody joining, out of the per-op figures
	Steps        []ceilingStep     `json:"steps"`
	Phases       []ceilingPhase    `json:"phases"`
	Sustained    float64           `json:"highestSustainedJoinsPerSec"`
	Limit        string            `json:"limit"`
	StepCPUUS    float64           `json:"redisCpuUsPerJoinAtSustained"` // at the highest sustained step
	JoinCPUUS    float64           `json:"redisCpuUsPerJoin"`            // flat out
	JoinScriptUS float64           `json:"evalshaUsecPerJoin"`           // the same
	CoreCeiling  float64           `json:"oneRedisCoreJoinsPerSec"`      // 1 s / JoinCPUUS
}

// runCeiling starts one redis-server and o.Instances servers on it, runs
// the rate steps and the three phases against one room, and writes
// ceiling.{md,json,svg} into o.Out. Each step ends when its arrivals are
// answered or their timeout passes; the whole run ends by o.Limit.
func runCeiling(ctx context.Context, o ceilingOptions, command string) (*ceilingReport, error) {
	o.defaults()
	ctx, cancel := withLimit(ctx, o.Limit)
	defer cancel()
	env, err := startEnv(ctx, o.Instances, (*target).startRedis, func(adminKey string) []string {
		args := []string{"-tick", "100ms", "-admin-key", adminKey}
		if o.JoinBatch > 0 {
			args = append(args, "-join-batch", strconv.Itoa(o.JoinBatch))
		}
		return args
	})
	if err != nil {
		return nil, err
	}
	defer env.close()
	room := "ceiling-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	// Paused while it fills, so no tick admits and every script call in a
	// step is a join; presence off, so the admission phase admits whoever
	// is first however long ago they joined.
	if err := adminPut(ctx, env, room, map[string]any{"paused": true, "presence": false}); err != nil {
		return nil, err
	}
	rep := &ceilingReport{Scenario: "ceiling", Machine: machine(), Command: command, Instances: o.Instances,
		Procs: o.Procs, P99Limit: o.P99.Seconds()}
	m := newCeilingMeter(env)
	creds, err := ceilingWarmUp(ctx, o, env, room)
	if err != nil {
		return nil, err
	}
	bgFor := 3 * time.Second
	if o.Quick {
		bgFor = time.Second
	}
	if rep.Background, err = m.measureBackground(ctx, bgFor); err != nil {
		return nil, err
	}
	if err := ceilingRamp(ctx, o, env, m, room, rep); err != nil {
		return nil, err
	}
	flat, err := ceilingFlatOut(ctx, o, env, m, room)
	if err != nil {
		return nil, err
	}
	st, err := ceilingStatus(ctx, o, env, m, room, creds)
	if err != nil {
		return nil, err
	}
	ad, err := ceilingAdmit(ctx, o, env, m, room)
	if err != nil {
		return nil, err
	}
	rep.Phases = []ceilingPhase{flat, st, ad}
	ceilingVerdict(rep)
	fmt.Fprintf(o.Progress, "ceiling: highest sustained %.0f joins/s; %s\n", rep.Sustained, rep.Limit)
	if err := writeOutputs(o.Out, "ceiling", ceilingMarkdown(rep, o), rep, ceilingSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// ceilingWarmUp fills the scripts' cache and the instances' connections,
// and returns the credentials of the visitors it joined (the status
// phase polls as them).
func ceilingWarmUp(ctx context.Context, o ceilingOptions, env *scaleEnv, room string) ([]string, error) {
	n := 2000
	if o.Quick {
		n = 200
	}
	var w wire
	apis := ceilingAPIs(env, room, &w, 16)
	defer closeAPIs(apis)
	creds := make([]string, n)
	_, err := hammer(ctx, 48, n, func(i int) error {
		st, err := apis[i%len(apis)].join(ctx, "")
		creds[i] = st.Visitor
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	return creds, nil
}

func ceilingAPIs(env *scaleEnv, room string, w *wire, conns int) []*api {
	d := newDialer(w, 2, 10)
	var apis []*api
	for _, u := range env.urls() {
		apis = append(apis, newAPI(u, room, w, d, conns))
	}
	return apis
}

func closeAPIs(apis []*api) {
	for _, a := range apis {
		a.close()
	}
}

// ceilingRamp runs the rate steps in turn and stops after the first that
// is not sustained (join p99 over the limit, any error, or under 95% of
// the offered rate achieved) o.Retries+1 times running: on a machine
// shared with other work one stall can fail a step the room takes.
func ceilingRamp(ctx context.Context, o ceilingOptions, env *scaleEnv, m *ceilingMeter, room string, rep *ceilingReport) error {
	for i, attempt := 0, 1; i < len(o.Rates); {
		rate := o.Rates[i]
		s, err := ceilingRunStep(ctx, o, env, m, room, rate)
		if err != nil {
			return fmt.Errorf("step %.0f/s: %w", rate, err)
		}
		s.Attempt = attempt
		rep.Steps = append(rep.Steps, s)
		fmt.Fprintf(o.Progress, "ceiling %6.0f/s: achieved %.0f/s, p50 %s p99 %s, errors %d, Redis %.2f cores (%.1f µs/join, EVALSHA %.1f µs/call), servers %.2f cores, generators %.2f cores (busiest %.2f, send lag p99 %s), other %.2f cores\n",
			rate, s.Achieved, secs(s.P50), secs(s.P99), s.Errors, s.Usage.RedisCores, s.Usage.RedisCPUPerOpUS, s.Usage.EvalshaUSPerCall,
			s.Usage.ServerCores, s.Usage.GeneratorCores, s.Usage.GeneratorMaxProc, secs(s.SendLag), s.Usage.OtherCores)
		switch {
		case s.Sustained:
			i, attempt = i+1, 1
		case attempt <= o.Retries:
			attempt++
		default:
			return nil
		}
	}
	return nil
}

// ceilingRunStep starts the generators for one rate, lets them send their
// arrivals, and measures the window from the first arrival to the last
// answer.
func ceilingRunStep(ctx context.Context, o ceilingOptions, env *scaleEnv, m *ceilingMeter, room string, rate float64) (ceilingStep, error) {
	s := ceilingStep{Rate: rate, Joins: o.Joins}
	if s.Joins == 0 {
		s.Joins = int(rate * o.Step.Seconds())
	}
	handles := make([]fleetOf[ceilingGenReport], o.Procs)
	defer abortFleets(handles)
	share := func(p int) int { return s.Joins/o.Procs + btoi(p < s.Joins%o.Procs) }
	if err := ceilingFleets.startAll(ctx, handles, func(p int) ceilingGenConfig {
		return ceilingGenConfig{URLs: env.urls(), Room: room, Rate: rate / float64(o.Procs), Count: share(p),
			Conns: o.Conns, MaxInFlight: 4000, Timeout: 10 * time.Second, IPBase: 20 + 20*p, IPs: 20}
	}); err != nil {
		return s, err
	}
	s0 := m.sample(ctx)
	if err := stepFleets(handles, "go"); err != nil {
		return s, err
	}
	reps := make([]ceilingGenReport, len(handles))
	for p, h := range handles {
		r, err := h.end()
		handles[p] = nil
		if err != nil {
			return s, fmt.Errorf("generator %d: %w", p+1, err)
		}
		reps[p] = r
	}
	s1 := m.sample(ctx)
	ceilingTally(&s, reps)
	var genCPU []float64
	if o.Procs > 1 { // children; with one, the generator is this process
		for _, r := range reps {
			genCPU = append(genCPU, r.CPUSeconds)
		}
	}
	s.Usage = s1.since(s0, s.OK, genCPU)
	s.Sustained = s.Errors == 0 && s.P99 <= o.P99.Seconds() && s.Achieved >= 0.95*rate
	return s, nil
}

// ceilingTally merges the generators' reports into s.
func ceilingTally(s *ceilingStep, reps []ceilingGenReport) {
	var lat []float64
	var start, end int64 = math.MaxInt64, 0
	for _, r := range reps {
		s.OK += r.OK
		s.Errors += r.Failed + r.Dropped
		s.Dropped += r.Dropped
		if s.FirstErr == "" {
			s.FirstErr = r.FirstError
		}
		for _, us := range r.LatencyUS {
			lat = append(lat, float64(us)/1e6)
		}
		s.SendLag = max(s.SendLag, r.LagP99Ms/1000)
		s.FromSend = max(s.FromSend, r.ServeP99Ms/1000)
		start, end = min(start, r.StartNano), max(end, r.EndNano)
	}
	if end > start {
		s.Achieved = float64(s.OK) / (float64(end-start) / 1e9)
	}
	s.P50, s.P99 = quantile(lat, .5), quantile(lat, .99)
}

const flatOutPhase = "joins flat out"

// ceilingFlatOut joins new visitors as fast as 64 clients get answers
// (closed loop): what the room takes flat out, latency aside, and what a
// join costs Redis when it is busiest.
func ceilingFlatOut(ctx context.Context, o ceilingOptions, env *scaleEnv, m *ceilingMeter, room string) (ceilingPhase, error) {
	ph := ceilingPhase{Name: flatOutPhase, Ops: o.Flat,
		Comment: "joins of new visitors, 64 at a time over the instances (closed loop), the room paused"}
	var w wire
	apis := ceilingAPIs(env, room, &w, 32)
	defer closeAPIs(apis)
	var errs atomic.Int64
	s0 := m.sample(ctx)
	var err error
	ph.PerSec, err = hammer(ctx, 64, ph.Ops, func(i int) error {
		if _, err := apis[i%len(apis)].join(ctx, ""); err != nil {
			errs.Add(1)
		}
		return nil
	})
	if err != nil {
		return ph, fmt.Errorf("flat-out phase: %w", err)
	}
	s1 := m.sample(ctx)
	ph.Errors = int(errs.Load())
	ph.Usage = s1.since(s0, ph.Ops-ph.Errors, nil)
	fmt.Fprintf(o.Progress, "ceiling joins flat out: %.0f/s, Redis %.2f cores, %.1f µs/join, EVALSHA %.1f µs/call\n",
		ph.PerSec, ph.Usage.RedisCores, ph.Usage.RedisCPUPerOpUS, ph.Usage.EvalshaUSPerCall)
	return ph, nil
}

// ceilingStatus polls the warm-up visitors' status (closed loop, 48 at a
// time) and measures what a status costs Redis. The room is paused, so
// positions stand still: what the instances answer from memory is as
// much as they can.
func ceilingStatus(ctx context.Context, o ceilingOptions, env *scaleEnv, m *ceilingMeter, room string, creds []string) (ceilingPhase, error) {
	ph := ceilingPhase{Name: "status", Ops: o.Statuses,
		Comment: "GET status of waiting visitors, 48 at a time over the instances, the room paused"}
	var w wire
	apis := ceilingAPIs(env, room, &w, 16)
	defer closeAPIs(apis)
	var hits, errs atomic.Int64
	s0 := m.sample(ctx)
	var err error
	ph.PerSec, err = hammer(ctx, 48, o.Statuses, func(i int) error {
		_, hit, err := apis[i%len(apis)].status(ctx, creds[i%len(creds)])
		if err != nil {
			errs.Add(1)
		} else if hit {
			hits.Add(1)
		}
		return nil
	})
	if err != nil {
		return ph, fmt.Errorf("status phase: %w", err)
	}
	s1 := m.sample(ctx)
	ph.Errors = int(errs.Load())
	ph.Cached = float64(hits.Load()) / float64(o.Statuses)
	ph.Usage = s1.since(s0, o.Statuses-int(errs.Load()), nil)
	if ph.Cached < 1 {
		ph.PerRedisOpUS = ph.Usage.RedisCPUPerOpUS / (1 - ph.Cached)
	}
	fmt.Fprintf(o.Progress, "ceiling status: %.0f/s, %.0f%% from memory, Redis %.1f µs/status, EVALSHA %.2f calls/status at %.1f µs\n",
		ph.PerSec, ph.Cached*100, ph.Usage.RedisCPUPerOpUS, ph.Usage.EvalshaPerOp, ph.Usage.EvalshaUSPerCall)
	return ph, nil
}

// ceilingAdmit resumes the room at o.Batch a tick for o.Admit and
// measures what an admission costs Redis.
func ceilingAdmit(ctx context.Context, o ceilingOptions, env *scaleEnv, m *ceilingMeter, room string) (ceilingPhase, error) {
	ph := ceilingPhase{Name: "admission",
		Comment: fmt.Sprintf("the room resumed at batch %d per 100 ms tick for %v, nobody listening", o.Batch, o.Admit)}
	s0 := m.sample(ctx)
	if err := adminPut(ctx, env, room, map[string]any{"paused": false, "batch": o.Batch}); err != nil {
		return ph, err
	}
	if !sleepCtx(ctx, o.Admit) {
		return ph, ctx.Err()
	}
	if err := adminPut(ctx, env, room, map[string]any{"paused": true}); err != nil {
		return ph, err
	}
	s1 := m.sample(ctx)
	ph.Ops = int(s1.admitted - s0.admitted)
	ph.PerSec = float64(ph.Ops) / s1.at.Sub(s0.at).Seconds()
	if ph.Ops == 0 {
		return ph, errors.New("admission phase: nobody was admitted")
	}
	ph.Usage = s1.since(s0, ph.Ops, nil)
	fmt.Fprintf(o.Progress, "ceiling admission: %d admitted (%.0f/s), Redis %.1f µs/admission, EVALSHA %.1f µs/admission\n",
		ph.Ops, ph.PerSec, ph.Usage.RedisCPUPerOpUS, ph.Usage.EvalshaUSPerOp)
	return ph, nil
}

// adminPut changes the room's settings through the first instance.
func adminPut(ctx context.Context, env *scaleEnv, room string, body map[string]any) error {
	js, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "PUT", env.insts[0].URL+"/api/v1/admin/rooms/"+room, bytes.NewReader(js))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+env.adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("PUT room %s: http %d: %s", room, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// ceilingVerdict finds the highest sustained step and names what limits
// the next one.
func ceilingVerdict(rep *ceilingReport) {
	for _, s := range rep.Steps {
		if s.Sustained {
			rep.Sustained = s.Achieved
			rep.StepCPUUS = s.Usage.RedisCPUPerOpUS
		}
	}
	// What a join costs is read where Redis is busiest, flat out: at a low
	// rate Redis wakes for every few commands and a join carries more of
	// each wake-up.
	for _, p := range rep.Phases {
		if p.Name == flatOutPhase && p.Usage.RedisCPUPerOpUS > 0 {
			rep.JoinCPUUS = p.Usage.RedisCPUPerOpUS
			rep.JoinScriptUS = p.Usage.EvalshaUSPerOp
			rep.CoreCeiling = 1e6 / rep.JoinCPUUS
		}
	}
	last := rep.Steps[len(rep.Steps)-1]
	if last.Sustained {
		rep.Limit = fmt.Sprintf("not reached: every step up to %.0f/s held; add -rates", last.Rate)
		return
	}
	rep.Limit = limitOf(last)
}

// limitOf names what held back a step that was not sustained: Redis's
// core, a generator process, or, when the machine's cores are all busy,
// the biggest user of them (the instances, the generators, or other
// processes); else a generator that sent late, or nothing saturated.
func limitOf(s ceilingStep) string {
	u := s.Usage
	cpus := float64(runtime.NumCPU())
	busy := u.RedisCores + u.ServerCores + u.GeneratorCores + u.OtherCores
	fail := fmt.Sprintf("at %.0f/s offered: achieved %.0f/s, p99 %s, %d errors", s.Rate, s.Achieved, secs(s.P99), s.Errors)
	switch {
	case u.RedisCores >= 0.85:
		return fmt.Sprintf("%s: Redis's one core is saturated (%.2f cores)", fail, u.RedisCores)
	case u.GeneratorMaxProc >= 0.85:
		return fmt.Sprintf("%s: the generator (busiest process %.2f cores): add -procs", fail, u.GeneratorMaxProc)
	case busy >= 0.9*cpus:
		who := "the instances' CPU"
		switch max(u.ServerCores, u.GeneratorCores, u.OtherCores) {
		case u.OtherCores:
			who = "other processes' CPU (the machine is shared)"
		case u.GeneratorCores:
			who = "the generators' CPU"
		}
		return fmt.Sprintf("%s: the machine's %d cores are all busy, most of them %s (instances %.2f, Redis %.2f, generators %.2f, other processes %.2f; send lag p99 %s), Redis not saturated",
			fail, int(cpus), who, u.ServerCores, u.RedisCores, u.GeneratorCores, u.OtherCores, secs(s.SendLag))
	case s.SendLag > 0.01:
		return fmt.Sprintf("%s: the generator sends late (send lag p99 %s, busiest process %.2f cores)", fail, secs(s.SendLag), u.GeneratorMaxProc)
	default:
		return fmt.Sprintf("%s: no core saturated (instances %.2f, Redis %.2f cores): waiting inside the instances", fail, u.ServerCores, u.RedisCores)
	}
}

// ceilingMeter reads what the processes of a run used. Its background is
// what Redis does with nobody joining (the instances' ticks of the paused
// room, their presence and instance records, Redis's own cron), taken out
// of the per-operation figures.
type ceilingMeter struct {
	env      *scaleEnv
	redisPID int
	bg       ceilingBackground
}

// ceilingBackground is Redis's idle use, per second.
type ceilingBackground struct {
	RedisCores   float64 `json:"redisCpuCores"`
	EvalshaCalls float64 `json:"evalshaCallsPerSec"`
	EvalshaUsec  float64 `json:"evalshaUsecPerSec"`
	Commands     float64 `json:"commandsPerSec"`
	CommandUsec  float64 `json:"commandUsecPerSec"`
}

func newCeilingMeter(env *scaleEnv) *ceilingMeter {
	m := &ceilingMeter{env: env}
	if len(env.redis.procs) > 0 {
		m.redisPID = env.redis.procs[0].Process.Pid
	}
	return m
}

// measureBackground reads Redis's use over d with no load, and keeps it
// as the background of the samples taken after.
func (m *ceilingMeter) measureBackground(ctx context.Context, d time.Duration) (ceilingBackground, error) {
	s0 := m.sample(ctx)
	if !sleepCtx(ctx, d) {
		return m.bg, ctx.Err()
	}
	s1 := m.sample(ctx)
	el := s1.at.Sub(s0.at).Seconds()
	calls, usec, ev, evUsec := s1.commandsSince(s0)
	m.bg = ceilingBackground{RedisCores: (s1.redis - s0.redis).Seconds() / el, EvalshaCalls: float64(ev) / el,
		EvalshaUsec: float64(evUsec) / el, Commands: float64(calls) / el, CommandUsec: float64(usec) / el}
	return m.bg, nil
}

// ceilingSample is one reading of the meter.
type ceilingSample struct {
	at       time.Time
	redis    time.Duration
	servers  time.Duration
	own      time.Duration // this process
	busy     time.Duration // the machine's
	stats    map[string]cmdStat
	admitted float64
	bg       ceilingBackground
}

// cmdStat is one line of INFO commandstats.
type cmdStat struct {
	Calls int64
	Usec  int64
}

var cmdstatRe = regexp.MustCompile(`(?m)^cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)`)

func (m *ceilingMeter) sample(ctx context.Context) ceilingSample {
	s := ceilingSample{at: time.Now(), busy: machineBusy(), stats: map[string]cmdStat{}, bg: m.bg}
	if p, err := readProc(m.redisPID); err == nil {
		s.redis = p.CPU
	}
	for _, t := range m.env.insts {
		s.servers += t.proc().CPU
		s.admitted += t.metrics(ctx)["waitroom_admissions_total"]
	}
	if p, err := readProc(os.Getpid()); err == nil {
		s.own = p.CPU
	}
	if info, err := m.env.redis.rdb.Info(ctx, "commandstats").Result(); err == nil {
		for _, g := range cmdstatRe.FindAllStringSubmatch(info, -1) {
			calls, _ := strconv.ParseInt(g[2], 10, 64)
			usec, _ := strconv.ParseInt(g[3], 10, 64)
			s.stats[g[1]] = cmdStat{Calls: calls, Usec: usec}
		}
	}
	return s
}

// commandsSince is what Redis ran from s0 to s: all commands and their
// usec, and of them EVALSHA.
func (s ceilingSample) commandsSince(s0 ceilingSample) (calls, usec, evalsha, evalshaUsec int64) {
	for name, c := range s.stats {
		c0 := s0.stats[name]
		calls += c.Calls - c0.Calls
		usec += c.Usec - c0.Usec
	}
	ev, ev0 := s.stats["evalsha"], s0.stats["evalsha"]
	return calls, usec, ev.Calls - ev0.Calls, ev.Usec - ev0.Usec
}

// since is the usage from s0 to s, in which ops joins, statuses or
// admissions were done. genCPU is the CPU time of each generator process
// other than this one in the window (this process is counted as one).
// The per-operation figures are net of the background.
func (s ceilingSample) since(s0 ceilingSample, ops int, genCPU []float64) ceilingUsage {
	el := s.at.Sub(s0.at).Seconds()
	u := ceilingUsage{Seconds: el}
	redisCPU := (s.redis - s0.redis).Seconds()
	u.RedisCores = redisCPU / el
	u.ServerCores = (s.servers - s0.servers).Seconds() / el
	u.GeneratorCores = (s.own - s0.own).Seconds() / el
	u.GeneratorMaxProc = u.GeneratorCores
	for _, c := range genCPU {
		u.GeneratorCores += c / el
		u.GeneratorMaxProc = max(u.GeneratorMaxProc, c/el)
	}
	if s.busy > 0 && s0.busy > 0 {
		u.OtherCores = max((s.busy-s0.busy).Seconds()/el-u.RedisCores-u.ServerCores-u.GeneratorCores, 0)
	}
	calls, usec, ev, evUsec := s.commandsSince(s0)
	u.EvalshaCalls = ev
	if ev > 0 {
		u.EvalshaUSPerCall = float64(evUsec) / float64(ev)
	}
	if ops > 0 {
		n, bg := float64(ops), s.bg
		u.RedisCPUPerOpUS = max(redisCPU-bg.RedisCores*el, 0) * 1e6 / n
		u.EvalshaPerOp = max(float64(ev)-bg.EvalshaCalls*el, 0) / n
		u.EvalshaUSPerOp = max(float64(evUsec)-bg.EvalshaUsec*el, 0) / n
		u.CommandsPerOp = max(float64(calls)-bg.Commands*el, 0) / n
		u.RedisUSPerOp = max(float64(usec)-bg.CommandUsec*el, 0) / n
	}
	return u
}
