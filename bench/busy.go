package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// busyOptions configure the busy scenario.
type busyOptions struct {
	Out      string
	Quick    bool
	Samples  int // sequential requests per series
	Progress io.Writer
}

type busyReport struct {
	Scenario       string             `json:"scenario"`
	Machine        string             `json:"machine"`
	Command        string             `json:"command"`
	Samples        int                `json:"samples"`
	BypassP50Ms    float64            `json:"bypassP50Ms"`
	BypassP99Ms    float64            `json:"bypassP99Ms"`
	PassP50Ms      float64            `json:"passP50Ms"`
	PassP99Ms      float64            `json:"passP99Ms"`
	AddedP99Ms     float64            `json:"addedP99Ms"`
	Passed         int                `json:"passed"`
	RedisCalls     map[string]float64 `json:"redisCallsPerPass"` // INFO commandstats, per visit let in
	RedisUsecPerPs float64            `json:"redisEvalshaUsecPerPass"`
	TargetAddedP99 float64            `json:"targetAddedP99Ms"`
}

// runBusy measures what letting a visitor in on the spot costs (a room
// with activation busy, under its threshold) through the built-in proxy:
// sequential requests of fresh visitors (no cookies: each is let in) on a
// guarded path, interleaved with requests on a path no route guards, one
// kept-alive connection each; and Redis's commandstats over the
// pass-through series, per visitor let in.
func runBusy(ctx context.Context, o busyOptions, command string) (*busyReport, error) {
	if o.Quick {
		o.Samples = orInt(o.Samples, 300)
	}
	o.Samples = orInt(o.Samples, 3000)
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	rep := &busyReport{Scenario: "busy", Machine: machine(), Command: command, Samples: o.Samples, TargetAddedP99: 2}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go func() { _ = app.Serve(ln) }() // ends with app.Close
	defer app.Close()
	appURL := "http://" + ln.Addr().String()

	dir, err := os.MkdirTemp("", "waitroom-bench-busy")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rooms := filepath.Join(dir, "rooms.yaml")
	// Room enough for every visitor of the run: the threshold is never
	// reached, so each one is let in.
	if err := os.WriteFile(rooms, []byte("rooms:\n  gw:\n    strategy: max-active\n    maxActive: 10000000\n    activation: busy\n"), 0o644); err != nil {
		return nil, err
	}
	tgt, err := startTarget(ctx, externalOpts{}, []string{"-route", "{match: '*/checkout/*', room: gw}", "-upstream", appURL, "-rooms", rooms})
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	fmt.Fprintf(o.Progress, "busy: server %s, app %s\n", tgt.URL, appURL)

	hc := &fasthttp.HostClient{Addr: strings.TrimPrefix(tgt.URL, "http://"), MaxConns: 1}
	defer hc.CloseIdleConnections()
	get := func(path string) (float64, error) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.SetRequestURI(tgt.URL + path)
		req.Header.Set("Accept", "text/html")
		start := time.Now()
		if err := hc.Do(req, resp); err != nil {
			return 0, err
		}
		el := time.Since(start).Seconds()
		if resp.StatusCode() != 200 {
			return 0, fmt.Errorf("%s: status %d", path, resp.StatusCode())
		}
		return el, nil
	}
	// Warm both paths.
	for i := range 50 {
		if _, err := get("/about"); err != nil {
			return nil, err
		}
		if _, err := get("/checkout/warm/" + strconv.Itoa(i)); err != nil {
			return nil, fmt.Errorf("a fresh visitor was not let in: %w", err)
		}
	}
	before, err := tgt.commandStats(ctx)
	if err != nil {
		return nil, err
	}
	var bypass, pass []float64
	for i := 0; i < o.Samples && ctx.Err() == nil; i++ {
		b, err := get("/about")
		if err != nil {
			return nil, err
		}
		p, err := get("/checkout/item/" + strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		bypass, pass = append(bypass, b), append(pass, p)
	}
	after, err := tgt.commandStats(ctx)
	if err != nil {
		return nil, err
	}
	rep.Passed = len(pass)
	rep.BypassP50Ms, rep.BypassP99Ms = quantile(bypass, .5)*1e3, quantile(bypass, .99)*1e3
	rep.PassP50Ms, rep.PassP99Ms = quantile(pass, .5)*1e3, quantile(pass, .99)*1e3
	rep.AddedP99Ms = rep.PassP99Ms - rep.BypassP99Ms
	rep.RedisCalls = map[string]float64{}
	for cmd, a := range after {
		b := before[cmd]
		if d := a.Calls - b.Calls; d > 0 && cmd != "info" {
			rep.RedisCalls[cmd] = float64(d) / float64(max(rep.Passed, 1))
		}
	}
	// EVALSHA's time includes the commands its script runs.
	rep.RedisUsecPerPs = float64(after["evalsha"].Usec-before["evalsha"].Usec) / float64(max(rep.Passed, 1))
	fmt.Fprintf(o.Progress, "busy: p99 let in %.3f ms, bypassed %.3f ms (+%.3f ms); p50 %.3f / %.3f ms\n",
		rep.PassP99Ms, rep.BypassP99Ms, rep.AddedP99Ms, rep.PassP50Ms, rep.BypassP50Ms)
	if err := writeOutputs(o.Out, "busy", busyMarkdown(rep), rep, busySVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

// commandStats reads Redis's INFO commandstats, by command (lower case).
func (t *target) commandStats(ctx context.Context) (map[string]cmdStat, error) {
	if t.rdb == nil {
		return nil, fmt.Errorf("no Redis address")
	}
	info, err := t.rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]cmdStat{}
	for _, g := range cmdstatRe.FindAllStringSubmatch(info, -1) {
		calls, _ := strconv.ParseInt(g[2], 10, 64)
		usec, _ := strconv.ParseInt(g[3], 10, 64)
		out[g[1]] = cmdStat{Calls: calls, Usec: usec}
	}
	return out, nil
}

func busyMarkdown(r *busyReport) string {
	var b strings.Builder
	b.WriteString("# Activation busy: a visitor let in on the spot\n\n")
	fmt.Fprintf(&b, "A fresh redis-server and server (`-upstream` in front of an app run by the bench that answers at once; route `*/checkout/*` → room `gw`, `strategy: max-active`, `maxActive: 10000000`, `activation: busy`). %d sequential requests of fresh visitors (no cookies: each is let in on the spot) interleaved with %d on a path no route guards, one kept-alive connection each. The load generator, the server, the app and Redis share the machine: %s.\n\n", r.Samples, r.Samples, r.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	met := "no"
	if r.AddedP99Ms <= r.TargetAddedP99 {
		met = "yes"
	}
	rows := [][]string{
		{"p50 let in / bypassed", fmt.Sprintf("%.3f / %.3f ms", r.PassP50Ms, r.BypassP50Ms), "", ""},
		{"p99 let in / bypassed", fmt.Sprintf("%.3f / %.3f ms", r.PassP99Ms, r.BypassP99Ms), "", ""},
		{"p99 added by letting in", fmt.Sprintf("%.3f ms", r.AddedP99Ms), "≤ 2 ms", met},
		{"Redis EVALSHA µs per visitor let in (commandstats, its script's commands included)", fmt.Sprintf("%.1f", r.RedisUsecPerPs), "", ""},
	}
	b.WriteString(mdTable([]string{"figure", "measured", "target", "met"}, rows))
	b.WriteString("\nRedis commands per visitor let in (INFO commandstats over the series, background work included; the commands a script runs are counted under their own names too, beside its EVALSHA):\n\n")
	cmds := make([]string, 0, len(r.RedisCalls))
	for c := range r.RedisCalls {
		cmds = append(cmds, c)
	}
	sort.Strings(cmds)
	var crow [][]string
	for _, c := range cmds {
		crow = append(crow, []string{"`" + c + "`", fmt.Sprintf("%.3f", r.RedisCalls[c])})
	}
	b.WriteString(mdTable([]string{"command", "calls per visitor"}, crow))
	return b.String()
}

func busySVG(r *busyReport) string {
	return barChartSVG("Activation busy", fmt.Sprintf("%d sequential requests each; one connection", r.Samples), []panel{
		{Title: "p99", Unit: "ms", Bars: []bar{{Label: "bypassed", Value: r.BypassP99Ms}, {Label: "let in", Value: r.PassP99Ms}}},
		{Title: "p50", Unit: "ms", Bars: []bar{{Label: "bypassed", Value: r.BypassP50Ms}, {Label: "let in", Value: r.PassP50Ms}}},
	})
}

func busyScenario() scenario {
	return scenario{name: "busy", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o busyOptions
		fs.IntVar(&o.Samples, "samples", 0, "sequential requests per series (default 3000; 300 with -quick)")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			_, err := runBusy(ctx, o, env.command)
			return "busy.{md,json,svg}", err
		}
	}}
}
