package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/waitroom/waitroom/internal/taskset"
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
	Profile   string        // write the server's CPU profile of the join phase here
	Load      string        // the join load generator: "go" (this process) or "wrk"
	Rounds    int           // join phases, each followed by a ZADD phase
	// RedisJoins is where Redis runs during a join phase when pinned:
	// "float" (where the scheduler puts it) or "load" (the load
	// generator's core, which leaves the server's core to the server).
	RedisJoins string
	Ext        externalOpts
	Progress   io.Writer
}

type joinpathReport struct {
	Scenario    string  `json:"scenario"`
	Machine     string  `json:"machine"`
	Command     string  `json:"command"`
	Load        string  `json:"loadAverageAtStart"`
	Before      float64 `json:"machineCpuCoresBeforeStart"`
	Pinned      bool    `json:"pinned"`
	RedisJoins  string  `json:"redisDuringJoins"`
	LoadGen     string  `json:"loadGenerator"`
	Conns       int     `json:"connections"`
	DurationSec float64 `json:"joinSeconds"`
	ZaddConns   int     `json:"zaddConnections"`
	ZaddOps     int     `json:"zaddRequests"`
	Target      float64 `json:"targetRatio"`
	// The median round by ratio; Errors and FirstErr are of every round.
	JoinpathRound
	Rounds []JoinpathRound `json:"rounds"`
}

