package main

import (
	"strings"
	"testing"
	"time"
)

func TestGatewayQuick(t *testing.T) {
	needTools(t, "go", "redis-server")
	dir := t.TempDir()
	rep, err := runGateway(testContext(t, 2*time.Minute), gatewayOptions{Out: dir, Quick: true, Progress: testWriter{t}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var fromFile gatewayReport
	md := checkOutputs(t, dir, "gateway", &fromFile)
	if fromFile.Checks != rep.Checks {
		t.Errorf("gateway.json holds %d checks, the run made %d", fromFile.Checks, rep.Checks)
	}
	if rep.Errors != 0 {
		t.Errorf("%d failed requests, first: %s", rep.Errors, rep.FirstErr)
	}
	positive(t, "check/s", rep.CheckPerSec)
	positive(t, "healthz/s", rep.HealthzPerSec)
	positive(t, "direct p50", rep.DirectP50Ms)
	positive(t, "proxy p50", rep.ProxyP50Ms)
	// Speed is not asserted here (a busy machine), but a check that went
	// to Redis every time would show as about one command per request.
	if rep.RedisPerCheck > 0.5 {
		t.Errorf("%.3f Redis commands per checked request", rep.RedisPerCheck)
	}
	for _, want := range []string{"| check / healthz |", "| Redis commands per checked request |"} {
		if !strings.Contains(md, want) {
			t.Errorf("gateway.md has no row %q", want)
		}
	}
}
