package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// clientsOptions configure the clients scenario.
type clientsOptions struct {
	Out      string
	Quick    bool
	Ops      int // HTTP joins, then as many statuses, per client
	RedisOps int // requests per redis-benchmark test
	Conc     int
	Ext      externalOpts
	Progress io.Writer
}

type clientsResult struct {
	Client          string  `json:"client"`
	Concurrency     int     `json:"concurrency"`
	JoinOps         float64 `json:"httpJoinPerSec"`
	StatusOps       float64 `json:"httpStatusPerSec"`
	StatusFromRedis float64 `json:"statusFromRedisShare"`
	ZaddOps         float64 `json:"redisBenchmarkZaddPerSec"`
	ZrankOps        float64 `json:"redisBenchmarkZrankPerSec"`
	JoinPerZadd     float64 `json:"joinPerZadd"`
	StatusPerZrank  float64 `json:"statusPerZrank"`
	OtherCores      float64 `json:"otherProcessesCpuCores"`
	Errors          int64   `json:"errors"`
	FirstErr        string  `json:"firstError,omitempty"`
}

type clientsReport struct {
	Scenario string          `json:"scenario"`
	Machine  string          `json:"machine"`
	Command  string          `json:"command"`
	Ops      int             `json:"httpOps"`
	RedisOps int             `json:"redisBenchmarkOps"`
	Results  []clientsResult `json:"results"`
}