// JoinpathRound is one join phase and the ZADD phase right after it: a
// machine whose speed drifts moves both alike, so their ratio holds
// better than that of phases minutes apart.
type JoinpathRound struct {
	Joins        int64   `json:"joins"`
	JoinsPerSec  float64 `json:"joinsPerSec"`
	ZaddPerSec   float64 `json:"zaddPerSec"`
	Ratio        float64 `json:"joinPerZadd"`
	ServerCores  float64 `json:"serverCpuCoresDuringJoins"`
	RedisCores   float64 `json:"redisCpuCoresDuringJoins"`
	LoadCores    float64 `json:"loadGeneratorCpuCoresDuringJoins"`
	ZaddRedisCPU float64 `json:"redisCpuCoresDuringZadd"`
	ServerUsJoin float64 `json:"serverCpuMicrosecondsPerJoin"`
	RedisUsJoin  float64 `json:"redisCpuMicrosecondsPerJoin"`
	Errors       int64   `json:"errors"`
	FirstErr     string  `json:"firstError,omitempty"`
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
	if o.Rounds < 1 {
		return nil, fmt.Errorf("-rounds %d: want 1 or more", o.Rounds)
	}
	if o.RedisJoins != "float" && o.RedisJoins != "load" {
		return nil, fmt.Errorf("-redis-joins %q: want float or load", o.RedisJoins)
	}
	switch o.Load {
	case "go":
	case "wrk":
		if _, err := exec.LookPath("wrk"); err != nil {
			return nil, errors.New("wrk is not on PATH: make deps-bench installs it (apt-get install wrk)")
		}
	default:
		return nil, fmt.Errorf("-load %q: want go or wrk", o.Load)
	}
	rep := &joinpathReport{Scenario: "joinpath", Machine: machine(), Command: command, Load: loadAverage(), Before: cpuInUse(2 * time.Second), LoadGen: o.Load, Conns: o.Conns,
		DurationSec: o.Duration.Seconds(), ZaddConns: o.ZaddConns, ZaddOps: o.ZaddOps, Target: 0.5, RedisJoins: o.RedisJoins}
	// Admission all but off (as in the clients scenario): every join is
	// a new visitor that stays waiting, so each runs the same script.
	args := []string{"-batch", "1", "-tick", "1m"}
	if o.JoinBatch > 0 {
		args = append(args, "-join-batch", strconv.Itoa(o.JoinBatch))
	}
	debugAddr := ""
	if o.Profile != "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		debugAddr = "127.0.0.1:" + strconv.Itoa(port)
		args = append(args, "-debug-addr", debugAddr)
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

	profiled := make(chan error, 1)
	if debugAddr != "" {
		// Begun with the warm-up, the profile covers it and the join phase.
		go func() { profiled <- fetchProfile(ctx, debugAddr, time.Second+o.Duration, o.Profile) }()
	}
	for i := range o.Rounds {
		var r JoinpathRound
		unpinJoins := func() {}
		if rep.Pinned && o.RedisJoins == "load" {
			unpinJoins = pinFor(redisPID, loadCore)
		}
		if o.Load == "wrk" {
			err = joinpathWrk(ctx, o, tgt, redisPID, &r)
		} else {
			joinpathJoins(ctx, o, tgt, redisPID, &r)
		}
		unpinJoins()
		if err != nil {
			return nil, err
		}
		if i == 0 && debugAddr != "" {
			if err := <-profiled; err != nil {
				return nil, fmt.Errorf("joinpath: cpu profile: %w", err)
			}
			fmt.Fprintf(o.Progress, "joinpath: the server's CPU profile is in %s (go tool pprof %s)\n", o.Profile, o.Profile)
		}
		fmt.Fprintf(o.Progress, "joinpath: redis-benchmark -t zadd -c %d -n %d\n", o.ZaddConns, o.ZaddOps)
		r0 := procCPU(redisPID)
		// Pinned, redis-benchmark inherits this process's core, and Redis
		// has the server's (idle now) to itself: left to float, it shared
		// a core with redis-benchmark in some runs and not in others,
		// which moved raw ZADD by a third from one round to the next.
		unpinRedis := func() {}
		if rep.Pinned {
			unpinRedis = pinFor(redisPID, serverCore)
		}
		start := time.Now()
		r.ZaddPerSec, err = redisBenchmark(ctx, tgt.RedisAddr, o.ZaddConns, o.ZaddOps, "-t", "zadd")
		unpinRedis()
		if err != nil {
			return nil, err
		}
		r.ZaddRedisCPU = (procCPU(redisPID) - r0).Seconds() / time.Since(start).Seconds()
		r.Ratio = r.JoinsPerSec / r.ZaddPerSec
		fmt.Fprintf(o.Progress, "joinpath: round %d: %.0f joins/s, %.0f ZADD/s, ratio %.2f; server %.2f cores (%.1f µs a join), redis %.2f cores (%.1f µs a join), load generator %.2f cores\n",
			i+1, r.JoinsPerSec, r.ZaddPerSec, r.Ratio, r.ServerCores, r.ServerUsJoin, r.RedisCores, r.RedisUsJoin, r.LoadCores)
		rep.Rounds = append(rep.Rounds, r)
	}
	rep.JoinpathRound = medianRound(rep.Rounds)
	rep.Errors, rep.FirstErr = 0, ""
	for _, r := range rep.Rounds {
		rep.Errors += r.Errors
		if rep.FirstErr == "" {
			rep.FirstErr = r.FirstErr
		}
	}
	fmt.Fprintf(o.Progress, "joinpath: %.0f joins/s, %.0f ZADD/s, ratio %.2f (median of %d rounds); server %.2f cores (%.1f µs a join), redis %.2f cores (%.1f µs a join), load generator %.2f cores\n",
		rep.JoinsPerSec, rep.ZaddPerSec, rep.Ratio, len(rep.Rounds), rep.ServerCores, rep.ServerUsJoin, rep.RedisCores, rep.RedisUsJoin, rep.LoadCores)
	if err := writeOutputs(o.Out, "joinpath", joinpathMarkdown(rep), rep, joinpathSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// medianRound is the round of the median ratio (the lower of the two
// middle ones for an even count).
func medianRound(rounds []JoinpathRound) JoinpathRound {
	if len(rounds) == 0 {
		return JoinpathRound{}
	}
	sorted := slices.Clone(rounds)
	slices.SortStableFunc(sorted, func(a, b JoinpathRound) int { return cmp.Compare(a.Ratio, b.Ratio) })
	return sorted[(len(sorted)-1)/2]
}

func (o *joinpathOptions) defaults() {
	if o.Quick {
		o.Duration = orDur(o.Duration, 2*time.Second)
		o.ZaddOps = orInt(o.ZaddOps, 50000)
		o.Rounds = orInt(o.Rounds, 1)
	}
	o.Rounds = orInt(o.Rounds, 3)
	o.Conns = orInt(o.Conns, 64)
	if o.Load == "" {
		o.Load = "go"
	}
	if o.RedisJoins == "" {
		o.RedisJoins = "float"
	}
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
	switch err := taskset.Available(); {
	case serverPID <= 0:
		fmt.Fprintln(progress, "joinpath: the server's PID is unknown (-pid): not pinned")
		return nil, false
	case runtime.NumCPU() < 2:
		fmt.Fprintln(progress, "joinpath: one CPU: not pinned")
		return nil, false
	case err != nil:
		fmt.Fprintf(progress, "joinpath: %v: not pinned\n", err)
		return nil, false
	}
	if _, err := taskset.Move(serverPID, serverCore); err != nil {
		fmt.Fprintf(progress, "joinpath: %v: not pinned\n", err)
		return nil, false
	}
	unpin, err := taskset.Move(selfPID, loadCore)
	if err != nil {
		fmt.Fprintf(progress, "joinpath: %v: not pinned\n", err)
		return nil, false
	}
	return unpin, true
}

// pinFor moves every thread of pid to core, and returns what puts them
// back on the cores they had; it does nothing when it cannot.
func pinFor(pid int, core string) (unpin func()) {
	unpin, err := taskset.Move(pid, core)
	if err != nil {
		return func() {}
	}
	return unpin
}

// joinpathJoins runs the closed loop of joins of new visitors (no
// credential, an empty JSON object as body), after a warm-up, into rep
// with the server's and Redis's CPU over it.
func joinpathJoins(ctx context.Context, o joinpathOptions, tgt *target, redisPID int, rep *JoinpathRound) {
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
	s0, r0, g0 := procCPU(tgt.PID), procCPU(redisPID), procCPU(os.Getpid())
	n, el := closedLoop(ctx, hc, o.Conns, o.Duration, join, fail)
	s1, r1, g1 := procCPU(tgt.PID), procCPU(redisPID), procCPU(os.Getpid())
	rep.Joins = n
	rep.JoinsPerSec = float64(n) / el.Seconds()
	rep.ServerCores = (s1 - s0).Seconds() / el.Seconds()
	rep.RedisCores = (r1 - r0).Seconds() / el.Seconds()
	rep.LoadCores = (g1 - g0).Seconds() / el.Seconds()
	if n > 0 {
		rep.ServerUsJoin = float64((s1 - s0).Microseconds()) / float64(n)
		rep.RedisUsJoin = float64((r1 - r0).Microseconds()) / float64(n)
	}
	rep.Errors = errs.Load()
	if s, ok := firstErr.Load().(string); ok {
		rep.FirstErr = s
	}
}

// wrkScript has wrk send each join as the Go load does: a POST of an
// empty JSON object with no credential, so every request is a new visitor.
const wrkScript = `wrk.method = "POST"
wrk.body = "{}"
wrk.headers["Content-Type"] = "application/json"
`

// joinpathWrk is joinpathJoins with wrk as the load generator (one
// thread, o.Conns connections), on this process's core when pinned: a
// load generator in C spends less of that core per request than the Go
// one. Its warm-up is a run of its own; then the measured run, with the
// server's, Redis's and wrk's CPU over it.
func joinpathWrk(ctx context.Context, o joinpathOptions, tgt *target, redisPID int, rep *JoinpathRound) error {
	dir, err := os.MkdirTemp("", "joinpath-wrk")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := dir + "/join.lua"
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return err
	}
	url := tgt.URL + "/api/v1/rooms/joinpath/join"
	run := func(d time.Duration) (wrkResult, error) {
		cctx, cancel := context.WithTimeout(ctx, d+time.Minute)
		defer cancel()
		secs := strconv.Itoa(max(int(d.Round(time.Second)/time.Second), 1))
		cmd := exec.CommandContext(cctx, "wrk", "-t1", "-c"+strconv.Itoa(o.Conns), "-d"+secs+"s", "--timeout", "10s", "-s", script, url)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
		}
		r, err := parseWrk(string(out))
		if err != nil {
			return wrkResult{}, err
		}
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return r, nil
	}
	fmt.Fprintf(o.Progress, "joinpath: wrk -t1 -c%d, joins of new visitors, %s\n", o.Conns, o.Duration)
	if _, err := run(time.Second); err != nil {
		return err
	}
	s0, r0 := procCPU(tgt.PID), procCPU(redisPID)
	start := time.Now()
	w, err := run(o.Duration)
	if err != nil {
		return err
	}
	el := time.Since(start)
	s1, r1 := procCPU(tgt.PID), procCPU(redisPID)
	rep.Joins, rep.JoinsPerSec = w.requests, w.perSec
	// wrk's own second count is its measured phase; the CPU figures are
	// over the process's whole life, a few milliseconds longer.
	rep.ServerCores = (s1 - s0).Seconds() / el.Seconds()
	rep.RedisCores = (r1 - r0).Seconds() / el.Seconds()
	rep.LoadCores = w.cpu.Seconds() / el.Seconds()
	if w.requests > 0 {
		rep.ServerUsJoin = float64((s1 - s0).Microseconds()) / float64(w.requests)
		rep.RedisUsJoin = float64((r1 - r0).Microseconds()) / float64(w.requests)
	}
	rep.Errors = w.errors
	if w.errors > 0 {
		rep.FirstErr = "wrk counted non-2xx answers or socket errors"
	}
	return nil
}

