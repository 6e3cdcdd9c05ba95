// Command bench measures a waitroom server from the outside, like its users:
// what push costs against polling (cost), what a herd of admitted visitors
// does to the protected system (herd), the Redis clients' throughput
// through the HTTP API beside raw redis-benchmark (clients), and what push
// visitors cost spread over several instances on one Redis (scale).
//
// It starts what it needs (a redis-server on a free port, and the server
// built from this module), loads loopback only, bounds every run in count
// and time, and writes a Markdown table, a JSON file and an SVG chart per
// scenario into -out. It imports no package of this module.
//
//	go run ./bench cost    [-quick] [-n 10000] [-duration 60s] [-out results/]
//	go run ./bench herd    [-quick] [-transport ws|poll] [-out results/]
//	go run ./bench clients [-quick] [-ops 50000] [-out results/]
//	go run ./bench gateway [-quick] [-conns 64] [-duration 10s] [-out results/]
//	go run ./bench scale   [-quick] [-n 45000] [-transport ws|sse] [-instances 3] [-admit 30s] [-idle 60s] [-out results/]
//	go run ./bench scale -cluster [-quick] [-n 9000] [-rooms 6] [-admit 20s] [-out results/]
//	go run ./bench abandon [-quick] [-n 5000] [-leave 0.3] [-db-pool 10] [-strategies fixed,max-active] [-out results/]
//	go run ./bench soak    [-quick] [-n 30000] [-duration 10m] [-fault-every 1m] [-redis-stop kill|term] [-out results/]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const usage = `usage: go run ./bench <scenario> [flags]

scenarios:
  cost     push (WebSocket, SSE) against polling (adaptive, fixed 1 s) for the
           same waiting visitors and admission rate: server CPU, RSS,
           goroutines, requests, Redis commands, bytes, delivery lag, staleness
  herd     orders against the demo protected endpoint as admitted visitors
           arrive, batch 14 / 500 / 1000, jitter on and off
  clients  rueidis against go-redis through HTTP join and status, beside
           redis-benchmark ZADD and ZRANK
  gateway  /api/v1/check with valid sessions against /healthz (64
           connections, closed loop), Redis commands per check, and the
           built-in proxy's p50 against the app called directly
  scale    45,000 push visitors over 3 instances on one Redis, paused while
           they connect, then admitting 14 per 100 ms, then paused: CPU,
           RSS and goroutines per connection, Redis, lag, drops; with
           -cluster on a 3-master/3-replica Redis Cluster, rooms on every
           master: CPU and PUBLISH/SPUBLISH per node
  abandon  5,000 visitors of whom 30% leave while waiting, both strategies,
           presence on and off: orders/s against capacity, the wait of
           those who stayed, slots held by those who left over time
  soak     30,000 push visitors over 3 instances on a redis-server with AOF,
           admitting 14 per 100 ms for 10 minutes while pub/sub is killed
           every minute, one instance and Redis are restarted once: missed
           and duplicate deliveries, ticks missed per fault, RSS and
           goroutines over time

