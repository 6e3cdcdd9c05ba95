//go:build integration

package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestAutopilotQuick runs the four runs short (a 20-slot origin, 12 s
// before the halving and 8 s after) and checks what must hold whatever
// the machine's speed: the outputs, the sums, and that each static rate
// does to the origin what its rate says. The autopilot run needs a server
// with the controller; without it the scenario refuses with
// errNoAutopilot, and this test fails saying so.
func TestAutopilotQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runAutopilot(testContext(t, 4*time.Minute), autopilotOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if errors.Is(err, errNoAutopilot) {
		t.Fatalf("the autopilot run needs the controller of issue 44 in the server: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var fromFile autopilotReport
	md := checkOutputs(t, dir, "autopilot", &fromFile)
	if len(fromFile.Runs) != 4 || len(rep.Runs) != 4 {
		t.Fatalf("autopilot.json holds %d runs, the report %d, want 4", len(fromFile.Runs), len(rep.Runs))
	}
	for _, want := range []string{"## Before the halving", "## After the halving", "| autopilot reaches 90% of the optimum"} {
		if !strings.Contains(md, want) {
			t.Errorf("autopilot.md lacks %q:\n%s", want, md)
		}
	}
	runs := map[string]apRun{}
	for i, r := range rep.Runs {
		runs[r.Kind] = r
		if f := fromFile.Runs[i]; f.Kind != r.Kind || f.Before.Orders != r.Before.Orders || f.OriginSamples != r.OriginSamples {
			t.Errorf("run %d in autopilot.json (%s, %d orders) differs from the run (%s, %d orders)", i, f.Kind, f.Before.Orders, r.Kind, r.Before.Orders)
		}
		// Every order the origin answered is one a visitor was answered
		// (a visitor cut off by the run's end may miss its answer).
		if r.VisitorOrdersOK > r.OriginOKTotal || r.OriginOKTotal-r.VisitorOrdersOK > rep.Visitors {
			t.Errorf("%s: visitors saw %d orders created, the origin %d", r.Name, r.VisitorOrdersOK, r.OriginOKTotal)
		}
		if r.VisitorErrors > 0 {
			t.Errorf("%s: %d visitors failed, the first: %s", r.Name, r.VisitorErrors, r.FirstVisitorError)
		}
		if r.After.Other5xx > 0 || r.Before.Other5xx > 0 {
			t.Errorf("%s: %d 5xx other than the origin's 503", r.Name, r.Before.Other5xx+r.After.Other5xx)
		}
		positive(t, r.Name+" orders/s before the halving", r.Before.OrdersPerSecond)
		positive(t, r.Name+" origin p95", r.Before.OriginP95Ms)
		if len(r.PerSecond) < int(r.HalvingAt) {
			t.Errorf("%s: %d readings over %.0f s", r.Name, len(r.PerSecond), r.Seconds)
		}
	}
	right, high, low, ap := runs["right"], runs["high"], runs["low"], runs["autopilot"]
	// Twice the optimum is 1.4 times what the origin can serve: orders
	// wait out the bound and are refused. At the optimum they are not
	// (30% headroom), nor at half of it.
	if high.Before.Pool503 == 0 || high.Before.OriginP95Ms <= right.Before.OriginP95Ms {
		t.Errorf("twice too high: %d 503s and p95 %.0f ms, against %.0f ms at the optimum", high.Before.Pool503, high.Before.OriginP95Ms, right.Before.OriginP95Ms)
	}
	if low.Before.Pool503 > 0 || low.Before.ErrorShare > high.Before.ErrorShare {
		t.Errorf("twice too low: %d 503s", low.Before.Pool503)
	}
	// The wait is the queue over the rate: half the rate, a longer wait.
	if low.Before.WaitP50 <= right.Before.WaitP50 {
		t.Errorf("wait p50 at half the optimum %.2f s, at the optimum %.2f s", low.Before.WaitP50, right.Before.WaitP50)
	}
	if !(low.Before.OrdersPerSecond < right.Before.OrdersPerSecond) {
		t.Errorf("orders/s at half the optimum %.1f, at the optimum %.1f", low.Before.OrdersPerSecond, right.Before.OrdersPerSecond)
	}
	// The halved pool serves at most 50/s: the optimum's 70/s is then
	// too much for it, and orders are refused.
	if right.After.Pool503 == 0 {
		t.Errorf("at the optimum, after the pool halved: no 503")
	}
	// The autopilot moved its rate, within [minRate, maxRate], and its
	// changes were read with their reasons.
	if math.IsNaN(ap.RateMin) || ap.RateMin < rep.MinRate || ap.RateMax > rep.MaxRate || !(ap.RateMax > ap.RateMin) {
		t.Errorf("autopilot rate from %v to %v, want a change within [%v, %v]", ap.RateMin, ap.RateMax, rep.MinRate, rep.MaxRate)
	}
	if len(ap.Changes) == 0 {
		t.Errorf("no change of the autopilot read from the stats")
	}
	if ap.Before.ErrorShare >= high.Before.ErrorShare {
		t.Errorf("autopilot errors %.3f, twice too high %.3f", ap.Before.ErrorShare, high.Before.ErrorShare)
	}
	if len(rep.Checks) < 7 {
		t.Errorf("%d checks against the issue's targets, want 7", len(rep.Checks))
	}
}
