package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// gatewayOptions configure the gateway scenario.
type gatewayOptions struct {
	Out         string
	Quick       bool
	Conns       int           // closed-loop connections for the check and /healthz
	Duration    time.Duration // per closed-loop phase
	Samples     int           // sequential requests per proxy latency series
	UpstreamLag time.Duration // how long the upstream app takes per request
	Progress    io.Writer
}

type gatewayReport struct {
	Scenario          string  `json:"scenario"`
	Machine           string  `json:"machine"`
	Command           string  `json:"command"`
	Conns             int     `json:"connections"`
	DurationSec       float64 `json:"phaseSeconds"`
	HealthzPerSec     float64 `json:"healthzPerSec"`
	CheckPerSec       float64 `json:"checkPerSec"`
	CheckShare        float64 `json:"checkShareOfHealthz"`
	Checks            int64   `json:"checks"`
	RedisCmds         int64   `json:"redisCommandsDuringChecks"`
	RedisPerCheck     float64 `json:"redisCommandsPerCheck"`
	UpstreamLagMs     float64 `json:"upstreamServiceMs"`
	Samples           int     `json:"latencySamples"`
	DirectP50Ms       float64 `json:"directP50Ms"`
	ProxyP50Ms        float64 `json:"proxyP50Ms"`
	DirectP99Ms       float64 `json:"directP99Ms"`
	ProxyP99Ms        float64 `json:"proxyP99Ms"`
	ProxyRatio        float64 `json:"proxyP50Ratio"`
	ProxyAddedP50Ms   float64 `json:"proxyAddedP50Ms"`
	BareDirectP50Ms   float64 `json:"bareDirectP50Ms"`
	BareProxyP50Ms    float64 `json:"bareProxyP50Ms"`
	Errors            int64   `json:"errors"`
	FirstErr          string  `json:"firstError,omitempty"`
	TargetCheckShare  float64 `json:"targetCheckShare"`
	TargetRedisPerChk float64 `json:"targetRedisPerCheck"`
	TargetProxyRatio  float64 `json:"targetProxyRatio"`
}

// runGateway measures gateway mode on a fresh redis-server and server
// (-upstream in front of an app run here, one protected route):
// /api/v1/check with valid sessions against /healthz of the same server,
// closed loop; Redis commands per check; and the built-in proxy's p50
// against the app called directly.
func runGateway(ctx context.Context, o gatewayOptions, command string) (*gatewayReport, error) {
	o.defaults()
	rep := &gatewayReport{Scenario: "gateway", Machine: machine(), Command: command, Conns: o.Conns,
		DurationSec: o.Duration.Seconds(), UpstreamLagMs: float64(o.UpstreamLag) / 1e6, Samples: o.Samples,
		TargetCheckShare: 0.5, TargetRedisPerChk: 0.05, TargetProxyRatio: 1.3}

	// The app behind the gateway: /slow/ takes UpstreamLag, the rest
	// answers at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/slow/") {
			time.Sleep(o.UpstreamLag) // the app's own work
		}
		io.WriteString(w, "ok")
	})}
	go func() { _ = app.Serve(ln) }() // ends with app.Close
	defer app.Close()
	appURL := "http://" + ln.Addr().String()

	tgt, err := startTarget(ctx, externalOpts{}, []string{"-route", "{match: '*/checkout/*', room: gw}", "-upstream", appURL, "-batch", "100",
		// The load generator speaks for a gateway: its forwarded headers count.
		"-trusted-proxies", "127.0.0.1/32"})
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	fmt.Fprintf(o.Progress, "gateway: server %s, app %s\n", tgt.URL, appURL)

	sessions, err := gatewaySessions(ctx, tgt.URL, o.Conns)
	if err != nil {
		return nil, err
	}
	var errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(err.Error())
		}
	}
	gatewayThroughput(ctx, o, tgt, sessions, rep, fail)
	if err := gatewayProxyLatency(ctx, o, tgt.URL, appURL, sessions[0], rep); err != nil {
		return nil, err
	}
	rep.Errors = errs.Load()
	if s, ok := firstErr.Load().(string); ok {
		rep.FirstErr = s
	}
	fmt.Fprintf(o.Progress, "gateway: proxy p50 %.3f ms against %.3f ms direct (%.2f×); app without work %.3f against %.3f ms\n",
		rep.ProxyP50Ms, rep.DirectP50Ms, rep.ProxyRatio, rep.BareProxyP50Ms, rep.BareDirectP50Ms)
	if err := writeOutputs(o.Out, "gateway", gatewayMarkdown(rep), rep, gatewaySVG(rep)); err != nil {
		return nil, err
	}
	return rep, nil
}

