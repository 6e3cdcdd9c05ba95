package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// joinpathOptions configure the joinpath scenario.
type joinpathOptions struct {
	Out       string
	Quick     bool
	Conns     int           // closed-loop HTTP connections of the join load
	Duration  time.Duration // of the measured join phase
	ZaddConns int           // redis-benchmark -c
	ZaddOps   int           // redis-benchmark -n
	NoPin     bool          // run without taskset
	JoinBatch int           // the server's -join-batch; 0 = its default
	Ext       externalOpts
	Progress  io.Writer
}

type joinpathReport struct {
	Scenario     string  `json:"scenario"`
	Machine      string  `json:"machine"`
	Command      string  `json:"command"`
	Load         string  `json:"loadAverageAtStart"`
	Pinned       bool    `json:"pinned"`
	Conns        int     `json:"connections"`
	DurationSec  float64 `json:"joinSeconds"`
	Joins        int64   `json:"joins"`
	JoinsPerSec  float64 `json:"joinsPerSec"`
	ZaddConns    int     `json:"zaddConnections"`
	ZaddOps      int     `json:"zaddRequests"`
	ZaddPerSec   float64 `json:"zaddPerSec"`
	Ratio        float64 `json:"joinPerZadd"`
	ServerCores  float64 `json:"serverCpuCoresDuringJoins"`
	RedisCores   float64 `json:"redisCpuCoresDuringJoins"`
	ZaddRedisCPU float64 `json:"redisCpuCoresDuringZadd"`
	ServerUsJoin float64 `json:"serverCpuMicrosecondsPerJoin"`
	RedisUsJoin  float64 `json:"redisCpuMicrosecondsPerJoin"`
	Errors       int64   `json:"errors"`
	FirstErr     string  `json:"firstError,omitempty"`
	Target       float64 `json:"targetRatio"`
}

// loadCore and serverCore are where the load generator (this process
// and redis-benchmark) and the server run when pinned.
const (
	loadCore   = "0"
	serverCore = "1"
)

