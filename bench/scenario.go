package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// scenario is one thing the bench measures, as `go run ./bench NAME`.
type scenario struct {
	name string
	// external: the scenario can measure a running server (-url, -pid,
	// -redis-addr) instead of starting one.
	external bool
	// quickHelp replaces the usual help of -quick when set.
	quickHelp string
	// flags registers the scenario's own flags on fs and returns its run,
	// which is called once fs is parsed. run writes the report into
	// env.out and returns what it wrote there, as "cost.{md,json,svg}".
	flags func(fs *flag.FlagSet) (run func(ctx context.Context, env runEnv) (string, error))
}

// runEnv is what every scenario's run is given besides its own flags.
type runEnv struct {
	out      string
	quick    bool
	ext      externalOpts // only for an external scenario
	progress io.Writer
	command  string // the command line that produced the report, as quoted in it
}

// scenarios are the bench's scenarios, in the order of the usage text.
func scenarios() []scenario {
	return []scenario{
		costScenario(), herdScenario(), clientsScenario(), gatewayScenario(), busyScenario(),
		scaleScenario(), abandonScenario(), soakScenario(), ceilingScenario(),
		joinpathScenario(), autopilotScenario(),
	}
}

// workers are the child processes a scenario spreads its visitors over:
// `bench NAME -config JSON`, started by startFleets, never by hand.
var workers = map[string]func(ctx context.Context, cfgJSON string) error{
	"cost-worker":    costWorkerMain,
	"scale-worker":   scaleWorkerMain,
	"soak-worker":    soakWorkerMain,
	"ceiling-worker": ceilingWorkerMain,
	// Not visitors: the autopilot scenario's origin, an app of its own.
	"autopilot-origin": originWorkerMain,
}

func lookupScenario(name string) (scenario, bool) {
	for _, sc := range scenarios() {
		if sc.name == name {
			return sc, true
		}
	}
	return scenario{}, false
}

// main parses args for the scenario, runs it and says what it wrote. A
// -h or -help returns flag.ErrHelp after the flags are printed.
func (sc scenario) main(ctx context.Context, args []string, progress io.Writer) error {
	fs := flag.NewFlagSet("bench "+sc.name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	env := runEnv{progress: progress}
	env.command = strings.TrimSpace("go run ./bench " + sc.name + " " + strings.Join(args, " "))
	sc.registerCommon(fs, &env)
	run := sc.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	wrote, err := run(ctx, env)
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "wrote %s/%s\n", strings.TrimRight(env.out, "/"), wrote)
	return nil
}

// registerCommon registers the flags every scenario takes, and those of
// an external one.
func (sc scenario) registerCommon(fs *flag.FlagSet, env *runEnv) {
	quickHelp := sc.quickHelp
	if quickHelp == "" {
		quickHelp = "a run of seconds with small counts (what the tests run)"
	}
	fs.StringVar(&env.out, "out", "results", "folder for the .md, .json and .svg outputs")
	fs.BoolVar(&env.quick, "quick", false, quickHelp)
	if !sc.external {
		return
	}
	fs.StringVar(&env.ext.URL, "url", "", "measure this running server (http://127.0.0.1:PORT) instead of starting one; per-run server flags then do not apply")
	fs.IntVar(&env.ext.PID, "pid", 0, "with -url: the server's PID, for CPU and RSS from /proc")
	fs.StringVar(&env.ext.RedisAddr, "redis-addr", "", "with -url: the server's Redis (host:port), for INFO and redis-benchmark")
}