// wrkResult is what joinpathWrk reads from wrk's report.
type wrkResult struct {
	requests int64
	perSec   float64
	errors   int64 // non-2xx/3xx answers and socket errors
	cpu      time.Duration
}

// parseWrk reads wrk's summary: "N requests in …", "Requests/sec: R",
// and the optional error lines.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.requests = n
			seen++
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.perSec = v
			seen++
		case strings.HasPrefix(strings.TrimSpace(line), "Non-2xx or 3xx responses:") && len(f) > 0:
			n, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			r.errors += n
		case strings.HasPrefix(strings.TrimSpace(line), "Socket errors:"):
			// Socket errors: connect 0, read 0, write 0, timeout 0
			for i := 2; i+1 < len(f); i += 2 {
				n, _ := strconv.ParseInt(strings.TrimSuffix(f[i+1], ","), 10, 64)
				r.errors += n
			}
		}
	}
	if seen != 2 {
		return r, fmt.Errorf("wrk printed no summary: %q", out)
	}
	return r, nil
}

// fetchProfile writes the CPU profile of d that the pprof handler on addr
// takes to file.
func fetchProfile(ctx context.Context, addr string, d time.Duration, file string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(d.Round(time.Second)/time.Second))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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

// cpuInUse is the cores the machine's processes use over d (/proc/stat),
// sampled before the run starts any: unlike the load average, it is not
// raised by a run that ended a minute ago.
// It is NaN where /proc/stat cannot be read, and the run is then judged
// as on a shared machine.
func cpuInUse(d time.Duration) float64 {
	b0, t0 := machineBusy(), time.Now()
	if b0 == 0 {
		return math.NaN()
	}
	time.Sleep(d)
	return (machineBusy() - b0).Seconds() / time.Since(t0).Seconds()
}

