package main

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestCeilingQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runCeiling(testContext(t, 2*time.Minute), ceilingOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile ceilingReport
	md := checkOutputs(t, dir, "ceiling", &fromFile)
	if len(fromFile.Steps) != len(rep.Steps) || len(rep.Steps) == 0 {
		t.Fatalf("%d steps, %d in the file", len(rep.Steps), len(fromFile.Steps))
	}
	if !strings.Contains(md, "Highest sustained rate") {
		t.Errorf("ceiling.md states no ceiling:\n%s", md)
	}
	for _, s := range rep.Steps {
		if s.OK+s.Errors != s.Joins {
			t.Errorf("%.0f/s: %d answered and %d errors of %d joins", s.Rate, s.OK, s.Errors, s.Joins)
		}
		positive(t, "achieved joins/s", s.Achieved)
		if !(s.P50 <= s.P99) {
			t.Errorf("%.0f/s: p50 %v over p99 %v", s.Rate, s.P50, s.P99)
		}
		positive(t, "Redis CPU per join", s.Usage.RedisCPUPerOpUS)
		positive(t, "instances' CPU", s.Usage.ServerCores)
		positive(t, "generator CPU", s.Usage.GeneratorCores)
		// A join is one script call; what the background leaves after
		// its subtraction is noise of a few calls a second.
		if c := s.Usage.EvalshaPerOp; c < 0.8 || c > 1.3 {
			t.Errorf("%.0f/s: %.2f EVALSHA calls per join, want about 1", s.Rate, c)
		}
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("%d phases, want joins flat out, status and admission", len(rep.Phases))
	}
	for _, p := range rep.Phases {
		if p.Ops <= 0 || p.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors", p.Name, p.Ops, p.Errors)
		}
		positive(t, p.Name+" EVALSHA µs per op", p.Usage.EvalshaUSPerOp)
	}
}

func TestCeilingTally(t *testing.T) {
	sec := int64(time.Second)
	reps := []ceilingGenReport{
		{OK: 3, LatencyUS: []int64{1000, 2000, 3000}, StartNano: 10 * sec, EndNano: 11 * sec, LagP99Ms: 2},
		{OK: 1, Failed: 1, Dropped: 2, FirstError: "http 503", LatencyUS: []int64{200000}, StartNano: 10 * sec, EndNano: 12 * sec, LagP99Ms: 5},
	}
	var s ceilingStep
	ceilingTally(&s, reps)
	if s.OK != 4 || s.Errors != 3 || s.Dropped != 2 || s.FirstErr != "http 503" {
		t.Errorf("ok %d errors %d dropped %d first %q", s.OK, s.Errors, s.Dropped, s.FirstErr)
	}
	if s.Achieved != 2 { // 4 answered over the 2 s from the first start to the last answer
		t.Errorf("achieved %v/s, want 2", s.Achieved)
	}
	if s.P50 != 0.002 || s.P99 != 0.2 {
		t.Errorf("p50 %v p99 %v, want 0.002 and 0.2", s.P50, s.P99)
	}
	if math.Abs(s.SendLag-0.005) > 1e-12 {
		t.Errorf("send lag %v, want the worst process's 0.005", s.SendLag)
	}
}

func TestCeilingLimit(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	for _, c := range []struct {
		name string
		u    ceilingUsage
		lag  float64
		want string
	}{
		{"redis", ceilingUsage{RedisCores: 0.97, ServerCores: 0.5}, 0, "Redis's one core is saturated"},
		{"generator", ceilingUsage{RedisCores: 0.3, GeneratorMaxProc: 0.95, GeneratorCores: 0.95}, 0, "the generator"},
		{"instances", ceilingUsage{RedisCores: 0.5, ServerCores: cpus, OtherCores: 0.2}, 0.02, "most of them the instances' CPU"},
		{"shared", ceilingUsage{RedisCores: 0.2, ServerCores: 0.3, OtherCores: cpus}, 0.02, "most of them other processes' CPU"},
		{"generators", ceilingUsage{RedisCores: 0.2, ServerCores: 0.3, GeneratorCores: cpus, GeneratorMaxProc: 0.5}, 0, "most of them the generators' CPU"},
		{"late", ceilingUsage{RedisCores: 0.1}, 0.05, "sends late"},
		{"none", ceilingUsage{RedisCores: 0.1}, 0, "no core saturated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := limitOf(ceilingStep{Rate: 1000, Achieved: 900, P99: 0.3, SendLag: c.lag, Usage: c.u})
			if !strings.Contains(got, c.want) {
				t.Errorf("limit %q, want it to say %q", got, c.want)
			}
		})
	}
}
