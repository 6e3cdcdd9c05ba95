package testlane

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test ended instead of
// ending the real one.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

// run calls f with a recorder and returns it once f returned or ended the
// test it was given.
func run(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		f(r)
	}()
	return r
}

// TestNeed: the fast lane skips a test that needs a process, naming the
// switch; the integration lane goes on.
func TestNeed(t *testing.T) {
	r := run(t, func(tb testing.TB) { Need(tb, "redis-server") })
	if Integration {
		if r.skipped != "" || r.failed != "" {
			t.Fatalf("integration lane: skipped %q, failed %q", r.skipped, r.failed)
		}
		return
	}
	if !strings.Contains(r.skipped, "-tags integration") || !strings.Contains(r.skipped, "redis-server") {
		t.Fatalf("fast lane: skipped with %q, want the switch and what the test needs", r.skipped)
	}
}

// TestToolMissing: a program that is not on PATH fails an integration
// test (never skips it) with how to install it.
func TestToolMissing(t *testing.T) {
	r := run(t, func(tb testing.TB) { Tool(tb, "no-such-program-here", "apt-get install -y it") })
	if !Integration {
		if r.skipped == "" || r.failed != "" {
			t.Fatalf("fast lane: skipped %q, failed %q", r.skipped, r.failed)
		}
		return
	}
	if r.skipped != "" || !strings.Contains(r.failed, "apt-get install -y it") {
		t.Fatalf("integration lane: skipped %q, failed %q, want a failure saying how to install", r.skipped, r.failed)
	}
}

// TestToolFound: a program on PATH is found in the integration lane.
func TestToolFound(t *testing.T) {
	var path string
	r := run(t, func(tb testing.TB) { path = Tool(tb, "go", "a Go toolchain") })
	if Integration && (path == "" || r.failed != "" || r.skipped != "") {
		t.Fatalf("go: path %q, failed %q, skipped %q", path, r.failed, r.skipped)
	}
}
