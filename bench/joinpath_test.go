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
	if len(fromFile.Rounds) != 1 || fromFile.Rounds[0].Joins != rep.Joins {
		t.Errorf("joinpath.json holds rounds %+v, want the one round of %d joins", fromFile.Rounds, rep.Joins)
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
	positive(t, "load generator CPU", rep.LoadCores)
	for _, want := range []string{"| join / ZADD |", "| server CPU during joins |"} {
		if !strings.Contains(md, want) {
			t.Errorf("joinpath.md has no row %q", want)
		}
	}
}

func TestMedianRound(t *testing.T) {
	rounds := []JoinpathRound{{Ratio: 0.5, Joins: 1}, {Ratio: 0.3, Joins: 2}, {Ratio: 0.4, Joins: 3}, {Ratio: 0.6, Joins: 4}}
	if got := medianRound(rounds[:3]); got.Joins != 3 {
		t.Errorf("median of 0.5, 0.3, 0.4 is the round of ratio %.1f, want 0.4", got.Ratio)
	}
	if got := medianRound(rounds); got.Joins != 3 {
		t.Errorf("median of four is the round of ratio %.1f, want the lower middle, 0.4", got.Ratio)
	}
	if got := medianRound(rounds[:1]); got.Joins != 1 {
		t.Errorf("median of one round is not that round: %+v", got)
	}
	if rounds[0].Joins != 1 || rounds[1].Joins != 2 {
		t.Error("medianRound reordered its argument")
	}
}

func TestParseWrk(t *testing.T) {
	out := `Running 2s test @ http://127.0.0.1:8080/api/v1/rooms/joinpath/join
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.31ms  512.10us  11.02ms   80.12%
    Req/Sec    27.80k     1.20k   29.10k    75.00%
  55321 requests in 2.00s, 30.12MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:  27655.43
Transfer/sec:     15.06MB
`
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.requests != 55321 || r.perSec != 27655.43 || r.errors != 7 {
		t.Fatalf("parsed %+v", r)
	}
	if _, err := parseWrk("wrk: connection refused\n"); err == nil {
		t.Fatal("no summary parsed as one")
	}
}

func TestJoinpathQuickWrk(t *testing.T) {
	needTools(t, "go", "redis-server", "redis-benchmark", "wrk")
	dir := t.TempDir()
	rep, err := runJoinpath(testContext(t, 2*time.Minute), joinpathOptions{Out: dir, Quick: true, ZaddOps: 20000, Load: "wrk", RedisJoins: "load", Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile joinpathReport
	md := checkOutputs(t, dir, "joinpath", &fromFile)
	if fromFile.RedisJoins != "load" {
		t.Errorf("joinpath.json says Redis ran %q during joins, want load", fromFile.RedisJoins)
	}
	if rep.Pinned && !strings.Contains(md, "on the load generator's core") {
		t.Errorf("joinpath.md does not say where Redis ran during joins:\n%s", md)
	}
	if rep.Errors != 0 {
		t.Errorf("%d failed joins", rep.Errors)
	}
	positive(t, "joins/s", rep.JoinsPerSec)
	positive(t, "wrk CPU", rep.LoadCores)
	positive(t, "server CPU", rep.ServerCores)
}

func TestJoinpathRoundsRefused(t *testing.T) {
	needTools(t, "redis-benchmark")
	_, err := runJoinpath(testContext(t, time.Minute), joinpathOptions{Out: t.TempDir(), Rounds: -1}, "test")
	if err == nil || !strings.Contains(err.Error(), "-rounds") {
		t.Fatalf("-rounds -1: %v, want a refusal naming -rounds", err)
	}
}

func TestJoinpathRedisJoinsRefused(t *testing.T) {
	needTools(t, "redis-benchmark")
	_, err := runJoinpath(testContext(t, time.Minute), joinpathOptions{Out: t.TempDir(), RedisJoins: "core2"}, "test")
	if err == nil || !strings.Contains(err.Error(), "-redis-joins") {
		t.Fatalf("-redis-joins core2: %v, want a refusal naming -redis-joins", err)
	}
}