Each scenario takes -quick (seconds) and -out DIR (default results).
Run "go run ./bench <scenario> -h" for its flags.
`

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1], os.Args[2:], os.Stderr)
	stop()
	removeServerBinary()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// common are the flags every scenario takes.
type common struct {
	out   string
	quick bool
	ext   externalOpts
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "results", "folder for the .md, .json and .svg outputs")
	fs.BoolVar(&c.quick, "quick", false, "a run of seconds with small counts (what the tests run)")
	fs.StringVar(&c.ext.URL, "url", "", "measure this running server (http://127.0.0.1:PORT) instead of starting one; per-run server flags then do not apply")
	fs.IntVar(&c.ext.PID, "pid", 0, "with -url: the server's PID, for CPU and RSS from /proc")
	fs.StringVar(&c.ext.RedisAddr, "redis-addr", "", "with -url: the server's Redis (host:port), for INFO and redis-benchmark")
}

func run(ctx context.Context, scenario string, args []string, progress io.Writer) error {
	fs := flag.NewFlagSet("bench "+scenario, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	var c common
	command := "go run ./bench " + scenario + " " + strings.Join(args, " ")
	command = strings.TrimSpace(command)
	switch scenario {
	case "cost":
		var o costOptions
		c.register(fs)
		fs.IntVar(&o.N, "n", 0, "waiting visitors (default 10000; 200 with -quick)")
		fs.DurationVar(&o.Duration, "duration", 0, "measured window per mode (default 60s; 5s with -quick)")
		fs.IntVar(&o.Batch, "batch", 0, "server -batch: visitors admitted per tick (default 14; 2 with -quick)")
		fs.DurationVar(&o.Tick, "tick", 0, "server -tick (default 100ms)")
		modes := fs.String("modes", "ws,sse,poll,poll1s", "modes to run, comma-separated")
		fs.IntVar(&o.PerProc, "per-proc", 0, "visitors per client process; more are spread over child processes (default 15000)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Ext, o.Progress = c.out, c.quick, c.ext, progress
		o.Modes = splitList(*modes)
		rep, err := runCost(ctx, o, command)
		if err != nil {
			return err
		}
		fmt.Fprintf(progress, "wrote %s/cost.{md,json,svg} (%d modes)\n", strings.TrimRight(c.out, "/"), len(rep.Results))
		return nil
	case "herd":
		var o herdOptions
		c.register(fs)
		fs.StringVar(&o.Transport, "transport", "ws", "how visitors learn they are admitted: ws, sse or poll")
		fs.DurationVar(&o.Limit, "limit", 0, "time limit per run (default 2m)")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Ext, o.Progress = c.out, c.quick, c.ext, progress
		_, err := runHerd(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/herd.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "clients":
		var o clientsOptions
		c.register(fs)
		fs.IntVar(&o.Ops, "ops", 0, "HTTP joins and statuses per client (default 30000; 2000 with -quick)")
		fs.IntVar(&o.RedisOps, "redis-ops", 0, "redis-benchmark requests per test (default 200000; 20000 with -quick)")
		fs.IntVar(&o.Conc, "c", 50, "concurrency of the HTTP callers and of redis-benchmark")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Ext, o.Progress = c.out, c.quick, c.ext, progress
		_, err := runClients(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/clients.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "scale":
		var o scaleOptions
		fs.StringVar(&c.out, "out", "results", "folder for the .md, .json and .svg outputs")
		fs.BoolVar(&c.quick, "quick", false, "a run of seconds with small counts (what the tests run)")
		fs.IntVar(&o.N, "n", 0, "push visitors (default 45000; 3000 with -quick)")
		fs.StringVar(&o.Transport, "transport", "ws", "push transport: ws or sse")
		fs.IntVar(&o.Instances, "instances", 3, "server instances, all on the one redis-server")
		fs.DurationVar(&o.Admit, "admit", 0, "admitting phase (default 30s; 5s with -quick)")
		fs.DurationVar(&o.Idle, "idle", 0, "paused phase after it (default 60s; 10s with -quick)")
		fs.IntVar(&o.Batch, "batch", 0, "server -batch: visitors admitted per tick (default 14)")
		fs.DurationVar(&o.Tick, "tick", 0, "server -tick (default 100ms)")
		fs.IntVar(&o.PerProc, "per-proc", 0, "visitors per client process; more are spread over child processes (default 15000)")
		fs.DurationVar(&o.WSPing, "ws-heartbeat", 0, "the servers' WebSocket heartbeat interval (default 40s, the servers' default; 3s with -quick)")
		cluster := fs.Bool("cluster", false, "on a Redis Cluster of 3 masters and 3 replicas started here, visitors spread over rooms on every master (default -n 9000, -admit 20s)")
		rooms := fs.Int("rooms", 6, "with -cluster: rooms, spread evenly over the masters")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Progress = c.out, c.quick, progress
		if *cluster {
			_, err := runScaleCluster(ctx, o, *rooms, command)
			if err == nil {
				fmt.Fprintf(progress, "wrote %s/scale-cluster.{md,json}\n", strings.TrimRight(c.out, "/"))
			}
			return err
		}
		_, err := runScale(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/scale.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "gateway":
		var o gatewayOptions
		fs.StringVar(&c.out, "out", "results", "folder for the .md, .json and .svg outputs")
		fs.BoolVar(&c.quick, "quick", false, "a run of seconds with small counts (what the tests run)")
		fs.IntVar(&o.Conns, "conns", 64, "closed-loop connections for the check and /healthz")
		fs.DurationVar(&o.Duration, "duration", 0, "each closed-loop phase (default 10s; 2s with -quick)")
		fs.IntVar(&o.Samples, "samples", 0, "sequential requests per proxy latency series (default 3000; 300 with -quick)")
		fs.DurationVar(&o.UpstreamLag, "app-work", time.Millisecond, "how long the app behind the proxy works per request")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Progress = c.out, c.quick, progress
		_, err := runGateway(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/gateway.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "abandon":
		var o abandonOptions
		fs.StringVar(&c.out, "out", "results", "folder for the .md, .json and .svg outputs")
		fs.BoolVar(&c.quick, "quick", false, "a run of seconds with small counts (what the tests run)")
		fs.IntVar(&o.N, "n", 0, "visitors per run (default 5000; 200 with -quick)")
		fs.Float64Var(&o.Leave, "leave", 0.3, "share of visitors who leave while waiting")
		fs.IntVar(&o.DBPool, "db-pool", 0, "server -db-pool, which sets the capacity (default 10: 35/s; 4 with -quick)")
		fs.DurationVar(&o.Limit, "limit", 0, "time limit per run (default 8m; 35s with -quick)")
		strategies := fs.String("strategies", "fixed,max-active", "strategies to run, comma-separated")
		presence := fs.String("presence", "on,off", "presence settings to run, comma-separated")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if o.Leave <= 0 || o.Leave >= 1 {
			return fmt.Errorf("abandon: -leave must be between 0 and 1")
		}
		o.Out, o.Quick, o.Progress = c.out, c.quick, progress
		o.Strategies = splitList(*strategies)
		for _, p := range splitList(*presence) {
			if p != "on" && p != "off" {
				return fmt.Errorf("abandon: -presence takes on and off, not %q", p)
			}
			o.Presence = append(o.Presence, p == "on")
		}
		_, err := runAbandon(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/abandon.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "soak":
		var o soakOptions
		fs.StringVar(&c.out, "out", "results", "folder for the .md, .json and .svg outputs")
		fs.BoolVar(&c.quick, "quick", false, "a run of about a minute with 600 visitors (what the tests run)")
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
		if err := fs.Parse(args); err != nil {
			return err
		}
		o.Out, o.Quick, o.Progress = c.out, c.quick, progress
		_, err := runSoak(ctx, o, command)
		if err == nil {
			fmt.Fprintf(progress, "wrote %s/soak.{md,json,svg}\n", strings.TrimRight(c.out, "/"))
		}
		return err
	case "soak-worker":
		cfg := fs.String("config", "", "fleet configuration (JSON); internal")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return soakWorkerMain(ctx, *cfg)
	case "cost-worker":
		cfg := fs.String("config", "", "fleet configuration (JSON); internal")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return costWorkerMain(ctx, *cfg)
	case "scale-worker":
		cfg := fs.String("config", "", "fleet configuration (JSON); internal")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return scaleWorkerMain(ctx, *cfg)
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown scenario %q", scenario)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// runLimit bounds a whole run.
func withLimit(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
