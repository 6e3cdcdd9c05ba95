package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testlane"
)

// TestMain checks what every scenario needs and removes the server binary
// the scenarios build. The test binary started with a worker's name runs
// that worker, as the bench's own binary would (the autopilot scenario's
// origin is always a child process).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if _, ok := workers[os.Args[1]]; ok {
			if err := run(context.Background(), os.Args[1], os.Args[2:], os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, "bench:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	code := m.Run()
	removeServerBinary()
	os.Exit(code)
}

// needTools marks a scenario's test as an integration test: skipped in
// the fast lane; with -tags integration it fails (never skips) when the
// scenarios cannot run here.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		testlane.Tool(t, tool, "the bench builds the server with go and starts a real redis-server: make deps")
	}
}

// checkOutputs reads name.{md,json,svg} from dir and decodes the JSON into v.
func checkOutputs(t *testing.T, dir, name string, v any) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(dir, name+".md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "\n|---|") {
		t.Errorf("%s.md has no table:\n%s", name, md)
	}
	js, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, v); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(svg), "<svg ") || !strings.HasSuffix(strings.TrimSpace(string(svg)), "</svg>") {
		t.Errorf("%s.svg is not an SVG document", name)
	}
	return string(md)
}

func positive(t *testing.T, what string, v float64) {
	t.Helper()
	if !(v > 0) || math.IsInf(v, 0) {
		t.Errorf("%s = %v, want a positive number", what, v)
	}
}

func testContext(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return ctx
}

func TestCostQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runCost(testContext(t, 2*time.Minute), costOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile costReport
	checkOutputs(t, dir, "cost", &fromFile)
	if len(rep.Results) != 4 || len(fromFile.Results) != 4 {
		t.Fatalf("got %d modes (%d in the file), want 4", len(rep.Results), len(fromFile.Results))
	}
	for _, r := range rep.Results {
		t.Run(r.Mode, func(t *testing.T) {
			if r.Errors != 0 {
				t.Errorf("%d client errors, first: %s", r.Errors, r.FirstErr)
			}
			if r.Due == 0 || r.Told != r.Due {
				t.Errorf("told %d of %d visitors admitted in the window, want every one (and some)", r.Told, r.Due)
			}
			positive(t, "server CPU", r.CPUCores)
			positive(t, "RSS", r.RSSMiB)
			positive(t, "Redis commands/s", r.RedisCmdsPerSec)
			positive(t, "wire bytes/s", r.BytesPerSec)
			if r.StaleSamples == 0 {
				t.Error("no staleness samples")
			}
			if math.IsNaN(r.LagP99) || r.LagP99 < 0 || r.LagP99 > 10 {
				t.Errorf("lag p99 = %v s, want within [0, 10]", r.LagP99)
			}
			switch r.Mode {
			case modeWS, modeSSE:
				if r.Conns <= 0 {
					t.Errorf("server held %v push connections", r.Conns)
				}
				positive(t, "RSS per connection", r.RSSPerConnKiB)
				if r.Early != 0 {
					t.Errorf("%d admitted states pushed before notBefore", r.Early)
				}
			default:
				positive(t, "HTTP requests/s", r.RequestsPerSec)
				positive(t, "polls/s", r.PollsPerSec)
			}
		})
	}
}

func TestHerdQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runHerd(testContext(t, time.Minute), herdOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile herdReport
	checkOutputs(t, dir, "herd", &fromFile)
	if len(rep.Results) != 3 {
		t.Fatalf("got %d runs, want 3", len(rep.Results))
	}
	jitterOff := 0
	for _, r := range rep.Results {
		if r.Admitted != r.Visitors {
			t.Errorf("%s: %d of %d visitors admitted", runName(r), r.Admitted, r.Visitors)
		}
		if r.Success != 1 {
			t.Errorf("%s: order success %.3f, want 1 (first failure: %s)", runName(r), r.Success, r.FirstFailure)
		}
		if r.PeakDBSlots < 1 || r.PeakDBSlots > 40 {
			t.Errorf("%s: peak DB slots %v, want 1..40", runName(r), r.PeakDBSlots)
		}
		positive(t, runName(r)+" order latency p95", r.OrderP95)
		positive(t, runName(r)+" request p95", r.RequestP95)
		if r.RequestP95 < r.OrderP95 {
			t.Errorf("%s: request p95 %v below order latency p95 %v", runName(r), r.RequestP95, r.OrderP95)
		}
		if !r.Jitter {
			jitterOff++
		}
	}
	if jitterOff != 1 {
		t.Errorf("%d runs without jitter, want 1", jitterOff)
	}
}