func (o *gatewayOptions) defaults() {
	if o.Quick {
		o.Duration = orDur(o.Duration, 2*time.Second)
		o.Samples = orInt(o.Samples, 300)
	}
	o.Conns = orInt(o.Conns, 64)
	o.Duration = orDur(o.Duration, 10*time.Second)
	o.Samples = orInt(o.Samples, 3000)
	o.UpstreamLag = orDur(o.UpstreamLag, time.Millisecond)
	if o.Out == "" {
		o.Out = "results"
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// gatewayThroughput is /api/v1/check against /healthz in closed loops of
// o.Conns connections, and the Redis commands per check, into rep.
func gatewayThroughput(ctx context.Context, o gatewayOptions, tgt *target, sessions []string, rep *gatewayReport, fail func(error)) {
	host := strings.TrimPrefix(tgt.URL, "http://")
	hc := &fasthttp.HostClient{Addr: host, MaxConns: o.Conns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	defer hc.CloseIdleConnections()

	healthz := func(i int, req *fasthttp.Request) { req.SetRequestURI(tgt.URL + "/healthz") }
	check := func(i int, req *fasthttp.Request) {
		req.SetRequestURI(tgt.URL + "/api/v1/check")
		req.Header.Set("X-Forwarded-Host", "shop.example.com")
		req.Header.Set("X-Forwarded-Uri", "/checkout/cart?item=42")
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("Accept", "text/html")
		req.Header.Set("Cookie", sessions[i%len(sessions)])
	}
	// Warm both paths, then measure each.
	closedLoop(ctx, hc, o.Conns, time.Second/2, healthz, fail)
	closedLoop(ctx, hc, o.Conns, time.Second/2, check, fail)
	n, el := closedLoop(ctx, hc, o.Conns, o.Duration, healthz, fail)
	rep.HealthzPerSec = float64(n) / el.Seconds()
	before := tgt.redisCommands(ctx)
	n, el = closedLoop(ctx, hc, o.Conns, o.Duration, check, fail)
	after := tgt.redisCommands(ctx)
	rep.Checks = n
	rep.CheckPerSec = float64(n) / el.Seconds()
	rep.CheckShare = rep.CheckPerSec / rep.HealthzPerSec
	rep.RedisCmds = after - before - 1 // the INFO itself
	rep.RedisPerCheck = float64(rep.RedisCmds) / float64(max(n, 1))
	fmt.Fprintf(o.Progress, "gateway: /healthz %.0f/s, check %.0f/s (%.2f), %d Redis commands for %d checks\n",
		rep.HealthzPerSec, rep.CheckPerSec, rep.CheckShare, rep.RedisCmds, n)
}

// gatewayProxyLatency is the proxy's latency against the app called
// directly, into rep: one connection each, sequential, interleaved.
func gatewayProxyLatency(ctx context.Context, o gatewayOptions, proxyURL, appURL, session string, rep *gatewayReport) error {
	direct := &fasthttp.HostClient{Addr: strings.TrimPrefix(appURL, "http://"), MaxConns: 1}
	proxied := &fasthttp.HostClient{Addr: strings.TrimPrefix(proxyURL, "http://"), MaxConns: 1}
	defer direct.CloseIdleConnections()
	defer proxied.CloseIdleConnections()
	series := func(path string) (d, p []float64, err error) {
		for i := 0; i < o.Samples && ctx.Err() == nil; i++ {
			dl, err := timed(direct, appURL+path, "")
			if err != nil {
				return nil, nil, fmt.Errorf("direct: %w", err)
			}
			pl, err := timed(proxied, proxyURL+path, session)
			if err != nil {
				return nil, nil, fmt.Errorf("proxy: %w", err)
			}
			d, p = append(d, dl), append(p, pl)
		}
		return d, p, ctx.Err()
	}
	d, p, err := series("/checkout/slow/page")
	if err != nil {
		return err
	}
	rep.DirectP50Ms, rep.ProxyP50Ms = quantile(d, .5)*1e3, quantile(p, .5)*1e3
	rep.DirectP99Ms, rep.ProxyP99Ms = quantile(d, .99)*1e3, quantile(p, .99)*1e3
	rep.ProxyRatio = rep.ProxyP50Ms / rep.DirectP50Ms
	rep.ProxyAddedP50Ms = rep.ProxyP50Ms - rep.DirectP50Ms
	d, p, err = series("/checkout/page")
	if err != nil {
		return err
	}
	rep.BareDirectP50Ms, rep.BareProxyP50Ms = quantile(d, .5)*1e3, quantile(p, .5)*1e3
	return nil
}

// gatewaySessions joins n visitors through the gateway prefix, waits until
// each is admitted, and enters: it returns, for each, the Cookie header a
// browser sends (the room's session cookie and the visitor credential,
// without which a session does not pass).
func gatewaySessions(ctx context.Context, base string, n int) ([]string, error) {
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	creds := make([]string, n)
	for i := range creds {
		resp, err := c.Post(base+"/waitroom/api/v1/rooms/gw/join", "application/json", nil)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		for _, ck := range resp.Cookies() {
			if ck.Name == "wr_visitor" {
				creds[i] = ck.Value
			}
		}
		if creds[i] == "" {
			return nil, fmt.Errorf("join %d: %s and no visitor cookie", i, resp.Status)
		}
	}
	out := make([]string, n)
	err := waitFor(ctx, 60*time.Second, func() bool {
		for i, cred := range creds {
			if out[i] != "" {
				continue
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/waitroom/api/v1/rooms/gw/enter?return=%2Fcheckout%2F", nil)
			req.Header.Set("Cookie", "wr_visitor="+cred)
			resp, err := c.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			for _, ck := range resp.Cookies() {
				if ck.Name == "wr_session_gw" && ck.Value != "" && resp.Header.Get("Location") == "/checkout/" {
					out[i] = "wr_session_gw=" + ck.Value + "; wr_visitor=" + cred
				}
			}
			if out[i] == "" {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, errors.New("visitors were not admitted in time")
	}
	// A session is valid from its notBefore, inside the next tick.
	err = waitFor(ctx, 10*time.Second, func() bool {
		for _, s := range out {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/check", nil)
			req.Header.Set("X-Forwarded-Host", "shop.example.com")
			req.Header.Set("X-Forwarded-Uri", "/checkout/")
			req.Header.Set("Cookie", s)
			resp, err := c.Do(req)
			if err != nil {
				return false
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, errors.New("sessions did not become valid in time")
	}
	return out, nil
}

// closedLoop runs conns workers, each sending its next request as soon as
// the last one answered, for d; it returns the answers that were 200 and
// the time taken.
func closedLoop(ctx context.Context, hc *fasthttp.HostClient, conns int, d time.Duration, build func(i int, req *fasthttp.Request), fail func(error)) (int64, time.Duration) {
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range conns {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for time.Now().Before(end) && ctx.Err() == nil {
				req.Reset()
				build(w, req)
				if err := hc.Do(req, resp); err != nil {
					fail(err)
					continue
				}
				if resp.StatusCode() != 200 {
					fail(fmt.Errorf("%s: status %d", req.URI().Path(), resp.StatusCode()))
					continue
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return done.Load(), time.Since(start)
}

// timed sends one GET and returns its latency in seconds.
func timed(hc *fasthttp.HostClient, url, cookie string) (float64, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	start := time.Now()
	if err := hc.Do(req, resp); err != nil {
		return 0, err
	}
	el := time.Since(start).Seconds()
	if resp.StatusCode() != 200 {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode())
	}
	return el, nil
}

func gatewayMarkdown(r *gatewayReport) string {
	var b strings.Builder
	b.WriteString("# Gateway mode: forward-auth check and built-in proxy\n\n")
	fmt.Fprintf(&b, "A fresh redis-server and server (`-upstream` in front of an app run by the bench, one route `*/checkout/*` → room `gw`); %d visitors joined, admitted and entered for their session cookies. The load generator, the server, the app and Redis share the machine: %s.\n\n", r.Conns, r.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	rows := [][]string{
		{"`/api/v1/check` with a valid session, closed loop, " + strconv.Itoa(r.Conns) + " connections", num(r.CheckPerSec) + " req/s", "", ""},
		{"`/healthz` of the same server, same loop", num(r.HealthzPerSec) + " req/s", "", ""},
		{"check / healthz", fmt.Sprintf("%.2f", r.CheckShare), "≥ 0.50", yes(r.CheckShare >= r.TargetCheckShare)},
		{"Redis commands per checked request", fmt.Sprintf("%.4f (%d for %s checks)", r.RedisPerCheck, r.RedisCmds, commas(r.Checks)), "≤ 0.05", yes(r.RedisPerCheck <= r.TargetRedisPerChk)},
		{fmt.Sprintf("p50 through the proxy / direct (app works %.0f ms)", r.UpstreamLagMs), fmt.Sprintf("%.3f / %.3f ms = %.2f×", r.ProxyP50Ms, r.DirectP50Ms, r.ProxyRatio), "≤ 1.3×", yes(r.ProxyRatio <= r.TargetProxyRatio)},
		{"p99 through the proxy / direct", fmt.Sprintf("%.3f / %.3f ms", r.ProxyP99Ms, r.DirectP99Ms), "", ""},
		{"p50 through the proxy / direct (app answers at once)", fmt.Sprintf("%.3f / %.3f ms", r.BareProxyP50Ms, r.BareDirectP50Ms), "", ""},
	}
	b.WriteString(mdTable([]string{"figure", "measured", "target", "met"}, rows))
	fmt.Fprintf(&b, "\n- Redis commands: redis-server's total_commands_processed over the check phase, background work included (the tick loop, housekeeping); sessions slide at most once per min(token-ttl/10, 30 s), so a %.0f s phase makes no slide.\n", r.DurationSec)
	fmt.Fprintf(&b, "- Proxy latency: %d sequential requests on one kept-alive connection each way, interleaved; the added p50 is %.3f ms. An app that answers at once shows the proxy's whole cost as a ratio; the target is read against an app that does %.0f ms of work.\n", r.Samples, r.ProxyAddedP50Ms, r.UpstreamLagMs)
	if r.Errors > 0 {
		fmt.Fprintf(&b, "- %d failed requests, first: %s\n", r.Errors, r.FirstErr)
	}
	return b.String()
}

func gatewaySVG(r *gatewayReport) string {
	return barChartSVG("Gateway mode", fmt.Sprintf("%d connections closed loop; proxy latency sequential", r.Conns), []panel{
		{Title: "throughput", Unit: "req/s", Bars: []bar{{Label: "/healthz", Value: r.HealthzPerSec}, {Label: "/api/v1/check", Value: r.CheckPerSec}}},
		{Title: fmt.Sprintf("p50, app works %.0f ms", r.UpstreamLagMs), Unit: "ms", Bars: []bar{{Label: "direct", Value: r.DirectP50Ms}, {Label: "through proxy", Value: r.ProxyP50Ms}}},
	})
}

func gatewayScenario() scenario {
	return scenario{name: "gateway", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o gatewayOptions
		fs.IntVar(&o.Conns, "conns", 64, "closed-loop connections for the check and /healthz")
		fs.DurationVar(&o.Duration, "duration", 0, "each closed-loop phase (default 10s; 2s with -quick)")
		fs.IntVar(&o.Samples, "samples", 0, "sequential requests per proxy latency series (default 3000; 300 with -quick)")
		fs.DurationVar(&o.UpstreamLag, "app-work", time.Millisecond, "how long the app behind the proxy works per request")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			_, err := runGateway(ctx, o, env.command)
			return "gateway.{md,json,svg}", err
		}
	}}
}
