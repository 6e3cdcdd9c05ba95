// Package waitfor is the tests' one way to wait for something another
// goroutine or process does: poll a condition until it holds, with a
// deadline. A test that sleeps a fixed time and then looks proves nothing on
// a busy machine; a test that waits for the state it needs is as fast as the
// code and fails with a message naming what never happened.
package waitfor

import (
	"testing"
	"time"
)

// Poll is how long Until waits between two calls of the condition.
const Poll = 10 * time.Millisecond

// Until calls cond until it returns true, and fails tb with Fatalf, naming
// what, if it has not done so within. cond is called at least once, on the
// calling goroutine, and about every Poll after; it must not block for long,
// as the deadline is checked only between calls. Inside a testing/synctest
// bubble the waits between calls are on the bubble's fake clock.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", within, what)
			return // a tb whose Fatalf does not stop the goroutine
		}
		time.Sleep(Poll) // the polling interval, not synchronisation
	}
}
