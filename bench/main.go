// Command bench measures a waitroom server from the outside, like its users:
// what push costs against polling (cost), what a herd of admitted visitors
// does to the protected system (herd), the Redis clients' throughput
// through the HTTP API beside raw redis-benchmark (clients), and what push
// visitors cost spread over several instances on one Redis (scale), how
// many joins a second one room takes on one Redis core (ceiling), and
// whether a room's autopilot admits what an origin can absorb better than
// a static rate (autopilot).
//
// It starts what it needs (a redis-server on a free port, the server
// built from this module, and for autopilot an origin app of its own),
// loads loopback only, bounds every run in count
// and time, and writes a Markdown table, a JSON file and an SVG chart per
// scenario into -out. It imports no package of this module.
//
//	go run ./bench cost    [-quick] [-n 10000] [-duration 60s] [-out results/]
//	go run ./bench herd    [-quick] [-transport ws|poll] [-out results/]
//	go run ./bench clients [-quick] [-ops 50000] [-out results/]
//	go run ./bench gateway [-quick] [-conns 64] [-duration 10s] [-out results/]
//	go run ./bench busy    [-quick] [-samples 3000] [-out results/]
//	go run ./bench scale   [-quick] [-n 45000] [-transport ws|sse] [-instances 3] [-admit 30s] [-idle 60s] [-out results/]
//	go run ./bench scale -cluster [-quick] [-n 9000] [-rooms 6] [-admit 20s] [-out results/]
//	go run ./bench abandon [-quick] [-n 5000] [-leave 0.3] [-db-pool 10] [-strategies fixed,max-active] [-out results/]
//	go run ./bench soak    [-quick] [-n 30000] [-duration 10m] [-fault-every 1m] [-redis-stop kill|term] [-out results/]
//	go run ./bench ceiling [-quick] [-rates 1000,2000,...] [-rate R -joins N] [-procs 2] [-out results/]
//	go run ./bench joinpath [-quick] [-d 10s] [-c 64] [-rounds 3] [-load go|wrk] [-zadd-n 400000] [-no-pin] [-out results/]
//	go run ./bench autopilot [-quick] [-visitors 1000] [-pool 40] [-before 60s] [-after 30s] [-runs right,high,low,autopilot] [-out results/]
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
  busy     fresh visitors let in on the spot by a room with activation busy,
           through the built-in proxy, against requests no route guards:
           p50/p99 and Redis commands per visitor let in
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
  ceiling  new visitors joining one room over 3 instances on one Redis,
           open loop, in rising rate steps until join p99 passes 100 ms:
           joins/s, p50/p99, Redis CPU per join, EVALSHA usec per call,
           what limits it; then joins flat out, and what a status and
           an admission cost
  joinpath joins of new visitors through HTTP (load generator on core 0,
           server on core 1) against raw redis-benchmark ZADD on the same
           Redis: joins/s, ZADD/s, their ratio, server and Redis CPU
  autopilot the same herd through the built-in proxy in front of an origin
           of 40 slots of 200 ms, at a static rate right (140/s), twice
           too high, twice too low, and under the autopilot from minRate;
           the origin's pool halves part-way: orders/s against the
           optimum, origin p95, errors, waits, time to the optimum and
           back under the latency target

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

// run runs the scenario or the worker called name with its arguments.
func run(ctx context.Context, name string, args []string, progress io.Writer) error {
	if work, ok := workers[name]; ok {
		fs := flag.NewFlagSet("bench "+name, flag.ContinueOnError)
		fs.SetOutput(os.Stderr)
		cfg := fs.String("config", "", "fleet configuration (JSON); internal")
		if err := fs.Parse(args); err != nil {
			return err
		}
		return work(ctx, *cfg)
	}
	sc, ok := lookupScenario(name)
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown scenario %q", name)
	}
	return sc.main(ctx, args, progress)
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

// withLimit bounds a whole run.
func withLimit(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
