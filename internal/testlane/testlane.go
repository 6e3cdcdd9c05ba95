// Package testlane is the switch between waitroom's two test lanes.
//
// Plain `go test ./...` is the fast lane: every test that runs in the test
// process alone (the embedded Redis included), and nothing else. A test
// that needs a real process (redis-server, Sentinel, a Cluster, nginx,
// Caddy, Traefik, a browser, Python, a built server binary, a bench
// scenario) calls Need or Tool first; in the fast lane that skips it with
// one line that names the switch.
//
// Built with -tags integration, as make test and CI build every test,
// those tests run, and a tool that is missing fails them (never skips
// them) with how to install it.
package testlane

import (
	"os/exec"
	"testing"
)

// Tag is the build tag that turns the integration tests on.
const Tag = "integration"

// Need marks the calling test as an integration test that needs what it
// names: in the fast lane the test is skipped here.
func Need(tb testing.TB, what string) {
	tb.Helper()
	if !Integration {
		tb.Skipf("integration test (needs %s): run with -tags %s, as make test does", what, Tag)
	}
}

// Tool is Need for a program, then its path. In the integration lane a
// program that is not on PATH fails the test with install, the way to get
// it (for example "apt-get install -y redis-server" or "make deps").
func Tool(tb testing.TB, name, install string) string {
	tb.Helper()
	Need(tb, name)
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("%s is not on PATH (install it: %s): %v", name, install, err)
	}
	return path
}