// runJoinpath measures joins of new visitors through HTTP against raw
// ZADD on the same fresh redis-server, in one run: the load generator on
// one core, the server on the other.
func runJoinpath(ctx context.Context, o joinpathOptions, command string) (*joinpathReport, error) {
	o.defaults()
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		return nil, errors.New("redis-benchmark is not on PATH: install redis-server's tools (apt-get install redis-tools)")
	}
	rep := &joinpathReport{Scenario: "joinpath", Machine: machine(), Command: command, Load: loadAverage(), Conns: o.Conns,
		DurationSec: o.Duration.Seconds(), ZaddConns: o.ZaddConns, ZaddOps: o.ZaddOps, Target: 0.5}
	// Admission all but off (as in the clients scenario): every join is
	// a new visitor that stays waiting, so each runs the same script.
	args := []string{"-batch", "1", "-tick", "1m"}
	if o.JoinBatch > 0 {
		args = append(args, "-join-batch", strconv.Itoa(o.JoinBatch))
	}
	tgt, err := startTarget(ctx, o.Ext, args)
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	if tgt.RedisAddr == "" {
		return nil, errors.New("joinpath needs the server's Redis: give -redis-addr with -url")
	}
	redisPID := 0 // unknown for a Redis not started here: no CPU figure
	if len(tgt.procs) > 0 {
		redisPID = tgt.procs[0].Process.Pid
	}
	if !o.NoPin {
		var unpin func()
		if unpin, rep.Pinned = pin(o.Progress, tgt.PID, os.Getpid()); rep.Pinned {
			defer unpin()
			// One core: one P spares the generator's own scheduling.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		}
	}
	fmt.Fprintf(o.Progress, "joinpath: server %s (pid %d), redis %s (pid %d), pinned %v\n", tgt.URL, tgt.PID, tgt.RedisAddr, redisPID, rep.Pinned)

	joinpathJoins(ctx, o, tgt, redisPID, rep)
	fmt.Fprintf(o.Progress, "joinpath: redis-benchmark -t zadd -c %d -n %d\n", o.ZaddConns, o.ZaddOps)
	r0 := procCPU(redisPID)
	start := time.Now()
	// Pinned, redis-benchmark inherits this process's core.
	rep.ZaddPerSec, err = redisBenchmark(ctx, tgt.RedisAddr, o.ZaddConns, o.ZaddOps, "-t", "zadd")
	if err != nil {
		return nil, err
	}
	rep.ZaddRedisCPU = (procCPU(redisPID) - r0).Seconds() / time.Since(start).Seconds()
	rep.Ratio = rep.JoinsPerSec / rep.ZaddPerSec
	fmt.Fprintf(o.Progress, "joinpath: %.0f joins/s, %.0f ZADD/s, ratio %.2f; server %.2f cores (%.1f µs a join), redis %.2f cores (%.1f µs a join)\n",
		rep.JoinsPerSec, rep.ZaddPerSec, rep.Ratio, rep.ServerCores, rep.ServerUsJoin, rep.RedisCores, rep.RedisUsJoin)
	if err := writeOutputs(o.Out, "joinpath", joinpathMarkdown(rep), rep, joinpathSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

func (o *joinpathOptions) defaults() {
	if o.Quick {
		o.Duration = orDur(o.Duration, 2*time.Second)
		o.ZaddOps = orInt(o.ZaddOps, 50000)
	}
	o.Conns = orInt(o.Conns, 64)
	o.Duration = orDur(o.Duration, 10*time.Second)
	o.ZaddConns = orInt(o.ZaddConns, 50)
	o.ZaddOps = orInt(o.ZaddOps, 400000)
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// pin moves every thread of the server to serverCore and of this process
// to loadCore with taskset, and returns what puts this process back on
// the cores it had; ok is false (and it says why) when it cannot pin.
func pin(progress io.Writer, serverPID, selfPID int) (unpin func(), ok bool) {
	switch _, err := exec.LookPath("taskset"); {
	case serverPID <= 0:
		fmt.Fprintln(progress, "joinpath: the server's PID is unknown (-pid): not pinned")
		return nil, false
	case runtime.NumCPU() < 2:
		fmt.Fprintln(progress, "joinpath: one CPU: not pinned")
		return nil, false
	case err != nil:
		fmt.Fprintln(progress, "joinpath: taskset is not on PATH (util-linux): not pinned")
		return nil, false
	}
	self := strconv.Itoa(selfPID)
	out, err := exec.Command("taskset", "-cp", self).Output()
	_, had, found := strings.Cut(strings.TrimSpace(string(out)), ": ")
	if err != nil || !found {
		fmt.Fprintf(progress, "joinpath: taskset -cp: %v %q: not pinned\n", err, out)
		return nil, false
	}
	for _, p := range [][2]string{{serverCore, strconv.Itoa(serverPID)}, {loadCore, self}} {
		if out, err := exec.Command("taskset", "-a", "-cp", p[0], p[1]).CombinedOutput(); err != nil {
			fmt.Fprintf(progress, "joinpath: taskset: %v: %s: not pinned\n", err, strings.TrimSpace(string(out)))
			return nil, false
		}
	}
	return func() { _ = exec.Command("taskset", "-a", "-cp", had, self).Run() }, true
}

// joinpathJoins runs the closed loop of joins of new visitors (no
// credential, an empty JSON object as body), after a warm-up, into rep
// with the server's and Redis's CPU over it.
func joinpathJoins(ctx context.Context, o joinpathOptions, tgt *target, redisPID int, rep *joinpathReport) {
	host := strings.TrimPrefix(tgt.URL, "http://")
	hc := &fasthttp.HostClient{Addr: host, MaxConns: o.Conns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	url := tgt.URL + "/api/v1/rooms/joinpath/join"
	join := func(_ int, req *fasthttp.Request) {
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI(url)
		req.Header.SetContentType("application/json")
		req.SetBodyString("{}")
	}
	var errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(err.Error())
		}
	}
	fmt.Fprintf(o.Progress, "joinpath: joins of new visitors, %d connections, %s\n", o.Conns, o.Duration)
	closedLoop(ctx, hc, o.Conns, time.Second, join, fail)
	s0, r0 := procCPU(tgt.PID), procCPU(redisPID)
	n, el := closedLoop(ctx, hc, o.Conns, o.Duration, join, fail)
	s1, r1 := procCPU(tgt.PID), procCPU(redisPID)
	rep.Joins = n
	rep.JoinsPerSec = float64(n) / el.Seconds()
	rep.ServerCores = (s1 - s0).Seconds() / el.Seconds()
	rep.RedisCores = (r1 - r0).Seconds() / el.Seconds()
	if n > 0 {
		rep.ServerUsJoin = float64((s1 - s0).Microseconds()) / float64(n)
		rep.RedisUsJoin = float64((r1 - r0).Microseconds()) / float64(n)
	}
	rep.Errors = errs.Load()
	if s, ok := firstErr.Load().(string); ok {
		rep.FirstErr = s
	}
}

// loadAverage is the first three fields of /proc/loadavg, "" where
// there is none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// busy reports whether the 1-minute load average of load (as
// loadAverage gives it) is 1 or more: other work then shares the cores
// the run pins, and the ratio says more about it than about the server.
func busy(load string) bool {
	f := strings.Fields(load)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v >= 1
}

// procCPU is pid's user and system time so far (0 when unreadable).
func procCPU(pid int) time.Duration {
	s, _ := readProc(pid)
	return s.CPU
}

func joinpathMarkdown(r *joinpathReport) string {
	var b strings.Builder
	b.WriteString("# Join through HTTP against raw ZADD\n\n")
	pinning := fmt.Sprintf("the load generator (the bench's join loop, then redis-benchmark) pinned to core %s with taskset, the server to core %s, Redis not pinned", loadCore, serverCore)
	if !r.Pinned {
		pinning = "nothing pinned (no taskset or one CPU)"
	}
	fmt.Fprintf(&b, "A fresh redis-server and one server (`-batch 1 -tick 1m`: admission all but off, so every visitor stays waiting); "+
		"joins of new visitors (POST, body `{}`, no credential) in a closed loop of %d connections for %.0f s after a 1 s warm-up, "+
		"then `redis-benchmark -t zadd -c %d -n %d -r 100000` on the same Redis; %s. Machine: %s.\n\n",
		r.Conns, r.DurationSec, r.ZaddConns, r.ZaddOps, pinning, r.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	if r.Load != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min) at the start: %s. At 1 or more the figures are of a shared machine: the ratio and the CPU per join move with what else runs, and the target is not judged.\n\n", r.Load)
	}
	met := "no"
	switch {
	case busy(r.Load):
		met = "not judged: a busy machine"
	case r.Ratio >= r.Target:
		met = "yes"
	}
	rows := [][]string{
		{"joins of new visitors through HTTP", num(r.JoinsPerSec) + "/s (" + commas(r.Joins) + ")", "", ""},
		{"raw ZADD, redis-benchmark", num(r.ZaddPerSec) + "/s", "", ""},
		{"join / ZADD", fmt.Sprintf("%.2f", r.Ratio), fmt.Sprintf("≥ %.2f", r.Target), met},
		{"server CPU during joins", fmt.Sprintf("%.2f cores, %.1f µs a join", r.ServerCores, r.ServerUsJoin), "", ""},
		{"Redis CPU during joins", fmt.Sprintf("%.2f cores, %.1f µs a join", r.RedisCores, r.RedisUsJoin), "", ""},
		{"Redis CPU during ZADD", fmt.Sprintf("%.2f cores", r.ZaddRedisCPU), "", ""},
	}
	b.WriteString(mdTable([]string{"figure", "measured", "target", "met"}, rows))
	b.WriteString("\n- CPU: utime + stime from /proc/PID/stat over the phase, in cores.\n")
	if r.Errors > 0 {
		fmt.Fprintf(&b, "- %d failed joins, first: %s\n", r.Errors, r.FirstErr)
	}
	return b.String()
}

func joinpathSVG(r *joinpathReport) string {
	return barChartSVG("Join through HTTP against raw ZADD", fmt.Sprintf("%d connections closed loop; ratio %.2f", r.Conns, r.Ratio), []panel{
		{Title: "throughput", Unit: "/s", Bars: []bar{{Label: "HTTP join", Value: r.JoinsPerSec}, {Label: "ZADD", Value: r.ZaddPerSec}}},
		{Title: "CPU during joins", Unit: "cores", Bars: []bar{{Label: "server", Value: r.ServerCores}, {Label: "Redis", Value: r.RedisCores}}},
	})
}

func joinpathScenario() scenario {
	return scenario{name: "joinpath", external: true, flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o joinpathOptions
		fs.IntVar(&o.Conns, "c", 64, "closed-loop HTTP connections of the join load")
		fs.DurationVar(&o.Duration, "d", 0, "the measured join phase (default 10s; 2s with -quick)")
		fs.IntVar(&o.ZaddConns, "zadd-c", 50, "redis-benchmark connections for raw ZADD")
		fs.IntVar(&o.ZaddOps, "zadd-n", 0, "redis-benchmark ZADD requests (default 400000; 50000 with -quick)")
		fs.IntVar(&o.JoinBatch, "join-batch", 0, "the server's -join-batch (default its own, 64; 1: each join a call of its own)")
		fs.BoolVar(&o.NoPin, "no-pin", false, "do not pin the load generator and the server to cores")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress, o.Ext = env.out, env.quick, env.progress, env.ext
			_, err := runJoinpath(ctx, o, env.command)
			return "joinpath.{md,json,svg}", err
		}
	}}
}
