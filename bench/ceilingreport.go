package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

func ceilingScenario() scenario {
	return scenario{name: "ceiling", flags: func(fs *flag.FlagSet) func(context.Context, runEnv) (string, error) {
		var o ceilingOptions
		rates := fs.String("rates", "", "offered joins/s of each step, comma-separated (default 1000,2000,4000,8000,12000,16000,24000,32000,50000; 200,400 with -quick)")
		rate := fs.Float64("rate", 0, "run one step at this rate instead of -rates")
		fs.IntVar(&o.Joins, "joins", 0, "joins per step (default rate × -step)")
		fs.DurationVar(&o.Step, "step", 0, "how long each step's arrivals last (default 5s; 1s with -quick)")
		fs.IntVar(&o.Procs, "procs", 0, "generator processes (default 2; 1 with -quick)")
		fs.IntVar(&o.Retries, "retries", 1, "times a failed step is run again before the ramp stops")
		fs.IntVar(&o.Conns, "conns", 0, "keep-alive connections per instance and generator process at most (default 256)")
		fs.IntVar(&o.Instances, "instances", 0, "server instances on the one redis-server (default 3)")
		fs.DurationVar(&o.P99, "p99", 0, "a step is sustained while its join p99 is at most this (default 100ms)")
		fs.IntVar(&o.Statuses, "statuses", 0, "status polls in the status phase (default 20000)")
		fs.IntVar(&o.Flat, "flat", 0, "joins in the flat-out phase (default 20000)")
		fs.DurationVar(&o.Admit, "admit", 0, "length of the admission phase (default 3s)")
		fs.IntVar(&o.JoinBatch, "join-batch", 0, "the servers' -join-batch (default theirs, 64; 1: each join a call of its own)")
		fs.IntVar(&o.Batch, "batch", 0, "visitors admitted per 100 ms tick in the admission phase (default 500)")
		fs.DurationVar(&o.Limit, "limit", 0, "time limit of the whole run (default 15m; 2m with -quick)")
		return func(ctx context.Context, env runEnv) (string, error) {
			o.Out, o.Quick, o.Progress = env.out, env.quick, env.progress
			for _, r := range splitList(*rates) {
				v, err := strconv.ParseFloat(r, 64)
				if err != nil || v <= 0 {
					return "", fmt.Errorf("ceiling: bad -rates entry %q", r)
				}
				o.Rates = append(o.Rates, v)
			}
			if *rate > 0 {
				o.Rates = []float64{*rate}
			}
			_, err := runCeiling(ctx, o, env.command)
			return "ceiling.{md,json,svg}", err
		}
	}}
}

