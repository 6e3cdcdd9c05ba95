package main

import (
	"fmt"
	"math"
	"runtime"
	"strings"
)

// The autopilot scenario's report: the targets of issue 44 checked
// against the runs, a Markdown page and a chart over time.

// Wide margins, as the report states them: the autopilot's error share
// at most a fifth of the run at twice the optimum, and its visitors' wait
// at most two thirds of the run at half of it (the most a herd that keeps
// the room full can gain there is a half: the wait is the queue over the
// rate).
const (
	apErrorMargin = 5.0
	apWaitMargin  = 2.0 / 3
)

func apFind(rep *autopilotReport, kind string) *apRun {
	for i := range rep.Runs {
		if rep.Runs[i].Kind == kind {
			return &rep.Runs[i]
		}
	}
	return nil
}

func autopilotChecks(rep *autopilotReport) []scaleCheck {
	ap := apFind(rep, "autopilot")
	if ap == nil {
		return nil
	}
	pct := func(v float64) string {
		if math.IsNaN(v) {
			return "n/a"
		}
		return fmt.Sprintf("%.2f%%", v*100)
	}
	opt90 := 0.9 * rep.Optimum
	cs := []scaleCheck{
		{What: "autopilot reaches 90% of the optimum (orders/s over 3 s)", Target: fmt.Sprintf("≥ %s/s within 30 s", num(opt90)),
			Measured: secsOrNever(ap.ReachSeconds), Met: ap.ReachSeconds <= 30},
		{What: "and holds it until the halving (3-s spans at or over 90%)", Target: "≥ 95% of them",
			Measured: pct(ap.HoldShare), Met: ap.HoldShare >= 0.95},
		{What: "origin p95 from then to the halving", Target: fmt.Sprintf("≤ %s ms", num(rep.LatencyTargetMs)),
			Measured: num(ap.P95AfterReachMs) + " ms", Met: ap.P95AfterReachMs <= rep.LatencyTargetMs},
		{What: "errors (503 and 5xx) before the halving", Target: "≤ 1% of orders",
			Measured: pct(ap.Before.ErrorShare), Met: ap.Before.ErrorShare <= 0.01},
		{What: "after the pool halves, origin p95 back under target", Target: "within 10 s",
			Measured: secsOrNever(ap.RecoverSeconds) + fmt.Sprintf(" (%d errors, %d orders until then)", ap.ErrorsUntilRecover, ap.OrdersUntilRecover),
			Met:      ap.RecoverSeconds <= 10},
	}
	if hi := apFind(rep, "high"); hi != nil {
		cs = append(cs, scaleCheck{What: "beats twice too high on errors (before the halving)",
			Target:   fmt.Sprintf("≤ 1/%.0f of its share", apErrorMargin),
			Measured: pct(ap.Before.ErrorShare) + " against " + pct(hi.Before.ErrorShare),
			Met:      ap.Before.ErrorShare*apErrorMargin <= hi.Before.ErrorShare && hi.Before.ErrorShare > 0})
	}
	if lo := apFind(rep, "low"); lo != nil {
		cs = append(cs, scaleCheck{What: "beats twice too low on waits (p50 before the halving)",
			Target:   fmt.Sprintf("≤ %.0f%% of its wait", apWaitMargin*100),
			Measured: secs(ap.Before.WaitP50) + " against " + secs(lo.Before.WaitP50),
			Met:      ap.Before.WaitP50 <= apWaitMargin*lo.Before.WaitP50})
	}
	return cs
}

func secsOrNever(v float64) string {
	if math.IsNaN(v) {
		return "never"
	}
	return fmt.Sprintf("%.0f s", v)
}

