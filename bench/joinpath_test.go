package main

import (
	"strings"
	"testing"
	"time"
)

func TestJoinpathQuick(t *testing.T) {
	needTools(t, "go", "redis-server", "redis-benchmark")
	dir := t.TempDir()
	rep, err := runJoinpath(testContext(t, 2*time.Minute), joinpathOptions{Out: dir, Quick: true, ZaddOps: 20000, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile joinpathReport
	md := checkOutputs(t, dir, "joinpath", &fromFile)
	if fromFile.Joins != rep.Joins {
		t.Errorf("joinpath.json holds %d joins, the run made %d", fromFile.Joins, rep.Joins)
	}
	if rep.Errors != 0 {
		t.Errorf("%d failed joins, first: %s", rep.Errors, rep.FirstErr)
	}
	// Speed is not asserted (a busy machine); that both loads ran and the
	// processes were measured is.
	positive(t, "joins/s", rep.JoinsPerSec)
	positive(t, "ZADD/s", rep.ZaddPerSec)
	positive(t, "server CPU", rep.ServerCores)
	positive(t, "Redis CPU", rep.RedisCores)
	for _, want := range []string{"| join / ZADD |", "| server CPU during joins |"} {
		if !strings.Contains(md, want) {
			t.Errorf("joinpath.md has no row %q", want)
		}
	}
}