func ceilingMarkdown(rep *ceilingReport, o ceilingOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# One room's join ceiling\n\n")
	fmt.Fprintf(&b, "New visitors join one room, spread over %d instances on one redis-server, in steps of rising offered rate; "+
		"each step is an open-loop stream of %v of arrivals from %d generator process(es) (arrivals are due at a fixed rate whatever the answers; "+
		"a join's latency counts from when it was due). The room is paused, so every script call in a step is a join. "+
		"A step is sustained when its join p99 is at most %s, no join failed and at least 95%% of the offered rate was achieved. Machine: %s.\n\n",
		rep.Instances, o.Step, rep.Procs, secs(rep.P99Limit), rep.Machine)
	fmt.Fprintf(&b, "Command: `%s`\n\n", rep.Command)
	if rep.Sustained > 0 {
		fmt.Fprintf(&b, "**Highest sustained rate: %s joins/s.** What limits the next step: %s.\n\n", num(rep.Sustained), rep.Limit)
	} else {
		fmt.Fprintf(&b, "**Highest sustained rate: none of the steps was sustained**, the first already not: %s.\n\n", rep.Limit)
	}
	if rep.JoinCPUUS > 0 {
		fmt.Fprintf(&b, "Flat out (the phase below, Redis at its busiest) Redis spent **%.1f µs of CPU per join** (%.1f µs inside EVALSHA): one Redis core, used by joins alone, takes **%s joins/s**. At the highest sustained step a join cost it %.1f µs: at a low rate each join carries more of Redis's per-wake-up work.\n\n",
			rep.JoinCPUUS, rep.JoinScriptUS, num(rep.CoreCeiling), rep.StepCPUUS)
	}
	var rows [][]string
	for _, s := range rep.Steps {
		u := s.Usage
		held := "yes"
		if !s.Sustained {
			held = "**no**"
		}
		rate := num(s.Rate)
		if s.Attempt > 1 {
			rate += fmt.Sprintf(" (again, %d)", s.Attempt)
		}
		rows = append(rows, []string{rate, num(s.Achieved), secs(s.P50), secs(s.P99), secs(s.FromSend), strconv.Itoa(s.Errors), held,
			num(u.RedisCores), num(u.RedisCPUPerOpUS), num(u.EvalshaUSPerCall), num(u.EvalshaPerOp), num(u.CommandsPerOp),
			num(u.ServerCores), fmt.Sprintf("%s (busiest %s)", num(u.GeneratorCores), num(u.GeneratorMaxProc)), secs(s.SendLag), num(u.OtherCores)})
	}
	b.WriteString(mdTable([]string{"offered joins/s", "achieved joins/s", "join p50", "join p99", "p99 from send", "errors", "sustained",
		"Redis CPU (cores)", "Redis CPU µs / join", "EVALSHA µs / call", "EVALSHA calls / join", "Redis commands / join",
		"instances' CPU (cores)", "generators' CPU (cores)", "send lag p99", "other processes' CPU (cores)"}, rows))
	bg := rep.Background
	fmt.Fprintf(&b, "\nThe per-join figures are net of Redis's background with nobody joining (the instances' ticks of the paused room and their own records), measured before the steps: %.3f cores, %.1f EVALSHA calls/s (%s µs/s), %.1f commands/s.\n",
		bg.RedisCores, bg.EvalshaCalls, num(bg.EvalshaUsec), bg.Commands)
	b.WriteString("\n## What a status and an admission cost\n\n")
	rows = nil
	for _, p := range rep.Phases {
		u := p.Usage
		perRedis := "–"
		if p.PerRedisOpUS > 0 {
			perRedis = num(p.PerRedisOpUS)
		}
		rows = append(rows, []string{p.Name, p.Comment, num(float64(p.Ops)), num(p.PerSec), pct(p.Cached), num(u.RedisCores),
			num(u.RedisCPUPerOpUS), perRedis, num(u.EvalshaPerOp), num(u.EvalshaUSPerCall), num(u.EvalshaUSPerOp),
			num(u.ServerCores), num(u.GeneratorCores), num(u.OtherCores)})
	}
	b.WriteString(mdTable([]string{"phase", "what", "ops", "ops/s", "answered from memory", "Redis CPU (cores)",
		"Redis CPU µs / op", "the same, per op Redis answered", "EVALSHA calls / op", "EVALSHA µs / call", "EVALSHA µs / op",
		"instances' CPU (cores)", "bench's CPU (cores)", "other processes' CPU (cores)"}, rows))
	b.WriteString(`
- **Redis CPU**: user + system time of the redis-server process (/proc/PID/stat) over the step, from the first arrival to the last answer; per join: less the background, over the joins answered. It includes what Redis spends reading and writing the sockets, which the EVALSHA figures (INFO commandstats, usec over calls in the step) leave out.
- **EVALSHA µs / call**: over every call in the step, background ones too; **calls / join**: net of the background. **Redis commands / join**: every command Redis counted in the step, net of the background, over the joins; INFO commandstats counts each command a script runs as well as the EVALSHA itself.
- **join p50 / p99** count from when each join was due; **p99 from send** from when it left the generator (the worst process's p99): a gap between the two is time the generator was late.
- **send lag**: how late the generators sent an arrival after it was due (p99, the worst process). Over 10 ms, or a generator process near one core, means the generator is the limit and the step says so.
- **other processes**: the machine's busy time (/proc/stat) less Redis, the instances and the generators: what else ran on the machine.
- **joins flat out**: as many joins as 64 clients waiting for their answers get through, latency aside: the most this machine gave one room, and what a join costs Redis when it is busiest (Redis handles more commands per wake-up, so less per join than at a low rate).
- **status**: the room is paused, so positions do not move and an instance may answer from its memory; the figures per status are over all polls, answered from memory or not, and once more per poll Redis answered. **admission**: per visitor admitted (waitroom_admissions_total over the instances), with the ticks' own calls.
`)
	return b.String()
}

func pct(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", v*100)
}

func ceilingSVG(rep *ceilingReport) string {
	mk := func(title, unit string, f func(ceilingStep) float64) panel {
		p := panel{Title: title, Unit: unit}
		for _, s := range rep.Steps {
			label := num(s.Rate) + "/s offered"
			if s.Attempt > 1 {
				label = num(s.Rate) + "/s again"
			}
			p.Bars = append(p.Bars, bar{Label: label, Value: f(s)})
		}
		return p
	}
	panels := []panel{
		mk("Achieved joins/s", "/s", func(s ceilingStep) float64 { return s.Achieved }),
		mk("Join p99", "ms", func(s ceilingStep) float64 { return s.P99 * 1000 }),
		mk("Redis CPU", "cores", func(s ceilingStep) float64 { return s.Usage.RedisCores }),
		mk("Redis CPU per join", "µs", func(s ceilingStep) float64 { return s.Usage.RedisCPUPerOpUS }),
		mk("Instances' CPU", "cores", func(s ceilingStep) float64 { return s.Usage.ServerCores }),
		mk("Generators' CPU", "cores", func(s ceilingStep) float64 { return s.Usage.GeneratorCores }),
	}
	return barChartSVG("One room's join ceiling: open-loop joins over 3 instances on one Redis", "one bar per rate step", panels)
}