func runClients(ctx context.Context, o clientsOptions, command string) (*clientsReport, error) {
	if o.Quick {
		o.Ops = orInt(o.Ops, 2000)
		o.RedisOps = orInt(o.RedisOps, 20000)
	}
	o.Ops = orInt(o.Ops, 30000)
	o.RedisOps = orInt(o.RedisOps, 200000)
	o.Conc = orInt(o.Conc, 50)
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if _, err := exec.LookPath("redis-benchmark"); err != nil && o.Ext.URL == "" {
		return nil, errors.New("redis-benchmark is not on PATH: install redis-server's tools (apt-get install redis-tools)")
	}
	rep := &clientsReport{Scenario: "clients", Machine: machine(), Command: command, Ops: o.Ops, RedisOps: o.RedisOps}
	for _, c := range []string{"rueidis", "go-redis"} {
		r, err := clientsRun(ctx, o, c)
		if err != nil {
			return nil, fmt.Errorf("clients %s: %w", c, err)
		}
		rep.Results = append(rep.Results, r)
	}
	if err := writeOutputs(o.Out, "clients", clientsMarkdown(rep), rep, clientsSVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// clientsRun measures one -redis-client against a fresh server and Redis.
// Admission is all but off (-batch 1 -tick 1m) so nearly every visitor
// stays waiting and status runs the same script throughout.
func clientsRun(ctx context.Context, o clientsOptions, client string) (clientsResult, error) {
	res := clientsResult{Client: client, Concurrency: o.Conc}
	tgt, err := startTarget(ctx, o.Ext, []string{"-redis-client", client, "-batch", "1", "-tick", "1m"})
	if err != nil {
		return res, err
	}
	defer tgt.Close()
	var w wire
	room := "clients-" + strings.ReplaceAll(client, "-", "") + "-" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	a := newAPI(tgt.URL, room, &w, newDialer(&w, 2, 10), o.Conc)
	defer a.close()
	var errs atomic.Int64
	var errMu sync.Mutex
	fail := func(err error) {
		if errs.Add(1) == 1 {
			errMu.Lock()
			res.FirstErr = err.Error()
			errMu.Unlock()
		}
	}

	other := startOtherLoad(tgt)
	defer func() { res.OtherCores = other() }()

	// Warm up connections and the scripts' cache.
	if _, err := hammer(ctx, o.Conc, 200, func(int) error { _, err := a.join(ctx, ""); return err }); err != nil {
		return res, fmt.Errorf("warm-up: %w", err)
	}

	res.ZaddOps = math.NaN()
	res.ZrankOps = math.NaN()
	if tgt.RedisAddr != "" {
		fmt.Fprintf(o.Progress, "clients %s: redis-benchmark zadd, %d requests\n", client, o.RedisOps)
		if res.ZaddOps, err = redisBenchmark(ctx, tgt.RedisAddr, o.Conc, o.RedisOps, "-t", "zadd"); err != nil {
			return res, err
		}
	}

	fmt.Fprintf(o.Progress, "clients %s: HTTP join, %d new visitors at concurrency %d\n", client, o.Ops, o.Conc)
	creds := make([]string, o.Ops)
	res.JoinOps, err = hammer(ctx, o.Conc, o.Ops, func(i int) error {
		st, err := a.join(ctx, "")
		if err != nil {
			fail(err)
			return nil
		}
		creds[i] = st.Visitor
		return nil
	})
	if err != nil {
		return res, err
	}

	if tgt.RedisAddr != "" {
		fmt.Fprintf(o.Progress, "clients %s: redis-benchmark ZRANK, %d requests\n", client, o.RedisOps)
		if res.ZrankOps, err = redisBenchmark(ctx, tgt.RedisAddr, o.Conc, o.RedisOps, "ZRANK", "myzset", "element:__rand_int__"); err != nil {
			return res, err
		}
	}

	if err := clientsStatus(ctx, o, tgt, a, creds, fail, &res); err != nil {
		return res, err
	}
	res.JoinPerZadd = res.JoinOps / res.ZaddOps
	res.StatusPerZrank = res.StatusOps / res.ZrankOps
	res.Errors = errs.Load()
	if res.Errors > int64(o.Ops/100) {
		return res, fmt.Errorf("%d requests failed, first: %s", res.Errors, res.FirstErr)
	}
	fmt.Fprintf(o.Progress, "clients %s: join %.0f/s (zadd %.0f/s), status %.0f/s (zrank %.0f/s)\n",
		client, res.JoinOps, res.ZaddOps, res.StatusOps, res.ZrankOps)
	return res, nil
}

// hammer runs op for i in [0, n) on conc workers and returns operations
// per second.
func hammer(ctx context.Context, conc, n int, op func(i int) error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return float64(n) / el.Seconds(), nil
}

// redisBenchmark runs redis-benchmark (no pipelining, random members out of
// 100,000) and returns its requests per second.
func redisBenchmark(ctx context.Context, addr string, conc, n int, test ...string) (float64, error) {
	host, port, _ := strings.Cut(addr, ":")
	args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(conc), "-n", strconv.Itoa(n), "-r", "100000", "--csv"}, test...)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, "redis-benchmark", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark %s: %w: %s", strings.Join(test, " "), err, strings.TrimSpace(stderr.String()))
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark output: %w", err)
	}
	for _, r := range recs {
		if len(r) >= 2 && r[0] != "test" {
			return strconv.ParseFloat(r[1], 64)
		}
	}
	return 0, fmt.Errorf("redis-benchmark printed no result: %q", out)
}