func autopilotMarkdown(rep *autopilotReport) string {
	var b strings.Builder
	b.WriteString("# Autopilot: admission sized from the origin's measured health\n\n")
	fmt.Fprintf(&b, "The same herd four times through the built-in proxy (`-upstream`, route `*/shop/*` → room `shop`, fixed strategy, tick %s ms), in front of an origin the bench runs as its own process: a pool of %d slots, each order holding one for %s ms, an order that waits over %s ms for a slot answered 503. waitroom is not told the origin's capacity. %d visitors are in the room at every moment: each calls the shop, gets 429 and a place, learns its admission by %s, places one order at its notBefore, and is replaced by a new visitor. After %s s of each run the origin's pool halves (%d → %d) on its control listener.\n\n",
		num(rep.TickMs), rep.Pool, num(rep.ServiceMs), num(rep.WaitBoundMs), rep.Visitors, rep.Transport, num(rep.Runs[0].HalvingAt), rep.Pool, rep.PoolAfter)
	fmt.Fprintf(&b, "**The optimum** is the issue's figure: the pool over the service time at the usual 0.7 safety, %d / %s ms · %.1f = %s orders/s (%s/s once the pool halves). The origin can serve at most %s orders/s (%s after): above that orders queue for a slot until they wait out the bound. The autopilot runs with latencyTarget %s ms, maxErrorRate %s, minRate %s, maxRate %s, and starts at minRate.\n\n",
		rep.Pool, num(rep.ServiceMs), rep.Safety, num(rep.Optimum), num(rep.OptimumAfter), num(rep.Capacity), num(rep.Capacity/2),
		num(rep.LatencyTargetMs), num(rep.MaxErrorRate), num(rep.MinRate), num(rep.MaxRate))
	fmt.Fprintf(&b, "Command: `%s`\n\nMachine: %s. The bench, its origin, the server and redis-server share it.\n\n", rep.Command, rep.Machine)

	phaseRows := func(after bool) [][]string {
		var rows [][]string
		for _, r := range rep.Runs {
			p := r.Before
			if after {
				p = r.After
			}
			rate := num(r.StaticRate) + "/s"
			if r.Kind == "autopilot" {
				rate = fmt.Sprintf("%s → %s/s", num(r.RateMin), num(r.RateMax))
				if after {
					rate = fmt.Sprintf("%s → %s/s", num(r.RateAtHalving), num(r.RateAtEnd))
				}
			}
			rows = append(rows, []string{r.Name, rate, num(p.AdmittedPerSecond), num(p.OrdersPerSecond),
				fmt.Sprintf("%.0f%%", p.OfOptimum*100), num(p.OriginP50Ms) + " / " + num(p.OriginP95Ms),
				fmt.Sprint(p.Pool503), fmt.Sprint(p.Other5xx), pctOrNA(p.ErrorShare), secs(p.WaitP50) + " / " + secs(p.WaitP95)})
		}
		return rows
	}
	header := []string{"run", "rate set", "admitted/s", "orders/s", "of optimum", "origin p50 / p95 ms", "503", "other 5xx", "errors", "wait p50 / p95"}
	fmt.Fprintf(&b, "## Before the halving (pool %d, optimum %s/s)\n\n", rep.Pool, num(rep.Optimum))
	b.WriteString(mdTable(header, phaseRows(false)))
	fmt.Fprintf(&b, "\n## After the halving (pool %d, optimum %s/s)\n\n", rep.PoolAfter, num(rep.OptimumAfter))
	b.WriteString(mdTable(header, phaseRows(true)))
	b.WriteString("\nCPU over each run, in cores of the machine's " + fmt.Sprint(runtime.NumCPU()) + ": ")
	for i, r := range rep.Runs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s for the bench, its origin, the server and Redis, %s for other processes", r.Name, num(r.OwnCores), num(r.OtherCores))
	}
	b.WriteString(".\n")
	b.WriteString("\nOrders/s counts the origin's 201s; errors are its 503s and any other 5xx a visitor got on an order, as a share of the orders answered. The origin's latency is every order it answered, from arrival to answer, 503s included. A visitor's wait is from its first call to its notBefore; one still waiting at the end counts with the wait it had so far.\n")

	if ap := apFind(rep, "autopilot"); ap != nil {
		b.WriteString("\n## The autopilot against the issue's targets\n\n")
		b.WriteString(checksTable(rep.Checks))
		fmt.Fprintf(&b, "\nIts rate went from %s to %s/s (%s at the halving, %s at the end); %d changes were read from the room's stats, one reading a second. After the halving the origin's p95 was over the target in %d seconds. Changes as the stats gave them (the first ten, then those after the halving):\n\n",
			num(ap.RateMin), num(ap.RateMax), num(ap.RateAtHalving), num(ap.RateAtEnd), len(ap.Changes), ap.SecondsOverAfter)
		shown := 0
		for i, c := range ap.Changes {
			if i < 10 || (c.T >= ap.HalvingAt && shown < 25) {
				fmt.Fprintf(&b, "- %.0f s: %s\n", c.T, c.Reason)
				shown++
			}
		}
		if len(ap.Changes) == 0 {
			b.WriteString("- none\n")
		}
	} else {
		b.WriteString("\nNo autopilot run in this report.\n")
	}
	b.WriteString("\n![rate, orders, latency and errors over time](autopilot.svg)\n")
	return b.String()
}

func pctOrNA(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", v*100)
}

func autopilotSVG(rep *autopilotReport) string {
	var rate, orders, p95, errs []series
	for _, r := range rep.Runs {
		var rs, ords, ps, es []point
		for _, s := range r.PerSecond {
			rs = append(rs, point{s.T, s.Rate})
			ords = append(ords, point{s.T, float64(s.Orders)})
			ps = append(ps, point{s.T, s.P95Ms})
			es = append(es, point{s.T, float64(s.Errors)})
		}
		rate = append(rate, series{Label: r.Name, Points: rs})
		orders = append(orders, series{Label: r.Name, Points: ords})
		p95 = append(p95, series{Label: r.Name, Points: ps})
		errs = append(errs, series{Label: r.Name, Points: es})
	}
	var marks []marker
	var optimum, target []point
	if len(rep.Runs) > 0 {
		r := rep.Runs[0]
		h := r.HalvingAt
		marks = append(marks, marker{X: h, Label: fmt.Sprintf("pool %d → %d", rep.Pool, rep.PoolAfter)})
		optimum = []point{{0, rep.Optimum}, {h, rep.Optimum}, {h, math.NaN()}, {h, rep.OptimumAfter}, {r.Seconds, rep.OptimumAfter}}
		target = []point{{0, rep.LatencyTargetMs}, {r.Seconds, rep.LatencyTargetMs}}
	}
	if ap := apFind(rep, "autopilot"); ap != nil && !math.IsNaN(ap.ReachSeconds) {
		marks = append(marks, marker{X: ap.ReachSeconds, Label: "autopilot at 90%"})
	}
	orders = append(orders, series{Label: "optimum", Points: optimum})
	p95 = append(p95, series{Label: "latency target", Points: target})
	return lineChartSVG("Autopilot against static rates", fmt.Sprintf("%d visitors in the room; origin pool %d → %d, %s ms per order", rep.Visitors, rep.Pool, rep.PoolAfter, num(rep.ServiceMs)), []linePanel{
		{Title: "Admission rate set", Unit: "/s", Series: rate},
		{Title: "Orders answered 201", Unit: "/s", Series: orders},
		{Title: "Origin p95 latency", Unit: "ms", Series: p95},
		{Title: "Errors (503 and 5xx)", Unit: "/s", Series: errs},
	}, marks)
}