func TestClientsQuick(t *testing.T) {
	needTools(t, "go", "redis-server", "redis-benchmark")
	dir := t.TempDir()
	rep, err := runClients(testContext(t, time.Minute), clientsOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile clientsReport
	md := checkOutputs(t, dir, "clients", &fromFile)
	if len(rep.Results) != 2 {
		t.Fatalf("got %d clients, want 2", len(rep.Results))
	}
	for _, r := range rep.Results {
		positive(t, r.Client+" join/s", r.JoinOps)
		positive(t, r.Client+" status/s", r.StatusOps)
		positive(t, r.Client+" ZADD/s", r.ZaddOps)
		positive(t, r.Client+" ZRANK/s", r.ZrankOps)
		positive(t, r.Client+" join/ZADD", r.JoinPerZadd)
		if r.StatusFromRedis != 1 {
			t.Errorf("%s: %.3f of statuses answered from Redis, want all", r.Client, r.StatusFromRedis)
		}
		if !strings.Contains(md, "| "+r.Client+" |") {
			t.Errorf("clients.md has no row for %s", r.Client)
		}
	}
}

func TestScaleQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runScale(testContext(t, 4*time.Minute), scaleOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile scaleReport
	md := checkOutputs(t, dir, "scale", &fromFile)
	if fromFile.Visitors != rep.Visitors || fromFile.Told != rep.Told || len(fromFile.Phases) != 3 {
		t.Errorf("scale.json holds %d visitors, %d told, %d phases; the run had %d, %d, 3",
			fromFile.Visitors, fromFile.Told, len(fromFile.Phases), rep.Visitors, rep.Told)
	}
	for _, want := range []string{"| admission lag p99 |", "| connections dropped, paused |", "| admitting |", "| paused |"} {
		if !strings.Contains(md, want) {
			t.Errorf("scale.md has no row %q", want)
		}
	}

	// Every admitted visitor told, exactly once, and no sooner than notBefore.
	if rep.Admitted <= 0 {
		t.Fatal("nobody was admitted")
	}
	if float64(rep.Told) != rep.Admitted || rep.AdmittedRedis != int64(rep.Admitted) {
		t.Errorf("told %d visitors; instances' counters admitted %.0f, Redis %d", rep.Told, rep.Admitted, rep.AdmittedRedis)
	}
	if rep.ToldTwice != 0 {
		t.Errorf("%d visitors told they were admitted more than once", rep.ToldTwice)
	}
	if rep.Early != 0 {
		t.Errorf("%d admitted states pushed before notBefore", rep.Early)
	}
	if math.IsNaN(rep.LagP99) || rep.LagP99 < 0 || rep.LagP99 > 10 {
		t.Errorf("lag p99 = %v s, want within [0, 10]", rep.LagP99)
	}

	// Nothing dropped, by the clients' count and by the servers'.
	if rep.DroppedConnect+rep.DroppedAdmitting+rep.DroppedPaused != 0 {
		t.Errorf("dropped %d connecting, %d admitting, %d paused; first: %s", rep.DroppedConnect, rep.DroppedAdmitting, rep.DroppedPaused, rep.FirstDrop)
	}
	for _, p := range rep.Phases {
		switch p.Name {
		case "admitting", "paused":
			if p.ConnsMin != float64(rep.Visitors) || p.ConnsMax != float64(rep.Visitors) {
				t.Errorf("%s: the instances held %v–%v connections, want %d throughout", p.Name, p.ConnsMin, p.ConnsMax, rep.Visitors)
			}
		}
		if len(p.InstanceCores) != rep.Instances {
			t.Errorf("%s: CPU of %d instances, want %d", p.Name, len(p.InstanceCores), rep.Instances)
		}
		positive(t, p.Name+" instances' CPU", p.InstancesCores)
		positive(t, p.Name+" Redis commands/s", p.RedisCmdsPerSec)
		positive(t, p.Name+" client processes' CPU", p.ClientCores)
	}
	if len(rep.PerInstance) != rep.Instances || rep.Instances != 3 {
		t.Fatalf("%d instances reported, %d run; want 3", len(rep.PerInstance), rep.Instances)
	}
	told := 0
	for _, in := range rep.PerInstance {
		if in.Conns != float64(in.Visitors) {
			t.Errorf("instance %d held %v connections for its %d visitors", in.Instance, in.Conns, in.Visitors)
		}
		// A waiting connection waits in the instance's epoll set, with no
		// goroutine of its own.
		if g := in.GoroutinesPerConn; math.IsNaN(g) || g > 0.5 {
			t.Errorf("instance %d: %v goroutines per connection, want well under one", in.Instance, g)
		}
		told += in.Told
	}
	if told != rep.Told {
		t.Errorf("instances told %d, visitors %d", told, rep.Told)
	}
}

func TestPeakInWindow(t *testing.T) {
	base := time.Unix(100, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, base.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	for _, tc := range []struct {
		name string
		ts   []time.Time
		want int
	}{
		{"none", nil, 0},
		{"one", at(5), 1},
		{"spread", at(0, 10, 20, 30), 1},
		{"burst", at(0, 1, 2, 9, 10, 25), 4},
		{"unsorted", at(30, 0, 31, 35, 1), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := peakInWindow(tc.ts, 10*time.Millisecond); got != tc.want {
				t.Errorf("peakInWindow = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {.5, 3}, {.95, 5}, {1, 5}} {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if !math.IsNaN(quantile(nil, .5)) {
		t.Error("quantile of nothing is not NaN")
	}
}

// testWriter sends progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestAbandonQuick runs the abandon scenario small: it checks the runs
// happened and presence did its work, not the targets (a short queue
// leaves too little time for anyone to be seen away for 15 s).
func TestAbandonQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runAbandon(testContext(t, 4*time.Minute), abandonOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile abandonReport
	md := checkOutputs(t, dir, "abandon", &fromFile)
	if len(rep.Runs) != 4 || len(fromFile.Runs) != 4 || !strings.Contains(md, "## Targets") {
		t.Fatalf("got %d runs (%d in the file), want 4", len(rep.Runs), len(fromFile.Runs))
	}
	for _, r := range rep.Runs {
		name := r.Strategy + " presence " + onOff(r.Presence)
		if r.Errors != 0 {
			t.Errorf("%s: %d errors, first: %s", name, r.Errors, r.FirstError)
		}
		if r.Leavers < 1 || r.Leavers > 60 || r.Leavers+r.Stayers != r.Visitors {
			t.Errorf("%s: %d left and %d stayed of %d, want up to 60 leavers", name, r.Leavers, r.Stayers, r.Visitors)
		}
		positive(t, name+" orders/s", r.OrdersPerSecond)
		if len(r.Held) == 0 {
			t.Errorf("%s: no samples of slots held", name)
		}
		if r.Strategy == "fixed" && r.NotAdmitted != 0 {
			t.Errorf("%s: %d who stayed not admitted", name, r.NotAdmitted)
		}
		switch {
		case !r.Presence && r.Skipped+r.Reclaimed != 0:
			t.Errorf("%s: %d set aside and %d taken back with presence off", name, r.Skipped, r.Reclaimed)
		case r.Presence && r.Strategy == "max-active" && r.Reclaimed == 0:
			t.Errorf("%s: no token taken back from a visitor who left", name)
		case r.MadeUp > r.Reclaimed:
			t.Errorf("%s: %d admissions made up for %d tokens taken back", name, r.MadeUp, r.Reclaimed)
		}
	}
}

// TestSoakQuick runs the soak small: every fault once or more, and through
// them nobody admitted is missed or told twice, nobody hears that their
// place is gone, and Redis comes back from its AOF with the data.
func TestSoakQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	// One client process: the test binary cannot run soak-worker children.
	rep, err := runSoak(testContext(t, 4*time.Minute), soakOptions{Out: dir, Quick: true, PerProc: 600, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile soakReport
	md := checkOutputs(t, dir, "soak", &fromFile)
	if fromFile.Visits != rep.Visits || fromFile.Missed != rep.Missed || len(fromFile.Faults) != len(rep.Faults) || len(fromFile.Samples) == 0 {
		t.Errorf("soak.json holds %d visits, %d missed, %d faults, %d samples; the run had %d, %d, %d",
			fromFile.Visits, fromFile.Missed, len(fromFile.Faults), len(fromFile.Samples), rep.Visits, rep.Missed, len(rep.Faults))
	}
	for _, want := range []string{"| admitted but never told |", "| told admitted twice |", "| pubsub |", "| instance |", "| redis |"} {
		if !strings.Contains(md, want) {
			t.Errorf("soak.md has no row %q", want)
		}
	}
	if rep.Told == 0 || rep.Visits <= rep.Visitors {
		t.Fatalf("%d visits, %d told: the visitors did not cycle", rep.Visits, rep.Told)
	}
	if rep.Missed != 0 || rep.Duplicates != 0 || rep.TwoTokens != 0 {
		t.Errorf("missed %d, told twice %d, two tokens %d; missed: %v", rep.Missed, rep.Duplicates, rep.TwoTokens, rep.MissedExamples)
	}
	if rep.LostPlace != 0 {
		t.Errorf("%d visits heard not_in_queue or expired", rep.LostPlace)
	}
	if rep.TicksOverBatch != 0 {
		t.Errorf("%d ticks admitted more than one batch", rep.TicksOverBatch)
	}
	kinds := map[string]int{}
	for _, f := range rep.Faults {
		kinds[f.Kind]++
		switch f.Kind {
		case faultInstance:
			if f.Drops == 0 {
				t.Errorf("the instance restart dropped no connection: %+v", f)
			}
		case faultRedis:
			if f.KeysBefore == 0 || f.KeysAfter < f.KeysBefore/2 {
				t.Errorf("Redis had %d keys before its restart and %d after: the AOF did not keep them", f.KeysBefore, f.KeysAfter)
			}
		}
	}
	if kinds[faultPubSub] < 2 || kinds[faultInstance] != 1 || kinds[faultRedis] != 1 {
		t.Errorf("faults %v, want pub/sub kills, one instance and one Redis restart", kinds)
	}
	for _, in := range rep.PerInstance {
		positive(t, fmt.Sprintf("instance %d RSS", in.Instance), in.RSSSecond)
		positive(t, fmt.Sprintf("instance %d goroutines", in.Instance), in.GoSecond)
	}
}