func clientsMarkdown(rep *clientsReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Redis clients: rueidis against go-redis\n\n")
	fmt.Fprintf(&b, "Each client in its own run: a fresh redis-server and the server started with `-redis-client <client> -batch 1 -tick 1m` (admission all but off, so visitors stay waiting). In the same run: redis-benchmark ZADD (`-t zadd`), %d HTTP joins of new visitors, redis-benchmark `ZRANK myzset element:__rand_int__`, then one HTTP status per visitor joined. Concurrency 50 throughout, no pipelining in redis-benchmark (`-r 100000`, %d requests per test). Client, server and Redis share the machine: %s.\n\n",
		rep.Ops, rep.RedisOps, rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", rep.Command)
	var rows [][]string
	for _, r := range rep.Results {
		rows = append(rows, []string{r.Client, num(r.OtherCores), num(r.JoinOps), num(r.ZaddOps), fmt.Sprintf("%.2f", r.JoinPerZadd),
			num(r.StatusOps), num(r.ZrankOps), fmt.Sprintf("%.2f", r.StatusPerZrank), num(r.StatusFromRedis * 100)})
	}
	b.WriteString(mdTable([]string{"client", "other processes' CPU (cores)", "HTTP join/s", "redis-benchmark ZADD/s", "join / ZADD", "HTTP status/s",
		"redis-benchmark ZRANK/s", "status / ZRANK", "status answered from Redis (%)"}, rows))
	if len(rep.Results) == 2 {
		r, g := rep.Results[0], rep.Results[1]
		fmt.Fprintf(&b, "\nrueidis / go-redis: join %.2f×, status %.2f×.\n", r.JoinOps/g.JoinOps, r.StatusOps/g.StatusOps)
	}
	b.WriteString(`
- A join of a new visitor is one Lua script (TIME, GET, ZRANK, INCR, ZADD NX, ZRANK) plus an SADD, over HTTP; a status is one script (TIME, GET, ZRANK). Each visitor polls once, and a first poll is never answered from the server's memory (join clears it), so every status reaches Redis; the last column is the server's own count (waitroom_polls_total).
- Other processes' CPU: the machine's busy time minus the server's, its redis-server's and the bench's own during the run (redis-benchmark's own CPU counts here too, so expect up to about one core); much more means another load shared the machine.
- The ratios say how much of Redis's raw single-command rate the whole HTTP path keeps on this machine, where the load generator, the server and Redis compete for 2 cores.
`)
	return b.String()
}

func clientsSVG(rep *clientsReport) string {
	mk := func(title string, f func(clientsResult) float64) panel {
		p := panel{Title: title, Unit: "ops/s"}
		for _, r := range rep.Results {
			p.Bars = append(p.Bars, bar{Label: r.Client, Value: f(r)})
		}
		return p
	}
	return barChartSVG("Redis clients through the HTTP API", "concurrency 50; redis-benchmark in the same run",
		[]panel{
			mk("HTTP join", func(r clientsResult) float64 { return r.JoinOps }),
			mk("HTTP status", func(r clientsResult) float64 { return r.StatusOps }),
			mk("redis-benchmark ZADD", func(r clientsResult) float64 { return r.ZaddOps }),
			mk("redis-benchmark ZRANK", func(r clientsResult) float64 { return r.ZrankOps }),
		})
}

func clientsScenario() scenario {
	return scenario{name: "clients", external: true, flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o clientsOptions
		fs.IntVar(&o.Ops, "ops", 0, "HTTP joins and statuses per client (default 30000; 2000 with -quick)")
		fs.IntVar(&o.RedisOps, "redis-ops", 0, "redis-benchmark requests per test (default 200000; 20000 with -quick)")
		fs.IntVar(&o.Conc, "c", 50, "concurrency of the HTTP callers and of redis-benchmark")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Ext, o.Progress = env.out, env.quick, env.ext, env.progress
			_, err := runClients(ctx, o, env.command)
			return "clients.{md,json,svg}", err
		}
	}}
}

// clientsStatus has each visitor in creds ask for its status once, and
// puts the rate and the share answered from Redis into res.
func clientsStatus(ctx context.Context, o clientsOptions, tgt *target, a *api, creds []string, fail func(error), res *clientsResult) error {
	var err error
	// Each visitor polls once: a first poll is never in the memory cache
	// (join clears it), so every status here runs the script in Redis. The
	// server's own counters confirm it.
	fmt.Fprintf(o.Progress, "clients %s: HTTP status, %d distinct visitors at concurrency %d\n", res.Client, o.Ops, o.Conc)
	m0 := tgt.metrics(ctx)
	res.StatusOps, err = hammer(ctx, o.Conc, o.Ops, func(i int) error {
		if creds[i] == "" {
			return nil
		}
		if _, _, err := a.status(ctx, creds[i]); err != nil {
			fail(err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	m1 := tgt.metrics(ctx)
	res.StatusFromRedis = math.NaN()
	if total := m1["waitroom_polls_total"] - m0["waitroom_polls_total"]; total > 0 {
		res.StatusFromRedis = (m1[`waitroom_polls_total{answer="redis"}`] - m0[`waitroom_polls_total{answer="redis"}`]) / total
	}
	return nil
}