// busyCores is the CPU in use before a run (cpuInUse) from which the
// machine counts as shared: other work then shares the cores the run
// pins, and the ratio says more about it than about the server.
const busyCores = 0.25

// procCPU is pid's user and system time so far (0 when unreadable).
func procCPU(pid int) time.Duration {
	s, _ := readProc(pid)
	return s.CPU
}

func joinpathMarkdown(r *joinpathReport) string {
	var b strings.Builder
	b.WriteString("# Join through HTTP against raw ZADD\n\n")
	gen, loop := "the bench's join loop (fasthttp)", fmt.Sprintf("in a closed loop of %d connections", r.Conns)
	if r.LoadGen == "wrk" {
		gen, loop = "wrk", fmt.Sprintf("from `wrk -t1 -c%d`", r.Conns)
	}
	during := "not pinned during joins"
	if r.RedisJoins == "load" {
		during = fmt.Sprintf("on the load generator's core %s during joins", loadCore)
	}
	pinning := fmt.Sprintf("the load generator (%s, then redis-benchmark) pinned to core %s with taskset, the server to core %s, Redis %s and on core %s during ZADD", gen, loadCore, serverCore, during, serverCore)
	if !r.Pinned {
		pinning = "nothing pinned (no taskset or one CPU)"
	}
	fmt.Fprintf(&b, "A fresh redis-server and one server (`-batch 1 -tick 1m`: admission all but off, so every visitor stays waiting); "+
		"joins of new visitors (POST, body `{}`, no credential) %s for %.0f s after a 1 s warm-up, "+
		"then `redis-benchmark -t zadd -c %d -n %d -r 100000` on the same Redis, %s; %s. Machine: %s.\n\n",
		loop, r.DurationSec, r.ZaddConns, r.ZaddOps, roundsText(len(r.Rounds)), pinning, r.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	fmt.Fprintf(&b, "CPU in use on the machine over 2 s before the run: %.2f cores (load average %s). From %.2f cores the figures are of a shared machine: the ratio and the CPU per join move with what else runs, and the target is not judged.\n\n", r.Before, r.Load, busyCores)
	met := "no"
	switch {
	case math.IsNaN(r.Before) || r.Before >= busyCores:
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
		{"load generator CPU during joins", fmt.Sprintf("%.2f cores", r.LoadCores), "", ""},
		{"Redis CPU during ZADD", fmt.Sprintf("%.2f cores", r.ZaddRedisCPU), "", ""},
	}
	b.WriteString(mdTable([]string{"figure", "measured", "target", "met"}, rows))
	b.WriteString("\n- CPU: utime + stime from /proc/PID/stat over the phase, in cores.\n")
	if len(r.Rounds) > 1 {
		b.WriteString("\nEach round, in order:\n\n")
		var rr [][]string
		for i, x := range r.Rounds {
			rr = append(rr, []string{strconv.Itoa(i + 1), num(x.JoinsPerSec), num(x.ZaddPerSec), fmt.Sprintf("%.2f", x.Ratio),
				fmt.Sprintf("%.1f", x.ServerUsJoin), fmt.Sprintf("%.1f", x.RedisUsJoin), fmt.Sprintf("%.2f", x.LoadCores)})
		}
		b.WriteString(mdTable([]string{"round", "joins/s", "ZADD/s", "join / ZADD", "server µs a join", "Redis µs a join", "load generator cores"}, rr))
	}
	if r.Errors > 0 {
		fmt.Fprintf(&b, "- %d failed joins, first: %s\n", r.Errors, r.FirstErr)
	}
	return b.String()
}

// roundsText says how the phases of rounds rounds ran.
func roundsText(rounds int) string {
	if rounds <= 1 {
		return "once"
	}
	return fmt.Sprintf("%d times in turn; the table is the round of the median ratio", rounds)
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
		fs.StringVar(&o.Load, "load", "go", "the join load generator: go (this process, fasthttp) or wrk (one thread, as the issue measured)")
		fs.IntVar(&o.Rounds, "rounds", 0, "join phases, each followed by a ZADD phase; the report is the median round by ratio (default 3; 1 with -quick)")
		fs.StringVar(&o.RedisJoins, "redis-joins", "float", "where Redis runs during a join phase when pinned: float (where the scheduler puts it) or load (on the load generator's core, leaving the server's core to the server)")
		fs.StringVar(&o.Profile, "cpuprofile", "", "write the server's CPU profile of the warm-up and join phase to this file (through -debug-addr)")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress, o.Ext = env.out, env.quick, env.progress, env.ext
			_, err := runJoinpath(ctx, o, env.command)
			return "joinpath.{md,json,svg}", err
		}
	}}
}
