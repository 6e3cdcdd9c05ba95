package main

import (
	"strings"
	"testing"
	"time"
)

func TestBusyQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runBusy(testContext(t, 2*time.Minute), busyOptions{Out: dir, Quick: true, Samples: 100, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile busyReport
	md := checkOutputs(t, dir, "busy", &fromFile)
	if fromFile.Passed != rep.Passed || rep.Passed != 100 {
		t.Errorf("busy.json holds %d visitors let in, the run %d, want 100", fromFile.Passed, rep.Passed)
	}
	positive(t, "p99 let in", rep.PassP99Ms)
	positive(t, "p99 bypassed", rep.BypassP99Ms)
	// Speed is not asserted here (a busy machine); each visitor let in
	// is one script call.
	if n := rep.RedisCalls["evalsha"]; n < 1 || n > 1.5 {
		t.Errorf("%.3f EVALSHA per visitor let in, want 1", n)
	}
	if !strings.Contains(md, "| p99 added by letting in |") {
		t.Errorf("busy.md:\n%s", md)
	}
}
