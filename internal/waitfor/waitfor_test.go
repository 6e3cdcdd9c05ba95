package waitfor

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Until with a fatalTB on its own goroutine, as Fatalf ends it.
func run(within time.Duration, what string, cond func() bool) string {
	tb := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(tb, within, what, cond)
	}()
	<-done
	return tb.msg
}

func TestUntilReturnsOnceTrue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		start := time.Now()
		msg := run(time.Minute, "the third call", func() bool { return calls.Add(1) == 3 })
		if msg != "" {
			t.Fatalf("failed: %s", msg)
		}
		if n := calls.Load(); n != 3 {
			t.Fatalf("cond called %d times, want 3", n)
		}
		if waited := time.Since(start); waited != 2*Poll {
			t.Fatalf("waited %v on the fake clock, want %v", waited, 2*Poll)
		}
	})
}

func TestUntilTrueAtOnceDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if msg := run(0, "nothing", func() bool { return true }); msg != "" {
			t.Fatalf("failed: %s", msg)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("waited %v, want 0", waited)
		}
	})
}

func TestUntilFailsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		msg := run(time.Second, "the moon", func() bool { return false })
		if !strings.Contains(msg, "timed out after 1s waiting for the moon") {
			t.Fatalf("message %q does not name the wait", msg)
		}
		if waited := time.Since(start); waited < time.Second || waited > time.Second+Poll {
			t.Fatalf("failed after %v on the fake clock, want 1s to 1s+%v", waited, Poll)
		}
	})
}

func TestUntilStopsWhenFatalfReturns(t *testing.T) {
	tb := &returningTB{}
	Until(tb, 0, "never", func() bool { return false })
	if tb.fatals != 1 {
		t.Fatalf("Fatalf called %d times, want 1", tb.fatals)
	}
}

// returningTB counts Fatalf calls and, unlike testing.T, returns from them.
type returningTB struct {
	testing.TB
	fatals int
}

func (r *returningTB) Helper()               {}
func (r *returningTB) Fatalf(string, ...any) { r.fatals++ }
